"""The invariant that defines correctness (DESIGN.md, Theorem 3.5 of the elastic paper).

After EVERY epoch of a random delta sequence, the maintained state — each tuple with its
iteration and count — equals a fresh Bootstrap of the current facts, and its tuple sets equal
the naive oracle's. Checked with Update forced (errors surface instead of falling back), on
the compiled kernel and on the generated Python code, with Bootstrap forced (the fallback
path), and with the default switch.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.elastic.engines import EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from tests.oracle import evaluate
from tests.property.programs import GeneratedProgram, deltas, programs


def _fresh(analyzed, facts, update: str = "compiled") -> Materialization:
    materialization = Materialization(analyzed, engines=EngineSettings(update=update))
    materialization.load(facts)
    materialization.bootstrap()
    return materialization


def _check_sequence(
    data: st.DataObject, generated: GeneratedProgram, strategy: str, update: str = "compiled"
) -> None:
    analyzed = check_program(generated.text)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    live = _fresh(analyzed, current, update)
    for step in data.draw(deltas(generated)):
        live.apply(
            Delta(
                insert={n: sorted(r) for n, r in step.insert.items()},
                retract={n: sorted(r) for n, r in step.retract.items()},
            ),
            strategy=strategy,
        )
        for name, rows in step.retract.items():
            current[name] -= rows
        for name, rows in step.insert.items():
            current[name] |= rows
        state = live.snapshot()
        assert state == _fresh(analyzed, current).snapshot()
        expected = evaluate(analyzed, current)
        assert {n: set(rows) for n, rows in state.items()} == {
            n: set(rows) for n, rows in expected.items()
        }


@pytest.mark.parametrize("update", ["compiled", "python"])
@settings(max_examples=400)
@given(generated=programs(), data=st.data())
def test_update_keeps_the_state_of_a_fresh_bootstrap(
    update: str, generated: GeneratedProgram, data: st.DataObject
) -> None:
    """Both Update engines: the compiled kernel (with the generated code for the strata it
    cannot run) and the generated code alone."""
    _check_sequence(data, generated, "update", update)


@pytest.mark.parametrize("strategy", ["bootstrap", "auto"])
@settings(max_examples=100)
@given(generated=programs(), data=st.data())
def test_fallback_and_default_switch_keep_the_invariant(
    strategy: str, generated: GeneratedProgram, data: st.DataObject
) -> None:
    _check_sequence(data, generated, strategy)
