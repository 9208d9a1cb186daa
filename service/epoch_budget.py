"""The budget of one evaluation: a deadline and a memory allowance, checked cooperatively.

Every write is evaluated before it is committed, so a program that never terminates (`n(x+1)
:- n(x).`) or explodes (a cartesian product over large relations) must be stopped by the
service, not by the kernel's OOM killer: the engine calls `check` between pieces of work
(iterations, slices of a join's driving rows, Update enumerations), and `EpochBudget.check`
raises there once the deadline has passed or the process has grown by more than its
allowance since the evaluation began. Growth is measured as resident memory, the one figure
that covers every executor (Python objects, Polars' and Arrow's buffers) and that the OOM
killer itself looks at.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from reasoner import BootstrapCancelled, Cancellation

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_STATM = Path("/proc/self/statm")
MEMORY_SAMPLE_SECONDS = 0.02
"""Resident memory is read at most this often: `check` is called far more often than that."""


class EpochTooLarge(BootstrapCancelled):
    """The evaluation grew the process past its memory allowance."""


def resident_bytes() -> int | None:
    """The process's resident set now (Linux), or None where /proc is not available."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


def machine_memory_bytes() -> int:
    """The memory this process may use: the cgroup's limit when there is one (a container),
    else the machine's physical memory."""
    physical = _PAGE_BYTES * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isascii() and text.isdigit():
            return min(physical, int(text))
    return physical


def default_memory_allowance() -> int:
    """Half the memory available to the process: room for a fallback Bootstrap, which builds
    the new state beside the old one."""
    return machine_memory_bytes() // 2


class EpochBudget:
    """A `check` for one evaluation: `Cancellation`'s deadline plus a memory allowance."""

    def __init__(self, seconds: float | None, memory_bytes: int | None) -> None:
        self.cancellation = Cancellation(seconds)
        self.memory_bytes = memory_bytes
        start = resident_bytes() if memory_bytes is not None else None
        self._limit = None if start is None or memory_bytes is None else start + memory_bytes
        self._next_sample = 0.0

    def check(self) -> None:
        self.cancellation.check()
        if self._limit is None:
            return
        now = time.monotonic()
        if now < self._next_sample:
            return
        self._next_sample = now + MEMORY_SAMPLE_SECONDS
        resident = resident_bytes()
        if resident is not None and resident > self._limit:
            assert self.memory_bytes is not None
            raise EpochTooLarge(
                f"the evaluation grew the process by more than {self.memory_bytes >> 20} MiB"
            )
