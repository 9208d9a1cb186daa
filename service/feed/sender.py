"""The live feed's sender: a thread that writes each epoch's bytes straight to the sockets of
the clients that are caught up, all of them in one call that releases the interpreter lock
(`service.feed.socket_fanout`).

Through the event loop each client costs a coroutine step and a transport write per epoch,
interpreter time that the writer's requests wait for; a hundred clients took a third of the
writer's throughput. Here a caught-up client costs a `send(2)` outside the lock.

A client joins a group (the clients that get the same bytes: those following the same
relations) with its socket at the epoch it has sent through, and stays until something is
not simply written: its socket took only part of a message (a slow reader), failed, or the
groups are dissolved (an epoch the loop must read from the store, the server stopping). It
then gets back the epoch it is at and the bytes its socket did not take, and goes on
through its transport. Everything about the groups (who is in them, their sockets) changes
on this thread only, in the order the loop asked: a join, the sends after it, a leave. Each
client's socket is a duplicate descriptor that only this thread closes, so a number the loop
frees when a connection ends is never written to by mistake.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from service.feed.socket_fanout import send_to_all

log = logging.getLogger("service")


G = TypeVar("G", bound=Hashable)
"""What names a group (the feed's: the relations its clients follow)."""


@dataclass(eq=False)
class Member(Generic[G]):
    """A client in a group; `left` resolves to (the epoch it is at, the bytes its socket has
    still to take) once it is out."""

    fd: int
    group: G
    """The clients of a group get the same bytes."""
    left: asyncio.Future[tuple[int, bytes]]


@dataclass
class _Group:
    """The sender thread's side of a group: the members, their sockets as the array the
    send takes."""

    members: list[Member] = field(default_factory=list)
    fds: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    sent: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    through: int = -1
    """The epoch every member is at: of the last message sent, or of the last join (a client
    joins at the epoch the others are at, or starts the group)."""

    def changed(self) -> None:
        self.fds = np.array([m.fd for m in self.members], dtype=np.int32)
        self.sent = np.empty(len(self.members), dtype=np.int64)


Groups = dict[Hashable, _Group]
Settled = list[tuple[Member, int, bytes]]
"""Members out of their group, each with its epoch and the bytes its socket did not take."""
_Job = tuple[Callable[[Groups, Any, int, Settled], None], Any, int]
"""A step of the thread's, what it takes, and an epoch."""


class Sender(Generic[G]):
    """The thread and the loop's handle on it (one per feed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.members: set[Member[G]] = set()
        """The members as the loop knows them: joined, not yet settled."""
        self._sizes: Counter[G] = Counter()
        """How many of them each group has (every wake-up asks which groups have any)."""
        self._thread = threading.Thread(target=self._run, name="reasoner-feed-sender", daemon=True)
        self._thread.start()

    # -- the loop's side ------------------------------------------------------------------------

    def join(self, fd: int, epoch: int, group: G) -> Member[G]:
        """A client whose socket is `fd`, having sent every epoch through `epoch` and with
        nothing left in its transport's buffer, into `group`."""
        member = Member(os.dup(fd), group, self._loop.create_future())
        self.members.add(member)
        self._sizes[group] += 1
        self._jobs.put((_join, member, epoch))
        return member

    def groups(self) -> set[G]:
        """The groups that have members (as the loop knows them): what a send must cover."""
        return set(self._sizes)

    def leave(self, member: Member[G]) -> None:
        """Out of its group (the client is gone or stopping): its socket is closed after
        the sends before this."""
        self._forget(member)
        self._jobs.put((_leave, member, 0))

    def send(self, messages: Mapping[G, bytes], through: int) -> None:
        """`messages[g]` (one chunk of the response's chunked framing) to every member of
        group `g`, for each group with members: it takes them through epoch `through`."""
        self._jobs.put((_send, messages, through))

    def dissolve(self) -> None:
        """Every member out, each at its epoch with nothing left to send."""
        self.members.clear()
        self._sizes.clear()
        self._jobs.put((_dissolve, None, 0))

    def stop(self) -> None:
        self.dissolve()
        self._jobs.put(None)

    def _forget(self, member: Member[G]) -> None:
        if member in self.members:
            self.members.remove(member)
            self._sizes[member.group] -= 1
            if not self._sizes[member.group]:
                del self._sizes[member.group]

    def _settle(self, settled: Settled) -> None:
        for member, epoch, remainder in settled:
            self._forget(member)
            if not member.left.done():
                member.left.set_result((epoch, remainder))

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        groups: Groups = {}
        while (job := self._jobs.get()) is not None:
            step, payload, number = job
            settled: Settled = []  # (kept by a step that fails halfway: those are out already)
            try:
                step(groups, payload, number, settled)
            except Exception:  # a defect here must not strand the clients: back to the loop
                log.exception("the live feed's sender failed; its clients go back to the loop")
                _dissolve(groups, None, 0, settled)
            if settled:
                try:
                    self._loop.call_soon_threadsafe(self._settle, settled)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    return


def _join(groups: Groups, member: Member, epoch: int, _: Settled) -> None:
    group = groups.setdefault(member.group, _Group())
    group.members.append(member)
    group.through = max(group.through, epoch)
    group.changed()


def _leave(groups: Groups, member: Member, _: int, settled: Settled) -> None:
    group = groups.get(member.group)
    if group is None or member not in group.members:
        return  # out already (settled by a send or a dissolve): its socket is closed
    group.members.remove(member)
    _changed(groups, member.group, group)
    os.close(member.fd)
    settled.append((member, group.through, b""))


def _dissolve(groups: Groups, _: None, __: int, settled: Settled) -> None:
    for group in groups.values():
        for member in group.members:
            os.close(member.fd)
            settled.append((member, group.through, b""))
    groups.clear()


def _send(
    groups: Groups, messages: Mapping[Hashable, bytes], through: int, settled: Settled
) -> None:
    for key, group in list(groups.items()):
        data = messages[key]
        short = send_to_all(group.fds, data, group.sent)
        group.through = through  # (not before: a failed send leaves its members where they were)
        if not short:
            continue
        size = len(data)
        staying = []
        for member, sent in zip(group.members, group.sent.tolist(), strict=True):
            if sent == size:
                staying.append(member)
                continue
            settled.append((member, through, data[max(sent, 0) :]))
            os.close(member.fd)
        group.members = staying
        _changed(groups, key, group)


def _changed(groups: Groups, key: Hashable, group: _Group) -> None:
    """A group's members changed: it goes once it has none (`groups` holds those with
    members, each of which the loop's next send covers)."""
    if group.members:
        group.changed()
    else:
        del groups[key]
