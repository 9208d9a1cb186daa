"""Exporting a whole relation in one request, in each format, against paging through it.

    .venv/bin/python -m bench.export [--side 1733] [--out FILE]

`big(x, y) :- n(x), n(y).` over `--side` numbers (1,733: 3.0 million rows), served on SQLite
and on PostgreSQL (a database made for the run), side by side in one run: `GET
/v1/relations/big/export` as CSV, NDJSON, Arrow and Parquet, each read to its end at the
client, and, for comparison, the same rows paged at the service's page size (1,000) as CSV,
as a client had to before, for the first 100,000 rows (the whole would take 30 times that).
Reported per run: seconds, rows a second, bytes, and the growth of the server's resident
memory above what it held before (sampled every 10 ms). Prints a Markdown table (and writes
it to `--out`).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.report import publish
from bench.served import fresh_database, resident_bytes, served

PROGRAM = ".decl n(x: number)\nbig(x, y) :- n(x), n(y).\n"
PAGED_ROWS = 100_000


class _Peak:
    """The largest resident memory of a process while the block runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, resident_bytes(self.pid))
            self._done.wait(0.01)

    def __enter__(self) -> _Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()


def _export(client: httpx.Client, pid: int, fmt: str) -> tuple[float, int, int, int]:
    """(seconds, bytes, rows, memory growth) of one export read to its end."""
    before = resident_bytes(pid)
    size = lines = 0
    with _Peak(pid) as peak:
        start = time.perf_counter()
        with client.stream("GET", "/v1/relations/big/export", params={"format": fmt}) as body:
            body.raise_for_status()
            for chunk in body.iter_bytes():
                size += len(chunk)
                lines += chunk.count(b"\n")
        seconds = time.perf_counter() - start
    return seconds, size, lines, max(peak.peak - before, 0)


def _paged(client: httpx.Client, limit: int) -> tuple[float, int]:
    """(seconds, rows) of paging CSV until `limit` rows."""
    rows, cursor = 0, None
    start = time.perf_counter()
    while rows < limit:
        params = {"format": "csv", **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/relations/big", params=params).raise_for_status()
        rows += page.text.count("\n") - 1
        cursor = page.headers.get("x-next-cursor")
        if cursor is None:
            break
    return time.perf_counter() - start, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1733)
    parser.add_argument("--out")
    args = parser.parse_args()
    total = args.side**2
    lines = [
        f"Exporting `big`, {total:,} rows of two numbers, one request each",
        "",
        "| database | how | seconds | rows/s | MB sent | server memory growth |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    with tempfile.TemporaryDirectory() as directory:
        for database in ("sqlite", "postgresql"):
            with (
                fresh_database(database, Path(directory)) as url,
                served({"REASONER_DATABASE_URL": url}, timeout=600) as server,
            ):
                client = server.client
                client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
                facts = {"n": [[x] for x in range(args.side)]}
                client.post("/v1/facts", json={"facts": facts}).raise_for_status()
                for fmt in ("csv", "ndjson", "arrow", "parquet"):
                    seconds, size, newlines, growth = _export(client, server.pid, fmt)
                    if fmt in ("csv", "ndjson"):
                        assert newlines == total + (fmt == "csv"), (fmt, newlines)
                    lines.append(
                        f"| {database} | export, {fmt} | {seconds:.2f} | {total / seconds:,.0f} "
                        f"| {size / 1e6:.1f} | {growth / 2**20:.0f} MiB |"
                    )
                seconds, rows = _paged(client, PAGED_ROWS)
                lines.append(
                    f"| {database} | pages of 1,000, CSV (first {rows:,} rows) | {seconds:.2f} "
                    f"| {rows / seconds:,.0f} | | |"
                )
    publish(lines, args.out)


if __name__ == "__main__":
    main()
