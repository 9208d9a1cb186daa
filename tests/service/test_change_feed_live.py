"""The live change feed (`GET /v1/changes`, `Accept: text/event-stream`) against a real server
on both databases: it replays, then follows each epoch as it is published; ids are the
epochs' numbers, contiguous, so a client resuming with `Last-Event-ID` misses nothing and
sees nothing twice; an epoch too large for one event comes in parts; an idle stream is
kept open by pings; a stopping server ends its streams at once."""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import h11

from tests.service.conftest import READ_TOKEN, Server
from tests.service.feed_client import STREAM, Follower, fold, served_exactly
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}
PROGRAM = ".decl e(x: number, y: number)\ntc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).\n"


def _write(server: Server, facts: dict[str, Any]) -> int:
    with server.client() as client:
        body = client.post("/v1/deltas", json={"facts": facts}).raise_for_status().json()
    return body["epoch"]


@contextmanager
def _started(make_server: Callable[..., Server], **settings: str) -> Iterator[Server]:
    server = make_server(REASONER_FEED_HEARTBEAT_SECONDS="0.3", **settings).start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()  # epoch 1
    yield server


def test_a_follower_replays_then_follows_and_resumes_where_it_stopped(
    make_server: Callable[..., Server],
) -> None:
    with _started(make_server) as server:
        _write(server, {"insert": {"e": [[1, 2]]}})  # epoch 2, before anyone follows
        first = Follower(server).start()
        first.wait_for(lambda: first.epochs() == [0, 1, 2])
        assert first.events[0]["data"] == {"epoch": 0, "reset": False, "changes": []}
        for n in range(3, 6):  # epochs 3-5, while it follows
            acknowledged = time.monotonic()
            assert _write(server, {"insert": {"e": [[n - 1, n]]}}) == n
            first.wait_for(lambda n=n: first.epochs()[-1] == n)
            assert time.monotonic() - acknowledged < 5
        first.wait_for(lambda: first.comments >= 2)  # pings while idle
        with server.client() as client:
            served = served_exactly(client)
        assert fold(first.groups()) == served
        # A reconnection names the last epoch it saw: the rest comes, once.
        resumed = Follower(server, headers={"last-event-id": "3"}).start()
        resumed.wait_for(lambda: resumed.epochs() == [4, 5])
        _write(server, {"retract": {"e": [[1, 2]]}})  # epoch 6
        resumed.wait_for(lambda: resumed.epochs() == [4, 5, 6])
        first.wait_for(lambda: first.epochs() == [0, 1, 2, 3, 4, 5, 6])
        assert resumed.events[-1] == first.events[-1]
        # A filtered follower sees its relations alone (and every epoch).
        edges = Follower(server, params={"relations": "e", "since": 4}).start()
        edges.wait_for(lambda: edges.epochs() == [5, 6])
        paths = Follower(server, params={"relations": "tc", "since": 6}).start()
        paths.wait_for(lambda: paths.comments >= 1)  # caught up, following live
        for n in range(7, 10):  # epochs 7-9, each rendered for all, for e alone, for tc alone
            _write(server, {"insert": {"e": [[n, n + 1]]}})
        for follower in (first, edges, paths):
            follower.wait_for(lambda f=follower: f.epochs()[-1] == 9)
        assert edges.epochs() == [5, 6, 7, 8, 9] and paths.epochs() == [7, 8, 9]
        assert {g["relation"] for g in edges.groups()} == {"e"}
        assert {g["relation"] for g in paths.groups()} == {"tc"}
        assert first.epochs() == list(range(10))
        with server.client() as client:
            assert fold(first.groups()) == served_exactly(client)


def test_a_large_epoch_comes_in_parts_and_a_stopping_server_ends_its_streams(
    make_server: Callable[..., Server],
) -> None:
    with _started(make_server) as server:
        follower = Follower(server).start()
        follower.wait_for(lambda: follower.epochs() == [0, 1])
        epoch = _write(server, {"insert": {"e": [[i, -i] for i in range(1, 12_001)]}})
        follower.wait_for(lambda: epoch in follower.epochs())
        parts = [e for e in follower.events if e["event"] == "part"]
        assert parts and all("id" not in e for e in parts)
        rows = sum(
            len(g["inserted"]) for e in parts + follower.events[-1:] for g in e["data"]["changes"]
        )
        assert rows == 24_000  # e and tc, 12,000 each
        stopping = time.monotonic()
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)
        assert time.monotonic() - stopping < 5
        follower.ended.wait(5)
        assert follower.endings == ["shutdown"]


def test_an_epoch_that_fills_one_part_exactly_reaches_every_client_whole(
    make_server: Callable[..., Server],
) -> None:
    """10,000 rows, what one part holds and what the ring keeps: the first client to send
    the epoch sends a part, then an empty closing event, which must not be kept as the
    epoch's whole event for the clients after it."""
    with _started(make_server) as server:
        epoch = _write(server, {"insert": {"e": [[i, -i] for i in range(1, 5_001)]}})
        for _ in range(2):
            follower = Follower(server, params={"since": epoch - 1}).start()
            follower.wait_for(lambda f=follower: f.epochs() == [epoch])
            follower.stop()
            rows = sum(len(g["inserted"]) for e in follower.events for g in e["data"]["changes"])
            assert rows == 10_000


def test_the_live_feed_refuses_what_it_cannot_serve(make_server: Callable[..., Server]) -> None:
    with _started(
        make_server, REASONER_FEED_MAX_CLIENTS="1", REASONER_CHANGE_RETENTION_EPOCHS="2"
    ) as server:
        with server.client() as client:
            for bad in ({"last-event-id": "x"}, {"last-event-id": "1e3"}):
                refused = client.get("/v1/changes", headers={**STREAM, **bad})
                assert_problem(refused, 400, "invalid_request")
            future = client.get("/v1/changes", params={"since": 9}, headers=STREAM)
            assert_problem(future, 404, "unknown_epoch")
            paged = client.get("/v1/changes", params={"limit": 3}, headers=STREAM)
            assert_problem(paged, 400, "invalid_request")
        follower = Follower(server).start()
        follower.wait_for(lambda: follower.epochs() == [0, 1])
        with server.client() as client:
            busy = client.get("/v1/changes", params={"since": 1}, headers=STREAM)
            assert_problem(busy, 503, "too_busy")
        for n in range(2, 5):  # retention 2: epoch 4 prunes those before epoch 3
            _write(server, {"insert": {"e": [[n, n]]}})
        follower.wait_for(lambda: follower.epochs()[-1] == 4)
        with server.client() as client:
            deadline = time.monotonic() + 10
            while client.get("/v1/epochs/2").json()["changes"] is not None:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            late = client.get("/v1/changes", headers={**STREAM, "last-event-id": "1"})
            body = assert_problem(late, 410, "changes_expired")
            assert (body["horizon"], body["epoch"]) == (2, 4)
        assert follower.status == 200


def _events(stream: bytes) -> list[dict[str, Any]]:
    """The SSE events of a stream's body (a trailing partial event left out)."""
    events = []
    for block in stream.split(b"\n\n")[:-1]:
        event = dict(line.split(": ", 1) for line in block.decode().splitlines() if ": " in line)
        if "event" in event:
            events.append(event | {"data": json.loads(event["data"])})
    return events


def test_a_client_that_stops_reading_falls_behind_and_then_gets_every_epoch_once(
    make_server: Callable[..., Server],
) -> None:
    """Caught-up clients are written to by the feed's sender thread; one whose socket stops
    taking bytes leaves it mid-message, and what it had not taken goes first when it
    catches up through the loop: its body stays valid chunked framing with every epoch in
    order, once, while a reading client follows along."""
    with _started(make_server) as server:
        reader = Follower(server).start()
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # its window stays small
        slow.connect(("127.0.0.1", server.port))
        connection = h11.Connection(h11.CLIENT)
        headers = [("host", "server"), ("authorization", f"Bearer {READ_TOKEN}"), *STREAM.items()]
        slow.sendall(
            connection.send(h11.Request(method="GET", target="/v1/changes", headers=headers))
        )
        body = b""

        def receive(until: Callable[[], bool]) -> None:
            nonlocal body
            slow.settimeout(30)
            while not until():
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(slow.recv(1 << 16))
                elif isinstance(event, h11.Response):
                    assert event.status_code == 200
                else:
                    assert isinstance(event, h11.Data), event
                    body += event.data

        with server.client() as client:
            client.post("/v1/rules", content=".decl note(text: symbol)", headers=TEXT)
        receive(lambda: b"\nid: 2\n" in body)
        last = 2
        for n in range(10):  # 600 KB an epoch (one event each): more than its socket takes
            notes = [[f"{n}.{i}." + "x" * 2000] for i in range(300)]
            last = _write(server, {"insert": {"note": notes}})
        reader.wait_for(lambda: reader.epochs()[-1:] == [last])
        receive(lambda: b"\nid: %d\n" % last in body and body.endswith(b"\n\n"))
        events = _events(body)
        assert [int(e["id"]) for e in events] == list(range(last + 1))
        assert [e["data"] for e in events] == [e["data"] for e in reader.events]
        slow.close()


def test_epochs_published_within_the_wake_window_wait_for_its_end(
    make_server: Callable[..., Server],
) -> None:
    """`REASONER_FEED_BATCH_MILLISECONDS`: the clients are woken at most that often, so an
    epoch published just after a wake-up waits for the window to end (the epochs published
    meanwhile go in one send)."""
    server = make_server(REASONER_FEED_BATCH_MILLISECONDS="1000").start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
    follower = Follower(server).start()
    follower.wait_for(lambda: follower.epochs() == [0, 1])
    time.sleep(1.1)  # the window of the last wake-up is over: the next epoch goes at once
    before = time.monotonic()  # the wake-up for epoch 2 comes later, and epoch 3's 1 s after it
    _write(server, {"insert": {"e": [[1, 2]]}})
    follower.wait_for(lambda: follower.epochs()[-1] == 2)
    _write(server, {"insert": {"e": [[2, 3]]}})
    follower.wait_for(lambda: follower.epochs()[-1] == 3)
    assert time.monotonic() - before > 0.9  # (a busy machine only makes it later)
