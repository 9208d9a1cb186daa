"""The live change feed: `GET /v1/changes` with `Accept: text/event-stream`.

A client names the last epoch it has seen (`since`, or `Last-Event-ID` when it reconnects);
the stream replays every later epoch from the store, then sends each new epoch as it is
published: one `epoch` event per epoch, even an empty one, with the epoch's number as its
id, so a client that reconnects with the last id it saw misses nothing and sees nothing
twice. An epoch of more rows than `PART_ROWS` first sends id-less `part` events; a client
cut off in the middle of an epoch resumes before it and drops the parts it holds.

The writer only appends to a ring of the latest epochs and wakes the event loop (O(1),
whatever the number of clients); each client is just the number of the last epoch it sent,
waiting on one event that every wake-up and every heartbeat sets: no timer per client.
Epochs of a few rows are kept in the ring in memory, rendered once for all the clients that
follow the same relations; larger ones, and epochs a client is behind on, are read from the
store, where each epoch's change set was committed with it (`service.core.change_sets`), in
bounded slices and a budget of their own (`service.feed.catch_up`). Who may open a stream
at all is `service.feed.admission`'s.

A client that is caught up, with nothing waiting in its transport, hands its socket to the
sender thread (`service.feed.sender`), which writes each wake-up's epochs to every such
socket at once, outside the interpreter lock (one rendering for each set of relations
followed); the client comes back to the loop when its socket falls behind, when an epoch is
too large to render on the loop, or when the server stops. That needs the connection's
transport, which `service.server`'s protocol puts in the request's scope (`TRANSPORT`);
without it every client goes through the loop.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING

from starlette.requests import Request

from reasoner import FactBatch
from service.feed.admission import ClientSlots, ConnectRate
from service.feed.catch_up import SLICE_ROWS, CatchUp
from service.feed.events import Expired, Follows, epoch_data, followed, message
from service.feed.sender import Sender
from service.problems import CHANGES_EXPIRED, Problem, problem_body
from service.settings import Settings
from service.store.change_pages import ChangeItem
from service.store.fact_log import ChangeChunk
from service.store.repository import Store

if TYPE_CHECKING:  # handed in by the runtime: the feed sits under the write path
    from service.core.write_priority import WritePriority

RING_EPOCHS = 64
"""The latest epochs the feed keeps in memory."""
CACHE_ROWS = 10_000
"""An epoch of more rows than this is read from the store by each client that sends it."""
PART_ROWS = SLICE_ROWS
"""Rows one event holds at most (a larger epoch is split into parts)."""
RETRY_MILLISECONDS = 2000
"""How long a client waits before it reconnects (the stream's `retry`)."""
WAKE_DELAY_SECONDS = 0.001
"""How long after a publication its clients are woken at the soonest."""
SEND_BYTES = 1 << 16
"""Events of a catch-up are sent together up to this size."""
RENDER_ON_LOOP_ROWS = 1000
"""Events of more rows than this are rendered on a worker thread, not the event loop."""
TRANSPORT = "reasoner.transport"
"""The scope extension that holds a request's transport (`service.server`)."""
PING = b": ping\n\n"


class Feed:
    """The epochs published, for the clients of the live feed (one per data store)."""

    def __init__(self, settings: Settings, priority: WritePriority) -> None:
        self.heartbeat = settings.feed_heartbeat_seconds
        """Seconds without an event after which every stream sends a ping."""
        self.batch = settings.feed_batch_milliseconds / 1000
        """Clients are woken at most this often (seconds): the epochs published meanwhile
        go in one send."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup = asyncio.Event()
        self._ring: OrderedDict[int, list[ChangeItem] | None] = OrderedDict()
        self._rendered: dict[int, dict[Follows, bytes]] = {}
        """The `epoch` event of epochs in the ring, for the relations a stream follows,
        rendered by the first client that sends it."""
        self._rendering: dict[tuple[int, Follows], asyncio.Future[bytes]] = {}
        """The events of the ring being rendered: the clients that want one meanwhile wait
        for it, instead of each rendering it too."""
        self.epoch: int | None = None
        """The last epoch published to the feed (None: none yet). Clients follow it, not the
        engine's: an epoch the ring was not told of yet would be read from the store, by
        every client at once."""
        self.clients = ClientSlots(settings.feed_max_clients)
        """The streams admitted (`service.feed.admission`): reserved as a request is accepted."""
        self.connects = ConnectRate(settings.feed_connects_per_second, settings.feed_connect_burst)
        """Each caller's connections (`service.feed.admission`)."""
        self._priority = priority
        """The writes in progress: a client catching up lets them pass before each send."""
        self._catch_up = CatchUp(settings.feed_catch_up_concurrency, priority.yield_to_writes)
        """The budget of the clients reading the history from the store."""
        self.closed = False
        self._wake_pending = False
        self._last_wake = float("-inf")
        self._beats = 0
        """Heartbeats so far: a stream woken by a new one, with nothing to send, pings."""
        self._sender: Sender[Follows] | None = None
        self._fanned: int | None = None
        """The epoch the sender's clients are at (or will be, once it has sent what it was
        given): a caught-up client joins them there."""

    # -- the writer's side ----------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the clients run on (publications before it are read from the
        store by the clients that need them)."""
        self._loop = loop
        self._last_wake = loop.time()
        self._sender = Sender(loop)
        loop.call_later(self.heartbeat, self._beat)

    def publish(self, epoch: int, items: list[ChangeItem] | None) -> None:
        """Epoch `epoch` is published, with its change set (None: read it from the store).
        Called from any thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._published, epoch, items)

    def close(self) -> None:
        """The server is stopping: every stream ends (with a `shutdown` event). Safe from a
        signal handler and from any thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._closed)

    def _published(self, epoch: int, items: list[ChangeItem] | None) -> None:
        if self.epoch is not None and epoch <= self.epoch:  # a rebuild publishes a number again
            self._catch_up.forget()
        self.epoch = epoch
        self._ring[epoch] = items
        self._ring.move_to_end(epoch)
        self._rendered.pop(epoch, None)  # a rebuild may publish a number again
        while len(self._ring) > RING_EPOCHS:
            oldest, _ = self._ring.popitem(last=False)
            self._rendered.pop(oldest, None)
        self._wake_soon()

    def _closed(self) -> None:
        self.closed = True
        self._wake()
        if self._sender is not None:
            self._sender.stop()  # after the last epochs: its clients end on the loop

    def _wake_soon(self) -> None:
        """Wake the clients now, or, within `batch` seconds of the last time, at its end:
        under a stream of writes each client then sends the epochs of the window at once,
        one send instead of one per epoch (what the event loop spends on sends, the writes
        it also serves wait for)."""
        assert self._loop is not None  # publications arrive through the loop
        if self._wake_pending:
            return
        delay = self._last_wake + self.batch - self._loop.time()
        self._wake_pending = True
        # Never at once: the answer to the write that published the epoch, resumed by the
        # writer's thread at the same moment, goes out before the events of its epoch.
        self._loop.call_later(max(delay, WAKE_DELAY_SECONDS), self._wake)

    def _beat(self) -> None:
        """Every `heartbeat` seconds without a wake-up, one that makes every stream ping:
        one timer for all of them."""
        if self.closed or self._loop is None:
            return
        now = self._loop.time()
        if now - self._last_wake >= self.heartbeat:
            self._beats += 1
            if self._sender is not None and self._sender.members:
                assert self._fanned is not None  # its clients joined there
                self._sender.send(dict.fromkeys(self._sender.groups(), _chunk(PING)), self._fanned)
            self._wake()
        self._loop.call_at(self._last_wake + self.heartbeat, self._beat)

    def _wake(self) -> None:
        self._wake_pending = False
        if self._loop is not None:
            self._last_wake = self._loop.time()
        self._fan_out()
        self._wakeup.set()
        self._wakeup = asyncio.Event()

    def _fan_out(self) -> None:
        """The epochs published since the last wake-up to the sender's clients, in one
        message; if one of them cannot be rendered here, the clients come back to the loop
        and read it each (as when they are behind)."""
        sender, epoch = self._sender, self.epoch
        if sender is None or epoch is None or (self._fanned is not None and epoch <= self._fanned):
            return
        if sender.members and self._fanned is not None:
            messages = {}
            for follows in sender.groups():
                events = self._shared_events(self._fanned, epoch, follows)
                if events is None:
                    sender.dissolve()
                    break
                messages[follows] = _chunk(events)
            else:
                sender.send(messages, epoch)
        self._fanned = epoch

    def _shared_events(self, after: int, through: int, follows: Follows) -> bytes | None:
        """The events of epochs `after` < epoch <= `through` for the relations `follows`, if
        the ring holds each and none is large enough to render on a worker thread."""
        events = []
        for epoch in range(after + 1, through + 1):
            event = self._rendered.get(epoch, {}).get(follows)
            if event is None:
                items = self._ring.get(epoch)
                if items is None or sum(len(i.rows) for i in items) > RENDER_ON_LOOP_ROWS:
                    return None
                event = message("epoch", epoch_data(epoch, followed(items, follows)), epoch)
                self._rendered.setdefault(epoch, {})[follows] = event
            events.append(event)
        return b"".join(events)

    # -- the clients' side ----------------------------------------------------------------------

    async def stream(
        self, store: Store, after: int, names: list[str] | None, request: Request
    ) -> AsyncIterator[bytes]:
        """The events of every epoch after `after` (of the relations `names`, or all), then
        of each new one as it is published, until the server stops."""
        follows = None if names is None else frozenset(names)
        transport = _chunked_transport(request)
        yield f"retry: {RETRY_MILLISECONDS}\n\n".encode()
        last = after
        beats = self._beats
        while not self.closed:
            wakeup = self._wakeup  # taken first: a publication after this wakes it
            if beats != self._beats:
                beats = self._beats
                yield b": ping\n\n"
            epoch = self.epoch
            if epoch is not None and last < epoch:
                shared = self._shared_events(last, epoch, follows)
                if shared is not None:  # the common case, kept cheap: the latest epochs
                    yield shared
                    last = epoch
                    continue
                sent: list[bytes] = []
                size = 0
                try:
                    async for event in self._events(store, last, epoch, follows):
                        sent.append(event)
                        size += len(event)
                        if size >= SEND_BYTES:
                            await self._priority.after_writes()
                            yield b"".join(sent)
                            sent, size = [], 0
                except Expired as expired:
                    problem = expired_problem(expired.horizon, epoch)
                    body = problem_body(problem.status, problem.code, problem.detail)
                    yield b"".join(sent) + message("expired", body | problem.extra)
                    return
                if sent:
                    yield b"".join(sent)
                last = epoch
                continue
            if transport is not None and self._joinable(transport, last):
                back = await self._sent_by_sender(transport, last, follows)
                if back is not None:
                    last = back
                    beats = self._beats  # the sender pinged meanwhile
                    continue
            await wakeup.wait()
        yield message("shutdown", {"epoch": last})

    def _joinable(self, transport: asyncio.WriteTransport, last: int) -> bool:
        """Whether a client at `last` can go to the sender: at the epoch its clients are
        at, and with everything it was given written (else its next bytes would pass it)."""
        return (
            self._sender is not None
            and last == self._fanned
            and not transport.is_closing()
            and transport.get_write_buffer_size() == 0
        )

    async def _sent_by_sender(
        self, transport: asyncio.WriteTransport, last: int, follows: Follows
    ) -> int | None:
        """The client goes to the sender at epoch `last`, in the group of the clients that
        follow the same relations, until it comes back: the epoch it is at then, the bytes
        its socket did not take written to its transport first. None at once when the
        process has no descriptor to spare (it stays on the loop)."""
        assert self._sender is not None
        try:
            fd = transport.get_extra_info("socket").fileno()
            member = self._sender.join(fd, last, follows)
        except OSError:
            return None
        try:
            epoch, remainder = await member.left
        except BaseException:  # the client is gone (the response is cancelled)
            self._sender.leave(member)
            raise
        if remainder:
            transport.write(remainder)
        return epoch

    async def _events(
        self, store: Store, after: int, through: int, follows: Follows
    ) -> AsyncIterator[bytes]:
        """The events of epochs `after` < epoch <= `through`: from the ring where it holds
        them, else from the store, in the catch-up's budget (`service.feed.catch_up`)."""
        epoch = after + 1
        with self._catch_up.reading():
            while epoch <= through:
                cached = self._ring.get(epoch)
                if cached is not None:
                    yield await self._epoch_event(epoch, followed(cached, follows), follows)
                    epoch += 1
                    continue
                kept = [n for n, items in self._ring.items() if n > epoch and items is not None]
                stop = min([through, *(n - 1 for n in kept)])
                async for event in self._catch_up.events(store, epoch, stop, follows):
                    yield event
                epoch = stop + 1

    async def _epoch_event(self, epoch: int, items: list[ChangeItem], follows: Follows) -> bytes:
        """The event of an epoch of the ring, rendered once for every client that follows
        the same relations: a large one on a worker thread, in the catch-up's budget."""
        rendered = self._rendered.get(epoch, {}).get(follows)
        if rendered is not None:
            return rendered
        if sum(len(item.rows) for item in items) <= RENDER_ON_LOOP_ROWS:
            event = _epoch_message(epoch, items)
            self._rendered.setdefault(epoch, {})[follows] = event
            return event
        key = (epoch, follows)
        rendering = self._rendering.get(key)
        if rendering is None:  # a task of its own: a client that leaves does not end it
            rendering = asyncio.ensure_future(self._catch_up.run(_epoch_message, epoch, items))
            self._rendering[key] = rendering
            ring_items = self._ring.get(epoch)

            def rendered_once(done: asyncio.Future[bytes]) -> None:
                del self._rendering[key]
                kept = self._ring.get(epoch) is ring_items  # not published again meanwhile
                if kept and not done.cancelled() and done.exception() is None:
                    self._rendered.setdefault(epoch, {})[follows] = done.result()

            rendering.add_done_callback(rendered_once)
        return await asyncio.shield(rendering)


class KeptChanges:
    """An epoch's change set on its way to the store, kept as the ring's items while it
    holds at most `CACHE_ROWS` rows: iterating passes the chunks through."""

    def __init__(self, epoch: int, chunks: Iterable[ChangeChunk]) -> None:
        self._epoch = epoch
        self._chunks = chunks
        self._kept: list[ChangeItem] | None = []

    def __iter__(self) -> Iterator[ChangeChunk]:
        rows = 0
        for chunk in self._chunks:
            relation, present, facts = chunk
            rows += len(facts)
            if rows > CACHE_ROWS:
                self._kept = None
            if self._kept is not None:
                # A batch as read (numbers and symbols) gives its rows with no frame made
                values = (
                    facts.frame.rows()
                    if isinstance(facts, FactBatch) and facts.encoded is None
                    else list(facts)
                )
                self._kept.append(ChangeItem(self._epoch, relation, present, values))
            yield chunk

    @property
    def items(self) -> list[ChangeItem] | None:
        """The items, once iterated; None for a change set too large to keep."""
        return self._kept


def _epoch_message(epoch: int, items: list[ChangeItem]) -> bytes:
    return message("epoch", epoch_data(epoch, items), epoch)


def _chunked_transport(request: Request) -> asyncio.WriteTransport | None:
    """The request's transport, if the server gave it (`TRANSPORT`) and the response is
    sent in HTTP/1.1's chunked framing, which the sender's messages are written in."""
    transport = (request.scope.get("extensions") or {}).get(TRANSPORT)
    if request.scope.get("http_version") != "1.1" or transport is None:
        return None
    socket = transport.get_extra_info("socket")
    return transport if socket is not None else None


def _chunk(data: bytes) -> bytes:
    """`data` as one chunk of HTTP/1.1's chunked framing (what uvicorn writes for a body
    part of a response without a length)."""
    return b"%x\r\n%b\r\n" % (len(data), data)


def expired_problem(horizon: int, epoch: int) -> Problem:
    """The answer to a read of change sets no longer kept (and a stream's last event)."""
    return Problem(
        410,
        CHANGES_EXPIRED,
        f"the change sets of epochs up to {horizon} are no longer kept: read the relations "
        f"at epoch {epoch} (`?epoch={epoch}`), then follow the feed from there",
        horizon=horizon,
        epoch=epoch,
    )
