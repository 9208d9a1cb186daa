"""The live feed inside admission control (issue 49, findings 4 and 5), against a real server
on each database:

- a crowd of clients catching up from `since=-1` over a long history: reads and writes keep
  their p99 within `LATENCY_GOAL` (over their p99 without it) meanwhile, and the server's
  memory comes back within `MEMORY_GOAL` of what it was before (before the fix: reads stalled
  17-42 s, +1.8 GB kept);
- a burst of `BURST` connections at a client limit of `LIMIT`: exactly `LIMIT` admitted, the
  rest 503 `too_busy` (before: 267-268 of 600 at 256);
- a client reconnecting in a loop: 429 `rate_limited` with `Retry-After`, while other callers'
  streams, reads and writes are served as usual (before: reads and writes at about 3 s).

The clients of the crowd run in a process of their own at the lowest priority, on raw
sockets, so that what is measured is the server's cost of serving them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import MODE, record
from tests.service.conftest import READ_TOKEN, Server

pytestmark = pytest.mark.measures
"""A harness that measures latency or throughput: it runs alone (`tests/stages.sh`)."""


@dataclass(frozen=True)
class Sizes:
    clients: int
    """Clients catching up at once."""
    rows: int
    """Change rows in the history they catch up on."""
    loop_seconds: float
    """How long the reconnecting client loops."""


SIZES = {
    "quick": Sizes(clients=100, rows=300_000, loop_seconds=10.0),
    "full": Sizes(clients=250, rows=1_000_000, loop_seconds=30.0),
}[MODE]
EPOCH_ROWS = (24_000, 4_000)
"""Rows of the writes of the history, in turn: epochs the feed reads from the store (in
parts), and epochs its ring of the latest holds."""
LATENCY_GOAL = {"quick": 1.0, "full": 0.2}[MODE]
"""p99 of reads and writes while the feed is busy, seconds: over the p99 the same probes
measured just before without it (on a shared machine, its neighbours' share; the figures
record both). The issue's goal, 200 ms, is the full size's, run by hand on a quiet machine;
the quick size's hundred probes make the p99 their slowest one, which one scheduling hiccup
of a two-core CI machine can push past 200 ms (348 ms once, against 180-209 ms on the other
database in the same run), so CI holds them to a second: still far below the 14-17 s that
reads and writes stalled before the catch-up had a budget."""
MEMORY_GOAL = 100 << 20
"""How far above its earlier size the server may stay once the clients are gone, bytes."""
LIMIT = 256
BURST = 600
STREAM = {"accept": "text/event-stream"}
PROGRAM = ".decl e(x: number, y: number)\n.decl probe(x: number)\n" + "".join(
    f"probe({n}).\n" for n in range(2, 12)
)
"""`e` holds the history; the probes read and write `probe` (a few rows: what is measured
is the wait, not the read)."""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _rss(server: Server) -> int:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmRSS")


def _server_cpu(server: Server) -> float:
    """The server process's CPU seconds so far (user and system, all its threads)."""
    assert server.process is not None
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _history(server: Server, rows: int) -> int:
    """`rows` change rows of `e`, in writes of `EPOCH_ROWS`; the last epoch."""
    epoch = 0
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
        written = 0
        while written < rows:
            size = min(rows - written, EPOCH_ROWS[epoch % len(EPOCH_ROWS)])
            facts = [[n, n % 977] for n in range(written, written + size)]
            response = client.post("/v1/deltas", json={"facts": {"insert": {"e": facts}}})
            epoch = response.raise_for_status().json()["epoch"]
            written += size
    return epoch


def _request(port: int, since: int, token: str = READ_TOKEN) -> bytes:
    return (
        f"GET /v1/changes?since={since} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()


def _catch_up(port: int, clients: int, target: int, results: Any) -> None:
    """`clients` streams from `since=-1`, each read until it holds epoch `target`: reports
    (statuses, bytes read, seconds until the last one held it)."""
    os.nice(19)
    began = time.monotonic()
    marker = b"\nid: %d\n" % target
    request = _request(port, -1)
    sockets: dict[int, socket.socket] = {}
    for _ in range(clients):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(request)
        sock.setblocking(False)
        sockets[sock.fileno()] = sock
    heads = dict.fromkeys(sockets, b"")
    tails = dict.fromkeys(sockets, b"")
    statuses: list[str] = []
    total = 0
    poller = select.epoll()
    for fd in sockets:
        poller.register(fd, select.EPOLLIN)
    following = set(sockets)
    deadline = time.monotonic() + 1800
    while following and time.monotonic() < deadline:
        for fd, _ in poller.poll(0.5):
            data = os.read(fd, 1 << 18)
            total += len(data)
            if len(heads[fd]) < 12:
                heads[fd] += data[:12]
            seen = tails[fd] + data
            if not data or marker in seen:
                statuses.append(heads[fd][9:12].decode() if data else "closed")
                following.discard(fd)
                poller.unregister(fd)
                sockets[fd].close()
            tails[fd] = seen[-len(marker) :]
    statuses.extend("unfinished" for _ in following)
    results.put((statuses, total, time.monotonic() - began))


@dataclass
class Probes:
    """Reads and writes made one after another while something else runs, timed."""

    reads: list[float]
    writes: list[float]
    failures: list[str]


@contextmanager
def _probing(server: Server) -> Iterator[Probes]:
    """A reader and a writer, each a request every 20 ms, until the block ends."""
    probes = Probes([], [], [])
    stop = threading.Event()

    def read() -> None:
        with server.client(READ_TOKEN) as client:
            while not stop.is_set():
                began = time.monotonic()
                response = client.get("/v1/relations/probe", params={"limit": 5})
                probes.reads.append(time.monotonic() - began)
                if response.status_code != 200:
                    probes.failures.append(f"read {response.status_code}")
                stop.wait(0.02)

    def write() -> None:
        with server.client() as client:
            present = False
            while not stop.is_set():
                side = "retract" if present else "insert"
                began = time.monotonic()
                response = client.post("/v1/deltas", json={"facts": {side: {"probe": [[1]]}}})
                probes.writes.append(time.monotonic() - began)
                if response.status_code != 200:
                    probes.failures.append(f"write {response.status_code}")
                present = not present
                stop.wait(0.02)

    threads = [threading.Thread(target=read), threading.Thread(target=write)]
    for thread in threads:
        thread.start()
    try:
        yield probes
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def _latency_figures(probes: Probes) -> dict[str, Any]:
    return {
        "reads": len(probes.reads),
        "read_p50_ms": round(1000 * statistics.median(probes.reads), 1),
        "read_p99_ms": round(1000 * _percentile(probes.reads, 0.99), 1),
        "read_max_ms": round(1000 * max(probes.reads), 1),
        "writes": len(probes.writes),
        "write_p50_ms": round(1000 * statistics.median(probes.writes), 1),
        "write_p99_ms": round(1000 * _percentile(probes.writes, 0.99), 1),
        "write_max_ms": round(1000 * max(probes.writes), 1),
    }


def _idle_figures(probes: Probes) -> dict[str, Any]:
    return {
        "idle_read_p50_ms": round(1000 * statistics.median(probes.reads), 1),
        "idle_read_p99_ms": round(1000 * _percentile(probes.reads, 0.99), 1),
        "idle_write_p50_ms": round(1000 * statistics.median(probes.writes), 1),
        "idle_write_p99_ms": round(1000 * _percentile(probes.writes, 0.99), 1),
    }


def _assert_latencies(busy: Probes, idle: Probes) -> None:
    assert not busy.failures, busy.failures[:5]
    for kind in ("reads", "writes"):
        measured, baseline = getattr(busy, kind), getattr(idle, kind)
        goal = LATENCY_GOAL + _percentile(baseline, 0.99)
        assert _percentile(measured, 0.99) <= goal, _latency_figures(busy) | _idle_figures(idle)


def _settled_rss(server: Server, goal: int, seconds: float = 20.0) -> int:
    """The server's resident memory once it falls to `goal`, or after `seconds`."""
    deadline = time.monotonic() + seconds
    while (rss := _rss(server)) > goal and time.monotonic() < deadline:
        time.sleep(0.5)
    return rss


def test_a_crowd_catching_up_leaves_reads_and_writes_their_pace(
    make_server: Callable[..., Server], backend: str
) -> None:
    server = make_server(REASONER_FEED_HEARTBEAT_SECONDS="1").start()
    loaded = time.monotonic()
    target = _history(server, SIZES.rows)
    loaded = time.monotonic() - loaded
    with _probing(server) as idle:  # warm: the pages and plans the probes use exist
        time.sleep(2)
    before = _rss(server)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    clients = context.Process(target=_catch_up, args=(server.port, SIZES.clients, target, results))
    cpu = _server_cpu(server)
    with _probing(server) as busy:
        clients.start()
        statuses, received, seconds = results.get(timeout=1800)
    cpu = _server_cpu(server) - cpu
    clients.join(30)
    after = _settled_rss(server, before + MEMORY_GOAL)
    record(
        f"feed catch-up[{backend}]",
        clients=SIZES.clients,
        change_rows=SIZES.rows,
        epochs=target + 1,
        history_load_seconds=round(loaded, 1),
        catch_up_seconds=round(seconds, 1),
        mb_received=round(received / 1e6, 1),
        server_cpu_seconds=round(cpu, 1),
        **_idle_figures(idle),
        **_latency_figures(busy),
        rss_before_mb=round(before / 2**20, 1),
        rss_after_mb=round(after / 2**20, 1),
    )
    server.assert_alive()
    assert statuses == ["200"] * SIZES.clients, statuses
    _assert_latencies(busy, idle)
    assert after <= before + MEMORY_GOAL, (before >> 20, after >> 20)


def _burst(port: int, count: int, since: int) -> tuple[list[socket.socket], list[str]]:
    """`count` streams opened at once: the sockets and, per stream, its status (and, for a
    refusal, its problem's code)."""
    request = _request(port, since)
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    for sock in sockets:
        sock.sendall(request)
    answers = []
    for sock in sockets:
        sock.settimeout(60)
        head = b""
        while b"\r\n\r\n" not in head:
            data = sock.recv(1 << 16)
            assert data, head
            head += data
        status = head[9:12].decode()
        if status != "200":
            body = head.split(b"\r\n\r\n", 1)[1]
            while not body.rstrip().endswith(b"}"):
                body += sock.recv(1 << 16)
            status += " " + json.loads(body)["code"]
        answers.append(status)
    return sockets, answers


def test_a_burst_of_streams_admits_exactly_the_limit(
    make_server: Callable[..., Server], backend: str
) -> None:
    server = make_server(
        REASONER_FEED_MAX_CLIENTS=str(LIMIT), REASONER_FEED_CONNECT_BURST=str(4 * BURST)
    ).start()
    epoch = _history(server, 1000)
    admitted = []
    for _ in range(2):  # the second burst: every slot came back when its stream ended
        sockets, answers = _burst(server.port, BURST, epoch)
        admitted.append(answers.count("200"))
        assert set(answers) <= {"200", "503 too_busy"}, set(answers)
        for sock in sockets:
            sock.close()
        time.sleep(2)  # for the server to see the streams end
    record(f"feed burst[{backend}]", limit=LIMIT, burst=BURST, admitted=admitted)
    assert admitted == [LIMIT, LIMIT], admitted
    server.assert_alive()


def test_a_client_reconnecting_in_a_loop_is_rate_limited(
    make_server: Callable[..., Server], backend: str
) -> None:
    server = make_server().start()
    _history(server, SIZES.rows // 4)
    with _probing(server) as idle:
        time.sleep(2)
    refusals: list[tuple[int, str | None, str]] = []
    accepted = 0
    stop = time.monotonic() + SIZES.loop_seconds
    with _probing(server) as busy:
        while time.monotonic() < stop:
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                sock.sendall(_request(server.port, -1))
                head = b""
                while b"\r\n\r\n" not in head:
                    data = sock.recv(1 << 16)
                    assert data, head
                    head += data
                if head.startswith(b"HTTP/1.1 200"):
                    accepted += 1
                    continue
                lines = head.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
                fields = dict(line.lower().split(": ", 1) for line in lines[1:])
                body = head.split(b"\r\n\r\n", 1)[1]
                while len(body) < int(fields.get("content-length", "0")):
                    body += sock.recv(1 << 16)
                refusals.append(
                    (int(lines[0].split()[1]), fields.get("retry-after"), json.loads(body)["code"])
                )
        other = server.client()  # another token opens a stream meanwhile
        with other, other.stream("GET", "/v1/changes", params={"since": 0}, headers=STREAM) as s:
            other_status = s.status_code
    record(
        f"feed reconnect loop[{backend}]",
        seconds=SIZES.loop_seconds,
        accepted=accepted,
        refused=len(refusals),
        other_token_status=other_status,
        **_idle_figures(idle),
        **_latency_figures(busy),
    )
    assert refusals, f"{accepted} connections in a loop, none refused"
    assert {(status, code) for status, _, code in refusals} == {(429, "rate_limited")}
    assert all(after is not None and int(after) >= 1 for _, after, _ in refusals)
    assert other_status == 200
    _assert_latencies(busy, idle)
    server.assert_alive()
