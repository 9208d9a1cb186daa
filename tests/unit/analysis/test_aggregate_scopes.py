"""The scopes of aggregates' variables (`reasoner.analysis.aggregate_scopes`): a variable of
an aggregated expression that the rule also uses outside is a new one (a shadow), and the
witnesses of `min` and `max` range over what reaches the aggregate's value, taken without
them, as Soufflé's GroundWitnesses makes them. `tests/golden/aggregate_scopes/` holds the
program and what the 64-bit Soufflé 2.5 wrote for it (`souffle -D . program.dl`)."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import UNSAFE_RULE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.oracle.evaluation import evaluate, visible
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("aggregate_scopes")
OUTPUTS = [
    "lowest",
    "highest",
    "lowest_with",
    "per_local",
    "plus_one",
    "per_bound",
    "named",
    "both",
    "first_name",
    "shadow",
    "shadow_variable",
    "shadow_variable_max",
    "shadow_nested",
    "correlated",
    "shadow_min",
    "scaled",
    "nested",
    "head_only",
    "total_then_count",
    "max_then_count",
    "per_group",
    "empty_sum",
    "chain",
]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_scopes_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(GOLDEN.program, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


def test_the_oracle_gives_souffles_rows() -> None:
    """The naive oracle (`tests.oracle`) reads the scopes on its own: an aggregate nested in
    another's body keeps its target's variables too (`shadow_nested`)."""
    analyzed = check_program(GOLDEN.program)
    state = visible(evaluate(analyzed, {}), analyzed)
    for name in OUTPUTS:
        assert {tuple(map(str, row)) for row in state[name]} == GOLDEN.rows(name), name


WITNESSED = """
.decl e(x: number, y: number)
.decl f(y: number, z: number)
.decl lowest(x: number, m: number)
lowest(x, m) :- m = min y : { e(x, y) }.
.decl per_local(x: number, m: number)
per_local(x, m) :- m = max y : { e(x, y), f(y, z) }.
.decl reach(x: number, y: number)
reach(x, y) :- e(x, y).
reach(x, z) :- reach(x, y), e(y, z).
.decl farthest(x: number, m: number)
farthest(x, m) :- m = max y : { reach(x, y) }.
.decl shadow(x: number, s: number)
shadow(x, s) :- f(x, _), s = sum x + y : { e(x, y) }.
.decl below_total(x: number, s: number, c: number)
below_total(x, s, c) :- f(x, _), s = sum y : { e(x, y) }, c = count : { e(_, w), w < s }.
"""
INPUTS = {"e": [(1, 2), (2, 3), (3, 1), (4, 1)], "f": [(1, 7), (3, 8)]}


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(WITNESSED)
    m.load(facts)
    m.bootstrap()
    return m


def test_scopes_under_update_equal_a_fresh_bootstrap() -> None:
    """A new minimum replaces every witness of the old one; retracting it brings them back.
    A shadow's sum follows all of `e`, whichever `x` reads it; a count taken per value of a
    sum follows both."""
    steps = [
        Delta(insert={"e": [(5, 0), (2, 9)]}),
        Delta(retract={"e": [(5, 0)]}, insert={"f": [(9, 1)]}),
        Delta(retract={"e": [(1, 2), (2, 9)], "f": [(1, 7)]}),
    ]
    m = _built(INPUTS)
    check_updates(m, INPUTS, steps, _built)


@pytest.mark.parametrize("op", ["count", "sum y", "mean to_float(y)"])
def test_count_sum_and_mean_have_no_witnesses(op: str) -> None:
    """Soufflé: `Witness problem: argument grounded by an aggregator's inner scope is used
    ungrounded in outer scope in a count/sum/mean aggregate`."""
    text = f""".decl e(x: number, y: number)
    .decl c(x: number, m: {"float" if "mean" in op else "number"})
    c(x, m) :- m = {op} : {{ e(x, y) }}.
    """
    with pytest.raises(ProgramError) as raised:
        check_program(text)
    assert [d.code for d in raised.value.diagnostics] == [UNSAFE_RULE]


def test_a_shadow_the_aggregate_does_not_bind_is_named_as_written() -> None:
    """Soufflé: `Ungrounded variable y0` (its renamed shadow); here the variable as written."""
    text = """.decl a(x: number)
    .decl b(x: number, y: number)
    .decl n(y: number, s: number)
    n(y, s) :- a(y), s = count : { b(x, z), z < sum x + y : { b(x, _) } }.
    """
    with pytest.raises(ProgramError) as raised:
        check_program(text)
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.code == UNSAFE_RULE
    assert "`y`" in diagnostic.message
