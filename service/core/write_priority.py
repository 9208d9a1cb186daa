"""Writes first: a relation read or query that starts while a write is being handled waits
for it, for a bounded time.

Readers and the writer share one interpreter lock and, on a small machine, its cores: two
clients reading pages without pause made a one-fact write 5-7 times slower than idle (its
engine work is a millisecond; the rest is the request's turns at the lock and the CPU,
behind the readers'). A read that waits for a write of a few milliseconds costs the read
that much and gives the write the machine; a read that meets a long write (a Bootstrap)
waits `YIELD_SECONDS` and then reads the published epoch, as it would have. Reads already
running are not stopped: a write waits for at most the pages being made.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

YIELD_SECONDS = 0.1
"""The longest a read waits for the writes in progress when it starts."""
READ_PATHS = ("/v1/query", "/v1/query/export")
"""Requests with a body that only read (a query is too long and structured for a URL): they
yield to writes, and the read token opens them (`service.api.security`). A named store's are
the same under its prefix (`store_path`)."""
STORE_PREFIX = "/v1/stores/"


def store_path(path: str) -> tuple[str | None, str]:
    """The data store a request's path is about (None: the default store), and the path as
    the default store's: `/v1/stores/a/query` is store `a`'s `/v1/query`. The stores' own
    routes (`/v1/stores`, `/v1/stores/a`) are the default store's."""
    if not path.startswith(STORE_PREFIX):
        return None, path
    name, slash, rest = path[len(STORE_PREFIX) :].partition("/")
    if not slash:
        return None, path
    return name, "/v1/" + rest


class WritePriority:
    """Counts the writes in progress; reads wait (`yield_to_writes`) while there are any.
    The count changes on the event loop (`WritesFirst`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._idle = threading.Event()
        self._idle.set()
        self._done = asyncio.Event()
        """Set on the event loop when the last write in progress ends (`after_writes`)."""

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._lock:
            self._active += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if not self._active:
                    self._idle.set()
                    self._done.set()

    @property
    def busy(self) -> bool:
        """Whether a write is in progress."""
        return not self._idle.is_set()

    async def after_writes(self) -> None:
        """On the event loop: wait until no write is in progress, or `YIELD_SECONDS` (for
        work of the loop's own that can wait: a live feed catching up)."""
        if not self.busy:
            return
        if self._done.is_set():  # the first to wait for these writes: one timer for all
            self._done = asyncio.Event()
            asyncio.get_running_loop().call_later(YIELD_SECONDS, self._done.set)
        await self._done.wait()

    def yield_to_writes(self) -> None:
        """Wait (blocking this thread, not holding the interpreter lock) until no write is in
        progress, or `YIELD_SECONDS`."""
        self._idle.wait(YIELD_SECONDS)


class WritesFirst:
    """ASGI middleware: a write request (any method but GET and HEAD, except the read-only
    `READ_PATHS`) counts as in progress in its data store from its first byte to its last
    (`priority_of` a store's name, None: the default store; None for a store that does not
    exist, whose requests are refused)."""

    def __init__(
        self, app: ASGIApp, priority_of: Callable[[str | None], WritePriority | None]
    ) -> None:
        self.app = app
        self.priority_of = priority_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        store, path = store_path(scope["path"])
        if path in READ_PATHS or path.startswith(STORE_PREFIX):  # a store made or dropped
            priority = None
        else:
            priority = self.priority_of(store)
        if priority is None:
            await self.app(scope, receive, send)
            return
        with priority.writing():
            await self.app(scope, receive, send)
