"""The budgets of an evaluation, in one place and on one clock: its deadlines, its cancellation
and the exceptions that stop it.

Nothing is ever killed mid-evaluation: every evaluation is stopped cooperatively, by a check
called between pieces of its work (an iteration, a slice of a join's driving rows, a few
hundred query candidates), and whatever it built off to the side is then dropped. Three
evaluations run under a budget, each with the exception that says what happens next:

- an epoch (a Bootstrap, or an Update with the Bootstrap it may fall back to) runs under a
  `Cancellation`: a deadline and a flag another thread may set. Past either it raises
  `BootstrapCancelled` and nothing changes. The service's `EpochBudget` adds a memory limit.
- an Update inside that epoch runs under a `Deadline`: `switching parameter × last Bootstrap
  time`, and a bound on the memory of its own bookkeeping. Past either it raises
  `DeadlineExceeded` (`MemoryBudgetExceeded`): the overlay is dropped and the epoch falls
  back to a Bootstrap (`reasoner.elastic.switch`). It polls the epoch's check first, so an
  epoch's timeout stops an Update as it stops a Bootstrap.
- a query runs under a deadline of its own; past it, `QueryTimeout` and no answer.

Every deadline is a point on `clock`, the one monotonic clock: wall-clock time may jump, and
a deadline computed on one clock and tested on another would be meaningless.

The memory bound of an Update exists because its bookkeeping grows with the derivations it
touches: on crdt.dl a 10-fact retraction deletes 34 million tuples, and the Update's
bookkeeping grew by 5.5 GB beside a 6 GB state before its deadline came, where a Bootstrap
needs about the state's size again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

clock = time.monotonic
"""The clock of every deadline (seconds, monotonic)."""

Check = Callable[[], None]
"""Called between pieces of work; raises to stop the evaluation."""


def unchecked() -> None:
    """The check of a run nobody can cancel."""


class Stopped(Exception):
    """An evaluation stopped by its budget; what it built is partial and is dropped."""


class BootstrapCancelled(Stopped):
    """An epoch was stopped by its `check` (its deadline passed, or it was cancelled); the
    state it was building is partial and must be discarded, and nothing changes."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class DeadlineExceeded(Stopped):
    """Update ran past its deadline: the epoch falls back, its overlay dropped, or (where that
    pays, `reasoner.elastic.strata_update`) the strata left are bootstrapped alone into it."""

    reason = "deadline"
    """The epoch report's `fallback_reason`."""


class MemoryBudgetExceeded(DeadlineExceeded):
    """Update's bookkeeping outgrew `Deadline.memory`; the overlay is to be dropped."""

    reason = "memory"


class QueryTimeout(Stopped):
    """The query did not finish before its deadline; nothing is returned."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"query exceeded its deadline of {seconds:g} s")


class Cancellation:
    """An epoch's `check`: a deadline (seconds from now, or none) and a flag another thread
    may set with `cancel`. Thread-safe; `check` is cheap enough to call often."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.deadline = None if seconds is None else clock() + seconds
        self._cancelled = threading.Event()
        self._reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self._reason = reason
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise BootstrapCancelled(self._reason or "cancelled")
        if self.deadline is not None and clock() > self.deadline:
            raise BootstrapCancelled(f"Bootstrap exceeded its deadline of {self.seconds:g} s")


@dataclass(slots=True)
class Deadline:
    """An Update's bounds, and the epoch's check it polls first."""

    at: float | None = None
    """The point on `clock` past which `check` raises; None: never."""
    memory: int = 0
    """Bytes the Update's bookkeeping (its schedule, statuses and count changes) may take;
    past them the kernel raises `MemoryBudgetExceeded`. 0: no bound."""
    epoch_check: Check | None = None
    """The enclosing epoch's check (it raises `BootstrapCancelled`), polled first."""
    judge: Check | None = None
    """Decides in place of `at` (the switch's forecast, `reasoner.elastic.forecast`): raises
    `DeadlineExceeded` when the Update should stop."""

    def extend(self, seconds: float) -> None:
        """Move the point past which `check` raises by `seconds` (work that does not count
        against the Update: a stratum finished in bulk)."""
        if self.at is not None:
            self.at += seconds

    def check(self) -> None:
        if self.epoch_check is not None:
            self.epoch_check()
        if self.judge is not None:
            self.judge()
        elif self.at is not None and clock() > self.at:
            raise DeadlineExceeded
