"""Scaling: Bootstrap time, the driver's peak memory and Spark jobs per iteration against input
size, in process, on Spark `local[2]` and on a standalone cluster of two workers.

    .venv/bin/python -m bench.scaling [--quick] [--out DIR] [--work DIR] [--datasets rmat lubm]
        [--systems NAME ...] [--rmat N ...] [--lubm N ...] [--memory-cap GiB] [--time-cap S]
        [--budget MINUTES]

Also part of `python -m bench` (`--scaling`, on by default in a full run).

Datasets (generated once into `--work`, default bench/.work/scaling, and reused):

- `rmat`: R-MAT graphs (`bench.generate.rmat_edges`, GTgraph's parameters) of 10^3, 10^4, 10^5
  and 10^6 nodes (ids up to the next power of two) and 4 edges per node drawn (duplicates
  dropped), through `REACH` below: reachability from 8 sources drawn (seeded) among the nodes
  with an out edge. Not the transitive closure: R-MAT's degree skew gives a giant strongly
  connected component, whose closure is quadratic in its size (hundreds of billions of pairs at
  10^6 nodes, even at a small edge factor the component holds a good part of the nodes);
  reachability from k sources is the same recursion (`tc`'s left-linear rule, the source column
  carried along) with at most k * nodes tuples (13.7 M for 16 sources at 10^6 nodes, 1.8 GB in
  process: 8 sources keep the largest point well within the memory cap), and its depth is the
  graph's (10 to 20 iterations). Its source column is copied unchanged from the recursive atom
  to the head, so the stratum decomposes (`reasoner.plan.pivot`): on Spark it runs in one job
  whose tasks each take some of the sources, the case Spark is built for.
- `lubm`: LUBM-like universities from `bench.generate` (UBA 1.7's schema and ranges, 15-25
  departments each, about 134 k triples a university) at 1, 3, 10, 30 and 100 universities
  (13.4 M triples), through ../shared/bench/lubm1/program.dl (the six RDFS rules over one
  `triple` relation). Its recursive stratum takes 3 iterations at every size and moves every
  column, so it does not decompose: on Spark each iteration is several jobs.

Systems (`SYSTEMS`): the single-thread in-process baseline (`local-1t`: the vectorized executor
with `POLARS_MAX_THREADS=1`), the per-tuple kernel (`reference`, one thread by nature; on the
graphs only, the deep recursion it is made for: on LUBM's three iterations it is the vectorized
executor's own small-iteration path), the vectorized executor on both cores (`local`), Spark
`local[2]` with the engine's default `spark_iteration` (iterations driven by fewer than 2 M rows
run on the in-process kernel) and with every iteration on Spark (`spark_iteration` 0), and a
standalone master with two workers of one core each, started here on loopback
(`bench.standalone`) once for the whole study, every iteration on Spark. Spark's driver gets
4 GiB of heap (`spark.driver.memory`, through a `spark-defaults.conf` in `SPARK_CONF_DIR`),
the cluster's executors 2 GiB each.

Each point is one process (`bench.scaling_run`: the engine's public API, a warm-up Bootstrap on
a 1,000-fact sample, then the measured Bootstrap) under `bench.harness`'s caps (8 GiB, 240 s a
run). Recorded: the Bootstrap's seconds (`Materialization.bootstrap`, inputs already loaded,
session warm); the peak resident memory of the driver's process tree over the Bootstrap
(Python and, with Spark, its JVM: with `local[2]` the executors are threads of that JVM; a
standalone cluster's executors are not in it and are recorded apart, with the master and
workers, as the cluster's peak); for Spark, the jobs the Bootstrap ran and their number per
iteration. A run that hits a cap is recorded as over the cap, and the larger sizes of that
dataset are not run for that system (recorded as over the cap at a smaller size); past
`--budget` minutes no run starts. Every system that finished a point must agree with the
baseline on every output relation (size and a sum of row hashes): a disagreement, or a run that
failed, is a check failure (exit status 1).

`--quick` (a smoke test, part of `python -m bench --quick`) runs the two smallest graphs and the
smallest LUBM (`QUICK_SIZES`), each system's points in one process, smallest first, without
warm-up (one Spark start-up, paid by the first point), caps 120 s a process.

The report (`README.md` with the tables, `scaling.png`: time, memory and jobs per iteration
against input size, log-log, a column per dataset; `results.json`) goes to `--out` (default
bench/results/<date>/scaling/); `bench.scaling_report` writes it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import generate, harness, scaling_report, workloads
from bench.translate import load_program

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORK = REPO / "bench" / ".work" / "scaling"
RESULTS = REPO / "bench" / "results"

LUBM_SIZES = (1, 3, 10, 30, 100)
"""Universities."""
RMAT_SIZES = (1_000, 10_000, 100_000, 1_000_000)
"""Nodes."""
QUICK_SIZES = {"rmat": 2, "lubm": 1}
"""`--quick`: the smallest sizes of each dataset. Only one of LUBM: with every iteration on
Spark, its second size (3 universities, 26 jobs) takes 40-60 s more per Spark system here, and the
quick mode stays under 3 minutes."""
RMAT_EDGE_FACTOR = 4
SOURCES = 8
REACH = """// Reachability from a few sources over an R-MAT graph (bench/scaling.py).
.decl edge(x: number, y: number)
.input edge
.decl source(x: number)
.input source
.decl reach(s: number, y: number)
.output reach
reach(s, y) :- source(s), edge(s, y).
reach(s, z) :- reach(s, y), edge(y, z).
"""
TIME_CAP = 240.0
QUICK_TIME_CAP = 120.0
MEMORY_CAP_GIB = 8.0
WARMUP_ROWS = 1000
DRIVER_MEMORY = "4g"
WORKER_MEMORY = "3g"
EXECUTOR_MEMORY = "2g"
CLUSTER_SAMPLE_SECONDS = 0.5


@dataclass(frozen=True)
class ScalingSystem:
    name: str
    label: str
    engine: str
    threads: int | None = None
    """`POLARS_MAX_THREADS` (None: Polars' default, every core)."""
    master: str | None = None
    """`local[2]` or `standalone` (the cluster started here); None in process."""
    spark_iteration: int | None = None
    """None: the engine's default (`reasoner.executors.cost.DEFAULT_SPARK_ITERATION`)."""
    datasets: tuple[str, ...] | None = None
    """The datasets it runs (None: all)."""

    @property
    def spark(self) -> bool:
        return self.engine == "spark"

    def runs(self, dataset: str) -> bool:
        return self.datasets is None or dataset in self.datasets


BASELINE = "local-1t"
SYSTEMS = (
    ScalingSystem("local-1t", "in-process, 1 thread (baseline)", "local", threads=1),
    ScalingSystem(
        "reference", "in-process per-tuple kernel", "reference", threads=1, datasets=("rmat",)
    ),
    ScalingSystem("local", "in-process, 2 threads", "local"),
    ScalingSystem("spark-local", "Spark local[2], default", "spark", master="local[2]"),
    ScalingSystem(
        "spark-local-all", "Spark local[2], all on Spark", "spark", master="local[2]",
        spark_iteration=0,
    ),
    ScalingSystem(
        "spark-standalone", "Spark standalone 2x1 core, all on Spark", "spark",
        master="standalone", spark_iteration=0,
    ),
)  # fmt: skip
BY_NAME = {s.name: s for s in SYSTEMS}


@dataclass(frozen=True)
class Point:
    """One size of a dataset, generated: the program and the input files of its relations."""

    dataset: str
    size: int
    program: Path
    inputs: dict[str, Path]
    input_tuples: int


@dataclass(frozen=True)
class Dataset:
    name: str
    label: str
    unit: str
    sizes: tuple[int, ...]
    prepare: Callable[[Path, int], Point]


def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def prepare_lubm(work: Path, universities: int) -> Point:
    data = work / "lubm" / f"{universities}u"
    facts = data / "triple.facts"
    if not facts.exists():
        partial = facts.with_suffix(".partial")
        generate.write_lubm_triples(partial, universities, seed=universities)
        partial.rename(facts)
    program = workloads.bench_dir() / "lubm1" / "program.dl"
    return Point("lubm", universities, program, {"triple": facts}, _count_lines(facts))


def prepare_rmat(work: Path, nodes: int) -> Point:
    data = work / "rmat" / f"{nodes}n"
    edges_path, sources_path = data / "edge.facts", data / "source.facts"
    if not sources_path.exists():
        edges = generate.rmat_edges(nodes, RMAT_EDGE_FACTOR * nodes, seed=nodes)
        generate.write_edges(edges, data)
        with_out_edges = sorted({x for x, _ in edges})
        sources = random.Random(nodes).sample(with_out_edges, SOURCES)
        sources_path.write_text("".join(f"{x}\n" for x in sorted(sources)), encoding="utf-8")
    program = work / "rmat" / "reach.dl"
    if not program.exists() or program.read_text(encoding="utf-8") != REACH:
        program.write_text(REACH, encoding="utf-8")
    inputs = {"edge": edges_path, "source": sources_path}
    return Point("rmat", nodes, program, inputs, sum(map(_count_lines, inputs.values())))


DATASETS = {
    "rmat": Dataset(
        "rmat",
        f"R-MAT ({RMAT_EDGE_FACTOR} edges/node), reachability from {SOURCES} sources",
        "nodes",
        RMAT_SIZES,
        prepare_rmat,
    ),
    "lubm": Dataset(
        "lubm", "LUBM-like, RDFS (lubm1/program.dl)", "universities", LUBM_SIZES, prepare_lubm
    ),
}
"""In the order they run: the graphs first, whose largest points cost the least."""


def _spark_conf_dir(work: Path, name: str, conf: dict[str, str]) -> Path:
    directory = work / "spark-conf" / name
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{key} {value}\n" for key, value in sorted(conf.items()))
    (directory / "spark-defaults.conf").write_text(text, encoding="utf-8")
    return directory


class _ClusterPeak:
    """The highest resident memory of a standalone cluster (master, workers, executors) while
    a point runs on it."""

    def __init__(self, cluster) -> None:  # type: ignore[no-untyped-def]
        self.cluster = cluster
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, self.cluster.rss())
            if self._stop.wait(CLUSTER_SAMPLE_SECONDS):
                return

    def __enter__(self) -> _ClusterPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class _Cluster:
    """The standalone cluster, started on first use and stopped when the study ends."""

    def __init__(self, stack: contextlib.ExitStack, logs: Path, echo) -> None:  # type: ignore[no-untyped-def]
        self.stack, self.logs, self.echo = stack, logs, echo
        self.cluster = None
        self.error: str | None = None
        self.start_seconds: float | None = None

    def get(self):  # type: ignore[no-untyped-def]
        if self.cluster is None and self.error is None:
            from bench.standalone import ClusterError, standalone

            self.echo("[scaling] starting a standalone master and 2 workers (1 core each)")
            start = time.monotonic()
            try:
                self.cluster = self.stack.enter_context(
                    standalone(self.logs, workers=2, cores=1, memory=WORKER_MEMORY)
                )
                self.start_seconds = time.monotonic() - start
                self.echo(f"[scaling] cluster {self.cluster.url} up in {self.start_seconds:.1f} s")
            except ClusterError as exc:
                self.error = str(exc).splitlines()[0]
                self.echo(f"[scaling] the standalone cluster did not start: {self.error}")
        return self.cluster


def _point_request(point: Point) -> dict:
    analyzed = load_program(point.program)
    return {
        "id": f"{point.dataset}/{point.size}",
        "program": str(point.program),
        "inputs": {
            name: {"path": str(path), "types": list(analyzed.relations[name].types)}
            for name, path in point.inputs.items()
        },
        "outputs": sorted(n for n, r in analyzed.relations.items() if r.is_output),
    }


EPOCH_FIELDS = (
    "engine",
    "input_facts",
    "iterations",
    "strata",
    "jobs",
    "jobs_per_iteration",
    "warmup_seconds",
    "load_seconds",
    "bootstrap_peak_rss_bytes",
    "sizes",
    "digest",
)


def _run_group(
    points: Sequence[Point],
    system: ScalingSystem,
    work: Path,
    cluster: _Cluster,
    cap_bytes: int,
    time_cap: float,
    echo: Callable[[str], None],
) -> list[dict]:
    """A record per point: `points` measured in turn by one `bench.scaling_run` process (one
    point in the full study). With several, a point's memory is the peak over its own Bootstrap
    (the process's peak covers them all), and a cap hit leaves the rest not run."""
    tag = "quick" if len(points) > 1 else f"{points[0].dataset}/{points[0].size}"
    run_dir = work / "runs" / tag / system.name
    run_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    if system.threads is not None:
        env["POLARS_MAX_THREADS"] = str(system.threads)
    master = system.master
    live = None
    if system.master == "standalone":
        live = cluster.get()
        if live is None:
            reason = f"no standalone cluster: {cluster.error}"
            return [{"status": "n/a", "reason": reason} for _ in points]
        master = live.url
        conf = {"spark.driver.memory": DRIVER_MEMORY, **live.driver_conf(EXECUTOR_MEMORY)}
        env["SPARK_CONF_DIR"] = str(_spark_conf_dir(work, "standalone", conf))
    elif system.spark:
        conf = {"spark.driver.memory": DRIVER_MEMORY}
        env["SPARK_CONF_DIR"] = str(_spark_conf_dir(work, "local", conf))
    warmup = 0 if len(points) > 1 else WARMUP_ROWS  # quick mode: no warm-up
    request: dict = {"engine": system.engine, "master": master, "warmup_rows": warmup}
    if system.spark_iteration is not None:
        request["spark_iteration"] = system.spark_iteration
    request["points"] = [_point_request(p) for p in points]
    request_path = run_dir / "request.json"
    request_path.write_text(json.dumps(request, indent=1) + "\n", encoding="utf-8")
    load_before = os.getloadavg()[0]
    with _ClusterPeak(live) if live is not None else contextlib.nullcontext() as sampled:
        result = harness.run(
            [sys.executable, "-m", "bench.scaling_run", str(request_path)],
            label=f"scaling {tag} / {system.name}",
            log_path=run_dir / "stderr.log",
            memory_cap_bytes=cap_bytes,
            time_cap_seconds=time_cap,
            address_space_limit=not system.spark,
            epochs_total=len(points),
            cwd=REPO,
            env=env,
            echo=echo,
        )
    records = []
    for n in range(len(points)):
        if n < len(result.epochs):
            epoch = result.epochs[n]
            record: dict = {
                "status": "ok",
                "reason": "",
                "bootstrap_seconds": epoch["seconds"],
                **{key: epoch.get(key) for key in EPOCH_FIELDS},
            }
            if len(points) == 1:
                record["run_peak_rss_bytes"] = result.peak_rss_bytes
                record["wall_seconds"] = result.wall_seconds
        elif n == len(result.epochs):
            record = {
                "status": result.status if result.status != "ok" else "error",
                "reason": result.reason or "no result",
                "cap": result.cap,
                "run_peak_rss_bytes": result.peak_rss_bytes,
                "wall_seconds": result.wall_seconds,
            }
        else:
            record = {
                "status": result.status,
                "cap": result.cap,
                "reason": "not run: the process ended at a smaller size "
                f"({result.reason or result.status})",
            }
        if sampled is not None:
            record["cluster_peak_rss_bytes"] = sampled.peak
        record["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        records.append(record)
    return records


def check_point(records: dict[str, dict], baseline: str = BASELINE) -> list[str]:
    """Disagreements among the systems that finished one point: each system's digest against
    the baseline's (or, without it, the first finished system's)."""
    finished = {n: r for n, r in records.items() if r.get("status") == "ok" and r.get("digest")}
    if not finished:
        return []
    reference = baseline if baseline in finished else next(iter(finished))
    expected = finished[reference]["digest"]
    problems = []
    for name, record in finished.items():
        if name == reference or record["digest"] == expected:
            continue
        differing = sorted(
            relation
            for relation in expected.keys() | record["digest"].keys()
            if expected.get(relation) != record["digest"].get(relation)
        )
        problems.append(
            f"{name} differs from {reference} on {', '.join(differing)} "
            f"(sizes {record.get('sizes')} vs {finished[reference].get('sizes')})"
        )
    return problems


def _summary(record: dict) -> str:
    summary = record["status"]
    if record.get("bootstrap_seconds") is not None:
        summary += f", Bootstrap {record['bootstrap_seconds']:.2f} s"
    if record.get("jobs") is not None:
        summary += f", {record['jobs']} jobs / {record['iterations']} iterations"
    if record["status"] != "ok":
        summary += f" ({record.get('reason', '')})"
    if record.get("bootstrap_peak_rss_bytes"):
        summary += f", Bootstrap peak {record['bootstrap_peak_rss_bytes'] / 2**30:.2f} GiB"
    if record.get("run_peak_rss_bytes"):
        summary += f", run peak {record['run_peak_rss_bytes'] / 2**30:.2f} GiB"
    return summary


def run(
    work: Path,
    *,
    quick: bool = False,
    cap_bytes: int = int(MEMORY_CAP_GIB * 2**30),
    time_cap: float | None = None,
    echo: Callable[[str], None] = print,
    datasets: Sequence[str] = tuple(DATASETS),
    systems: Sequence[str] = tuple(s.name for s in SYSTEMS),
    sizes: dict[str, Sequence[int]] | None = None,
    budget_minutes: float | None = None,
) -> dict:
    """Run the study; returns its results (see `bench.scaling_report` for their shape).
    Past `budget_minutes` of the study, no further run starts (those left are recorded as
    not run, over the budget)."""
    time_cap = time_cap if time_cap is not None else QUICK_TIME_CAP if quick else TIME_CAP
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    chosen = [BY_NAME[n] for n in systems]
    result: dict = {
        "date": datetime.date.today().isoformat(),
        "mode": "quick" if quick else "full",
        "caps": {"memory_gib": cap_bytes / 2**30, "time_seconds": time_cap},
        "settings": {
            "warmup_rows": 0 if quick else WARMUP_ROWS,
            "driver_memory": DRIVER_MEMORY,
            "worker_memory": WORKER_MEMORY,
            "executor_memory": EXECUTOR_MEMORY,
            "rmat_edge_factor": RMAT_EDGE_FACTOR,
            "sources": SOURCES,
        },
        "baseline": BASELINE,
        "systems": {s.name: s.label for s in chosen},
        "datasets": {},
        "check_failures": [],
    }
    with contextlib.ExitStack() as stack:
        cluster = _Cluster(stack, work / "cluster", echo)
        prepared: dict[str, list[Point]] = {}
        for name in datasets:
            dataset = DATASETS[name]
            dataset_sizes = tuple((sizes or {}).get(name) or dataset.sizes)
            if quick:
                dataset_sizes = dataset_sizes[: QUICK_SIZES.get(name, 2)]
            result["datasets"][name] = {"label": dataset.label, "unit": dataset.unit, "points": []}
            prepared[name] = []
            for size in dataset_sizes:
                t0 = time.monotonic()
                point = dataset.prepare(work, size)
                echo(
                    f"[scaling {name} {size} {dataset.unit}] {point.input_tuples:,} input tuples "
                    f"(ready in {time.monotonic() - t0:.1f} s)"
                )
                prepared[name].append(point)
        if quick:
            # One process per system for all the points: one Spark start-up, not one a point.
            # The smallest first, so that a cap hit costs the larger points only.
            everything = sorted(
                (p for points in prepared.values() for p in points), key=lambda p: p.input_tuples
            )
            grouped = {
                s.name: _run_group(
                    [p for p in everything if s.runs(p.dataset)],
                    s,
                    work,
                    cluster,
                    cap_bytes,
                    time_cap,
                    echo,
                )
                for s in chosen
            }
            by_point: dict[tuple[str, int], dict[str, dict]] = {}
            for s in chosen:
                mine = [p for p in everything if s.runs(p.dataset)]
                for p, record in zip(mine, grouped[s.name], strict=True):
                    by_point.setdefault((p.dataset, p.size), {})[s.name] = record
        for name, points in prepared.items():
            over_cap: dict[str, str] = {}
            for point in points:
                if quick:
                    records = {
                        s.name: by_point[point.dataset, point.size][s.name]
                        for s in chosen
                        if s.runs(name)
                    }
                else:
                    records = {}
                    for system in chosen:
                        if not system.runs(name):
                            continue
                        minutes = (time.monotonic() - started) / 60
                        if budget_minutes is not None and minutes > budget_minutes:
                            records[system.name] = {
                                "status": "n/a",
                                "reason": f"not run: the study's budget of {budget_minutes:g} "
                                "minutes was spent",
                            }
                            continue
                        if system.name in over_cap:
                            records[system.name] = {
                                "status": "dnf",
                                "cap": over_cap[system.name],
                                "reason": f"not run: over the {over_cap[system.name]} cap at a "
                                "smaller size",
                            }
                            continue
                        echo(f"[scaling {name} {point.size}] {system.name}: running")
                        [record] = _run_group(
                            [point], system, work, cluster, cap_bytes, time_cap, echo
                        )
                        records[system.name] = record
                        if record["status"] == "dnf":
                            over_cap[system.name] = record["cap"]
                for system_name, record in records.items():
                    echo(f"[scaling {name} {point.size}] {system_name}: {_summary(record)}")
                problems = check_point(records) + [
                    f"{n} failed: {r.get('reason', '')}"
                    for n, r in records.items()
                    if r.get("status") == "error"
                ]
                for problem in problems:
                    echo(f"XX scaling {name} {point.size}: {problem}")
                result["check_failures"] += [f"{name} {point.size}: {p}" for p in problems]
                for record in records.values():
                    record.pop("digest", None)
                result["datasets"][name]["points"].append(
                    {
                        "size": point.size,
                        "input_tuples": point.input_tuples,
                        "systems": records,
                        "check": "; ".join(problems) or "equal",
                    }
                )
                (work / "scaling.json").write_text(json.dumps(result, indent=1) + "\n")
        result["cluster_start_seconds"] = cluster.start_seconds
    result["minutes"] = (time.monotonic() - started) / 60
    (work / "scaling.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the two smallest sizes")
    parser.add_argument("--out", type=Path, help="report directory")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="scratch and data")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--systems", nargs="+", choices=list(BY_NAME), default=list(BY_NAME))
    parser.add_argument("--lubm", nargs="+", type=int, help=f"universities {LUBM_SIZES}")
    parser.add_argument("--rmat", nargs="+", type=int, help=f"nodes {RMAT_SIZES}")
    parser.add_argument("--memory-cap", type=float, default=MEMORY_CAP_GIB, help="GiB per run")
    parser.add_argument(
        "--time-cap", type=float, help=f"seconds per run ({TIME_CAP:g}; quick {QUICK_TIME_CAP:g})"
    )
    parser.add_argument(
        "--budget", type=float, metavar="MINUTES", help="start no run after this (default: none)"
    )
    args = parser.parse_args(argv)
    out: Path = args.out or RESULTS / datetime.date.today().isoformat() / "scaling"
    result = run(
        args.work,
        quick=args.quick,
        cap_bytes=int(args.memory_cap * 2**30),
        time_cap=args.time_cap,
        echo=lambda line: print(line, flush=True),
        datasets=args.datasets,
        systems=args.systems,
        sizes={"lubm": args.lubm, "rmat": args.rmat},
        budget_minutes=args.budget,
    )
    scaling_report.write(result, out)
    print(f"report: {out / 'README.md'} ({result['minutes']:.1f} min)", flush=True)
    if result["check_failures"]:
        print("X" * 78)
        print("XX THE SCALING STUDY'S SYSTEMS DISAGREE:")
        for failure in result["check_failures"]:
            print(f"XX   {failure}")
        print("X" * 78)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
