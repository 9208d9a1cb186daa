"""The single writer thread: every write is a job run one at a time, in arrival order.

One thread makes writes serial without a lock around the engine: a write is validated,
evaluated, committed and published before the next begins (`service.core.runtime`). A job
waiting in the queue can be taken out again when its client leaves (`WriteAbandoned`): a write
nobody waits for is never applied behind the client's back; one that has started (a member of a
group starts with its group) runs to its end, all or nothing. The queue's length is a metric
(`/metrics`, `reasoner_queue_length`).

Work that follows writes and is better done once for several (writing their reports to their
rows) waits until no job does (`when_idle`).

Group commit: jobs submitted as members of one group function (`submit_member`) that wait next
to each other at the head of the queue are taken together, up to `group_max`, and handed to it
in one call, which answers each (a value or an exception). Arrival order holds: a group is a
run of consecutive members, so no job overtakes one queued before it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger("service")
T = TypeVar("T")

DISCONNECT_POLL_SECONDS = 0.2
"""How often a queued write checks that its client is still there."""

Group = Callable[[Sequence[Any]], Sequence[Any]]
"""A function run on several queued members at once: per member, in order, its result or the
exception it raised (an instance of `BaseException`)."""


class WriteAbandoned(Exception):
    """The client of a queued write disconnected before the write started: it was dropped."""


@dataclass(frozen=True, slots=True)
class _Job:
    future: Future[Any]
    run: Callable[[], Any] | None
    """The job alone; None for a member of `group`."""
    group: Group | None = None
    member: Any = None
    counted: bool = True
    """A write (counted in the queue's length), not the work that follows one."""


class WriterClosed(RuntimeError):
    """A job submitted after `Writer.shutdown` (its data store was dropped meanwhile)."""


class Writer:
    def __init__(self, group_max: int = 1) -> None:
        self._group_max = group_max
        self._jobs: deque[_Job] = deque()
        self._changed = threading.Condition()
        self._queued = 0
        self._closing = False
        self._idle: dict[Callable[[], None], None] = {}
        """Work to run once no job is queued (`when_idle`), each once, in order."""
        self._thread = threading.Thread(target=self._loop, name="reasoner-writer", daemon=True)
        self._thread.start()

    @property
    def queue_length(self) -> int:
        """The jobs submitted and not finished (the ones running included)."""
        return self._queued

    def _enqueue(self, job: _Job) -> Future[Any]:
        with self._changed:
            if self._closing:
                raise WriterClosed("the writer is shut down")
            self._queued += job.counted
            self._jobs.append(job)
            self._changed.notify()
        return job.future

    def submit(self, job: Callable[..., T], *args: Any) -> Future[T]:
        """Queue `job(*args)` behind every job submitted before it, counted as queued."""
        return self._enqueue(_Job(Future(), lambda: job(*args)))

    def submit_member(self, group: Group, member: Any) -> Future[Any]:
        """Queue `member` of `group`: run with the members of `group` queued right behind it
        (`group([member, ...])`), or alone."""
        return self._enqueue(_Job(Future(), None, group, member))

    def after(self, job: Callable[..., T], *args: Any) -> Future[T]:
        """Queue work that follows a write (its report's row), not counted as a write."""
        return self._enqueue(_Job(Future(), lambda: job(*args), counted=False))

    def when_idle(self, job: Callable[[], None]) -> None:
        """Run `job` on the writer thread once no job waits (once, however often asked before
        it runs): work that follows writes and is better done once for several of them."""
        with self._changed:
            self._idle[job] = None
            self._changed.notify()

    async def write(
        self,
        job: Callable[..., T],
        *args: Any,
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> T:
        """Run `job` on the writer thread, after every job submitted before it (`await_job`)."""
        return await self.await_job(self.submit(job, *args), disconnected)

    async def await_job(
        self, future: Future[T], disconnected: Callable[[], Awaitable[bool]] | None = None
    ) -> T:
        """Wait for a queued job. While it waits in the queue, `disconnected` is polled: a
        client that gave up takes its write out of the queue (`WriteAbandoned`). A job that
        has started runs to its end (it is all or nothing)."""
        waiter = asyncio.wrap_future(future)
        if disconnected is None:
            return await waiter
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=DISCONNECT_POLL_SECONDS)
            if done:
                return waiter.result()
            if await disconnected() and future.cancel():
                log.info("a client disconnected before its write started: write dropped")
                raise WriteAbandoned()

    def _next(self) -> list[_Job] | None:
        """The next job, with the members of its group queued right behind it; None once shut
        down with nothing queued."""
        with self._changed:
            while not self._jobs:
                if self._idle:
                    idle = next(iter(self._idle))
                    del self._idle[idle]
                    return [_Job(Future(), idle, counted=False)]
                if self._closing:
                    return None
                self._changed.wait()
            taken = [self._jobs.popleft()]
            group = taken[0].group
            while (
                group is not None
                and self._jobs
                and self._jobs[0].group == group  # a bound method is made anew each time
                and len(taken) < self._group_max
            ):
                taken.append(self._jobs.popleft())
        return taken

    def _loop(self) -> None:
        while (taken := self._next()) is not None:
            running = [job for job in taken if job.future.set_running_or_notify_cancel()]
            try:
                if running:
                    _run(running)
            finally:
                with self._changed:
                    self._queued -= sum(job.counted for job in taken)

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()


def _run(jobs: list[_Job]) -> None:
    """Run one job, or one group's members, and settle their futures."""
    first = jobs[0]
    try:
        if first.run is not None:
            first.future.set_result(first.run())
            return
        assert first.group is not None
        outcomes = list(first.group([job.member for job in jobs]))
        if len(outcomes) != len(jobs):
            raise RuntimeError(f"a group of {len(jobs)} answered {len(outcomes)} of them")
    except BaseException as exc:  # the job's failure is its caller's answer
        if not first.counted:  # work after writes: nobody waits for its answer
            log.exception("work after the writes failed")
        for job in jobs:
            job.future.set_exception(exc)
        return
    for job, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            job.future.set_exception(outcome)
        else:
            job.future.set_result(outcome)
