"""Plans split into continuations at every loop compute what whole plans compute.

Only rules of more than `MAX_NESTED_LOOPS` loops are split in earnest (tests/unit/
test_wide_rules.py); with the bound lowered to 1 or 2, the generated programs' rules, which
have every construct (negations with and without wildcards, comparisons, arithmetic, repeated
variables, constants, recursion, heads Update cannot invert), are split everywhere. A local of
a caller's snippet not handed on to the continuation that reads it (`_link` in
reasoner/executors/local/codegen.py) shows here as a NameError or a wrong state. Checked
against the naive oracle for Bootstrap (reference and local engines), and after every epoch
of a delta sequence under Update.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.elastic.engines import EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.executors.local import codegen
from reasoner.materialization import Materialization
from tests.oracle import evaluate
from tests.property.programs import GeneratedProgram, deltas, programs

SPLITS = st.sampled_from((1, 2))
"""Loops per generated function: 1 puts every probe of an atom in a continuation."""


@contextmanager
def _split_at(loops: int) -> Iterator[None]:
    saved = codegen.MAX_NESTED_LOOPS
    codegen.MAX_NESTED_LOOPS = loops
    try:
        yield
    finally:
        codegen.MAX_NESTED_LOOPS = saved


@settings(max_examples=150)
@given(programs(), SPLITS, st.sampled_from(("reference", "local")))
def test_split_bootstrap_equals_the_oracle(
    generated: GeneratedProgram, loops: int, engine: str
) -> None:
    analyzed = check_program(generated.text)
    with _split_at(loops):
        m = Materialization(analyzed, engines=EngineSettings(engine=engine))
        m.load(generated.inputs)
        m.bootstrap()
    assert m.snapshot() == evaluate(analyzed, generated.inputs)


@settings(max_examples=100)
@given(programs(), SPLITS, st.data())
def test_split_update_keeps_the_oracle_state(
    generated: GeneratedProgram, loops: int, data: st.DataObject
) -> None:
    """Update's enumerators (every driver and status variant, re-discovery) and the
    reference Bootstrap the rebuilt state comes from, all split."""
    analyzed = check_program(generated.text)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    with _split_at(loops):
        live = Materialization(analyzed)
        live.load(current)
        live.bootstrap()
        for step in data.draw(deltas(generated)):
            report = live.apply(
                Delta(
                    insert={n: sorted(r) for n, r in step.insert.items()},
                    retract={n: sorted(r) for n, r in step.retract.items()},
                ),
                strategy="update",
            )
            assert report.strategy in ("update", "unchanged")
            for name, rows in step.retract.items():
                current[name] -= rows
            for name, rows in step.insert.items():
                current[name] |= rows
            assert live.snapshot() == evaluate(analyzed, current)
            assert live.differences(live.rebuilt()) == {}
