"""Bootstrap computes exactly the sparse proof-count state the oracle defines.

Not only the tuple sets: every tuple's iteration of first derivation and its number of
derivations in that iteration must equal the brute-force reading of the definition
(tests/oracle/), since Update relies on those numbers being exact.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.executors.local import vectorized
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.conftest import examples
from tests.oracle.evaluation import comparable, evaluate
from tests.property.programs import GeneratedProgram, programs


def _check(engine: str, generated: GeneratedProgram) -> None:
    analyzed = check_program(generated.text)
    materialization = Materialization(analyzed, engines=EngineSettings(engine), maintained=False)
    materialization.load(generated.inputs)
    materialization.bootstrap()
    assert comparable(materialization.snapshot(), analyzed) == comparable(
        evaluate(analyzed, generated.inputs), analyzed
    )


@pytest.mark.minutes
@settings(max_examples=examples(700))
@given(generated=programs())
def test_bootstrap_state_equals_the_oracle(generated: GeneratedProgram) -> None:
    """The compiled kernel throughout (`reference`)."""
    _check("reference", generated)


@settings(max_examples=examples(300))
@given(generated=programs(), driving_rows=st.sampled_from((0, 4)))
def test_vectorized_bootstrap_state_equals_the_oracle(
    generated: GeneratedProgram, driving_rows: int
) -> None:
    """`local`, as users run it, with its per-iteration switch moved down to the generated
    programs' sizes: at 0 every iteration runs on Polars, at 4 the strata switch between
    Polars and the kernel. At the shipped thresholds (a million driving rows) every
    iteration of a generated program would run on the kernel, which the test above covers."""
    with (
        mock.patch.object(vectorized, "SMALL_ITERATION", driving_rows),
        mock.patch.object(vectorized, "DELTA_ITERATION", driving_rows),
        mock.patch.object(vectorized, "POLARS_IMPORT_ROWS", 0),
    ):
        _check("local", generated)
