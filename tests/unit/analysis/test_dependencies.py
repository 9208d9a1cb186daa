"""The dependency graph as written: plain reads, negations and aggregates told apart, and
the relations the analysis made folded into the edges through them."""

from __future__ import annotations

from reasoner import relation_reads
from reasoner.analysis import check_program

PROGRAM = """.decl e(x: number, y: number)
.decl n(x: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
deg(x, c) :- n(x), c = count : { e(x, _) }.
total(s) :- s = sum y : { deg(_, y) }.
lonely(x) :- n(x), !e(x, _).
far(x) :- n(x), !tc(x, _).
"""


def test_each_relation_lists_what_its_rules_read_and_how() -> None:
    analyzed = check_program(PROGRAM)
    assert any(info.internal for info in analyzed.relations.values())  # aggregates' relations
    assert relation_reads(analyzed) == {
        "tc": (("e", "positive"), ("tc", "positive")),
        "deg": (("e", "aggregate"), ("n", "positive")),
        "total": (("deg", "aggregate"),),
        "lonely": (("e", "negative"), ("n", "positive")),
        "far": (("n", "positive"), ("tc", "negative")),
    }


def test_an_input_without_rules_reads_nothing() -> None:
    assert relation_reads(check_program(".decl e(x: number)\ne(1).\n")) == {}
