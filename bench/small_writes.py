"""Small writes from many clients at once: one fact a write, acknowledged writes a second.

    .venv/bin/python -m bench.small_writes [--clients 32] [--writes 3000] [--out FILE]

A transitive closure over a sparse random graph, served on SQLite and on PostgreSQL (a
database made for the run on `REASONER_BENCH_POSTGRES`), each side by side in one run with
writes grouped into epochs (the default) and one epoch a write
(`REASONER_WRITE_GROUP_MAX=1`). `--clients` clients, spread over two load processes, post
`--writes` one-edge deltas in all, each waiting for its answer before the next. Reported per
run: acknowledged writes a second, the latency's median and 99th percentile at the client,
the epochs made, and whether every acknowledged edge is in the relation afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import re
import statistics
import tempfile
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
NODES = 1_000_000
LOADERS = 2


async def _client(port: int, edges: list[tuple[int, int]], latencies: list[float]) -> None:
    """One client on one kept-alive connection, written to and read from the socket itself:
    httpx spent 2.6 ms of CPU a request, more than the server, on the same two cores."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for x, y in edges:
            body = json.dumps({"facts": {"insert": {"edge": [[x, y]]}}}).encode()
            request = (
                f"POST /v1/deltas HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            asked = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = int(re.search(rb"(?i)content-length: *([0-9]+)", head)[1])  # type: ignore[index]
            answer = await reader.readexactly(length)
            if status != 200:
                raise RuntimeError(f"write refused: {status} {answer[:300]!r}")
            latencies.append(time.perf_counter() - asked)
    finally:
        writer.close()


def _load(port: int, edges_by_client: list[list[tuple[int, int]]]) -> list[float]:
    """One load process: its clients, concurrently; their latencies."""
    latencies: list[float] = []

    async def run() -> None:
        await asyncio.gather(*(_client(port, edges, latencies) for edges in edges_by_client))

    asyncio.run(run())
    return latencies


def _measure(
    client: httpx.Client, clients: int, writes: int
) -> tuple[float, list[float], int, bool]:
    """(acknowledged/s, latencies, epochs made, every edge present)."""
    client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
    chosen = random.Random(11)
    edges = list({(chosen.randrange(NODES), chosen.randrange(NODES)) for _ in range(writes)})
    per_client = [edges[i::clients] for i in range(clients)]
    per_loader = [per_client[i::LOADERS] for i in range(LOADERS)]
    before = client.get("/v1/epochs", params={"limit": 1}).json()["epochs"][0]["number"]
    port = client.base_url.port
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(LOADERS) as pool:
        results = pool.starmap(_load, [(port, share) for share in per_loader])
    wall = time.perf_counter() - start
    latencies = [x for share in results for x in share]
    after = client.get("/v1/epochs", params={"limit": 1}).json()["epochs"][0]["number"]
    sizes = {r["name"]: r["size"] for r in client.get("/v1/relations").json()["relations"]}
    return len(latencies) / wall, latencies, after - before, sizes["edge"] == len(edges)


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--writes", type=int, default=3000)
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = [
        f"One-edge writes to a transitive closure, {args.clients} clients, {args.writes:,} "
        "writes a run.",
        "",
        "| database | writes | acknowledged/s | median | p99 | epochs | all present |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    with tempfile.TemporaryDirectory() as directory:
        for database in ("sqlite", "postgresql"):
            for grouped in (True, False):
                with fresh_database(database, Path(directory)) as url:
                    settings = {"REASONER_DATABASE_URL": url}
                    if not grouped:
                        settings["REASONER_WRITE_GROUP_MAX"] = "1"
                    with served(settings) as server:
                        rate, latencies, epochs, present = _measure(
                            server.client, args.clients, args.writes
                        )
                what = "grouped (default)" if grouped else "one epoch each"
                rows.append(
                    f"| {database} | {what} | {rate:,.0f} | "
                    f"{statistics.median(latencies) * 1000:.1f} ms | "
                    f"{_percentile(latencies, 99) * 1000:.1f} ms | {epochs:,} | "
                    f"{'yes' if present else 'NO'} |"
                )
    publish(rows, args.out)


if __name__ == "__main__":
    main()
