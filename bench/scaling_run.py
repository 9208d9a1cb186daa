"""Points of the scaling study: Bootstraps in a process of their own, through the public API.

    python -m bench.scaling_run REQUEST.json

REQUEST.json (written by `bench.scaling`): the system (`engine`: `reference`, `local`, `spark`;
`master` and `spark_iteration` for Spark) and its points, measured in turn (the full study gives
one point per process, `--quick` all of a system's): each a program, its input relations (file,
column types) and its output relations. Spark's other settings (driver memory, a standalone
cluster's addresses) come from `spark-defaults.conf` in `SPARK_CONF_DIR`, which PySpark's
launcher reads; Polars' threads from `POLARS_MAX_THREADS`.

The engine is used only through `from reasoner import Materialization, EngineSettings`.
Per point:

1. a warm-up Bootstrap of the program on the first `warmup_rows` facts of each input (none
   when 0), unless the process ran that program already (a fresh Spark session starts here
   and its first queries are planned and compiled; Polars is imported): a service's session
   is warm, and a first query's seconds are not the data's;
2. the inputs, read in chunks (numbers as integers, symbols as they are) into
   `Materialization.load`;
3. the measured Bootstrap: `bootstrap()`'s seconds; the resident memory of this process and
   of what it started (the driver's JVM, its Python workers: the session the harness gave it)
   sampled every 0.1 s meanwhile; with Spark, the jobs it ran: the id of a one-task probe job
   run just before and just after, each under a job group of its own, read back through the
   SparkContext's status tracker (job ids are consecutive within a SparkContext, so the jobs in
   between are the Bootstrap's, whatever job group the engine put them in; without a warm-up
   there is no SparkContext before the first Bootstrap, which then counts from job 0);
4. per output relation, its size and a digest (a sum of polars row hashes of the relation in
   user values, `Materialization.batch`), for the cross-system check.

It prints `bench.runners.common`'s protocol: an "epoch" line per point (the Bootstrap, with the
figures above), then "done".
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from bench.harness import session_rss
from bench.runners.common import emit
from reasoner import EngineSettings, Materialization

CHUNK = 500_000
"""Facts per `load` call: the rows of one chunk are Python tuples until the engine encodes them."""
SAMPLE_SECONDS = 0.1


def read_rows(path: Path, types: list[str], limit: int | None = None) -> Iterator[list[tuple]]:
    """The facts of one file in chunks of `CHUNK` rows (at most `limit` rows in all)."""
    numeric = [t == "number" for t in types]
    with open(path, encoding="utf-8") as handle:
        lines = itertools.islice(handle, limit) if limit is not None else handle
        while True:
            chunk = list(itertools.islice(lines, CHUNK))
            if not chunk:
                return
            yield [
                tuple(
                    int(f) if n else f
                    for f, n in zip(line.rstrip("\n").split("\t"), numeric, strict=True)
                )
                for line in chunk
            ]


def materialization(
    system: dict, point: dict, limit: int | None = None
) -> tuple[Materialization, int]:
    """The point's program with its inputs loaded (the first `limit` facts of each), and
    their count."""
    options = {"spark_iteration": system["spark_iteration"]} if "spark_iteration" in system else {}
    settings = EngineSettings(system["engine"], system.get("master") or "local[*]", **options)
    text = Path(point["program"]).read_text(encoding="utf-8")
    m = Materialization.from_text(
        text,
        point["program"],
        maintained=False,  # type: ignore[arg-type]  # Bootstrap alone: no Update plans
        engines=settings,  # type: ignore[arg-type]
    )
    count = 0
    for name, relation in point["inputs"].items():
        for chunk in read_rows(Path(relation["path"]), relation["types"], limit):
            m.load({name: chunk})
            count += len(chunk)
    return m, count


class Sampler:
    """The highest resident memory of this process's session, sampled while it runs."""

    def __init__(self) -> None:
        self.peak = session_rss(os.getsid(0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.peak = max(self.peak, session_rss(os.getsid(0)))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, session_rss(os.getsid(0)))


def last_job_id() -> int:
    """Run a one-task job under a group of its own and return its id (Spark numbers jobs
    consecutively within a SparkContext, from 0); -1 before the engine has started Spark (the
    probe must not start a SparkContext of its own: the engine would then run in it, without its
    settings)."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return -1
    context = session.sparkContext
    group = f"scaling-probe-{time.monotonic_ns()}"
    context.setJobGroup(group, "scaling study: job counter")
    try:
        context.parallelize([0], 1).count()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    return max(context.statusTracker().getJobIdsForGroup(group))


def digest(m: Materialization, name: str) -> list[int]:
    """[size, sum of row hashes mod 2^64] of a relation in user values."""
    batch = m.batch(name)
    if isinstance(batch, list):  # arity 0
        return [len(batch), len(batch)]
    frame = batch.frame.with_columns(pl.col(pl.Categorical).cast(pl.String))
    hashes = frame.hash_rows(seed=0).to_numpy()
    return [len(hashes), int(hashes.sum(dtype=np.uint64))]


def measure(system: dict, point: dict, number: int, warm: bool) -> None:
    """Warm-up (unless `warm`: this program ran already), load, measured Bootstrap and digests
    of one point; its "epoch" line."""
    spark = system["engine"] == "spark"
    start = time.perf_counter()
    if not warm and system.get("warmup_rows", 1000):
        sample, _ = materialization(system, point, limit=system.get("warmup_rows", 1000))
        sample.bootstrap()
        del sample
    warmup_seconds = time.perf_counter() - start

    start = time.perf_counter()
    m, facts = materialization(system, point)
    load_seconds = time.perf_counter() - start
    gc.collect()

    before_job = last_job_id() if spark else None
    rss_before = session_rss(os.getsid(0))
    with Sampler() as sampler:
        report = m.bootstrap()
    if before_job is not None:
        after = last_job_id()
        jobs = after - before_job - 1 if after >= 0 else None
    else:
        jobs = None
    iterations = sum(run.iterations for run in report.strata)
    emit(
        "epoch",
        epoch=number,
        point=point.get("id"),
        seconds=report.seconds,
        strategy="bootstrap",
        engine=report.engine.engine,
        input_facts=facts,
        iterations=iterations,
        strata=[
            {"relations": list(r.relations), "iterations": r.iterations, "derived": r.derived}
            for r in report.strata
        ],
        jobs=jobs,
        jobs_per_iteration=jobs / iterations if jobs is not None and iterations else None,
        warmup_seconds=warmup_seconds,
        load_seconds=load_seconds,
        rss_before_bytes=rss_before,
        bootstrap_peak_rss_bytes=sampler.peak,
        sizes={name: m.size(name) for name in point["outputs"]},
        digest={name: digest(m, name) for name in point["outputs"]},
    )


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    warmed: set[str] = set()
    for number, point in enumerate(request["points"]):
        measure(request, point, number, point["program"] in warmed)
        warmed.add(point["program"])
        gc.collect()
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
