"""A Spark Bootstrap stops soon after its deadline or its cancellation, in the middle of a job
(a warm session, as the service's is after its first Bootstrap).

The program's one rule is a cartesian product: 16 million derivations, one Spark job that runs
far longer than the deadline. The same holds for a decomposed recursion, whose one job's
Python tasks run a whole fixpoint each: the transitive closure of a long chain. The watcher
of `CancellableJobs` cancels the job group, and the caller gets the same `BootstrapCancelled`
as from an in-process run; the session stays usable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from reasoner.analysis import check_program
from reasoner.executors.engines import DEFAULT_SPARK_ITERATION
from reasoner.executors.spark import bootstrap as spark_bootstrap
from reasoner.executors.spark import bootstrap_spark
from reasoner.support.deadline import BootstrapCancelled, Cancellation
from service.core.epoch_budget import EpochBudget
from tests.spark.support import assert_same, initial_state, on_spark, reference

EXPLODING = """.decl e(x: number, y: number)
big(a, b, c, d) :- e(a, b), e(c, d).
"""
EDGES = {"e": [(i, i + 1) for i in range(4000)]}
STOPS_WITHIN = 5.0
"""Seconds from the deadline or the cancellation to `BootstrapCancelled`: the watcher polls
every 50 ms, then Spark interrupts the job's tasks. On a quiet machine this takes well under a
second; CI runs these tests beside the rest of the suite and Docker builds, on two cores, and
once took 2.3 s. The cartesian job left to run takes more than 25 s (and then exhausts the
test session's 1 GB heap), so a stop within this bound is still a stop in the middle of it."""
SMALL = """.decl e(x: number, y: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
"""


def _stopped_after(
    session: SparkSession,
    arm: Callable[[], Callable[[], None]],
    program: str = EXPLODING,
    small_iteration: int = DEFAULT_SPARK_ITERATION,
) -> tuple[float, str]:
    """Seconds until the long Bootstrap raised `BootstrapCancelled`, and its reason. The
    same query over a few edges runs first: a cold session spends its first seconds planning
    and generating code in the driver, before any job exists to cancel. `arm` starts the
    deadline or the timer and gives the check, once that warm-up is done."""
    analyzed = check_program(program)
    few = {"e": EDGES["e"][:10]}
    assert_same(reference(analyzed, few), on_spark(analyzed, few, session))
    state, symbols = initial_state(analyzed, EDGES)
    check = arm()
    start = time.monotonic()
    with pytest.raises(BootstrapCancelled) as raised:
        bootstrap_spark(analyzed, state, symbols, session, check, small_iteration)
    return time.monotonic() - start, str(raised.value)


def _still_usable(session: SparkSession) -> None:
    analyzed = check_program(SMALL)
    inputs = {"e": [(i, i + 1) for i in range(20)]}
    assert_same(reference(analyzed, inputs), on_spark(analyzed, inputs, session))


def test_an_epoch_deadline_stops_a_spark_bootstrap_mid_job(
    spark: SparkSession,
) -> None:
    # The service's epoch budget, its deadline alone.
    seconds, reason = _stopped_after(spark, lambda: EpochBudget(1.0, None).check)
    assert "deadline" in reason
    assert 0.9 <= seconds < 1.0 + STOPS_WITHIN  # armed just before the run began
    _still_usable(spark)


def test_an_epoch_deadline_stops_a_decomposed_recursion_mid_job(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closure of a 4,000-node chain (8 million tuples) in one decomposed job (every
    iteration on Spark: on the kernel, the chain's small iterations would stay in process).
    The deadline is armed as that job starts: armed before the Bootstrap, it could expire in
    the plain jobs of the first iteration on a slow machine, before any decomposed job
    existed to cancel, and the test would check nothing of it."""
    starts: list[int] = []
    armed: list[tuple[EpochBudget, float]] = []
    run = spark_bootstrap.run_decomposed

    def recorded(*args: object) -> tuple[int, int]:
        starts.append(args[6])  # type: ignore[arg-type]  (the first iteration it runs)
        if len(starts) == 2:  # the cancelled run's (the first is the warm-up's)
            armed.append((EpochBudget(1.0, None), time.monotonic()))
        return run(*args)  # type: ignore[arg-type]

    def check() -> None:
        if armed:
            armed[0][0].check()

    monkeypatch.setattr(spark_bootstrap, "run_decomposed", recorded)
    _, reason = _stopped_after(spark, lambda: check, SMALL, 0)
    seconds = time.monotonic() - armed[0][1]
    assert starts == [2, 2]
    assert "deadline" in reason
    assert 0.9 <= seconds < 1.0 + STOPS_WITHIN
    _still_usable(spark)


def test_another_thread_cancels_a_spark_bootstrap(spark: SparkSession) -> None:
    cancellation = Cancellation()
    timer = threading.Timer(1.0, cancellation.cancel, args=("client went away",))

    def arm() -> Callable[[], None]:
        timer.start()
        return cancellation.check

    try:
        seconds, reason = _stopped_after(spark, arm)
    finally:
        timer.cancel()
    assert reason == "client went away"
    assert 0.9 <= seconds < 1.0 + STOPS_WITHIN  # armed just before the run began
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
