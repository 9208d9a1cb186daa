"""Two data stores in one server: one store's reads while another runs a long write.

    .venv/bin/python -m bench.store_isolation [--seconds 60] [--out FILE]

The default store serves a transitive closure (a page of `reach` and a query, read in turn by
one client, each waiting for its answer). A second store, made for the run with its own
deadline, runs a write that never ends (`n(x + 1) :- n(x)`) until its deadline, `--seconds`.
The reads are measured alone, then beside that write, on SQLite and on PostgreSQL (a database
made for the run on `REASONER_BENCH_POSTGRES`), side by side in one run. Reported: reads, their
median, 99th percentile and worst latency at the client, and how the long write ended.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.report import publish
from bench.served import fresh_database, served

PROGRAM = """.decl edge(x: number, y: number)
.decl reach(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
RUNAWAY = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x).\n"
"""A write of `seed` never ends: it runs until its store's deadline refuses it."""
NODES = 300
EDGES = 600


def _reads(client: httpx.Client, seconds: float) -> list[float]:
    """Read in turn a page of `reach` and a query's answer for `seconds`; each one's latency."""
    latencies: list[float] = []
    end = time.perf_counter() + seconds
    turn = 0
    while time.perf_counter() < end:
        asked = time.perf_counter()
        if turn % 2:
            answer = client.post("/v1/query", json={"query": f"reach({turn % NODES}, y)"})
        else:
            answer = client.get("/v1/relations/reach", params={"limit": 100})
        answer.raise_for_status()
        latencies.append(time.perf_counter() - asked)
        turn += 1
    return latencies


def _measure(client: httpx.Client, seconds: float) -> tuple[list[float], list[float], str]:
    """(latencies alone, latencies beside the long write, how that write ended)."""
    chosen = random.Random(5)
    edges = [[chosen.randrange(NODES), chosen.randrange(NODES)] for _ in range(EDGES)]
    client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
    client.post("/v1/facts", json={"facts": {"edge": edges}}).raise_for_status()
    alone = _reads(client, min(seconds, 10))
    made = client.put("/v1/stores/busy", json={"settings": {"epoch_timeout_seconds": seconds}})
    made.raise_for_status()
    client.post("/v1/stores/busy/rules", content=RUNAWAY, headers={"content-type": "text/plain"})
    ended: list[str] = []

    def long_write() -> None:
        answer = client.post("/v1/stores/busy/facts", json={"facts": {"seed": [[0]]}})
        ended.append(f"{answer.status_code} {answer.json().get('code', '')}".strip())

    writing = threading.Thread(target=long_write)
    started = time.perf_counter()
    writing.start()
    while client.get("/v1/stores/busy").json()["queued_writes"] < 1:
        time.sleep(0.001)
    beside = _reads(client, seconds - 1)
    writing.join()
    ended.append(f"after {time.perf_counter() - started:.1f} s")
    return alone, beside, ", ".join(ended)


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = [
        f"Reads of the default store (a page of a transitive closure and a query, in turn, "
        f"one client), alone and while another store runs a write of {args.seconds:g} s.",
        "",
        "| database | reads | count | median | p99 | worst | the long write |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    with tempfile.TemporaryDirectory() as directory:
        for database in ("sqlite", "postgresql"):
            with (
                fresh_database(database, Path(directory)) as url,
                served({"REASONER_DATABASE_URL": url}, timeout=args.seconds + 60) as server,
            ):
                alone, beside, ended = _measure(server.client, args.seconds)
            for what, latencies, note in (("alone", alone, ""), ("beside", beside, ended)):
                rows.append(
                    f"| {database} | {what} | {len(latencies):,} | "
                    f"{statistics.median(latencies) * 1000:.1f} ms | "
                    f"{_percentile(latencies, 99) * 1000:.1f} ms | "
                    f"{max(latencies) * 1000:.1f} ms | {note} |"
                )
    publish(rows, args.out)


if __name__ == "__main__":
    main()
