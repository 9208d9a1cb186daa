"""`python -m bench.spark_warm`: the Spark Bootstrap in a warm session, beside the in-process one.

The goals of the Spark issue are stated for a warm SparkSession: a service starts its session
once, and a fallback Bootstrap pays only its own jobs. In one process, on one `local[2]`
session, after a warm-up run of the same program, each bench program is bootstrapped:

- `local`: the in-process vectorized executor (the baseline, single-threaded kernel and Polars);
- `spark`: the Spark executor with its default `spark_iteration` (iterations driven by fewer
  rows run on the kernel, the rest as Spark jobs);
- `spark-jobs`: every iteration on Spark (`spark_iteration=0`), what Spark itself costs: a
  decomposable recursion (`reasoner.plan.pivot`) in one job, any other iteration as jobs;
- `spark-iterations`: the same without decomposition, every iteration as Spark jobs.

Then the fixed cost per iteration: the slope of the Bootstrap time of a chain's transitive
closure (one iteration per node) between two chain lengths. Every Spark state is compared with
the in-process one, tuple by tuple with iteration and count. A table goes to stdout and to
`--out` (default `bench/results/<date>/spark-warm.md`), a plot beside it (`spark-warm.png`).

    .venv/bin/python -m bench.spark_warm [--programs NAME ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from bench.report import plt
from bench.workloads import full_workloads
from reasoner import EngineSettings, Materialization
from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
from reasoner.executors.engines import DEFAULT_SPARK_ITERATION
from reasoner.executors.spark import get_session
from reasoner.io.facts import load_inputs

MASTER = "local[2]"
CONF = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
PROGRAMS = ("graph1000-rand1k", "graph10000-rmat1k", "lubm1-rdfs", "lubm1-owl2rl", "crdt_linear")
SKIPPED = {("crdt_linear", "spark-iterations"): "22,000 iterations, 6 a second"}
CHAIN = """.decl e(x: number, y: number)
.input e
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
"""
CHAINS = {
    "local": (100, 1000),
    "spark": (100, 1000),
    "spark-jobs": (100, 1000),
    "spark-iterations": (20, 100),
}
"""Chain lengths of the slope per executor: an iteration as jobs takes 0.15 s or more."""
SYSTEMS = ("local", "spark", "spark-jobs", "spark-iterations")


def _bootstrap(system: str, analyzed: AnalyzedProgram, inputs: dict) -> tuple[float, dict]:
    """Seconds of one Bootstrap from the facts (as a service's fallback runs it), and the
    state's snapshot in user values."""
    engine = "local" if system == "local" else "spark"
    every = system in ("spark-jobs", "spark-iterations")
    settings = EngineSettings(
        engine,
        MASTER,
        spark_iteration=0 if every else DEFAULT_SPARK_ITERATION,
        spark_decompose=system != "spark-iterations",
    )
    m = Materialization(analyzed, maintained=False, engines=settings)
    m.load(inputs)
    start = time.perf_counter()
    m.bootstrap()
    seconds = time.perf_counter() - start
    snapshot = {}
    for name, store in m.state.relations.items():
        decode = m.symbols.decoder(analyzed.relations[name].types)
        snapshot[name] = {decode(t): v for t, v in store.snapshot().items()}
    return seconds, snapshot


def _measured(system: str, analyzed: AnalyzedProgram, inputs: dict) -> tuple[float, dict]:
    """After a warm-up run of the same program (its queries planned and compiled once)."""
    _bootstrap(system, analyzed, inputs)
    return _bootstrap(system, analyzed, inputs)


def _chart(figures: dict[str, dict[str, float]], path: Path) -> bool:
    """Bars of each program's seconds per executor (log scale); False without matplotlib
    (the `bench` extra)."""
    if plt is None:
        return False
    programs = list(figures)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(SYSTEMS)
    for n, system in enumerate(SYSTEMS):
        offset = (n - (len(SYSTEMS) - 1) / 2) * width
        xs = [i + offset for i, p in enumerate(programs) if system in figures[p]]
        ys = [max(figures[p][system], 1e-3) for p in programs if system in figures[p]]
        ax.bar(xs, ys, width, label=system)
    ax.set_yscale("log")
    ax.set_xticks(range(len(programs)))
    ax.set_xticklabels(programs, fontsize=8, rotation=15)
    ax.set_ylabel("Bootstrap seconds (log; floor 1 ms)")
    ax.set_title(f"Spark Bootstrap in a warm {MASTER} session, after a warm-up run")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or Path(__file__).parent / "results" / str(datetime.date.today())
    out = out / "spark-warm.md" if out.suffix != ".md" else out
    workloads = {w.name: w for w in full_workloads()}
    get_session(MASTER, **CONF)
    lines = [
        "# Spark Bootstrap in a warm session (`python -m bench.spark_warm`)",
        "",
        f"One process, Spark `{MASTER}`, each figure after a warm-up run of the same program; "
        "seconds of the Bootstrap alone (no start-up, no input reading). Every Spark state "
        "equals the in-process one (tuple, iteration, count).",
        "",
        "| program | " + " | ".join(SYSTEMS) + " |",
        "| --- |" + " ---: |" * len(SYSTEMS),
    ]
    figures: dict[str, dict[str, float]] = {}
    for name in args.programs:
        workload = workloads[name]
        analyzed = check_program(workload.program.read_text(encoding="utf-8"))
        inputs = load_inputs(analyzed, workload.facts)
        cells = []
        expected = None
        for system in SYSTEMS:
            if (name, system) in SKIPPED:
                cells.append(f"not run: {SKIPPED[name, system]}")
                continue
            seconds, snapshot = _measured(system, analyzed, inputs)
            if expected is None:
                expected = snapshot
            elif snapshot != expected:
                raise SystemExit(f"{name}: {system}'s state differs from the in-process one")
            cells.append(f"{seconds:.2f} s")
            figures.setdefault(name, {})[system] = seconds
            print(f"{name} {system}: {seconds:.2f} s", flush=True)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Fixed cost per iteration: the transitive closure of a chain takes one iteration per "
        "node; the slope of the Bootstrap's time between two lengths.",
        "",
        "| executor | chains | seconds | per iteration |",
        "| --- | --- | --- | ---: |",
    ]
    chain = check_program(CHAIN)
    for system in SYSTEMS:
        short, long = CHAINS[system]
        times = [
            _measured(system, chain, {"e": [(i, i + 1) for i in range(n)]})[0]
            for n in (short, long)
        ]
        slope = (times[1] - times[0]) / (long - short)
        print(f"chain {system}: {times} -> {slope * 1000:.2f} ms per iteration", flush=True)
        lines.append(
            f"| {system} | {short}, {long} nodes | {times[0]:.2f}, {times[1]:.2f} | "
            f"{slope * 1000:.2f} ms |"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    if _chart(figures, out.with_suffix(".png")):
        lines += ["", f"![Bootstrap seconds, warm session]({out.with_suffix('.png').name})"]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"report: {out}")


if __name__ == "__main__":
    main()
