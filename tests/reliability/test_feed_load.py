"""Load on the live change feed: writers post small deltas in alternating phases, without a
client following the feed and with `COUNTS.feed_clients` of them (in another process, all on
one thread): `ROUNDS` phases with them, each between two without, `load_seconds` in all
with them.

Every client must receive every epoch once, in order, with contiguous ids. Figures: deltas/s
without and with the clients (the goal: the clients cost the writer at most 10 %), write
latency, and the feed's latency, from a write's acknowledgement to each client's receipt of
its epoch (the goal: at most 10 ms over the write's own latency). The clients share the
server's two cores, where a deployment's clients run on their own machines: they run at the
lowest priority and cost as little as a client can, so that what is measured is the server's
cost of serving them (their CPU time is a figure of its own).
"""

from __future__ import annotations

import bisect
import itertools
import multiprocessing
import os
import re
import select
import socket
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import COUNTS, record
from tests.service.conftest import READ_TOKEN, Server

pytestmark = pytest.mark.measures
"""A harness that measures latency or throughput: it runs alone (`tests/stages.sh`)."""

PROGRAM = (
    ".decl edge(x: number, y: number)\ntc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).\n"
)
WRITERS = 2
EVENT_ID = re.compile(rb"\nid: ([0-9]+)\n")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


Acks = dict[int, list[tuple[float, float]]]
"""Per epoch, (acknowledged at, latency) of each write it holds (writes that queue up
together share an epoch: group commit)."""


def _write_for(server: Server, seconds: float) -> Acks:
    """Writers toggling an edge each for `seconds`: their writes, per epoch."""
    acknowledged: Acks = {}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def writer(w: int) -> None:
        edge = [10 * w, 10 * w + 1]
        present = False
        with server.client() as client:
            while time.monotonic() < stop:
                side = "retract" if present else "insert"
                began = time.time()
                response = client.post("/v1/deltas", json={"facts": {side: {"edge": [edge]}}})
                done = time.time()
                response.raise_for_status()
                with lock:
                    acknowledged.setdefault(response.json()["epoch"], []).append(
                        (done, done - began)
                    )
                present = not present

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acknowledged


def _follow(
    host: str,
    port: int,
    clients: int,
    since: int,
    connected: Synchronized,  # type: ignore[type-arg]
    last: Synchronized,  # type: ignore[type-arg]
    results: Any,
) -> None:
    """The feed's clients, in their own process, on one thread: each follows from `since`
    until it holds epoch `last` (set once the writers stop), then reports (ids, receipt
    times). They share the machine's cores with the server, so they cost as little as a
    client can: one `epoll` for all, and per wake-up a read and its time, kept as they are
    (no HTTP parsing, no coroutine per client); the events are found in the streams at the
    end."""
    os.nice(19)  # their CPU is theirs: the server's threads go first when both want a core
    cpu = time.process_time()  # (after the process's start: its imports are not a client's)
    request = (
        f"GET /v1/changes?since={since} HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {READ_TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    sockets = {}
    for _ in range(clients):
        sock = socket.create_connection((host, port))
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1 << 16)
        assert head.startswith(b"HTTP/1.1 200"), head
        sock.setblocking(False)
        sockets[sock.fileno()] = sock
        with connected.get_lock():
            connected.value += 1
    reads: dict[int, list[bytes]] = {fd: [] for fd in sockets}
    arrivals: dict[int, list[float]] = {fd: [] for fd in sockets}
    checked = dict.fromkeys(sockets, 0)
    following = set(sockets)
    poller = select.epoll()
    for fd in sockets:
        poller.register(fd, select.EPOLLIN)
    while following:
        for fd, _ in poller.poll(0.5):
            data = os.read(fd, 1 << 16)
            if data:
                reads[fd].append(data)
                arrivals[fd].append(time.time())
            else:
                following.discard(fd)
                poller.unregister(fd)
        if last.value >= 0:  # the writers stopped: who holds the last epoch now?
            marker = b"\nid: %d\n" % last.value
            for fd in list(following):
                if marker in b"".join(reads[fd][checked[fd] :]):
                    following.discard(fd)
                checked[fd] = max(len(reads[fd]) - 1, 0)  # a marker the read cut: found next
    for sock in sockets.values():
        sock.close()
    results.put(([_events(reads[fd], arrivals[fd]) for fd in sockets], time.process_time() - cpu))


def _events(reads: list[bytes], arrivals: list[float]) -> tuple[list[int], list[float]]:
    """The event ids in a client's stream, each with the time of the read that completed it."""
    ends = list(itertools.accumulate(len(data) for data in reads))
    found = list(EVENT_ID.finditer(b"".join(reads)))
    return (
        [int(match[1]) for match in found],
        [arrivals[bisect.bisect_left(ends, match.end())] for match in found],
    )


def _server_cpu(server: Server) -> float:
    """The server process's CPU seconds so far (user and system, all its threads): what
    the clients cost it, apart from what they cost the machine."""
    assert server.process is not None
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ROUNDS = max(3, round(COUNTS.load_seconds / 10))
"""Phases with the clients, each between two without: the machine's speed drifts over a
run (the store grows, neighbours come and go) by as much as the effect measured, and
alternating phases cancels the drift. Each round's ratio compares a phase with the clients
to the mean of its two neighbours; the figure is their median, so that one phase a
neighbour's burst slowed (it once cut a run's rates by a third) does not decide it."""


def _followed_for(
    server: Server, seconds: float, since: int
) -> tuple[Acks, list[tuple[list[int], list[float]]], float]:
    """Writers for `seconds` with `COUNTS.feed_clients` clients following from `since`:
    (the writes, what each client received, the clients' CPU seconds)."""
    context = multiprocessing.get_context("spawn")
    connected = context.Value("i", 0)
    last = context.Value("i", -1)
    results = context.Queue()
    clients = context.Process(
        target=_follow,
        args=("127.0.0.1", server.port, COUNTS.feed_clients, since, connected, last, results),
    )
    clients.start()
    deadline = time.monotonic() + 60
    while connected.value < COUNTS.feed_clients:
        assert clients.is_alive() and time.monotonic() < deadline, connected.value
        time.sleep(0.05)
    followed = _write_for(server, seconds)
    last.value = max(followed)
    received, cpu = results.get(timeout=120)
    clients.join(30)
    expected = list(range(since + 1, max(followed) + 1))
    assert all(ids == expected for ids, _ in received), [ids[:5] for ids, _ in received][:3]
    return followed, received, cpu


@dataclass
class _Phase:
    """The writes of one phase (per epoch: acknowledged at, latency) and the server's CPU
    seconds over it."""

    writes: Acks
    server_cpu: float

    @property
    def count(self) -> int:
        """How many writes the phase made."""
        return sum(map(len, self.writes.values()))


def _alone_for(server: Server, seconds: float) -> _Phase:
    began = _server_cpu(server)
    writes = _write_for(server, seconds)
    return _Phase(writes, _server_cpu(server) - began)


def test_feed_clients_cost_the_writer_little(
    make_server: Callable[..., Server], backend: str
) -> None:
    server = make_server(REASONER_FEED_HEARTBEAT_SECONDS="0.5").start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
    seconds = COUNTS.load_seconds / ROUNDS
    alone = [_alone_for(server, seconds)]
    followed: list[_Phase] = []
    delays: list[float] = []
    received_events = 0
    clients_cpu = 0.0
    for _ in range(ROUNDS):
        began = _server_cpu(server)
        writes, received, cpu = _followed_for(server, seconds, max(alone[-1].writes))
        followed.append(_Phase(writes, _server_cpu(server) - began))
        delays.extend(
            at - acked
            for ids, times in received
            for epoch, at in zip(ids, times, strict=True)
            for acked, _ in writes.get(epoch, ())
        )
        received_events += sum(len(ids) for ids, _ in received)
        clients_cpu += cpu
        alone.append(_alone_for(server, seconds))
    ratios = [
        2 * phase.count / (before.count + after.count)
        for before, phase, after in zip(alone, followed, alone[1:], strict=False)
    ]
    latencies = [lat for phase in followed for acks in phase.writes.values() for _, lat in acks]
    deltas_alone = sum(phase.count for phase in alone)
    record(
        f"feed load[{backend}]",
        clients=COUNTS.feed_clients,
        seconds_each=COUNTS.load_seconds,
        deltas_per_second_alone=round(deltas_alone / (len(alone) * seconds), 1),
        deltas_per_second_followed=round(len(latencies) / (len(followed) * seconds), 1),
        throughput_ratio=round(statistics.median(ratios), 3),
        ratio_by_round=[round(ratio, 3) for ratio in ratios],
        server_cpu_ms_per_delta_alone=round(
            1000 * sum(phase.server_cpu for phase in alone) / deltas_alone, 2
        ),
        server_cpu_ms_per_delta_followed=round(
            1000 * sum(phase.server_cpu for phase in followed) / len(latencies), 2
        ),
        write_p50_ms=round(1000 * statistics.median(latencies), 1),
        write_p99_ms=round(1000 * _percentile(latencies, 0.99), 1),
        feed_p50_ms_after_ack=round(1000 * statistics.median(delays), 1),
        feed_p99_ms_after_ack=round(1000 * _percentile(delays, 0.99), 1),
        events_received=received_events,
        clients_cpu_seconds=round(clients_cpu, 1),
    )
    server.assert_alive()
