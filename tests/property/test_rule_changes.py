"""The invariant under rules added and removed at runtime (the dynamic programs of
de Lima et al., *Incremental Evaluation of Dynamic Datalog Programs as a Higher-order DBSP
Program*).

Each sequence starts from a random subset of a generated program's rules and mixes fact deltas
with rule additions and removals. After EVERY epoch the maintained state (tuple, iteration,
count) must equal a fresh Bootstrap of the current program text and facts, and its tuple sets the
naive oracle's. Any subset of a generated program's rules is again safe, well typed and
stratified (every relation is declared), so every rule change here must be accepted.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
from reasoner.elastic.epoch import Delta
from reasoner.elastic.program_text import rule_id
from reasoner.materialization import Materialization
from reasoner.syntax.parser import parse_program
from tests.conftest import examples
from tests.oracle.evaluation import evaluate, visible
from tests.property.programs import GeneratedProgram, deltas, programs
from tests.updates import apply_recording_changes, assert_changes_lead_from


def _clauses(text: str) -> list[str]:
    """The program's rule clauses, one per source clause, in order."""
    seen: dict[str, None] = {}
    for rule in parse_program(text).rules:
        seen.setdefault(rule.text, None)
    return list(seen)


def _declared(text: str) -> str:
    """The program with a `.decl` for every relation, so that removing a rule never removes
    the relations it mentions (generated programs leave derived relations' types inferred)."""
    analyzed = check_program(text)
    lines = [
        f".decl {name}({', '.join(f'c{i}: {t}' for i, t in enumerate(info.types))})"
        for name, info in analyzed.relations.items()
        if not info.declared and not info.internal
    ]
    return "\n".join([*lines, text])


def _without(text: str, clauses: list[str]) -> str:
    """The text without the lines of `clauses` (a generated rule is a line of its own). Not a
    substring replacement: that would also cut `a(x) :- b(x).` out of `_a(x) :- b(x).`."""
    removed = set(clauses)
    return "\n".join(line for line in text.split("\n") if line not in removed)


def _fresh(program: str | AnalyzedProgram, facts, *, maintained: bool = False) -> Materialization:
    """A Bootstrap of `facts`: from the text, as users start one, for the one the steps run
    on (`maintained`: it compiles Update plans); from the program already analyzed for the
    fresh ones it is compared with, which the oracle reads too (an analysis is a third of
    an example's time)."""
    if isinstance(program, str):
        m = Materialization.from_text(program, maintained=maintained)
    else:
        m = Materialization(program, maintained=maintained)
    m.load(facts)
    m.bootstrap()
    return m


def _check(data: st.DataObject, generated: GeneratedProgram, strategy: str) -> None:
    text = _declared(generated.text)
    note(f"program as run:\n{text}")
    clauses = _clauses(text)
    initially_off = data.draw(st.lists(st.sampled_from(clauses), unique=True), label="off")
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    live = _fresh(_without(text, initially_off), current, maintained=True)
    inactive = list(initially_off)
    for step in data.draw(deltas(generated)):
        active = [c for c in clauses if c not in inactive]
        add = data.draw(
            st.lists(st.sampled_from(inactive), unique=True, max_size=2)
            if inactive
            else st.just([]),
            label="add",
        )
        remove = data.draw(
            st.lists(st.sampled_from(active), unique=True, max_size=2) if active else st.just([]),
            label="remove",
        )
        earlier = live.analyzed
        before = visible(live.snapshot(), earlier)
        report, changes = apply_recording_changes(
            live,
            Delta(
                insert={n: sorted(r) for n, r in step.insert.items()},
                retract={n: sorted(r) for n, r in step.retract.items()},
                add_rules=["\n".join(add)] if add else [],
                remove_rules=[rule_id(c) for c in remove],
            ),
            strategy,
        )
        # A rule change can make a relation goal-directed or whole: where it is goal-directed
        # on either side, it holds its facts alone there, and the change set says so.
        hidden = earlier.goal_directed | live.analyzed.goal_directed
        after = visible(live.snapshot(), live.analyzed)
        assert_changes_lead_from(
            {n: rows for n, rows in before.items() if n not in hidden},
            {n: rows for n, rows in after.items() if n not in hidden},
            changes,
        )
        assert set(report.rules_added) == {rule_id(c) for c in add}
        assert set(report.rules_removed) == {rule_id(c) for c in remove}
        inactive = [c for c in inactive if c not in add] + remove
        for name, rows in step.retract.items():
            current[name] -= rows
        for name, rows in step.insert.items():
            current[name] |= rows
        assert {e.id for e in live.rules()} == {rule_id(c) for c in clauses if c not in inactive}
        state = live.snapshot()
        analyzed = check_program(live.program_text())
        assert state == _fresh(analyzed, current).snapshot()
        expected = evaluate(analyzed, current)
        assert {n: set(rows) for n, rows in visible(state, live.analyzed).items()} == {
            n: set(rows) for n, rows in visible(expected, live.analyzed).items()
        }


@pytest.mark.minutes
@settings(max_examples=examples(200))
@given(generated=programs(), data=st.data())
def test_rule_changes_under_update_keep_the_invariant(
    generated: GeneratedProgram, data: st.DataObject
) -> None:
    _check(data, generated, "update")


@pytest.mark.parametrize("strategy", ["bootstrap", "auto"])
@settings(max_examples=examples(50))
@given(generated=programs(), data=st.data())
def test_rule_changes_under_fallback_and_default_switch_keep_the_invariant(
    strategy: str, generated: GeneratedProgram, data: st.DataObject
) -> None:
    _check(data, generated, strategy)
