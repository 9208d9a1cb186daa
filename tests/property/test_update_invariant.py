"""The invariant that defines correctness (DESIGN.md, Theorem 3.5 of the elastic paper).

After EVERY epoch of a random delta sequence, the maintained state — each tuple with its
iteration and count — equals a fresh Bootstrap of the current facts, and its tuple sets equal
the naive oracle's; and the change set the epoch hands `before_publish` takes every relation
users see from the state before to the state after. Deltas come as rows or as batches (an
input relation's batch is recorded by row). Checked with Update forced (errors surface
instead of falling back), with Bootstrap forced (the fallback path), and with the default
switch; with the rest of each stratum's Update evaluated in bulk from various iterations;
and after fallbacks cancelled once they had freed the old state's indexes.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.elastic import apply, strata_update, switch
from reasoner.elastic.epoch import UNCHANGED, Delta
from reasoner.io.batch import FactBatch
from reasoner.materialization import Materialization
from reasoner.support.deadline import BootstrapCancelled, Deadline, DeadlineExceeded
from tests.conftest import examples
from tests.oracle.evaluation import evaluate, visible
from tests.property.programs import GeneratedProgram, deltas, programs
from tests.updates import apply_recording_changes, assert_changes_lead_from


def _fresh(
    analyzed, facts, *, maintained: bool = False, bulk_update_rows: int | None = None
) -> Materialization:
    """A Bootstrap of `facts`; `maintained` for the one the Update steps run on (the fresh
    ones it is compared with compile no Update plans), going on in bulk from an iteration of
    `bulk_update_rows` candidates (`reasoner.elastic.bulk`)."""
    materialization = Materialization(
        analyzed, maintained=maintained, bulk_update_rows=bulk_update_rows
    )
    materialization.load(facts)
    materialization.bootstrap()
    return materialization


def _given(rows: set[tuple], analyzed, name: str, batch: bool) -> list[tuple] | FactBatch:
    """A delta's rows of `name` as a list, or as a batch (`batch`; a relation of arity 0 has
    no batch)."""
    ordered, types = sorted(rows), analyzed.relations[name].types
    return FactBatch.of_rows(ordered, types) if batch and types else ordered


def _check_sequence(
    data: st.DataObject,
    generated: GeneratedProgram,
    strategy: str,
    bulk_update_rows: int | None = None,
) -> None:
    analyzed = check_program(generated.text)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    live = _fresh(analyzed, current, maintained=True, bulk_update_rows=bulk_update_rows)
    for step in data.draw(deltas(generated)):
        before = visible(live.snapshot(), analyzed)
        # As a batch, an input relation's facts are recorded by row (`Overlay.record_facts`);
        # as rows, tuple by tuple; one side of a delta may come each way.
        inserted, retracted = data.draw(st.tuples(st.booleans(), st.booleans()), label="batches")
        _, changes = apply_recording_changes(
            live,
            Delta(
                insert={n: _given(r, analyzed, n, inserted) for n, r in step.insert.items()},
                retract={n: _given(r, analyzed, n, retracted) for n, r in step.retract.items()},
            ),
            strategy,
        )
        assert_changes_lead_from(before, visible(live.snapshot(), analyzed), changes)
        for name, rows in step.retract.items():
            current[name] -= rows
        for name, rows in step.insert.items():
            current[name] |= rows
        state = live.snapshot()
        assert state == _fresh(analyzed, current).snapshot()
        expected = evaluate(analyzed, current)
        assert {n: set(rows) for n, rows in visible(state, analyzed).items()} == {
            n: set(rows) for n, rows in visible(expected, analyzed).items()
        }


@pytest.mark.minutes
@settings(max_examples=examples(450))
@given(generated=programs(), data=st.data())
def test_update_keeps_the_state_of_a_fresh_bootstrap(
    generated: GeneratedProgram, data: st.DataObject
) -> None:
    _check_sequence(data, generated, "update")


@pytest.mark.parametrize("bulk_update_rows", [0, 3])
@settings(max_examples=examples(120))
@given(generated=programs(), data=st.data())
def test_an_update_gone_on_in_bulk_keeps_the_invariant(
    bulk_update_rows: int, generated: GeneratedProgram, data: st.DataObject
) -> None:
    """The rest of a stratum evaluated in bulk from its first iteration (0), or from the
    first of 3 candidates or more (any iteration): the same state. Never in bulk (the
    threshold at infinity, the default) is the first test's case."""
    _check_sequence(data, generated, "update", bulk_update_rows)


@settings(max_examples=examples(150))
@given(generated=programs(), data=st.data(), checks=st.integers(1, 6), alone=st.booleans())
def test_an_update_given_up_anywhere_keeps_the_invariant(
    generated: GeneratedProgram, data: st.DataObject, checks: int, alone: bool
) -> None:
    """The switch gives each epoch's Update up at its `checks`-th look (at a stratum's start
    or in one of its iterations). Where bootstrapping the rest `alone` pays, the strata below
    are kept, the one under way goes on in bulk from its iteration, those above are
    bootstrapped alone; else the epoch falls back whole."""
    seen = [0]

    def judge() -> None:
        seen[0] += 1
        if seen[0] % checks == 0:
            raise DeadlineExceeded

    with (
        mock.patch.object(switch, "update_deadline", lambda *_, **__: Deadline(judge=judge)),
        mock.patch.object(strata_update, "ALONE_SHARE", 2.0 if alone else 0.0),
    ):
        _check_sequence(data, generated, "auto")


@pytest.mark.parametrize("strategy", ["bootstrap", "auto"])
@settings(max_examples=examples(100))
@given(generated=programs(), data=st.data())
def test_fallback_and_default_switch_keep_the_invariant(
    strategy: str, generated: GeneratedProgram, data: st.DataObject
) -> None:
    _check_sequence(data, generated, strategy)


def _cancel() -> None:
    raise BootstrapCancelled("cancelled")


@settings(max_examples=examples(25))
@given(generated=programs(), data=st.data())
def test_a_cancelled_fallback_leaves_a_state_the_next_update_keeps(
    generated: GeneratedProgram, data: st.DataObject
) -> None:
    """Each step's fallback frees the old state's key indexes (whatever their size), then is
    cancelled: the state is unchanged, its reads scan, and the step's Update rebuilds the
    indexes it probes."""
    analyzed = check_program(generated.text)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    live = _fresh(analyzed, current, maintained=True)
    with mock.patch.object(apply, "RELEASED_INDEX_BYTES", 0):
        for step in data.draw(deltas(generated)):
            delta = Delta(
                insert={n: sorted(r) for n, r in step.insert.items()},
                retract={n: sorted(r) for n, r in step.retract.items()},
            )
            before = live.snapshot()
            try:
                report = live.apply(delta, strategy="bootstrap", check=_cancel)
            except BootstrapCancelled:
                assert live.snapshot() == before
            else:
                assert report.strategy == UNCHANGED  # no change: nothing to cancel
            live.apply(delta, strategy="update")
            for name, rows in step.retract.items():
                current[name] -= rows
            for name, rows in step.insert.items():
                current[name] |= rows
            assert live.snapshot() == _fresh(analyzed, current).snapshot()
