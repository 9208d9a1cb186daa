"""The budget of one evaluation: a deadline and a memory allowance, checked cooperatively.

Every write is evaluated before it is committed, so a program that never terminates (`n(x+1)
:- n(x).`) or explodes (a cartesian product over large relations, a string doubled by `cat`)
must be stopped by the service, not by the kernel's OOM killer. Two ways in:

- the engine calls `check` between pieces of work (iterations, slices of a join's driving
  rows, Update enumerations), where the deadline is tested and resident memory sampled: the
  one figure that covers every executor (Python objects, Polars' and Arrow's buffers) and that
  the OOM killer itself looks at;
- the steps whose allocation their operands size (a functor's string, a packed record) charge
  it before making it (`reasoner.support.allocations`): one `cat` can double a string of hundreds of
  MB between two checks, so the charge is added to the last sample, and the budget refuses
  the allocation that would take the process past its limit before it is made.

The limit is a ceiling, not a growth from wherever the process happens to be: every evaluation
is measured against one baseline (`MemoryAllowance`), the process's resident memory once the
committed state was last published (its fixed cost plus that state). A refused write that left
memory behind therefore leaves less room to the next, instead of raising the floor for it; and
after a refusal the freed memory is handed back to the system (`release`).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reasoner import BootstrapCancelled, Cancellation, give_back_memory

log = logging.getLogger("service")

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_STATM = Path("/proc/self/statm")
MEMORY_SAMPLE_SECONDS = 0.02
"""Resident memory is read at most this often by `check`: it is called far more often than
that (a charge that would cross the limit reads it at once)."""
CAP_SHARE = 0.9
"""Share of the machine's (or container's) memory past which a process refuses new writes
(503, `Retry-After`) instead of evaluating them, and past which no evaluation may grow."""


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
    """A `check` for one evaluation, `Cancellation`'s deadline plus a memory limit, and the
    `charge` its allocations are counted against (`reasoner.support.allocations.Meter`)."""

    def __init__(
        self,
        seconds: float | None,
        memory_bytes: int | None,
        limit: int | None = None,
        pause: Callable[[], float] | None = None,
    ) -> None:
        self.cancellation = Cancellation(seconds)
        self._pause = pause
        """Called at each check: the evaluation lets other stores' reads go first
        (`service.core.other_stores`), and its deadline moves by the time it let them."""
        self.memory_bytes = memory_bytes
        """The allowance, as the refusal states it."""
        self._limit = limit
        """Resident bytes past which the evaluation is refused; None: no limit."""
        self._sampled = (resident_bytes() or 0) if limit is not None else 0
        """Resident bytes at the last sample."""
        self._charged = 0
        """Bytes charged since the last sample, which it may not show yet."""
        self._next_sample = 0.0

    def check(self) -> None:
        if self._pause is not None:
            paused = self._pause()
            if paused and self.cancellation.deadline is not None:
                self.cancellation.deadline += paused
        self.cancellation.check()
        if self._limit is None:
            return
        now = time.monotonic()
        if now < self._next_sample:
            return
        self._next_sample = now + MEMORY_SAMPLE_SECONDS
        self._sample(0)

    def charge(self, size: int) -> None:
        """Refuse an allocation of `size` bytes that would take the process past its limit;
        a charge that only may do so reads resident memory again (what was charged since the
        last sample may be freed already, or interned symbols that were there)."""
        if self._limit is None:
            return
        self._charged += size
        if self._sampled + self._charged > self._limit:
            self._sample(size)

    def _sample(self, pending: int) -> None:
        resident = resident_bytes()
        if resident is None:
            return
        self._sampled, self._charged = resident, pending
        assert self._limit is not None
        if resident + pending > self._limit:
            raise EpochTooLarge(
                f"the evaluation would grow the process past its allowance of "
                f"{(self.memory_bytes or 0) >> 20} MiB"
            )


class Baseline:
    """The process's resident memory once the committed state was last published, shared by
    the allowances of every data store of the process: they share one heap, so the state one
    store commits is part of every store's baseline, not growth charged to the next write of
    another. It also counts the evaluations running: one that starts while another store's
    runs is measured from the memory in use when it starts, so that the other's transient is
    not charged to it either (`MemoryAllowance.evaluation`)."""

    def __init__(self) -> None:
        self.bytes = resident_bytes()
        self.running = 0
        self._lock = threading.Lock()

    def count(self, n: int) -> None:
        with self._lock:
            self.running += n


class MemoryAllowance:
    """The memory limit of every evaluation, from one baseline.

    The baseline is the resident memory once the committed state was published (`settle`, after
    start-up and after each commit), lowered whenever the process is found below it: what a
    refused write leaves behind counts against the next, so no sequence of refusals can take
    the process past `baseline + allowance`. The limit never passes `CAP_SHARE` of the machine,
    and a process already there refuses new writes before evaluating them (`over_cap`)."""

    def __init__(
        self, allowance: int, cap: int | None = None, baseline: Baseline | None = None
    ) -> None:
        self.allowance = allowance
        self.machine_cap = int(CAP_SHARE * machine_memory_bytes())
        """Resident bytes past which no evaluation may grow, the start-up rebuild's included."""
        self.cap = self.machine_cap if cap is None else cap
        """Resident bytes past which no write is evaluated: `CAP_SHARE` of the machine unless
        the operator set it (a process that shares its machine with a database or Spark)."""
        self._baseline = baseline if baseline is not None else Baseline()

    @property
    def baseline(self) -> int | None:
        return self._baseline.bytes

    @baseline.setter
    def baseline(self, value: int | None) -> None:
        self._baseline.bytes = value

    def settle(self) -> None:
        """The published state changed (start-up, a commit): measure the baseline again."""
        self.baseline = resident_bytes()

    def over_cap(self) -> bool:
        """Whether the process already holds its share of the machine: no write may start."""
        resident = resident_bytes()
        return resident is not None and resident >= self.cap

    @contextmanager
    def evaluation(
        self,
        seconds: float | None,
        *,
        rebuilding: bool = False,
        pause: Callable[[], float] | None = None,
    ) -> Iterator[EpochBudget]:
        """The budget of an evaluation starting now, `seconds` and the memory limit, counted
        as running while the block runs. A rebuild restores what was committed: only the
        machine's share bounds it, so a cap set below the committed state stops new writes but
        never quarantines a program."""
        resident = resident_bytes()
        if resident is None or self.baseline is None:
            budget = EpochBudget(seconds, self.allowance, pause=pause)
        else:
            self.baseline = min(self.baseline, resident)
            # Another store's evaluation holds memory that is neither committed nor this one's.
            floor = resident if self._baseline.running else self.baseline
            cap = self.machine_cap if rebuilding else self.cap
            budget = EpochBudget(seconds, self.allowance, min(cap, floor + self.allowance), pause)
        self._baseline.count(1)
        try:
            yield budget
        finally:
            self._baseline.count(-1)

    def others_running(self) -> bool:
        """Whether an evaluation runs in another store (called from within one's own)."""
        return self._baseline.running > 1

    def release(self) -> None:
        """After a refused evaluation: collect what it left in cycles and hand the freed heap
        back to the system (glibc keeps freed pages of its arenas otherwise)."""
        before = resident_bytes()
        gc.collect()
        give_back_memory()
        log.info(
            "after the refusal the process holds %s MiB (was %s MiB)",
            _mib(resident_bytes()),
            _mib(before),
        )


def _mib(size: int | None) -> str:
    return "?" if size is None else str(size >> 20)
