"""Catching up on the live feed from the store, inside a budget of its own.

A client behind the ring of the latest epochs (`since=-1`, an old `Last-Event-ID`) reads
the history in slices: at most `SLICE_ROWS` rows and `SLICE_EPOCHS` epochs each, read and
rendered on a worker thread, at most `concurrency` at once. The others wait their turn on the
event loop, holding no worker thread, no database connection and no rows. Each client holds
at most one rendered slice, which it hands to its transport before it asks for the next.
Without the budget, 250 clients read 50,000-row pages at once on every worker thread the
reads also need: reads stalled for 17-42 s, writes (waiting for a connection) for 25 s.

A slice is named by where it starts and the relations followed, and one client's slice
serves every client that reaches the same place while it is kept (clients that connect
together move through the history together), so a crowd costs the store and the CPU about
what one client does. The slices kept are forgotten when nobody is catching up.

A slice ends at an epoch's end, unless it holds only part of one epoch: that part goes as
an id-less `part` event (the feed's form for an epoch of more than `SLICE_ROWS` rows) and
the next slice starts where it stopped. The rows of an epoch a slice only began are left to
the next slice, which reads them again from the epoch's start.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi.concurrency import run_in_threadpool

from service.feed.events import Expired, Follows, epoch_data, message
from service.store.change_pages import ChangeItem, ChangePosition
from service.store.repository import Store

SLICE_ROWS = 10_000
"""Rows one slice reads at most (and one `part` event holds)."""
SLICE_EPOCHS = 10_000
"""Epochs one slice covers at most (an empty epoch is still an event)."""
T = TypeVar("T")

KEPT_BYTES = 32 << 20
"""Rendered slices kept for the clients that follow, at most (the least recent go first)."""


@dataclass(frozen=True, slots=True)
class Slice:
    data: bytes
    """The events."""
    reach: int
    """The last epoch whose rows it holds (all of them, or a part's)."""
    next: ChangePosition
    """Where the history goes on."""


class CatchUp:
    """The budget of the clients reading the history (one per process, on the event loop)."""

    def __init__(self, concurrency: int, yield_to_writes: Callable[[], None]) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self._yield = yield_to_writes
        self._kept: OrderedDict[tuple[ChangePosition, Follows], asyncio.Future[Slice]] = (
            OrderedDict()
        )
        self._kept_bytes = 0
        self._readers = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A client catching up, from the ring or the store: the slices are kept while
        there is one (a client between two runs of the store must find them)."""
        self._readers += 1
        try:
            yield
        finally:
            self._readers -= 1
            if not self._readers:
                self.forget()

    async def events(
        self, store: Store, epoch: int, through: int, follows: Follows
    ) -> AsyncIterator[bytes]:
        """The events of epochs `epoch` to `through` from the store, slice by slice."""
        position = ChangePosition(epoch)
        while position.epoch <= through:
            piece = await self._slice(store, position, through, follows)
            position = piece.next
            yield piece.data

    def forget(self) -> None:
        """Drop the slices kept (nobody is catching up, or the history changed)."""
        self._kept.clear()
        self._kept_bytes = 0

    async def _slice(
        self, store: Store, position: ChangePosition, through: int, follows: Follows
    ) -> Slice:
        """The slice at `position` that ends by `through`: the one kept, else read now."""
        key = (position, follows)
        while True:
            kept = self._kept.get(key)
            if kept is None:
                break
            self._kept.move_to_end(key)
            await asyncio.wait([kept])  # not cancelled with its reader's client
            if kept.cancelled():  # its reader left before reading it: read it here
                continue
            piece = kept.result()
            if piece.reach <= through:
                return piece
            return await self._read(store, position, through, follows)
        future: asyncio.Future[Slice] = asyncio.get_running_loop().create_future()
        self._kept[key] = future
        try:
            piece = await self._read(store, position, through, follows)
        except BaseException as exc:
            if self._kept.get(key) is future:
                del self._kept[key]
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved: whoever waits for it raises it
            raise
        future.set_result(piece)
        if self._kept.get(key) is future:
            self._kept_bytes += len(piece.data)
            self._evict()
        return piece

    def _evict(self) -> None:
        while self._kept_bytes > KEPT_BYTES:
            for key, future in self._kept.items():
                if future.done():
                    del self._kept[key]
                    self._kept_bytes -= len(future.result().data)
                    break
            else:
                return

    async def _read(
        self, store: Store, position: ChangePosition, through: int, follows: Follows
    ) -> Slice:
        return await self.run(_read_slice, store, position, through, follows, self._yield)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` on a worker thread, in the budget (for an epoch of the ring too
        large to render on the loop)."""
        async with self._slots:
            return await run_in_threadpool(work, *args)


def _read_slice(
    store: Store,
    start: ChangePosition,
    through: int,
    follows: Follows,
    yield_to_writes: Callable[[], None],
) -> Slice:
    """Read and render the slice at `start` (on a worker thread, after the writes in
    progress); raises `Expired` when the store no longer keeps it."""
    yield_to_writes()
    stop = min(through, start.epoch + SLICE_EPOCHS - 1)
    names = None if follows is None else sorted(follows)
    page = store.change_page(start, stop, names, SLICE_ROWS)
    if page.horizon >= start.epoch:
        raise Expired(page.horizon)
    items = page.items
    if page.next is None:
        end, following = stop, ChangePosition(stop + 1)
    elif page.next.epoch == start.epoch:  # all of it is part of one epoch
        return Slice(message("part", epoch_data(start.epoch, items)), start.epoch, page.next)
    else:  # the rows of the epoch it began go with the next slice
        end, following = page.next.epoch - 1, ChangePosition(page.next.epoch)
    by_epoch: dict[int, list[ChangeItem]] = {}
    for item in items:
        if item.epoch <= end:
            by_epoch.setdefault(item.epoch, []).append(item)
    data = b"".join(
        message("epoch", epoch_data(epoch, by_epoch.get(epoch, [])), epoch)
        for epoch in range(start.epoch, end + 1)
    )
    return Slice(data, end, following)
