"""`reasoner run` writes what Soufflé 2.5 writes, on generated programs.

The other property tests hold the engine to our oracle; this one holds both our reading and
the engine to Soufflé itself (`tests/differential.py` says how the two are run). Programs with
a choice-domain are left to the golden cases and the fuzzer (`python -m tests.differential`):
a choice keeps what Soufflé's order of evaluation meets first, which the README says we do
not follow. Subsumptions stay: the generator's compare values only, never reading a relation
of their stratum, where the README names the one order in which we differ.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import assume, event, given, settings

from reasoner.analysis import check_program
from tests.conftest import examples
from tests.differential import Incomparable, chooses, compare
from tests.property.programs import SOUFFLE_NAMING, GeneratedProgram, programs


@settings(max_examples=examples(300))
@given(generated=programs(SOUFFLE_NAMING))
def test_reasoner_run_writes_what_souffle_writes(
    generated: GeneratedProgram, souffle: Path, tmp_path_factory
) -> None:
    assume(not chooses(generated))
    try:
        outcome = compare(generated, tmp_path_factory.mktemp("differential"), souffle)
    except Incomparable as refused:
        event(f"incomparable: {refused.reason()}")
        assume(False)
    analyzed = check_program(generated.text)
    outputs = {name for name, info in analyzed.relations.items() if info.is_output}
    assert set(outcome.souffle) == outputs  # a file for each `.output`, even an empty one
    for name in outcome.differing():
        assert outcome.ours.get(name) == outcome.souffle.get(name), name
