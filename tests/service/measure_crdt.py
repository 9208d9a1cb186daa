"""Measure the service on the CRDT benchmark (not a test: run it by hand).

    .venv/bin/python -m tests.service.measure_crdt [--postgres]

1. A server starts on a fresh database with `REASONER_PROGRAM=crdt_linear.dl`; both inputs are
   posted as Soufflé `.facts` bodies; reported: the time of each load and of the whole load.
2. 20 deltas of 10 facts each (10 characters deleted, then the same 10 restored, alternately)
   through HTTP: end-to-end latency, next to the engine's own `seconds` in each response, and
   next to `Materialization.apply` of the same deltas in this process on the same data.
3. The server is stopped and restarted: time from process start to `/ready` (the rebuild from
   the committed program and facts).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from reasoner.elastic.epoch import Delta
from reasoner.io.facts import load_inputs, read_facts
from reasoner.materialization import Materialization
from tests.service.conftest import Databases, Server, server_settings

BENCH = Path(os.environ.get("REASONER_BENCH_DIR", Path(__file__).parents[3] / "shared" / "bench"))
CRDT = BENCH / "crdt"


def _deltas(count: int = 20, size: int = 10, seed: int = 7) -> list[Delta]:
    inserted = read_facts(CRDT / "insert_input.facts", ["number"] * 4)
    removed = set(read_facts(CRDT / "remove_input.facts", ["number"] * 2))
    visible = sorted({(a, b) for a, b, _c, _d in inserted} - removed)
    rng = random.Random(seed)
    out = []
    for _ in range(count // 2):
        rows = [list(r) for r in rng.sample(visible, size)]
        out.append(Delta(insert={"remove_input": rows}))
        out.append(Delta(retract={"remove_input": rows}))
    return out


def _ms(values: list[float]) -> str:
    median, low, high = (statistics.median(values) * 1e3, min(values) * 1e3, max(values) * 1e3)
    return f"median {median:.1f} ms (min {low:.1f}, max {high:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="measure-crdt-"))
    databases = Databases(root)
    url = databases.new("postgresql" if args.postgres else "sqlite")
    settings = server_settings(
        url,
        REASONER_PROGRAM=str(CRDT / "crdt_linear.dl"),
        REASONER_MAX_REQUEST_BYTES=str(64 * 1024 * 1024),
        REASONER_QUERY_TIMEOUT_SECONDS="60",
    )
    server = Server(root, settings)
    try:
        started = time.perf_counter()
        server.start()
        print(f"empty server ready: {time.perf_counter() - started:.2f} s")
        client = server.client()
        client.timeout = 1200
        load_start = time.perf_counter()
        for name in ("insert_input", "remove_input"):
            body = (CRDT / f"{name}.facts").read_bytes()
            start = time.perf_counter()
            response = client.post(
                f"/v1/relations/{name}/facts",
                content=body,
                headers={"content-type": "text/tab-separated-values"},
            ).raise_for_status()
            report = response.json()
            print(
                f"POST {name}.facts ({len(body) / 1e6:.1f} MB, {report['facts_inserted']} facts): "
                f"{time.perf_counter() - start:.2f} s, epoch {report['epoch']} "
                f"{report['strategy']} ({report['fallback_reason']}), "
                f"engine {report['seconds']:.2f} s"
            )
        print(f"CRDT loaded through the API, ready: {time.perf_counter() - load_start:.2f} s")
        sizes = {r["name"]: r["size"] for r in client.get("/v1/relations").json()["relations"]}
        print(f"result: {sizes['result']} tuples, nextVis: {sizes['nextVis']}")

        deltas = _deltas()
        http, engine, strategies = [], [], []
        for delta in deltas:
            facts = delta.insert or delta.retract
            verb = "POST" if delta.insert else "DELETE"
            start = time.perf_counter()
            response = client.request(verb, "/v1/facts", json={"facts": facts})
            http.append(time.perf_counter() - start)
            report = response.raise_for_status().json()
            engine.append(report["seconds"])
            strategies.append(report["strategy"])
        print(f"10-fact deltas over HTTP ({len(deltas)}): end to end {_ms(http)}")
        print(f"  engine apply inside the server: {_ms(engine)}; strategies {set(strategies)}")
        overhead = [h - e for h, e in zip(http, engine, strict=True)]
        print(f"  HTTP + validation + commit (end to end - apply): {_ms(overhead)}")

        server.stop()
        start = time.perf_counter()
        server.start()
        print(f"restart to ready (rebuild from the database): {time.perf_counter() - start:.2f} s")
        server.stop()

        start = time.perf_counter()
        m = Materialization.from_text((CRDT / "crdt_linear.dl").read_text())
        m.load(load_inputs(m.analyzed, CRDT))
        bootstrap = m.bootstrap()
        print(
            f"in-process: read the .facts files and bootstrap {time.perf_counter() - start:.2f} s "
            f"(Bootstrap {bootstrap.seconds:.2f} s)"
        )
        local, local_engine = [], []
        for delta in deltas:
            start = time.perf_counter()
            report = m.apply(delta)
            local.append(time.perf_counter() - start)
            local_engine.append(report.seconds)
        print(f"in-process Materialization.apply of the same deltas: {_ms(local)}")
        print(
            "HTTP adds (median end to end - median in-process apply): "
            f"{(statistics.median(http) - statistics.median(local)) * 1e3:.1f} ms"
        )
    finally:
        server.stop()
        databases.drop_all()


if __name__ == "__main__":
    main()
