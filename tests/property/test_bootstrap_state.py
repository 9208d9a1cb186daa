"""Bootstrap computes exactly the sparse proof-count state the oracle defines.

Not only the tuple sets: every tuple's iteration of first derivation and its number of
derivations in that iteration must equal the brute-force reading of the definition
(tests/oracle.py), since Update relies on those numbers being exact.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from reasoner.analysis import check_program
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.conftest import examples
from tests.oracle import comparable, evaluate
from tests.property.programs import GeneratedProgram, programs


@pytest.mark.minutes
@pytest.mark.parametrize("engine", ["local", "reference"])
@settings(max_examples=examples(1000))
@given(generated=programs())
def test_bootstrap_state_equals_the_oracle(engine: str, generated: GeneratedProgram) -> None:
    """`local` (Polars for large iterations, the compiled kernel for small ones) and
    `reference` (the compiled kernel throughout)."""
    analyzed = check_program(generated.text)
    materialization = Materialization(analyzed, engines=EngineSettings(engine), maintained=False)
    materialization.load(generated.inputs)
    materialization.bootstrap()
    assert comparable(materialization.snapshot(), analyzed) == comparable(
        evaluate(analyzed, generated.inputs), analyzed
    )
