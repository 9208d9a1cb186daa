"""The single writer thread: every write is a job run one at a time, in arrival order.

One thread makes writes serial without a lock around the engine: a write is validated,
evaluated, committed and published before the next begins (`service.core.runtime`). A job
waiting in the queue can be taken out again when its client leaves (`WriteAbandoned`): a write
nobody waits for is never applied behind the client's back; one that has started runs to its
end, all or nothing. The queue's length is a metric (`/metrics`, `reasoner_queue_length`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger("service")
T = TypeVar("T")

DISCONNECT_POLL_SECONDS = 0.2
"""How often a queued write checks that its client is still there."""


class WriteAbandoned(Exception):
    """The client of a queued write disconnected before the write started: it was dropped."""


class Writer:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reasoner-writer")
        self._lock = threading.Lock()
        self._queued = 0

    @property
    def queue_length(self) -> int:
        """The jobs submitted and not finished (the one running included)."""
        return self._queued

    def submit(self, job: Callable[..., T], *args: Any) -> Future[T]:
        """Queue `job(*args)` behind every job submitted before it, counted as queued."""
        with self._lock:
            self._queued += 1

        def run() -> T:
            try:
                return job(*args)
            finally:
                with self._lock:
                    self._queued -= 1

        future = self._pool.submit(run)

        def forget_if_cancelled(done: Future[T]) -> None:
            if done.cancelled():  # never ran, so `run` did not count it out
                with self._lock:
                    self._queued -= 1

        future.add_done_callback(forget_if_cancelled)
        return future

    def after(self, job: Callable[..., T], *args: Any) -> Future[T]:
        """Queue work that follows a write (its report's row), not counted as a write."""
        return self._pool.submit(job, *args)

    async def write(
        self,
        job: Callable[..., T],
        *args: Any,
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> T:
        """Run `job` on the writer thread, after every job submitted before it.

        While the job waits in the queue, `disconnected` is polled: a client that gave up
        takes its write out of the queue (`WriteAbandoned`). A job that has started runs to
        its end (it is all or nothing)."""
        future = self.submit(job, *args)
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

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the thread."""
        self._pool.shutdown(wait=True)
