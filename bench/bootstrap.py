"""`python -m bench.bootstrap`: Bootstrap alone (one evaluation from scratch), whole process.

Every system runs once per program, in its own process tree under the caps of `bench.harness`:
our `reasoner run --engine reference|local|spark`, and clingo and DuckDB through their bench
runners fed no epoch after the first (so they read the inputs, evaluate once and write the
outputs). Seconds are the wall-clock time of the whole process — interpreter start-up, imports,
reading facts, evaluation, writing outputs — and peak memory that of its process tree, both
measured by `bench.bootstrap_measure` (which says why it is a process of its own). Every
finished run's output relations are compared, as sets of rows, with Soufflé's expected output
(`<bench folder>/expected/<program stem>/`); a mismatch or an error is printed loudly and makes
the command exit 1. The report (`bench.bootstrap_report`) goes to `--out` (default
`bench/results/<date>/bootstrap/`; with `--quick`, `bench/.work/bootstrap/quick/report/`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench import bootstrap_report, check, workloads
from bench.cli import (
    DEFAULT_WORK,
    RESULTS,
    _display,
    _echo,
    _exit_status,
    _machine,
    _reasoner,
    add_cap_options,
    resolve_caps,
)
from bench.systems import System, Unsupported, command
from bench.translate import build_spec, load_program, write_spec

REPO = Path(__file__).resolve().parent.parent
SPARK_MASTER = "local[2]"
SYSTEMS = (
    System("reference", "ours, reference", "ours", "bootstrap", "reference"),
    System("local", "ours, local (Polars)", "ours", "bootstrap", "local"),
    System("spark", f"ours, Spark {SPARK_MASTER}", "ours", "bootstrap", "spark"),
    System(
        "spark-jobs",
        f"ours, Spark {SPARK_MASTER}, every iteration a job",
        "ours",
        "bootstrap",
        "spark",
        ("--spark-iteration", "0"),
    ),
    System("clingo", "clingo", "clingo"),
    System("duckdb", "DuckDB (recursive CTE)", "duckdb"),
)
BY_NAME = {s.name: s for s in SYSTEMS}
QUICK_PROGRAMS = ("graph1000-rand1k", "lubm1-owl2rl")
QUICK_SYSTEMS = ("reference", "local", "clingo", "duckdb")
"""Spark is left out of the quick mode: its JVM start-up alone takes longer than the rest."""

SOUFFLE = {
    "crdt_linear": {"seconds": 509.0, "peak_mib": 48.0, "source": "crdt/README.md"},
    "crdt": {"seconds": 557.0, "peak_mib": 6.6 * 1024, "source": "crdt/README.md (6.6 GB)"},
    "graph1000-rand1k": {
        "seconds": 0.03,
        "peak_mib": 12112 / 1024,
        "source": "graph1000-rand1k/expected/program.log",
    },
    "graph10000-rmat1k": {
        "seconds": 0.90,
        "peak_mib": 23980 / 1024,
        "source": "graph10000-rmat1k/expected/program.log",
    },
    "lubm1-rdfs": {
        "seconds": 0.33,
        "peak_mib": 35140 / 1024,
        "source": "lubm1/expected/program.log",
    },
    "lubm1-rdfs_s": {
        "seconds": 0.19,
        "peak_mib": 25008 / 1024,
        "source": "lubm1/expected/rdfs_s.log",
    },
    "lubm1-owl2rl": {
        "seconds": 0.12,
        "peak_mib": 18480 / 1024,
        "source": "lubm1-owl2rl/expected/program.log",
    },
}
"""Soufflé 2.5, interpreted, one thread, on this machine type: measured outside this run, for
orientation only (the files under `../shared/bench` that give each figure are named)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.bootstrap", description=__doc__)
    parser.add_argument("--programs", nargs="+", help="program names (default: all)")
    parser.add_argument(
        "--systems", nargs="+", help=f"systems (default: all): {', '.join(BY_NAME)}"
    )
    parser.add_argument("--out", type=Path, help="report directory")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="scratch directory")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {', '.join(QUICK_PROGRAMS)}; no Spark unless asked",
    )
    add_cap_options(parser, "run", "spark=180")
    args = parser.parse_args(argv)
    resolve_caps(parser, args, BY_NAME)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    today = datetime.date.today().isoformat()
    work: Path = args.work / "bootstrap" / ("quick" if args.quick else "full")
    # A smoke run must not overwrite the day's full report.
    out: Path = args.out or (work / "report" if args.quick else RESULTS / today / "bootstrap")
    catalog = workloads.full_workloads()
    if args.quick:
        catalog = [w for w in catalog if w.name in QUICK_PROGRAMS]
    known = [w.name for w in catalog]
    unknown = [n for n in args.programs or () if n not in known]
    unknown_systems = [n for n in args.systems or () if n not in BY_NAME]
    if unknown or unknown_systems:
        _echo(f"unknown {unknown + unknown_systems}; programs: {known}; systems: {list(BY_NAME)}")
        return 2
    chosen = [w for w in catalog if not args.programs or w.name in args.programs]
    names = args.systems or (QUICK_SYSTEMS if args.quick else list(BY_NAME))
    systems = [BY_NAME[n] for n in names]
    out.mkdir(parents=True, exist_ok=True)
    reasoner = _reasoner()
    results: dict = {
        "date": today,
        "mode": "quick" if args.quick else "full",
        "machine": _machine(),
        "caps": {
            "memory_gib": args.memory_cap,
            "time_seconds": args.time_cap,
            "time_seconds_for": args.system_time_caps,
        },
        "systems": {s.name: s.label for s in systems},
        "souffle": {w.name: SOUFFLE[w.name] for w in chosen if w.name in SOUFFLE},
        "programs": {},
    }
    _echo(
        f"bench.bootstrap: {len(chosen)} programs x {len(systems)} systems, caps "
        f"{args.memory_cap:g} GiB / {args.time_cap:g} s per run"
    )
    failures: list[str] = []
    for index, workload in enumerate(chosen, start=1):
        _echo(f"[{index}/{len(chosen)}] {workload.name}")
        spec, spec_path = _spec(workload, work / workload.name)
        expected = workload.program.parent / "expected" / workload.program.stem
        runs: dict[str, dict] = {}
        results["programs"][workload.name] = {
            "program": _display(workload.program),
            "facts": _display(workload.facts),
            "expected": _display(expected),
            "runs": runs,
        }
        for system in systems:
            run_dir = work / workload.name / system.name
            runs[system.name] = _run(system, workload, spec, spec_path, run_dir, reasoner, args)
            where = f"{workload.name} / {system.name}"
            failures += _check(runs[system.name], expected, run_dir / "outputs", where)
            (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", "utf-8")
    bootstrap_report.write(results, out)
    _echo(f"report: {out / 'README.md'}")
    return _exit_status(failures, "MISMATCHES OR ERRORS")


def _spec(workload: workloads.Workload, work: Path) -> tuple[dict, Path]:
    """The runners' spec of the program, with an empty epochs folder: the clingo and DuckDB
    runners then stop after epoch 0, the evaluation from scratch of the whole input."""
    no_epochs = work / "no-epochs"
    no_epochs.mkdir(parents=True, exist_ok=True)
    spec = build_spec(load_program(workload.program), workload.program, workload.facts, no_epochs)
    spec_path = work / "spec.json"
    write_spec(spec, spec_path)
    return spec, spec_path


def _command(
    system: System,
    workload: workloads.Workload,
    spec: dict,
    spec_path: Path,
    run_dir: Path,
    reasoner: str,
) -> list[str]:
    """The measured command; raises Unsupported when the system cannot run the program."""
    if not system.ours:
        return command(
            system,
            spec=spec,
            spec_path=spec_path,
            out_dir=run_dir / "outputs",
            report_path=run_dir / "report.json",
            reasoner=reasoner,
            pydbsp=None,
        )
    args = [reasoner, "run", str(workload.program), "-F", str(workload.facts)]
    args += ["-D", str(run_dir / "outputs"), "--stats", str(run_dir / "stats.json")]
    args += ["--engine", str(system.engine)]
    args += list(system.options)
    return args + (["--spark-master", SPARK_MASTER] if system.engine == "spark" else [])


def _run(
    system: System,
    workload: workloads.Workload,
    spec: dict,
    spec_path: Path,
    run_dir: Path,
    reasoner: str,
    args: argparse.Namespace,
) -> dict:
    tag = f"{workload.name} / {system.name}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    try:
        cmd = _command(system, workload, spec, spec_path, run_dir, reasoner)
    except Unsupported as exc:
        _echo(f"  {tag}: n/a ({exc})")
        return {"status": "n/a", "reason": str(exc), "check": "-"}
    _echo(f"  {tag}: running")
    request = {
        "command": cmd,
        "label": tag,
        "log": str(run_dir / "stderr.log"),
        "result": str(run_dir / "result.json"),
        "memory_cap_bytes": int(args.memory_cap * 2**30),
        "time_cap_seconds": args.system_time_caps.get(system.name, args.time_cap),
        "address_space_limit": system.address_space_limit,
        "cwd": str(run_dir),
    }
    (run_dir / "request.json").write_text(json.dumps(request) + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "bench.bootstrap_measure", str(run_dir / "request.json")],
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    process = [e["seconds"] for e in result["epochs"] if e.get("process")]
    inner = [e["seconds"] for e in result["epochs"] if not e.get("process")]
    if result["status"] == "error":
        result["reason"] = _error_line(run_dir / "stderr.log") or result["reason"]
    stats = run_dir / "stats.json"
    if stats.exists():
        inner = [json.loads(stats.read_text(encoding="utf-8"))["bootstrap_seconds"]]
    run = {
        "status": result["status"],
        "reason": result["reason"],
        "cap": result["cap"],
        "seconds": process[0] if process else result["wall_seconds"],
        "evaluation_seconds": inner[0] if inner else None,
        "peak_rss_bytes": result["peak_rss_bytes"],
        "check": "-",
    }
    summary = f"{run['seconds']:.2f} s, {run['peak_rss_bytes'] / 2**20:,.0f} MB"
    _echo(f"  {tag}: {run['status']}, {summary}{': ' + run['reason'] if run['reason'] else ''}")
    return run


def _error_line(log: Path) -> str | None:
    """The last line of the stderr log that names an exception or error: the harness's reason
    is the log's last line, for a JVM failure a stack frame that says nothing."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    named = [line for line in text.splitlines() if re.search(r"\w(Exception|Error)(:|$)", line)]
    return named[-1].strip(" :\t")[:200] if named else None


def _check(run: dict, expected: Path, outputs: Path, where: str) -> list[str]:
    """Compare a finished run's outputs with Soufflé's (bench.check's final, row-by-row
    comparison; no epochs here); sets `run["check"]`; returns the failures to report."""
    if run["status"] == "error":
        return [f"{where}: {run['reason']}"]
    if run["status"] != "ok":
        return []
    names = sorted(p.stem for p in expected.glob("*.csv"))
    if names:
        finished = {"status": "ok", "epochs": []}
        problems = check.compare(finished, finished, names, expected, outputs)
    else:
        problems = [f"no expected output in {expected}"]
    if not problems:
        run["check"] = "equal"
        _echo(f"  {where}: {len(names)} output relations equal to Soufflé's")
        return []
    run["check"] = "MISMATCH: " + "; ".join(problems)
    _echo("X" * 78)
    _echo(f"XX {where} DIFFERS from Soufflé's expected output:")
    for problem in problems:
        _echo(f"XX   {problem}")
    _echo("X" * 78)
    return [f"{where}: {problems[0]}"]


if __name__ == "__main__":
    sys.exit(main())
