"""The engine's `run` command, and what the epoch commands (`reasoner.cli.epoch_commands`) share
with it. `explain` is in `reasoner.cli.why`.

`reasoner.cli.main` imports this module only once the options are parsed and `--jobs` applied:
it imports the engine. The epoch commands' modules (workloads, the replay) are not imported by
a `run`: 10-15 ms of a start.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from reasoner.analysis.model import AnalyzedProgram
from reasoner.cli.exit_status import EXIT_OK
from reasoner.cli.program_options import analyze_program
from reasoner.elastic.progress import Terminal
from reasoner.errors import InputDataError
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
        materialization = Materialization(analyzed, engines=engine_settings(args), maintained=False)
        materialization.load(inputs)
        input_seconds = time.perf_counter() - start
        report = materialization.bootstrap(progress=terminal.bootstrap())
        written = time.perf_counter()
        terminal.say("writing the outputs")
        write_program_outputs(analyzed, materialization, args.output)
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
        write_json(args.stats, stats)
    return EXIT_OK


def write_program_outputs(analyzed: AnalyzedProgram, m: Materialization, output: str) -> None:
    """The program's `.output` relations, as `souffle -D` writes them."""
    outputs = {name: m.batch(name) for name, info in analyzed.relations.items() if info.is_output}
    sizes = {name: m.size(name) for name, info in analyzed.relations.items() if info.print_size}
    try:
        write_outputs(analyzed, outputs, Path(output), sizes)
    except OSError as exc:
        raise InputDataError(
            f"cannot write outputs: {exc.strerror}", exc.filename or output
        ) from None


def write_json(path: str, data: object) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputDataError(f"cannot write: {exc.strerror}", path) from None


def engine_settings(args: argparse.Namespace) -> EngineSettings:
    try:
        return EngineSettings(args.engine, args.spark_master, spark_iteration=args.spark_iteration)
    except ValueError as error:  # e.g. `--engine spark` without PySpark
        print(f"reasoner: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
