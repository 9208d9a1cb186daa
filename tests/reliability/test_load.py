"""Load: writers post small deltas while readers query, on loopback, for a bounded time.

Each writer owns a chain of nodes in which exactly one edge is missing (the gap); every delta
moves the gap (one edge retracted, the old gap's edge inserted, in one delta). Readers alternate
`POST /v1/query` over the transitive closure and `GET /v1/relations/edge`; each answer names
its epoch. Afterwards the acknowledged deltas, ordered by epoch and by their place in it (writes
that queue up together share an epoch), give the exact state of every epoch, and every read
must equal the state of the epoch it names: a read that mixed two epochs,
or named the wrong one, is torn. (A cheap invariant is checked too: every chain always has
exactly one gap.)

Figures: sustained deltas/s, write and read latency p50/p99, reads checked, torn reads (0).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from tests.reliability.conftest import COUNTS, record, rng
from tests.service.conftest import READ_TOKEN, Server

pytestmark = pytest.mark.measures
"""A harness that measures latency or throughput: it runs alone (`tests/stages.sh`)."""

PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
CHAIN = 10
"""Nodes per writer's chain: CHAIN - 1 possible edges, CHAIN - 2 present at any epoch."""
MAX_REQUESTS = 200_000
"""A bound on requests per thread, whatever the duration."""


def _chain(writer: int) -> list[tuple[int, int]]:
    base = 1000 * (writer + 1)
    return [(base + i, base + i + 1) for i in range(CHAIN - 1)]


def _closure(edges: frozenset[tuple[int, int]]) -> set[tuple[int, int]]:
    closure = set(edges)
    while True:
        new = {(x, w) for (x, y) in closure for (z, w) in edges if y == z} - closure
        if not new:
            return closure
        closure |= new


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def test_writers_and_readers(make_server: Callable[..., Server], backend: str) -> None:
    writers, readers = COUNTS.load_writers, COUNTS.load_readers
    server = make_server(REASONER_PAGE_SIZE="100000").start()
    initial: set[tuple[int, int]] = set()
    gaps = {}
    for w in range(writers):
        chain = _chain(w)
        gaps[w] = 0
        initial |= set(chain[1:])
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
        response = client.post("/v1/facts", json={"facts": {"edge": sorted(initial)}})
        start_epoch = response.raise_for_status().json()["epoch"]

    stop = threading.Event()
    lock = threading.Lock()
    acknowledged: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, int]]] = {}
    """(epoch, place in it) -> (edge inserted, edge retracted): writes that queue up together
    share an epoch (group commit), each in its place"""
    write_latencies: list[float] = []
    read_latencies: list[float] = []
    reads: list[tuple[str, int, frozenset]] = []
    errors: list[str] = []

    def writer(w: int) -> None:
        chain = _chain(w)
        r = rng(f"load-writer-{w}")
        gap = gaps[w]
        with server.client() as client:
            for _ in range(MAX_REQUESTS):
                if stop.is_set():
                    return
                new_gap = r.choice([i for i in range(len(chain)) if i != gap])
                insert, retract = chain[gap], chain[new_gap]
                body = {"facts": {"insert": {"edge": [insert]}, "retract": {"edge": [retract]}}}
                began = time.monotonic()
                try:
                    response = client.post("/v1/deltas", json=body)
                except httpx.HTTPError as exc:
                    errors.append(f"writer {w}: {exc!r}")
                    return
                spent = time.monotonic() - began
                if response.status_code != 200:
                    errors.append(f"writer {w}: {response.status_code} {response.text[:200]}")
                    return
                with lock:
                    answer = response.json()
                    acknowledged[answer["epoch"], answer["write"]] = (insert, retract)
                    write_latencies.append(spent)
                gap = new_gap

    def reader(n: int) -> None:
        with server.client(READ_TOKEN) as client:
            for i in range(MAX_REQUESTS):
                if stop.is_set():
                    return
                began = time.monotonic()
                try:
                    if (i + n) % 2:
                        response = client.post("/v1/query", json={"query": "tc(x, y)"})
                        kind = "tc"
                    else:
                        response = client.get("/v1/relations/edge")
                        kind = "edge"
                except httpx.HTTPError as exc:
                    errors.append(f"reader {n}: {exc!r}")
                    return
                spent = time.monotonic() - began
                if response.status_code != 200:
                    errors.append(f"reader {n}: {response.status_code} {response.text[:200]}")
                    return
                body = response.json()
                assert body["next"] is None
                rows = frozenset(tuple(row) for row in body["rows"])
                with lock:
                    read_latencies.append(spent)
                    reads.append((kind, body["epoch"], rows))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(readers)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(COUNTS.load_seconds)
    stop.set()
    for thread in threads:
        thread.join(120)
    elapsed = time.monotonic() - began
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:10]

    # The state of every epoch, from the acknowledged deltas in epoch order (and in their
    # places within an epoch that holds several).
    epochs = sorted({number for number, _ in acknowledged})
    assert epochs == list(range(start_epoch + 1, start_epoch + 1 + len(epochs))), "gaps"
    states: dict[int, frozenset] = {start_epoch: frozenset(initial)}
    edges = set(initial)
    for number, place in sorted(acknowledged):
        insert, retract = acknowledged[number, place]
        edges.discard(retract)
        edges.add(insert)
        states[number] = frozenset(edges)
    closures: dict[int, frozenset] = {}
    torn = []
    for kind, number, rows in reads:
        state = states.get(number)
        if state is None:
            torn.append((kind, number, "an epoch no write produced"))
            continue
        if kind == "edge":
            expected = state
            for w in range(writers):
                present = sum(1 for e in _chain(w) if e in rows)
                if present != CHAIN - 2:
                    torn.append((kind, number, f"chain {w} has {present} edges"))
        else:
            if number not in closures:
                closures[number] = frozenset(_closure(state))
            expected = closures[number]
        if rows != expected:
            torn.append((kind, number, sorted(rows ^ expected)[:6]))

    deltas_per_second = len(epochs) / elapsed
    record(
        f"load[{backend}]",
        writers=writers,
        readers=readers,
        seconds=round(elapsed, 1),
        deltas=len(epochs),
        deltas_per_second=round(deltas_per_second, 1),
        write_p50_ms=round(1000 * statistics.median(write_latencies), 1),
        write_p99_ms=round(1000 * _percentile(write_latencies, 0.99), 1),
        reads=len(reads),
        reads_per_second=round(len(reads) / elapsed, 1),
        read_p50_ms=round(1000 * statistics.median(read_latencies), 1),
        read_p99_ms=round(1000 * _percentile(read_latencies, 0.99), 1),
        epochs_seen_by_readers=len({number for _, number, _ in reads}),
        torn_reads=len(torn),
    )
    assert not torn, torn[:10]
    assert len(epochs) >= 10 and len(reads) >= 10, (len(epochs), len(reads))
    assert len({number for _, number, _ in reads}) > 1, "the readers saw a single epoch"
    server.assert_alive()
