"""`python -m bench`: the elastic 13-epoch workload through our engine and the alternatives.

For every workload: `reasoner workload` writes the epochs, the program is translated for each
alternative, and every system runs in its own process under the caps (`bench.harness`). Then
every system's output relations are checked against our engine's (after every epoch, and tuple
by tuple at the end): a disagreement fails the run loudly. The report (tables, plots, JSON) goes
to `--out` (default `bench/results/<date>/`, and `bench/results/latest.md`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from bench import check, harness, report, scaling, scaling_report, workloads
from bench.systems import (
    BY_NAME,
    SYSTEMS,
    System,
    Unsupported,
    command,
    pydbsp_python,
    replay_engines,
    setup_pydbsp,
)
from bench.translate import build_spec, load_program, write_spec

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
DEFAULT_WORK = REPO / "bench" / ".work"
QUICK_SYSTEMS = ("ours", "ours-update", "ours-bootstrap", "clingo", "duckdb", "pydbsp")


def _echo(line: str) -> None:
    print(line, flush=True)


def _exit_status(failures: list[str], title: str) -> int:
    """1 after printing the failures in a block of Xs that no one can miss in a long log, else 0."""
    if not failures:
        return 0
    _echo("X" * 78)
    _echo(f"XX {title}:")
    for failure in failures:
        _echo(f"XX   {failure}")
    _echo("X" * 78)
    return 1


def _reasoner() -> str:
    candidate = Path(sys.executable).parent / "reasoner"
    return str(candidate) if candidate.exists() else (shutil.which("reasoner") or "reasoner")


def add_cap_options(parser: argparse.ArgumentParser, per: str, example: str) -> None:
    """The memory and time caps of every bench command (`per`: what one cap applies to)."""
    parser.add_argument("--memory-cap", type=float, default=8.0, help=f"GiB per {per} (8)")
    parser.add_argument("--time-cap", type=float, help=f"seconds per {per} (600; quick: 60)")
    parser.add_argument(
        "--time-cap-for",
        nargs="+",
        default=[],
        metavar="SYSTEM=SECONDS",
        help=f"a different time cap for some systems (e.g. {example})",
    )


def resolve_caps(
    parser: argparse.ArgumentParser, args: argparse.Namespace, systems: Iterable[str] = ()
) -> None:
    """`args.time_cap` defaulted and `args.system_time_caps` (system -> seconds) parsed; with
    `systems`, a cap for a system not among them is a usage error."""
    if args.time_cap is None:
        args.time_cap = 60.0 if args.quick else 600.0
    known = set(systems)
    args.system_time_caps = {}
    for item in args.time_cap_for:
        name, _, seconds = item.partition("=")
        if known and name not in known:
            parser.error(f"--time-cap-for: unknown system {name!r}")
        args.system_time_caps[name] = float(seconds)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--workloads", nargs="+", help="workload names (default: all)")
    parser.add_argument(
        "--systems", nargs="+", help=f"systems (default: all): {', '.join(s.name for s in SYSTEMS)}"
    )
    parser.add_argument("--out", type=Path, help="report directory")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="scratch directory")
    parser.add_argument("--quick", action="store_true", help="small workloads, checks only")
    add_cap_options(parser, "system and workload", "ours-spark-bootstrap=120")
    parser.add_argument(
        "--scaling", action=argparse.BooleanOptionalAction, help="run the scaling study"
    )
    args = parser.parse_args(argv)
    resolve_caps(parser, args)
    if args.scaling is None:
        args.scaling = not args.workloads and not args.systems
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    today = datetime.date.today().isoformat()
    out: Path = args.out or (RESULTS / today)
    work: Path = args.work / ("quick" if args.quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    reasoner = _reasoner()

    catalog = workloads.quick_workloads(work) if args.quick else workloads.full_workloads()
    names = {w.name for w in catalog}
    chosen = catalog
    if args.workloads:
        unknown = [n for n in args.workloads if n not in names]
        if unknown:
            _echo(f"unknown workloads {unknown}; known: {sorted(names)}")
            return 2
        chosen = [w for w in catalog if w.name in args.workloads]
    system_names = args.systems or (QUICK_SYSTEMS if args.quick else [s.name for s in SYSTEMS])
    unknown = [n for n in system_names if n not in BY_NAME]
    if unknown:
        _echo(f"unknown systems {unknown}; known: {[s.name for s in SYSTEMS]}")
        return 2
    systems = [BY_NAME[n] for n in system_names]

    pydbsp = None
    if any(s.kind == "pydbsp" for s in systems):
        if args.quick:
            pydbsp = pydbsp_python()
            if pydbsp is None:
                _echo("!" * 78)
                _echo("!! pydbsp SKIPPED: bench/.venv312 is missing (quick mode does not create")
                _echo("!! it; `python -m bench.setup` or a full `make bench` does)")
                _echo("!" * 78)
        else:
            pydbsp = setup_pydbsp(_echo)

    cap_bytes = int(args.memory_cap * 2**30)
    engines = replay_engines(reasoner)
    results: dict = {
        "date": today,
        "mode": "quick" if args.quick else "full",
        "machine": _machine(),
        "caps": {
            "memory_gib": args.memory_cap,
            "time_seconds": args.time_cap,
            "time_seconds_for": args.system_time_caps,
        },
        "replay_engines": list(engines),
        "systems": {s.name: s.label for s in systems},
        "workloads": {},
    }
    _echo(
        f"bench: {len(chosen)} workloads x {len(systems)} systems, caps "
        f"{args.memory_cap:g} GiB / {args.time_cap:g} s per run; reasoner replay engines: "
        f"{', '.join(engines) or 'no --engine option (default executor)'}"
    )
    failures: list[str] = []
    for index, workload in enumerate(chosen, start=1):
        tag = f"[{index}/{len(chosen)} {workload.name}]"
        _echo(f"{tag} preparing the epochs (reasoner workload)")
        epochs_dir = workloads.prepare(workload, work, reasoner)
        analyzed = load_program(workload.program)
        spec = build_spec(analyzed, workload.program, workload.facts, epochs_dir)
        spec_path = work / workload.name / "spec.json"
        write_spec(spec, spec_path)
        manifest = json.loads((epochs_dir / "workload.json").read_text())
        epochs_total = len(manifest["epochs"]) + 1
        entry: dict = {
            "program": _display(workload.program),
            "facts": _display(workload.facts),
            "family": workload.family,
            "input_tuples": manifest["input_tuples"],
            "epoch_sizes": [0] + [e["insert"] + e["retract"] for e in manifest["epochs"]],
            "outputs": spec["outputs"],
            "systems": {},
        }
        results["workloads"][workload.name] = entry
        raw: dict[str, dict] = {}
        for system in systems:
            entry["systems"][system.name] = _run_system(
                system,
                workload,
                spec,
                spec_path,
                work,
                reasoner,
                pydbsp,
                cap_bytes,
                args,
                epochs_total,
                entry,
                raw,
                tag,
            )
        failures += _check(workload.name, spec, entry, raw, work, tag)
        _save(results, out, work)
    if args.scaling:
        # Its own time caps (`bench.scaling`: 240 s a run, quick 120 s) and data, kept in
        # --work/scaling for both modes (the sizes name them).
        results["scaling"] = scaling.run(
            args.work / "scaling", quick=args.quick, cap_bytes=cap_bytes, echo=_echo
        )
        scaling_report.write(results["scaling"], out / "scaling")
        failures += [f"scaling: {f}" for f in results["scaling"]["check_failures"]]
    _save(results, out, work)
    report.write(results, out, latest=RESULTS / "latest.md" if out.parent == RESULTS else None)
    minutes = (time.monotonic() - started) / 60
    _echo(f"report: {out / 'README.md'} ({minutes:.1f} min)")
    return _exit_status(failures, "THE SYSTEMS DISAGREE OR FAILED")


def _run_system(
    system: System,
    workload: workloads.Workload,
    spec: dict,
    spec_path: Path,
    work: Path,
    reasoner: str,
    pydbsp: Path | None,
    cap_bytes: int,
    args: argparse.Namespace,
    epochs_total: int,
    entry: dict,
    raw: dict,
    tag: str,
) -> dict:
    run_dir = work / workload.name / system.name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    base = {"label": system.label, "kind": system.kind, "engine": system.engine}
    try:
        cmd = command(
            system,
            spec=spec,
            spec_path=spec_path,
            out_dir=run_dir / "outputs",
            report_path=run_dir / "report.json",
            reasoner=reasoner,
            pydbsp=pydbsp,
        )
    except Unsupported as exc:
        _echo(f"{tag} {system.label}: n/a ({exc})")
        return {**base, "status": "n/a", "reason": str(exc), "epochs": [], "check": "n/a"}
    inherited = _inherited_dnf(system, entry)
    if inherited is not None:
        _echo(f"{tag} {system.label}: {inherited['reason']}")
        return {**base, **inherited, "check": "n/a"}
    _echo(f"{tag} {system.label}: running")
    result = harness.run(
        cmd,
        label=f"{workload.name} / {system.name}",
        log_path=run_dir / "stderr.log",
        memory_cap_bytes=cap_bytes,
        time_cap_seconds=args.system_time_caps.get(system.name, args.time_cap),
        address_space_limit=system.address_space_limit,
        epochs_total=epochs_total,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **system.environment},
        echo=_echo,
    ).as_json()
    raw[system.name] = result
    (run_dir / "result.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    summary = f"{result['status']}"
    if result["status"] == "ok":
        summary += f", {result['total_seconds']:.2f} s in epochs"
    elif result["reason"]:
        summary += f": {result['reason']}"
    _echo(f"{tag} {system.label}: {summary}, peak {result['peak_rss_bytes'] / 2**30:.2f} GiB")
    kept = {k: v for k, v in result.items() if k != "epochs"}
    kept["epochs"] = [{k: v for k, v in e.items() if k != "digest"} for e in result["epochs"]]
    return {**base, **kept, "check": "pending"}


def _inherited_dnf(system: System, entry: dict) -> dict | None:
    """Our local modes share epoch 0 (the same Bootstrap): when one hit a cap there, the others
    would too; they are recorded as DNF in epoch 0 without spending the cap again."""
    if not system.ours:
        return None
    for name, other in entry["systems"].items():
        peer = BY_NAME[name]
        if (
            peer.ours
            and peer.engine == system.engine
            and other.get("status") == "dnf"
            and other.get("dnf_epoch") == 0
        ):
            return {
                "status": "dnf",
                "cap": other["cap"],
                "dnf_epoch": 0,
                "reason": f"DNF: {other['cap']} cap in epoch 0 (not run: epoch 0 is the same "
                f"Bootstrap as {peer.label}, which hit the cap there)",
                "epochs": [],
                "peak_rss_bytes": other.get("peak_rss_bytes", 0),
                "total_seconds": 0.0,
            }
    return None


def _check(workload: str, spec: dict, entry: dict, raw: dict, work: Path, tag: str) -> list[str]:
    """Mark every system's check result in `entry`; return the failures (loudly printed)."""
    failures = []
    order = ["ours", *[n for n in raw if BY_NAME[n].ours], *raw]
    reference = next((n for n in order if n in raw and raw[n]["status"] == "ok"), None)
    if reference is None:
        reference = next((n for n in order if n in raw and raw[n]["epochs"]), None)
    for name, system_entry in entry["systems"].items():
        if system_entry["status"] == "error":
            failures.append(f"{workload} / {name}: {system_entry['reason']}")
        if name not in raw:
            continue
        if name == reference:
            system_entry["check"] = "reference"
            continue
        if reference is None:
            system_entry["check"] = "no reference"
            continue
        problems = check.compare(
            raw[reference],
            raw[name],
            spec["outputs"],
            work / workload / reference / "outputs",
            work / workload / name / "outputs",
        )
        if problems:
            system_entry["check"] = "MISMATCH: " + "; ".join(problems)
            failures.append(f"{workload} / {name} vs {reference}: {problems[0]}")
            _echo("X" * 78)
            _echo(f"XX {tag} {name} DISAGREES with {reference}:")
            for problem in problems:
                _echo(f"XX   {problem}")
            _echo("X" * 78)
        else:
            compared = min(len(raw[reference]["epochs"]), len(raw[name]["epochs"]))
            complete = raw[name]["status"] == "ok" and raw[reference]["status"] == "ok"
            system_entry["check"] = (
                "equal" if complete else f"equal in the {compared} epochs both finished"
            )
    entry["reference"] = reference
    _echo(
        f"{tag} check against {reference}: "
        + ", ".join(f"{n} {e['check']}" for n, e in entry["systems"].items() if n != reference)
    )
    return failures


def _display(path: Path) -> str:
    for base, label in ((workloads.bench_dir(), "shared/bench"), (REPO, ".")):
        try:
            return f"{label}/{path.resolve().relative_to(base.resolve())}"
        except ValueError:
            continue
    return path.name


def _machine() -> dict:
    versions = {}
    for module in ("clingo", "duckdb", "pyspark", "polars"):
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            versions[module] = None
    python = pydbsp_python()
    versions["pydbsp"] = "2.1.0 (bench/.venv312)" if python else None
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def _save(results: dict, out: Path, work: Path) -> None:
    text = json.dumps(results, indent=1) + "\n"
    (out / "results.json").write_text(text, encoding="utf-8")
    (work / "results.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
