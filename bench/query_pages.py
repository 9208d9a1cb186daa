"""Paging through a query's answer, with answers kept per (query, epoch) and without.

    .venv/bin/python -m bench.query_pages [--nodes 1000] [--out FILE]

A random graph (`--nodes` nodes, three edges each, seed 7) and its transitive closure, served
on SQLite and on PostgreSQL (a database made for the run on `REASONER_BENCH_POSTGRES`), each
twice side by side in one run: as the service runs by default (answers kept) and with
`REASONER_QUERY_CACHE_ROWS=0` (every page evaluates the query again, as before). The query
joins the closure with itself; its answer is paged at 1,000 rows a page. Reported per run: one
evaluation (the unpaged answer's `seconds`), the whole paging at the client, a later page's
median at the client, and their ratio. Prints a Markdown table (and writes it to `--out`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.report import publish
from bench.served import fresh_database, served

PROGRAM = """.decl edge(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
QUERY = "reach(x, y), edge(y, z), !reach(z, x), x < 45"
PAGE = 1000


def _graph(nodes: int) -> list[list[int]]:
    chosen = random.Random(7)
    return [[x, chosen.randrange(nodes)] for x in range(nodes) for _ in range(3)]


def _measure(client: httpx.Client, edges: list[list[int]]) -> tuple[float, float, float, int]:
    """(one evaluation s, whole paging s, a later page's median s, answers)."""
    client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
    client.post("/v1/facts", json={"facts": {"edge": edges}}).raise_for_status()
    limit = {"query": QUERY, "limit": PAGE}
    start = time.perf_counter()
    page = client.post("/v1/query", json=limit).raise_for_status().json()
    evaluation = page["seconds"]
    later, answers = [], len(page["rows"])
    while page["next"] is not None:
        asked = time.perf_counter()
        page = client.post("/v1/query", json={**limit, "cursor": page["next"]})
        page = page.raise_for_status().json()
        later.append(time.perf_counter() - asked)
        answers += len(page["rows"])
    whole = time.perf_counter() - start
    return evaluation, whole, statistics.median(later) if later else 0.0, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--out")
    args = parser.parse_args()
    edges = _graph(args.nodes)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for database in ("sqlite", "postgresql"):
            for kept in (True, False):
                with fresh_database(database, Path(directory)) as url:
                    settings = {"REASONER_DATABASE_URL": url, "REASONER_PAGE_SIZE": str(PAGE)}
                    if not kept:
                        settings["REASONER_QUERY_CACHE_ROWS"] = "0"
                    with served(settings, timeout=600) as server:
                        client = server.client
                        evaluation, whole, later, answers = _measure(client, edges)
                what = "kept answers (default)" if kept else "no kept answers (as before)"
                rows.append(
                    f"| {database} | {what} | {answers:,} | {evaluation:.2f} s | {whole:.2f} s "
                    f"| {whole / evaluation:.2f} | {later * 1000:.1f} ms |"
                )
    lines = [
        f"Paging `{QUERY}` at {PAGE:,} rows a page, a random graph of {args.nodes:,} nodes",
        "",
        "| database | answers kept | answers | one evaluation | whole paging | ratio "
        "| a later page (median) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
