"""The live feed's sender (`service.feed.sender`) over socket pairs: every member gets each
message whole, a socket that takes part of one leaves with the rest and the epoch it is at,
a leave or a dissolve settles members at the last epoch sent to their group, and a member's
socket is closed by the sender once it is out (never while a send may still use it)."""

from __future__ import annotations

import asyncio
import errno
import os
import socket

import numpy as np

from service.feed.sender import Member, Sender
from service.feed.socket_fanout import send_to_all


def _pair() -> tuple[socket.socket, socket.socket]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    return ours, theirs


def _drain(theirs: socket.socket) -> bytes:
    theirs.setblocking(False)
    data = b""
    while True:
        try:
            data += theirs.recv(1 << 20)
        except BlockingIOError:
            return data


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as error:
        return error.errno == errno.EBADF
    return False


def test_send_to_all_reports_what_each_socket_took() -> None:
    full, full_peer = _pair()
    small, small_peer = _pair()
    gone, gone_peer = _pair()
    gone_peer.close()
    small.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    data = b"x" * (1 << 20)
    fds = np.array([full.fileno(), small.fileno(), gone.fileno()], dtype=np.int32)
    sent = np.zeros(3, dtype=np.int64)
    assert send_to_all(fds[:1], b"hello", sent) == 0
    assert sent[0] == 5 and full_peer.recv(10) == b"hello"
    assert send_to_all(fds[1:], data, sent[1:]) == 2
    assert 0 < sent[1] < len(data) and _drain(small_peer) == data[: sent[1]]
    assert sent[2] == -errno.EPIPE
    assert send_to_all(fds, b"", sent) == 0 and sent.tolist() == [0, 0, 0]


async def _settled(member: Member) -> tuple[int, bytes]:
    return await asyncio.wait_for(asyncio.shield(member.left), 5)


def test_members_get_each_message_and_a_full_socket_leaves_with_the_rest() -> None:
    asyncio.run(_members_get_each_message())


async def _members_get_each_message() -> None:
    sender = Sender(asyncio.get_running_loop())
    fast, fast_peer = _pair()
    slow, slow_peer = _pair()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    first = sender.join(fast.fileno(), 3, "g")
    second = sender.join(slow.fileno(), 3, "g")
    sender.send({"g": b"epoch 4"}, 4)
    big = bytes(range(256)) * 256  # more than the small socket holds, not the other
    sender.send({"g": big}, 5)
    epoch, rest = await _settled(second)
    assert epoch == 5 and 0 < len(rest) < len(big)
    assert _drain(slow_peer) + rest == b"epoch 4" + big
    assert sender.members == {first} and _closed(second.fd)
    sender.send({"g": b"epoch 6"}, 6)
    sender.leave(first)
    assert await _settled(first) == (6, b"")
    assert _drain(fast_peer) == b"epoch 4" + big + b"epoch 6"
    assert _closed(first.fd) and not _closed(fast.fileno())  # the connection's own socket stays
    sender.stop()


def test_a_dissolve_settles_every_member_at_the_last_epoch_sent() -> None:
    asyncio.run(_a_dissolve_settles_every_member())


async def _a_dissolve_settles_every_member() -> None:
    sender = Sender(asyncio.get_running_loop())
    pairs = [_pair() for _ in range(3)]
    members = [sender.join(ours.fileno(), 7, "g") for ours, _ in pairs[:2]]
    sender.send({"g": b"8"}, 8)
    late = sender.join(pairs[2][0].fileno(), 8, "g")  # joined where the others are now
    sender.send({"g": b"9"}, 9)
    sender.dissolve()
    assert not sender.members
    assert [await _settled(m) for m in [*members, late]] == [(9, b"")] * 3
    assert [_drain(theirs) for _, theirs in pairs] == [b"89", b"89", b"9"]
    assert all(_closed(m.fd) for m in [*members, late])
    sender.leave(late)  # out already: nothing happens
    sender.stop()


def test_a_failing_job_sends_the_members_back_and_the_sender_goes_on() -> None:
    asyncio.run(_a_failing_job())


async def _a_failing_job() -> None:
    sender: Sender[str] = Sender(asyncio.get_running_loop())
    (ours, theirs), (again, again_peer) = _pair(), _pair()
    member = sender.join(ours.fileno(), 3, "g")
    sender.send({"g": b"4"}, 4)
    # A defect, as the sender meets one:
    sender.send({"g": "not bytes"}, 5)  # type: ignore[dict-item]
    assert await _settled(member) == (4, b"") and _closed(member.fd)
    assert _drain(theirs) == b"4"
    later = sender.join(again.fileno(), 4, "g")
    sender.send({"g": b"5"}, 5)
    sender.leave(later)
    assert await _settled(later) == (5, b"") and _drain(again_peer) == b"5"
    sender.stop()


def test_each_group_gets_its_bytes_and_a_send_failing_halfway_loses_nothing() -> None:
    asyncio.run(_groups())


async def _groups() -> None:
    sender: Sender[str] = Sender(asyncio.get_running_loop())
    (a, a_peer), (b, b_peer) = _pair(), _pair()
    first = sender.join(a.fileno(), 3, "a")
    second = sender.join(b.fileno(), 3, "b")
    assert sender.groups() == {"a", "b"}
    sender.send({"a": b"4a", "b": b"4b"}, 4)
    sender.send({"a": b"5a"}, 5)  # group b's bytes missing: a defect, met halfway through
    assert await _settled(first) == (5, b"") and await _settled(second) == (4, b"")
    assert _drain(a_peer) == b"4a5a" and _drain(b_peer) == b"4b"
    assert not sender.members and not sender.groups()
    sender.stop()
