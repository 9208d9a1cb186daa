"""The `reasoner` command: Soufflé-style batch runs of the engine.

Exit status follows what scripts around Soufflé expect to branch on: 0 success, 2 a program
error (printed as `file:line:col: code: message` with the source line and a caret), 1 bad input
data (a malformed or missing facts file).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from reasoner.analysis import check_program
from reasoner.errors import InputDataError, ProgramError
from reasoner.io.facts import load_inputs, write_outputs
from reasoner.materialization import Materialization

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_PROGRAM_ERROR = 2


def peak_memory_bytes() -> int:
    """Peak resident set size of this process (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    program_path = Path(args.program)
    try:
        text = program_path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"{program_path}: cannot read program: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    try:
        analyzed = check_program(text, str(program_path))
    except ProgramError as exc:
        print(exc.format(), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    try:
        inputs = load_inputs(analyzed, Path(args.facts))
    except InputDataError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_INPUT_ERROR
    materialization = Materialization(analyzed)
    materialization.load(inputs)
    report = materialization.bootstrap()
    outputs = {
        name: materialization.rows(name)
        for name, info in analyzed.relations.items()
        if info.is_output
    }
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_outputs(analyzed, outputs, out_dir)
    if args.stats:
        stats = {
            "program": str(program_path),
            "seconds": time.perf_counter() - start,
            "bootstrap_seconds": report.seconds,
            "peak_memory_bytes": peak_memory_bytes(),
            "strata": [
                {
                    "index": run.index,
                    "relations": list(run.relations),
                    "iterations": run.iterations,
                    "derived": run.derived,
                    "seconds": run.seconds,
                }
                for run in report.strata
            ],
            "relations": {name: materialization.size(name) for name in analyzed.relations},
        }
        Path(args.stats).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reasoner", description="Elastic incremental Datalog engine (Soufflé-compatible)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="evaluate a program once, like `souffle -F -D`")
    run.add_argument("program", help="the Datalog program (.dl)")
    run.add_argument("-F", "--facts", default=".", help="directory of <relation>.facts inputs")
    run.add_argument("-D", "--output", default=".", help="directory for <relation>.csv outputs")
    run.add_argument("--stats", help="write JSON statistics (strata, sizes, time, memory) here")
    run.set_defaults(handler=_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
