"""Bootstrap computes exactly the sparse proof-count state the oracle defines.

Not only the tuple sets: every tuple's iteration of first derivation and its number of
derivations in that iteration must equal the brute-force reading of the definition
(tests/oracle.py), since Update relies on those numbers being exact.
"""

from __future__ import annotations

from hypothesis import given, settings

from reasoner.analysis import check_program
from reasoner.materialization import Materialization
from tests.oracle import evaluate
from tests.property.programs import GeneratedProgram, programs


@settings(max_examples=1000)
@given(programs())
def test_bootstrap_state_equals_the_oracle(generated: GeneratedProgram) -> None:
    analyzed = check_program(generated.text)
    materialization = Materialization(analyzed)
    materialization.load(generated.inputs)
    materialization.bootstrap()
    assert materialization.snapshot() == evaluate(analyzed, generated.inputs)
