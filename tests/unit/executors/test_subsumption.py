"""Subsumption (`a(x, c1) <= a(x, c2) :- c2 < c1.`): after each iteration the dominated tuples
are removed, as Soufflé removes them (`reasoner.analysis.subsumption`,
`reasoner.executors.subsumption`). `tests/golden/subsumption/` holds a program whose every case
has one answer in any evaluation order, and what the 64-bit Soufflé 2.5 wrote for it; the
Update cases check the state against a fresh Bootstrap and the oracle."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import PARSE_ERROR, UNSAFE_RULE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.queries import query_rows
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("subsumption")
PROGRAM = GOLDEN.program
OUTPUTS = ("dist", "cheapest", "interval", "best", "name", "far")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_subsumptions_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


PATHS = """
.decl edge(x: number, y: number, w: number)
.decl start(x: number)
.decl dist(n: number, d: number)
dist(x, 0) :- start(x).
dist(y, d + w) :- dist(x, d), edge(x, y, w).
dist(x, d1) <= dist(x, d2) :- d2 < d1.
.decl unreached(n: number)
unreached(y) :- edge(_, y, _), !dist(y, _).
.decl span(lo: number, hi: number)
.decl closed(x: number)
span(lo, hi) <= span(a, b) :- a <= lo, hi <= b, !closed(a).
"""
EDGES = [(1, 2, 5), (1, 3, 1), (3, 2, 1), (2, 4, 1), (4, 1, 1), (3, 4, 7), (5, 6, 1)]
STEPS = [
    Delta(insert={"edge": [(1, 4, 1)], "span": [(2, 3)]}),
    Delta(retract={"edge": [(3, 2, 1)], "closed": [(1,)]}),
    Delta(insert={"start": [(5,)], "span": [(0, 30)]}, retract={"start": [(1,)]}),
    Delta(insert={"edge": [(6, 1, 1), (3, 2, 1)], "start": [(1,)]}),
    Delta(retract={"edge": EDGES, "span": [(0, 30)]}),
]


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(PATHS)
    m.load(facts)
    m.bootstrap()
    return m


def test_subsumptions_under_update_equal_a_fresh_bootstrap() -> None:
    """The subsumed relation's stratum is Bootstrapped afresh when its inputs change (facts
    of the relation itself included); the negation above it is updated from its changes."""
    inputs = {
        "edge": EDGES,
        "start": [(1,)],
        "span": [(1, 10), (2, 5), (3, 12), (11, 20)],
        "closed": [(1,)],
    }
    m = _built(inputs)
    assert set(m.rows("dist")) == {(1, 0), (3, 1), (2, 2), (4, 3)}
    assert set(m.rows("span")) == {(1, 10), (3, 12), (11, 20), (2, 5)}
    check_updates(m, inputs, STEPS, _built)


def test_dominated_tuples_go_as_they_come() -> None:
    """`dist(2, 5)` comes at iteration 2 and goes at iteration 3, when `dist(2, 2)` comes;
    `dist(4, 6)`, derived from it at iteration 3, goes at iteration 4 with `dist(4, 3)`."""
    m = _built({"edge": EDGES, "start": [(1,)]})
    state = m.snapshot()["dist"]
    assert state[(2, 2)] == (3, 1)
    assert state[(4, 3)] == (4, 1)
    assert (2, 5) not in state and (4, 6) not in state


def test_queries_read_the_subsumed_relation() -> None:
    m = _built({"edge": EDGES, "start": [(1,)]})
    assert set(query_rows(m, "dist(x, d), d > 1")) == {(2, 2), (4, 3)}


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        (".decl a(x: number)\n.decl b(x: number)\na(x) <= b(y) :- x < y.\n", PARSE_ERROR, (3, 9)),
        (".decl a(x: number)\na(x) <= a(y) :- x < z.\n", UNSAFE_RULE, (2, 21)),
    ],
)
def test_a_bad_subsumption_is_an_error_at_its_place(
    text: str, code: str, where: tuple[int, int]
) -> None:
    with pytest.raises(ProgramError) as info:
        check_program(text)
    [diagnostic] = info.value.diagnostics
    assert diagnostic.code == code
    assert (diagnostic.span.line, diagnostic.span.column) == where


def test_a_subsumption_added_at_run_time() -> None:
    m = _built({"edge": EDGES, "start": [(1,)]})
    report = m.apply(
        Delta(add_rules=["best(x, y) :- edge(x, y, _).\nbest(x, y1) <= best(x, y2) :- y2 > y1.\n"]),
        strategy="update",
    )
    assert report.strategy == "update"
    assert set(m.rows("best")) == {(1, 3), (2, 4), (3, 4), (4, 1), (5, 6)}


def test_a_subsumption_that_negates_what_depends_on_its_relation_is_refused() -> None:
    """Soufflé refuses it too: the negated relation would be read half evaluated."""
    text = """
    .decl a(x: number, d: number)
    .decl b(x: number)
    b(x) :- a(x, _).
    a(x, d1) <= a(x, d2) :- d2 < d1, !b(x).
    """
    with pytest.raises(ProgramError) as info:
        check_program(text)
    [diagnostic] = info.value.diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("cyclic_negation", 5, 39)
