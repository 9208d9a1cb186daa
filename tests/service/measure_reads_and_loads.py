"""Measure reads of a large relation and loading through HTTP (not a test: run it by hand).

    .venv/bin/python -m tests.service.measure_reads_and_loads [--rows N] [--postgres]

The goals these figures are held to (issue "the service as a new user meets it"):
- loading over HTTP takes at most 1.5 times the in-process load and Bootstrap, and the server
  grows by at most twice the state it builds;
- the first page and a bound-column read of a relation of N rows take at most 50 ms;
- a write's latency while reads run flat out is at most twice its idle latency.

1. In process: `Materialization.load` + `bootstrap` of N edges (`e(i, i * 7919 % N)`) and the
   resident growth of this process.
2. A server on a fresh database: the same edges as one `.facts` body; the time and the
   server's resident growth (from /proc).
3. Reads: the first page, a page through a cursor (right after the load, then once the
   relation's rows in value order are built), `?x=77`, and `POST /v1/query` of
   `edge(77, y)`, each the median of 5.
4. Writes of one fact (and its retraction): idle, then while two client processes read first
   pages without pause (the median of 21).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from multiprocessing.synchronize import Event
from pathlib import Path

import httpx

from reasoner.materialization import Materialization
from service.core.epoch_budget import resident_bytes
from tests.service.conftest import Databases, Server, server_settings

READ_PATH = "/v1/relations/edge"
PROGRAM = ".decl edge(x: number, y: number)\nreach(y) :- edge(77, y).\n"


def _edges(count: int) -> list[tuple[int, int]]:
    return [(i, i * 7919 % count) for i in range(count)]


def _server_rss(server: Server) -> int:
    assert server.process is not None
    statm = Path(f"/proc/{server.process.pid}/statm").read_text().split()
    return int(statm[1]) * 4096


def _read_until(base_url: str, headers: dict[str, str], stop: Event) -> None:
    """A client of its own (a process: its work does not share the measuring client's
    interpreter lock) reading first pages without pause."""
    with httpx.Client(base_url=base_url, headers=headers) as reader:
        while not stop.is_set():
            reader.get(READ_PATH, timeout=600)


def _median_ms(run, times: int = 5) -> float:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    edges = _edges(args.rows)

    before = resident_bytes() or 0
    start = time.perf_counter()
    m = Materialization.from_text(PROGRAM)
    m.load({"edge": edges})
    m.bootstrap()
    in_process = time.perf_counter() - start
    state_bytes = (resident_bytes() or 0) - before
    print(f"in process: load + Bootstrap {in_process:.1f} s, +{state_bytes >> 20} MiB")
    del m

    root = Path(tempfile.mkdtemp(prefix="measure-reads-"))
    databases = Databases(root)
    url = databases.new("postgresql" if args.postgres else "sqlite")
    settings = server_settings(
        url, REASONER_PAGE_SIZE="1000", REASONER_MAX_REQUEST_BYTES=str(1 << 30)
    )
    server = Server(root / "server", settings)
    (root / "server").mkdir()
    server.start()
    try:
        with server.client() as client:
            client.post(
                "/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"}
            ).raise_for_status()
            body = "".join(f"{x}\t{y}\n" for x, y in edges)
            idle_rss = _server_rss(server)
            start = time.perf_counter()
            client.post(
                "/v1/relations/edge/facts",
                content=body,
                headers={"content-type": "text/tab-separated-values"},
                timeout=3600,
            ).raise_for_status()
            loaded = time.perf_counter() - start
            grown = _server_rss(server) - idle_rss
            print(
                f"HTTP load: {loaded:.1f} s ({loaded / in_process:.2f}x in process), "
                f"server +{grown >> 20} MiB ({grown / max(state_bytes, 1):.2f}x the state)"
            )
            first = client.get("/v1/relations/edge").json()
            print(f"first page: {_median_ms(lambda: client.get('/v1/relations/edge')):.0f} ms")
            cursor = first["next"]
            page = _median_ms(lambda: client.get("/v1/relations/edge", params={"cursor": cursor}))
            print(f"next page: {page:.0f} ms")
            time.sleep(3)  # the relation's rows in value order are built (reasoner.reads.pages)
            sorted_first = _median_ms(lambda: client.get("/v1/relations/edge"))
            sorted_next = _median_ms(
                lambda: client.get("/v1/relations/edge", params={"cursor": cursor})
            )
            print(f"once sorted: first page {sorted_first:.1f} ms, next page {sorted_next:.1f} ms")
            bound = _median_ms(lambda: client.get("/v1/relations/edge", params={"x": 77}))
            print(f"?x=77: {bound:.0f} ms")
            query = _median_ms(lambda: client.post("/v1/query", json={"query": "edge(77, y)"}))
            print(f"query edge(77, y): {query:.0f} ms")
            idle = _median_ms(
                lambda: (
                    client.post("/v1/facts", json={"facts": {"edge": [[-1, -1]]}})
                    and client.request("DELETE", "/v1/facts", json={"facts": {"edge": [[-1, -1]]}})
                )
            )
            stop = multiprocessing.Event()
            readers = [
                multiprocessing.Process(
                    target=_read_until, args=(server.base_url, dict(client.headers), stop)
                )
                for _ in range(2)
            ]
            for reader in readers:
                reader.start()
            time.sleep(1)  # both reading flat out
            busy = _median_ms(
                lambda: (
                    client.post("/v1/facts", json={"facts": {"edge": [[-1, -1]]}})
                    and client.request("DELETE", "/v1/facts", json={"facts": {"edge": [[-1, -1]]}})
                ),
                times=21,
            )
            stop.set()
            for reader in readers:
                reader.join()
            print(
                f"a write and its undo: idle {idle:.0f} ms, during reads {busy:.0f} ms "
                f"({busy / idle:.1f}x)"
            )
    finally:
        server.stop()
        databases.drop_all()


if __name__ == "__main__":
    main()
