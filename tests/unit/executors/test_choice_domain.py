"""`choice-domain`: at most one tuple per key, the first in value order of each iteration
(`reasoner.executors.choice`). `tests/golden/choice_domain/` holds a program whose every
choice has one answer in any evaluation order, and what the 64-bit Soufflé 2.5 wrote for it;
the Update cases check the state against a fresh Bootstrap and the oracle."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import UNKNOWN_ATTRIBUTE, UNSUPPORTED_FEATURE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("choice_domain")
PROGRAM = GOLDEN.program
OUTPUTS = ("tree", "pick", "step", "parent_count", "symbol_pick")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_choices_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


TREE = """
.decl edge(x: number, y: number)
.decl root(x: number)
.decl tree(parent: number, node: number) choice-domain node
tree(x, x) :- root(x).
tree(x, y) :- tree(_, x), edge(x, y).
.decl leaf(x: number)
leaf(y) :- tree(_, y), !tree(y, _).
.decl one(x: number, y: number) choice-domain x, y
one(x, y) :- edge(x, y), !leaf(y).
"""
EDGES = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (2, 5), (5, 6), (6, 1)]
STEPS = [
    Delta(insert={"edge": [(3, 6), (0, 1)]}),
    Delta(retract={"edge": [(1, 2)]}),
    Delta(insert={"root": [(0,)]}, retract={"root": [(1,)]}),
    Delta(insert={"edge": [(1, 2), (2, 0)]}, retract={"edge": [(0, 1)]}),
    Delta(retract={"edge": EDGES}),
]


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(TREE)
    m.load(facts)
    m.bootstrap()
    return m


def test_choices_under_update_equal_a_fresh_bootstrap() -> None:
    """The choice's stratum is Bootstrapped afresh when its inputs change; the strata above
    it (a negation of the chosen relation) are updated from its changes."""
    inputs = {"edge": EDGES, "root": [(1,)]}
    m = _built(inputs)
    assert set(m.rows("tree")) == {(1, 1), (1, 2), (1, 3), (2, 4), (2, 5), (5, 6)}
    check_updates(m, inputs, STEPS, _built)


def test_an_iterations_candidates_are_taken_in_value_order() -> None:
    """Two candidates for node 4 in iteration 3 (from 2 and from 3): the smaller is kept,
    whichever the evaluation meets first; the other derives nothing."""
    m = _built({"edge": [(1, 3), (1, 2), (3, 4), (2, 4), (4, 9)], "root": [(1,)]})
    assert {row for row in m.rows("tree") if row[1] in (4, 9)} == {(2, 4), (4, 9)}
    assert m.snapshot()["tree"][(2, 4)] == (3, 1)


def test_program_facts_are_guarded_in_order_and_data_is_not() -> None:
    """As Soufflé: `c(1, 5). c(1, 6).` keeps the first written; `.input` rows (data here) are
    loaded unguarded; a rule's tuple for a taken key is not kept."""
    text = """
    .decl c(k: number, v: number) choice-domain k
    c(1, 6). c(1, 5). c(2, 9).
    .decl s(k: number, v: number)
    s(2, 3). s(3, 3).
    c(k, v) :- s(k, v).
    """
    m = Materialization.from_text(text)
    m.load({"c": [(4, 1), (4, 2)]})
    m.bootstrap()
    assert set(m.rows("c")) == {(1, 6), (2, 9), (3, 3), (4, 1), (4, 2)}


def test_symbols_are_chosen_by_their_text_whatever_order_they_came_in() -> None:
    text = """
    .decl in(s: symbol)
    .decl one(k: number, s: symbol) choice-domain k
    one(1, s) :- in(s).
    """
    m = Materialization.from_text(text)
    m.load({"in": [("b",)]})
    m.bootstrap()
    m.apply(Delta(insert={"in": [("a",)]}), strategy="update")
    assert list(m.rows("one")) == [(1, "a")]
    fresh = Materialization.from_text(text)
    fresh.load({"in": [("a",), ("b",)]})
    fresh.bootstrap()
    assert list(fresh.rows("one")) == [(1, "a")]


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        (".decl r(x: number, y: number) choice-domain z\n", UNKNOWN_ATTRIBUTE, (1, 45)),
        (".decl r(x: number, y: number) choice-domain (x, w)\n", UNKNOWN_ATTRIBUTE, (1, 45)),
        (".decl r(x: number, y: number) eqrel choice-domain x\n", UNSUPPORTED_FEATURE, (1, 51)),
    ],
)
def test_a_bad_choice_domain_is_an_error_at_its_key(
    text: str, code: str, where: tuple[int, int]
) -> None:
    with pytest.raises(ProgramError) as info:
        check_program(text)
    [diagnostic] = info.value.diagnostics
    assert diagnostic.code == code
    assert (diagnostic.span.line, diagnostic.span.column) == where


def test_a_choice_domain_change_rebuilds_its_stratum() -> None:
    """Rules changed at run time: the same rules under another key are another stratum."""
    m = _built({"edge": EDGES, "root": [(1,)]})
    rules = ".decl pair(x: number, y: number) choice-domain y\npair(x, y) :- edge(x, y).\n"
    report = m.apply(Delta(add_rules=[rules]), strategy="update")
    assert report.strategy == "update"
    assert set(m.rows("pair")) == {(1, 2), (1, 3), (2, 4), (2, 5), (5, 6), (6, 1)}


def test_a_choice_domain_declared_in_a_parametric_component() -> None:
    text = """
    .comp Tree<T> {
        .decl edge(x: T, y: T)
        .decl tree(parent: T, node: T) choice-domain node
        tree(x, y) :- edge(x, y).
    }
    .init numbers = Tree<number>
    numbers.edge(1, 3). numbers.edge(2, 3). numbers.edge(2, 4).
    """
    m = Materialization.from_text(text)
    m.bootstrap()
    assert set(m.rows("numbers.tree")) == {(1, 3), (2, 4)}
