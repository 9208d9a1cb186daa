"""`reasoner run` writes what Soufflé 2.5 writes, on generated programs.

The other property tests hold the engine to our oracle; this one holds both our reading and
the engine to Soufflé itself (`tests/differential.py` says how the two are run). Programs with
a subsumption or a choice are left to the golden cases and the fuzzer (`python -m
tests.differential`): there the README names orders of evaluation in which we differ.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import assume, given, settings

from tests.conftest import examples
from tests.differential import Incomparable, compare, stepwise
from tests.property.programs import SOUFFLE_NAMING, GeneratedProgram, programs


@settings(max_examples=examples(300))
@given(generated=programs(SOUFFLE_NAMING))
def test_reasoner_run_writes_what_souffle_writes(
    generated: GeneratedProgram, souffle: Path, tmp_path_factory
) -> None:
    assume(not stepwise(generated))
    try:
        outcome = compare(generated, tmp_path_factory.mktemp("differential"), souffle)
    except Incomparable:
        assume(False)
    for name in outcome.differing():
        assert outcome.ours.get(name) == outcome.souffle.get(name), name
