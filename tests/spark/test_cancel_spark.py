"""A Spark Bootstrap stops soon after its deadline or its cancellation, in the middle of a job
(a warm session, as the service's is after its first Bootstrap).

The program's one rule is a cartesian product: 16 million derivations, one Spark job that runs
far longer than the deadline. The watcher of `CancellableJobs` cancels the job group, and the
caller gets the same `BootstrapCancelled` as from an in-process run; the session stays usable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from reasoner.analysis import check_program
from reasoner.elastic.bootstrap import BootstrapCancelled, Cancellation
from reasoner.executors.spark import bootstrap_spark
from service.epoch_budget import EpochBudget
from tests.spark.support import assert_same, initial_state, on_spark, reference

EXPLODING = """.decl e(x: number, y: number)
big(a, b, c, d) :- e(a, b), e(c, d).
"""
EDGES = {"e": [(i, i + 1) for i in range(4000)]}
SMALL = """.decl e(x: number, y: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
"""


def _stopped_after(session: SparkSession, check: Callable[[], None]) -> tuple[float, str]:
    """Seconds until the exploding Bootstrap raised `BootstrapCancelled`, and its reason. The
    same query over a few edges runs first: a cold session spends its first seconds planning
    and generating code in the driver, before any job exists to cancel."""
    analyzed = check_program(EXPLODING)
    few = {"e": EDGES["e"][:10]}
    assert_same(reference(analyzed, few), on_spark(analyzed, few, session))
    state, symbols = initial_state(analyzed, EDGES)
    start = time.monotonic()
    with pytest.raises(BootstrapCancelled) as raised:
        bootstrap_spark(analyzed, state, symbols, session, check)
    return time.monotonic() - start, str(raised.value)


def _still_usable(session: SparkSession) -> None:
    analyzed = check_program(SMALL)
    inputs = {"e": [(i, i + 1) for i in range(20)]}
    assert_same(reference(analyzed, inputs), on_spark(analyzed, inputs, session))


def test_an_epoch_deadline_stops_a_spark_bootstrap_within_two_seconds(
    spark: SparkSession,
) -> None:
    budget = EpochBudget(1.0, None)  # the service's epoch budget, its deadline alone
    seconds, reason = _stopped_after(spark, budget.check)
    assert "deadline" in reason
    assert seconds < 1.0 + 2.0
    _still_usable(spark)


def test_another_thread_cancels_a_spark_bootstrap(spark: SparkSession) -> None:
    cancellation = Cancellation()
    timer = threading.Timer(1.0, cancellation.cancel, args=("client went away",))
    timer.start()
    try:
        seconds, reason = _stopped_after(spark, cancellation.check)
    finally:
        timer.cancel()
    assert reason == "client went away"
    assert seconds < 1.0 + 2.0
    _still_usable(spark)


def test_a_check_that_never_fires_changes_nothing(spark: SparkSession) -> None:
    analyzed = check_program(SMALL)
    inputs = {"e": [(i, (i * 7) % 30) for i in range(30)]}
    state, symbols = initial_state(analyzed, inputs)
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1

    bootstrap_spark(analyzed, state, symbols, spark, check)
    expected = reference(analyzed, inputs)
    decode = symbols.decoder(analyzed.relations["tc"].types)
    assert {decode(t): v for t, v in state["tc"].snapshot().items()} == expected.snapshot["tc"]
    assert calls > 0
