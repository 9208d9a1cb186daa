"""`autoinc()` (`reasoner.analysis.autoinc`): Soufflé's numbers where its order of evaluation is
fixed by the program, as the golden programs hold (what the 64-bit Soufflé 2.5 wrote), on every
executor; under Update, renumbered as a fresh Bootstrap numbers, rule changes included.
The refusals are error goldens (`tests/golden/errors/*autoinc*`)."""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.kernel.explain import explain_program
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer
from tests.souffle_golden import Golden

GOLDENS = {
    "autoinc_symbols": ("id", "next"),
    "autoinc_values": ("numbered", "floats"),
    "autoinc_constant": ("from3", "once"),
    "autoinc_existence": ("any", "none"),
}


@pytest.mark.parametrize("engine", ["reference", "local"])
@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_numbers_are_souffles(name: str, engine: str) -> None:
    golden = Golden(name)
    m = Materialization.from_text(golden.program, engines=EngineSettings(engine))
    m.bootstrap()
    golden.assert_rows(m, GOLDENS[name])


NUMBERED = """
.decl item(x: symbol)
.decl blocked(x: symbol)
.decl id(x: symbol, n: number)
id(x, autoinc()) :- item(x), !blocked(x).
.decl pair(x: symbol, y: symbol)
pair(x, y) :- id(x, n), id(y, n + 1).
.decl value(k: number)
.decl ranked(k: number, n: number)
ranked(k, autoinc()) :- value(k).
"""
STEPS = [
    Delta(insert={"item": [("c",), ("a",)]}),
    Delta(insert={"item": [("b",), ("d",)], "blocked": [("c",)]}),
    Delta(retract={"item": [("a",)]}),
    Delta(retract={"blocked": [("c",)]}, insert={"item": [("e",)]}),
    Delta(retract={"item": [("b",), ("c",), ("d",), ("e",)]}),
]


def _twins(program: str) -> tuple[Materialization, Materialization]:
    """Two materializations of `program`: one will take each delta by Update, the other by
    Bootstrap, so that both meet the symbols in the same order."""
    twins = (Materialization.from_text(program), Materialization.from_text(program))
    for m in twins:
        m.bootstrap()
    return twins


def _numbers(m: Materialization, relation: str) -> list[object]:
    """The relation's keys in the order of their numbers, which must be 0, 1, 2, ..."""
    rows = sorted(m.rows(relation), key=lambda row: row[-1])
    assert [row[-1] for row in rows] == list(range(len(rows)))
    return [row[0] for row in rows]


def test_update_renumbers_as_a_bootstrap_does() -> None:
    """Each step by Update leaves the state (tuple, iteration, count) a Bootstrap's: a symbol
    seen first is numbered first, wherever its text sorts, and a row removed or added moves
    the numbers after it; the relation above (`pair`) follows."""
    updated, bootstrapped = _twins(NUMBERED.replace("ranked(k, autoinc()) :- value(k).", ""))
    for step in STEPS:
        assert updated.apply(step, strategy="update").strategy == "update"
        bootstrapped.apply(step, strategy="bootstrap")
        assert updated.snapshot() == bootstrapped.snapshot()
    assert updated.rows("id") == []


def test_numbers_follow_first_sight_of_symbols() -> None:
    m, _ = _twins(NUMBERED.replace("ranked(k, autoinc()) :- value(k).", ""))
    m.apply(STEPS[0], strategy="update")
    m.apply(STEPS[1], strategy="update")
    assert _numbers(m, "id") == ["a", "b", "d"]  # "c" was first seen first, and is blocked
    m.apply(STEPS[2], strategy="update")
    m.apply(STEPS[3], strategy="update")
    assert _numbers(m, "id") == ["c", "b", "d", "e"]
    assert set(m.rows("pair")) == {("c", "b"), ("b", "d"), ("d", "e")}


def test_update_renumbers_numbers_in_signed_order() -> None:
    program = NUMBERED.replace("id(x, autoinc()) :- item(x), !blocked(x).", "")
    updated, bootstrapped = _twins(program)
    steps = [
        Delta(insert={"value": [(5,), (-3,), (9,)]}),
        Delta(insert={"value": [(0,)]}),
        Delta(retract={"value": [(-3,)]}, insert={"value": [(-(1 << 63),)]}),
    ]
    for step in steps:
        updated.apply(step, strategy="update")
        bootstrapped.apply(step, strategy="bootstrap")
        assert updated.snapshot() == bootstrapped.snapshot()
    assert _numbers(updated, "ranked") == [-(1 << 63), 0, 5, 9]


def test_rule_changes_renumber() -> None:
    """A rule added under the numbered rule's source adds rows to number; removed, they go;
    the numbered rule itself can be removed and added again."""
    program = """
    .decl item(x: number)
    item(4). item(8).
    .decl extra(x: number)
    .decl id(x: number, n: number)
    id(x, autoinc()) :- item(x).
    """
    updated, bootstrapped = _twins(program)

    def rule_id(text: str) -> str:
        return next(rule.id for rule in updated.rules() if rule.text == text)

    steps = [
        lambda: Delta(add_rules=("item(x) :- extra(x).",), insert={"extra": [(6,), (1,)]}),
        lambda: Delta(remove_rules=(rule_id("item(x) :- extra(x)."),)),
        lambda: Delta(remove_rules=(rule_id("id(x, autoinc()) :- item(x)."),)),
        lambda: Delta(add_rules=("id(x, autoinc()) :- item(x), x > 4.",)),
    ]
    expected = [[1, 4, 6, 8], [4, 8], [], [8]]
    for step, keys in zip(steps, expected, strict=True):
        delta = step()
        updated.apply(delta, strategy="update")
        bootstrapped.apply(delta, strategy="bootstrap")
        assert updated.snapshot() == bootstrapped.snapshot()
        assert _numbers(updated, "id") == keys


def test_explanations_name_the_numbering() -> None:
    m = Materialization.from_text(
        '.decl a(x: symbol)\na("p"). a("q").\n.decl id(x: symbol, n: number)\n'
        "id(x, autoinc()) :- a(x).\n"
    )
    m.bootstrap()
    explainer = Explainer(m.analyzed, m.state, m.symbols)
    proof = explainer.explain("id", explainer.encode("id", ("q", 1)))
    shown = [node.relation for node in proof.nodes]
    assert shown[0] == "id" and "autoinc()" in shown
    assert "autoinc() numbers the rows of" in explain_program(m.analyzed)
