"""The bounds of an epoch's Update: its deadline, `switching parameter × last Bootstrap time`,
and the memory its own bookkeeping may take.

Past either, the Update is abandoned (its overlay dropped, nothing committed) and the epoch
falls back to a Bootstrap. The kernel checks both between slices of its work, so a run notices
them within milliseconds. The memory bound exists because an Update's bookkeeping grows with
the derivations it touches: on crdt.dl a 10-fact retraction deletes 34 million tuples, and the
Update's bookkeeping grew by 5.5 GB beside a 6 GB state before its deadline came, where a
Bootstrap needs about the state's size again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


class DeadlineExceeded(Exception):
    """Update ran past its deadline; the overlay is to be dropped."""

    reason = "deadline"
    """The epoch report's `fallback_reason`."""


class MemoryBudgetExceeded(DeadlineExceeded):
    """Update's bookkeeping outgrew `Deadline.memory`; the overlay is to be dropped."""

    reason = "memory"


@dataclass(slots=True)
class Deadline:
    at: float | None = None
    """`time.perf_counter()` past which `check` raises; None: never."""
    memory: int = 0
    """Bytes the Update's bookkeeping (its schedule, statuses and count changes) may take;
    past them the kernel raises `MemoryBudgetExceeded`. 0: no bound."""

    def check(self) -> None:
        if self.at is not None and time.perf_counter() > self.at:
            raise DeadlineExceeded
