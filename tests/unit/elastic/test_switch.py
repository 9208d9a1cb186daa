"""The elastic switch's policy (`reasoner.elastic.switch`): when Update's work is kept, when
the epoch falls back to a Bootstrap, and what always propagates."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from reasoner.elastic.switch import (
    BULK_MIN_FACTS,
    attempt_update,
    bulk_load,
    update_deadline,
    update_seconds,
)
from reasoner.support.deadline import BootstrapCancelled, DeadlineExceeded, MemoryBudgetExceeded


def test_a_bulk_load_is_large_in_itself_and_against_the_facts_held() -> None:
    assert bulk_load(BULK_MIN_FACTS, 0)
    assert bulk_load(BULK_MIN_FACTS, 4 * BULK_MIN_FACTS)
    assert not bulk_load(BULK_MIN_FACTS - 1, 0)
    assert not bulk_load(BULK_MIN_FACTS, 4 * BULK_MIN_FACTS + 4)


def test_the_deadline_is_the_switching_parameter_times_the_last_bootstrap() -> None:
    assert update_seconds(0.2, 10.0, 0.5) == pytest.approx(2.0)
    assert update_seconds(0.2, 1.0, 0.5) == 0.5  # the floor


def test_a_forced_update_has_no_bounds_but_the_callers() -> None:
    calls: list[str] = []
    forced = update_deadline("update", 0.0, 0.0, lambda: calls.append("check"), lambda: 1)
    assert (forced.at, forced.memory) == (None, 0)
    forced.check()
    assert calls == ["check"]
    start = time.perf_counter()
    switched = update_deadline("auto", start, 2.0, None, lambda: 123)
    assert (switched.at, switched.memory) == (start + 2.0, 123)


def _raising(error: BaseException) -> Callable[[], int]:
    def update() -> int:
        raise error

    return update


@pytest.mark.parametrize(
    ("error", "reason"),
    [(DeadlineExceeded(), "deadline"), (MemoryBudgetExceeded(), "memory"), (KeyError(), None)],
)
def test_past_its_bounds_or_failing_an_update_is_discarded_for_a_bootstrap(
    error: Exception, reason: str | None
) -> None:
    discarded: list[bool] = []
    attempt = attempt_update("auto", _raising(error), lambda: discarded.append(True))
    assert attempt.outcome is None
    assert attempt.fallback_reason == (reason or "update failed")
    assert discarded == [True]


@pytest.mark.parametrize(
    ("strategy", "error"),
    [
        ("auto", BootstrapCancelled("timeout")),
        ("update", KeyError()),
        ("auto", KeyboardInterrupt()),
    ],
)
def test_cancellations_and_forced_failures_propagate_after_the_discard(
    strategy: str, error: BaseException
) -> None:
    discarded: list[bool] = []
    with pytest.raises(type(error)):
        attempt_update(strategy, _raising(error), lambda: discarded.append(True))
    assert discarded == [True]


def test_a_finished_update_is_kept() -> None:
    attempt = attempt_update("auto", lambda: 7, lambda: pytest.fail("discarded"))
    assert (attempt.outcome, attempt.fallback_reason) == (7, None)
