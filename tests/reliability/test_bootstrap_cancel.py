"""Cooperative cancellation of Bootstrap: the reference (`StratumBootstrap.run(check)`) and the
vectorized executor (`bootstrap_vectorized(check=)`, here forced to Polars for every iteration).

Checking never changes the result (the driving rows are evaluated in slices, which is the same
join), and a Bootstrap whose rule is a cartesian product over a large relation stops soon after
its deadline or after another thread cancels it, instead of running for minutes.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from reasoner.analysis import check_program
from reasoner.executors.bootstrap import CHECK_INTERVAL, StratumBootstrap
from reasoner.executors.local.vectorized import bootstrap_vectorized
from reasoner.storage.state import State
from reasoner.support.deadline import BootstrapCancelled, Cancellation
from reasoner.support.lanes import lane_count
from reasoner.values.symbols import SymbolTable

pytestmark = pytest.mark.measures
"""It measures how soon a check follows the last (latency): it runs alone (`tests/stages.sh`)."""

PROGRAMS = {
    "recursive": """.decl e(x: number, y: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
odd(x, y) :- tc(x, y), !e(x, y), (x + y) % 2 = 1.
""",
    "no positive atom": """.decl e(x: number, y: number)
one(1) :- 1 < 2.
two(x, y) :- one(x), e(x, y).
""",
    "mutual": """.decl e(x: number, y: number)
a(x, y) :- e(x, y).
b(x, z) :- a(x, y), e(y, z).
a(x, z) :- b(x, y), e(y, z).
""",
}


EXECUTORS = ["reference", "polars"]


def _bootstrap(
    text: str, facts: dict[str, list[tuple]], check=None, executor: str = "reference"
) -> dict:
    analyzed = check_program(text)
    state = State()
    symbols = SymbolTable()
    arities = {name: info.arity for name, info in analyzed.relations.items()}
    for name, arity in arities.items():
        state.load_facts(name, arity, set(facts.get(name, ())))
    if executor == "polars":
        bootstrap_vectorized(analyzed, state, symbols, small_iteration=0, check=check)
    else:
        for stratum in analyzed.strata:
            StratumBootstrap(stratum, state, symbols, arities).run(check)
    return {name: state[name].snapshot() for name in arities}


def _edges(n: int, seed: int) -> list[tuple[int, int]]:
    import random

    rng = random.Random(seed)
    return sorted({(rng.randrange(n), rng.randrange(n)) for _ in range(3 * n)})


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_checking_does_not_change_the_state(name: str, executor: str) -> None:
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1

    facts = {"e": _edges(300, 7)}
    expected = _bootstrap(PROGRAMS[name], facts)
    assert _bootstrap(PROGRAMS[name], facts, check, executor) == expected
    assert calls > 0


EXPLODING = """.decl e(x: number, y: number)
big(a, b, c, d) :- e(a, b), e(c, d).
"""


def _exploding_facts(n: int = 3000) -> dict[str, list[tuple]]:
    return {"e": [(i, i + 1) for i in range(n)]}  # 9,000,000 derivations


class _Observed:
    """A run's checks, timed. The tests assert the mechanism that stops a run (checks between
    slices of the one large join, each lane's first check after the cancellation raising, that
    check one slice after the one before) rather than a wall-clock bound, which a loaded machine
    stretches: a fixed 3 s bound failed at 3.5 s in 3 runs of 11 beside other work."""

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check
        self.times: list[float] = []

    def __call__(self) -> None:
        self.times.append(time.monotonic())
        self._check()

    def assert_stopped_at_the_next_check(self, stop_at: float) -> None:
        before = [t for t in self.times if t < stop_at]
        after = [t for t in self.times if t >= stop_at]
        # The program is one iteration: checks before the stop came between slices of its join.
        assert len(before) >= 2, self.times
        # Each lane stops at its own next check: the product's heads fill the kernel's lanes
        # within a few rows, so its spans run there (`Enumerator.dense`).
        assert len(after) <= lane_count(), "checks after the cancellation did not stop the run"
        # The last slice ran past the stop. A slice has at most twice the rows of the one
        # before, so at most the rows of all earlier slices together, and a slice that grows the
        # derived relation's arrays copies at most what earlier slices wrote: the last slice's
        # time is bounded by about twice the time since the first check, whatever the load
        # (gaps alone are not a bound: 0.283 s after a largest earlier gap of 0.049 s in a CI
        # run, where one doubling's copy faulted its fresh pages in). Without the checks the
        # run would go on for about 15 s.
        gaps = [b - a for a, b in itertools.pairwise(before)]
        since_first = before[-1] - self.times[0]
        bound = max(2 * since_first, 4 * max(gaps)) + CHECK_INTERVAL
        assert self.times[-1] - before[-1] <= bound, self.times


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_deadline_stops_an_exploding_bootstrap(executor: str) -> None:
    facts = _exploding_facts()
    cancellation = Cancellation(0.3)
    observed = _Observed(cancellation.check)
    with pytest.raises(BootstrapCancelled, match="deadline"):
        _bootstrap(EXPLODING, facts, observed, executor)
    assert cancellation.deadline is not None
    observed.assert_stopped_at_the_next_check(cancellation.deadline)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_another_thread_cancels_a_bootstrap(executor: str) -> None:
    facts = _exploding_facts()
    cancellation = Cancellation()
    observed = _Observed(cancellation.check)
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.monotonic())
        cancellation.cancel("client went away")

    timer = threading.Timer(0.3, cancel)
    timer.start()
    try:
        with pytest.raises(BootstrapCancelled, match="client went away"):
            _bootstrap(EXPLODING, facts, observed, executor)
    finally:
        timer.cancel()
    assert cancellation.cancelled
    observed.assert_stopped_at_the_next_check(cancelled_at[0])


def test_a_caller_exception_propagates() -> None:
    class Stop(Exception):
        pass

    def check() -> None:
        raise Stop

    with pytest.raises(Stop):
        _bootstrap(PROGRAMS["recursive"], {"e": _edges(50, 1)}, check)
