"""The engine's epoch commands: `workload` writes the elastic paper's epochs of an input, and
`replay` runs them through the engine (`reasoner.cli.replay`). Apart from `run`
(`reasoner.cli.commands`), whose start does not import them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reasoner.cli.commands import engine_settings, write_json, write_program_outputs
from reasoner.cli.exit_status import EXIT_CHECK_FAILED, EXIT_OK
from reasoner.cli.program_options import analyze_program
from reasoner.cli.replay import EpochRecord, replay
from reasoner.cli.workload import PATTERN, elastic_pattern, read_workload, write_workload
from reasoner.elastic.progress import Terminal
from reasoner.errors import InputDataError
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs
from reasoner.materialization import Materialization
from reasoner.support.jobs import jobs_in_effect
from reasoner.support.process_memory import lifetime_peak_memory_bytes


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
            engines=engine_settings(args),
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
        write_json(
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
                "jobs": jobs_in_effect(),
                "seconds": sum(r.report.seconds for r in records),
                # With --check this includes the reference rebuilds alongside the live state.
                "peak_memory_bytes": lifetime_peak_memory_bytes(),
                "epochs": [r.as_json() for r in records],
            },
        )
    if args.output is not None and status == EXIT_OK:
        write_program_outputs(analyzed, live[0], args.output)
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
