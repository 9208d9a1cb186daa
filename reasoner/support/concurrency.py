"""A readers-writer lock whose writer holds the exclusive side only to publish an epoch, and
optimistic reads that hold no lock at all.

Update computes in an overlay and Bootstrap builds a new state off to the side, so the
committed state is only touched while an epoch is published (an overlay commit, a state
swap). Readers that take the shared side therefore wait at most for a publication, never for
an evaluation, and can never observe half an epoch. Writers are preferred so a stream of
readers cannot starve them.

A long read (a query evaluated for seconds) must not hold the shared side, though: a writer
waiting to publish would wait for it, and every reader arriving after the writer would wait
for both. `read_optimistically` runs such a read with no lock, seqlock style: the lock counts
publications (`version`, odd while one is in progress), and a read is kept only if no
publication began or ended while it ran; otherwise it is run again on the new epoch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

OPTIMISTIC_ATTEMPTS = 3
"""Lock-free attempts of a read before it takes the shared side (only under a stream of
publications that each land inside the read)."""


class ReadWriteLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self.version = 0
        """Publications begun plus publications ended: even when the state is one published
        epoch, odd while the exclusive side is held."""

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
            self.version += 1
        try:
            yield
        finally:
            with self._cond:
                self.version += 1
                self._writer = False
                self._cond.notify_all()

    def stable_version(self) -> int:
        """The version once no publication is in progress (waits for one that is, but not for
        writers still waiting to start theirs)."""
        with self._cond:
            while self._writer:
                self._cond.wait()
            return self.version


def read_optimistically(lock: ReadWriteLock, read: Callable[[], T]) -> T:
    """`read()` as of one published epoch, without holding `lock` while it runs.

    `read` must only read. It may fail or see a mixture of two epochs when a publication
    overlaps it; both are detected by the version having moved, and the read is repeated. An
    error raised while the version stood still is the read's own and propagates."""
    for _ in range(OPTIMISTIC_ATTEMPTS):
        version = lock.stable_version()
        try:
            result = read()
        except Exception:
            if lock.version != version:
                continue
            raise
        if lock.version == version:
            return result
    with lock.shared():
        return read()
