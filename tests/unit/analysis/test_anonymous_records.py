"""Record literals that no declaration types: Soufflé folds comparisons between them and
replaces a variable that only aliases one (`reasoner.analysis.anonymous_records`).
`tests/golden/anonymous_records/` holds the program and what the 64-bit Soufflé 2.5 wrote
for it (`souffle -D . program.dl`)."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import TYPE_MISMATCH, UNSAFE_RULE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("anonymous_records")
OUTPUTS = [
    "same",
    "swapped",
    "differ",
    "differ_any",
    "alias",
    "alias_sym",
    "nested",
    "nested_differ",
    "empty_equal",
    "empty_differ",
    "typed",
]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_untyped_record_literals_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(GOLDEN.program, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


FOLDED = """
.decl b(x: number)
.decl c(x: number, y: number)
.decl swapped(x: number, y: number)
swapped(x, y) :- c(x, y), [x, y] = [y, x].
.decl differ(x: number, y: number)
differ(x, y) :- c(x, y), [[x, 1], y] != [[y, 1], x].
.decl alias(x: number)
alias(x) :- b(x), r = [x, 2], r = [1, y], y = 2.
.decl reach(x: number, y: number)
reach(x, y) :- c(x, y).
reach(x, z) :- reach(x, y), c(y, z), [x, z] != [z, x].
"""
FOLDED_INPUTS = {"b": [(1,), (2,)], "c": [(1, 1), (1, 2), (2, 3), (3, 1)]}


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(FOLDED)
    m.load(facts)
    m.bootstrap()
    return m


def test_folded_rules_under_update_equal_a_fresh_bootstrap() -> None:
    """The rules a `!=` between records splits into derive one relation together: a tuple
    two of them derive is counted twice, in Update as in Bootstrap."""
    steps = [
        Delta(insert={"c": [(3, 3), (2, 2)], "b": [(3,)]}),
        Delta(retract={"c": [(1, 1), (2, 3)], "b": [(1,)]}),
        Delta(insert={"c": [(2, 3), (3, 4)]}, retract={"c": [(3, 3)]}),
    ]
    m = _built(FOLDED_INPUTS)
    check_updates(m, FOLDED_INPUTS, steps, _built)


def test_a_variable_a_declaration_types_is_left_as_written() -> None:
    """`r` read from `p` has `P`'s type: it stays (a record of another size is an error)."""
    text = """
    .type P = [a: number, b: number]
    .decl p(r: P)
    .decl q(x: number)
    q(x) :- p(r), r = [x, y, 3].
    """
    with pytest.raises(ProgramError) as raised:
        check_program(text)
    assert [d.code for d in raised.value.diagnostics] == [TYPE_MISMATCH]


def test_records_of_different_sizes_are_not_folded() -> None:
    with pytest.raises(ProgramError) as raised:
        check_program(".decl b(x: number)\n.decl q(x: number)\nq(x) :- b(x), [x, 1] = [x].\n")
    assert {d.code for d in raised.value.diagnostics} == {TYPE_MISMATCH}


def test_an_alias_is_replaced_only_where_the_rule_binds_it() -> None:
    """Bound through `[1, y]` once `y = 2`, `r` takes `x` apart (Soufflé: `q(1)`); with
    nothing to bind it, the rule is unsafe, as Soufflé says, not rewritten into one that
    binds `x` by accident."""
    bound = ".decl q(x: number)\nq(x) :- r = [x, 2], r = [1, y], y = 2.\n"
    m = Materialization.from_text(bound)
    m.bootstrap()
    assert set(m.rows("q")) == {(1,)}
    with pytest.raises(ProgramError) as raised:
        check_program(".decl q(x: number)\nq(x) :- r = [x, 2], r = [1, y].\n")
    assert UNSAFE_RULE in {d.code for d in raised.value.diagnostics}
