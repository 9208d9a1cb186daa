"""Reads first across data stores: a long evaluation in one store lets the reads of the
others go first, for at most half of its time.

Stores share one interpreter lock. A write that evaluates for a minute in one store holds it
but for the switch interval (`service.server.SWITCH_INTERVAL_SECONDS`) whenever another thread
asks for it, so another store's read of a few milliseconds, which asks for it at each step (the
event loop, the worker thread), ran at half speed or less beside it: 8-10 ms median and 24-39 ms
at the 99th percentile against 3-5 ms alone. An evaluation therefore pauses at its budget's
checks while reads are being evaluated in other stores (`ReadsElsewhere.pause`), releasing the
lock to them, but never for more than `SHARE` of its own time so far: a stream of reads slows a
long write by at most half and never stops it. Reads of its own store are not waited for: there
reads wait for writes (`service.core.write_priority`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SHARE = 0.5
"""The most of an evaluation's time it may spend letting other stores' reads go first."""
LONGEST_PAUSE = 0.005
"""The longest one pause: then the evaluation goes on until its next check."""
POLL = 0.0002
"""How often a pausing evaluation looks whether the reads are done."""


class ReadCount:
    """Reads being evaluated (in one store, or in all of them)."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


class ReadsElsewhere:
    """One store's reads being evaluated, and every store's (`everyone`, shared by them)."""

    def __init__(self, everyone: ReadCount | None = None) -> None:
        self.everyone = everyone if everyone is not None else ReadCount()
        self.own = ReadCount()

    @contextmanager
    def reading(self) -> Iterator[None]:
        self.own.add(1)
        self.everyone.add(1)
        try:
            yield
        finally:
            self.everyone.add(-1)
            self.own.add(-1)

    def busy(self) -> bool:
        """Whether reads are being evaluated in another store (a guess: the two counts are
        read one after the other)."""
        return self.everyone.value > self.own.value

    def pause(self) -> Callable[[], float]:
        """The pause of one evaluation starting now, for its budget's checks: it answers the
        seconds it paused (which its budget adds to its deadline)."""
        started = time.monotonic()
        waited = 0.0

        def pause() -> float:
            nonlocal waited
            if not self.busy():
                return 0.0
            now = time.monotonic()
            if waited >= SHARE * (now - started):
                return 0.0
            end = now + LONGEST_PAUSE
            while self.busy() and time.monotonic() < end:
                time.sleep(POLL)  # releases the interpreter lock to the reads
            paused = time.monotonic() - now
            waited += paused
            return paused

        return pause
