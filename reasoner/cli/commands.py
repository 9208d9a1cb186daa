"""The engine's commands: `run`, `workload` and `replay` (`explain` is in `reasoner.cli.why`).

`reasoner.cli.main` imports this module only once the options are parsed and `--jobs` applied:
it imports the whole engine, Polars with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from reasoner.analysis.model import AnalyzedProgram
from reasoner.cli.exit_status import EXIT_CHECK_FAILED, EXIT_OK
from reasoner.cli.program_options import analyze_program
from reasoner.cli.replay import EpochRecord, replay
from reasoner.cli.workload import PATTERN, elastic_pattern, read_workload, write_workload
from reasoner.elastic.progress import Terminal
from reasoner.errors import (
    InputDataError,
)
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs, write_outputs
from reasoner.materialization import Materialization
from reasoner.support.gc_pause import collector_paused
from reasoner.support.jobs import jobs_in_effect
from reasoner.support.process_memory import lifetime_peak_memory_bytes


def run(args: argparse.Namespace) -> int:
    # One evaluation: the engine makes next to no cyclic garbage, while the collector would
    # traverse the growing state again and again (about 10 % of a CRDT Bootstrap).
    with collector_paused():
        return _run_once(args)


def _run_once(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    with Terminal(args.quiet) as terminal:
        terminal.say("reading the program and its inputs")
        analyzed = analyze_program(args)
        inputs = load_inputs(analyzed, Path(args.facts), read=read_facts_batch)
        # One evaluation, no epochs after it: no Update plans (nor their indexes).
        materialization = Materialization(analyzed, engines=_engines(args), maintained=False)
        materialization.load(inputs)
        input_seconds = time.perf_counter() - start
        report = materialization.bootstrap(progress=terminal.bootstrap())
        written = time.perf_counter()
        terminal.say("writing the outputs")
        _write_program_outputs(analyzed, materialization, args.output)
    if args.stats:
        end = time.perf_counter()
        stats = {
            "program": args.program,
            "seconds": end - start,
            "input_seconds": input_seconds,
            "bootstrap_seconds": report.seconds,
            "output_seconds": end - written,
            "engine": report.engine.engine,
            "engine_reason": report.engine.reason,
            "jobs": jobs_in_effect(),
            "peak_memory_bytes": lifetime_peak_memory_bytes(),
            "state_bytes": materialization.state.nbytes,
            "strata": [
                {
                    "index": run.index,
                    "relations": list(run.relations),
                    "iterations": run.iterations,
                    "derived": run.derived,
                    "seconds": run.seconds,
                    "engine": run.engine,
                    "engine_reason": run.reason,
                }
                for run in report.strata
            ],
            "relations": {
                name: materialization.size(name)
                for name, info in analyzed.relations.items()
                if not info.internal
            },
        }
        _write_json(args.stats, stats)
    return EXIT_OK


def _write_program_outputs(analyzed: AnalyzedProgram, m: Materialization, output: str) -> None:
    """The program's `.output` relations, as `souffle -D` writes them."""
    outputs = {name: m.batch(name) for name, info in analyzed.relations.items() if info.is_output}
    sizes = {name: m.size(name) for name, info in analyzed.relations.items() if info.print_size}
    try:
        write_outputs(analyzed, outputs, Path(output), sizes)
    except OSError as exc:
        raise InputDataError(
            f"cannot write outputs: {exc.strerror}", exc.filename or output
        ) from None


def workload(args: argparse.Namespace) -> int:
    analyzed = analyze_program(args)
    inputs = load_inputs(analyzed, Path(args.facts))
    workload = elastic_pattern(inputs, small=args.small, large_fraction=args.large, seed=args.seed)
    manifest = {
        "program": args.program,
        "facts": args.facts,
        "seed": args.seed,
        "small": args.small,
        "large_fraction": args.large,
        "input_tuples": sum(len(set(rows)) for rows in inputs.values()),
        "pattern": list(PATTERN),
    }
    try:
        write_workload(analyzed, workload, args.out, manifest)
    except OSError as exc:
        raise InputDataError(f"cannot write workload: {exc.strerror}", args.out) from None
    print(f"{args.out}: {len(workload.epochs)} epochs after the initial one", file=sys.stderr)
    return EXIT_OK


def replay_epochs(args: argparse.Namespace) -> int:
    analyzed = analyze_program(args)
    # As columns, and held by the replay alone, which lets them go once they are loaded.
    inputs = load_inputs(analyzed, Path(args.facts), read=read_facts_batch)
    workload = read_workload(analyzed, args.epochs)
    records: list[EpochRecord] = []
    status = EXIT_OK
    live: list[Materialization] = []

    def keep(m: Materialization, _record: EpochRecord) -> None:
        live[:] = [m]

    with Terminal(args.quiet, total=len(workload.epochs) + 1) as terminal:
        terminal.say("epoch 0")
        replayed = replay(
            analyzed,
            inputs,
            workload,
            strategy=args.strategy,
            switching_parameter=args.switching_parameter,
            engines=_engines(args),
            check=args.check,
            observe=keep,
            progress=terminal.bootstrap("epoch 0: "),
        )
        del inputs
        for record in replayed:
            records.append(record)
            terminal.print(_progress_line(record))
            terminal.advance()
            terminal.say(f"epoch {record.report.epoch + 1}")
            if record.differences:
                differing = ", ".join(f"{n} ({c} tuples)" for n, c in record.differences.items())
                terminal.print(
                    f"epoch {record.report.epoch}: the state differs from a fresh Bootstrap in "
                    f"{differing}"
                )
                status = EXIT_CHECK_FAILED
                break
    if args.report:
        _write_json(
            args.report,
            {
                "program": args.program,
                "facts": args.facts,
                "epochs_dir": args.epochs,
                "strategy": args.strategy,
                "switching_parameter": (
                    args.switching_parameter if args.strategy == "auto" else None
                ),
                "check": args.check,
                "seconds": sum(r.report.seconds for r in records),
                # With --check this includes the reference rebuilds alongside the live state.
                "peak_memory_bytes": lifetime_peak_memory_bytes(),
                "epochs": [r.as_json() for r in records],
            },
        )
    if args.output is not None and status == EXIT_OK:
        _write_program_outputs(analyzed, live[0], args.output)
    return status


def _progress_line(record: EpochRecord) -> str:
    report = record.report
    strategy = report.strategy
    if report.fallback_reason:
        strategy += f" ({report.fallback_reason})"
    line = (
        f"epoch {report.epoch:>3}  {strategy:<22} {report.seconds:9.3f}s  "
        f"facts +{record.facts_inserted} -{record.facts_retracted}  "
        f"derived +{report.inserted} -{report.retracted}  "
        f"state {(report.state_bytes or 0) / 2**20:,.0f} MB"
    )
    if report.peak_memory_bytes is not None:
        line += f", peak {report.peak_memory_bytes / 2**20:,.0f} MB"
    if record.check_seconds is not None:
        verdict = "FAILED" if record.differences else "ok"
        line += f"  check {verdict} ({record.check_seconds:.3f}s)"
    return line


def _write_json(path: str, data: object) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputDataError(f"cannot write: {exc.strerror}", path) from None


def _engines(args: argparse.Namespace) -> EngineSettings:
    try:
        return EngineSettings(args.engine, args.spark_master, spark_iteration=args.spark_iteration)
    except ValueError as error:  # e.g. `--engine spark` without PySpark
        print(f"reasoner: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
