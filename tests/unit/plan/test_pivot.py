"""Which recursions decompose by their pivot columns (`reasoner.plan.pivot`)."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.plan.pivot import pivot_columns

DECLS = """
.decl e(x: number, y: number)
.decl s(x: number)
.input e
.input s
"""


def _pivots(rules: str) -> dict[str, tuple[int, ...]]:
    analyzed = check_program(DECLS + rules)
    return {"+".join(sorted(s.relations)): pivot_columns(s) for s in analyzed.strata}


@pytest.mark.parametrize(
    ("rules", "relation", "pivot"),
    [
        # Transitive closure, left- and right-linear.
        ("tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).", "tc", (0,)),
        ("tc(x, y) :- e(x, y).\ntc(x, z) :- e(x, y), tc(y, z).", "tc", (1,)),
        # CRDT's chain: two columns copied, negation and a second exit rule.
        (
            "n(a, b, c, d) :- e(a, b), e(c, d).\n"
            "n(a, b, c, d) :- e(a, c), e(b, d), !s(a).\n"
            "n(a, b, c, d) :- e(a, b), !s(a), n(b, a, c, d).",
            "n",
            (2, 3),
        ),
        # Only the columns every recursive rule copies.
        (
            "p(x, y, z) :- e(x, y), e(y, z).\n"
            "p(x, y, z) :- p(x, w, z), e(w, y).\n"
            "p(x, y, z) :- p(w, y, z), e(w, x).",
            "p",
            (2,),
        ),
        # Nothing copied at its own position: a column moves (reachability, a swap).
        ("r(x) :- s(x).\nr(y) :- r(x), e(x, y).", "r", ()),
        ("w(x, y) :- e(x, y).\nw(y, x) :- w(x, y).", "w", ()),
        # Non-linear: two atoms of the relation.
        ("tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), tc(y, z).", "tc", ()),
        # A computed head column is not a copy, even of the same variable's value.
        ("c(x, y) :- e(x, y).\nc(x + 0, y) :- c(x, y), y < 3.", "c", (1,)),
        # Not recursive.
        ("q(x, y) :- e(x, y), !s(x).", "q", ()),
    ],
)
def test_pivot_columns(rules: str, relation: str, pivot: tuple[int, ...]) -> None:
    assert _pivots(rules)[relation] == pivot


def test_mutual_recursion_does_not_decompose() -> None:
    pivots = _pivots("a(x, y) :- e(x, y).\na(x, y) :- b(x, y).\nb(x, z) :- a(x, y), e(y, z).")
    assert pivots == {"a+b": ()}
