"""The `reasoner` command: Soufflé-style batch runs of the engine, and epoch workloads.

Exit status follows what scripts around Soufflé expect to branch on: 0 success, 2 a program
error (printed as `file:line:col: code: message` with the source line and a caret), 1 bad input
data (a malformed or missing facts file, a bad epochs directory, an unsupported I/O parameter,
an unwritable output), 3 a failed `replay --check` (the maintained state differs from a fresh
Bootstrap: an engine bug, never a user error).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import cast

from reasoner.analysis.facts import evaluate
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.terms import render
from reasoner.cli.program_options import analyze_program, program_arguments
from reasoner.cli.replay import EpochRecord, replay
from reasoner.cli.workload import PATTERN, elastic_pattern, read_workload, write_workload
from reasoner.elastic.progress import Terminal
from reasoner.elastic.switch import DEFAULT_SWITCHING_PARAMETER
from reasoner.errors import (
    ARITY_MISMATCH,
    TYPE_MISMATCH,
    UNKNOWN_RELATION,
    InputDataError,
    InvalidDelta,
    ProgramError,
)
from reasoner.executors.registry import (
    DEFAULT_SPARK_ITERATION,
    DEFAULT_SPARK_MASTER,
    ENGINES,
    EngineSettings,
)
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs, write_outputs
from reasoner.kernel.explain import explain_program
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer, ExplainError, Failure, shown
from reasoner.support.gc_pause import collector_paused
from reasoner.support.process_memory import lifetime_peak_memory_bytes
from reasoner.syntax import parse_body
from reasoner.syntax.ast import (
    Atom,
    BranchTerm,
    NilConst,
    NumberConst,
    RecordTerm,
    StringConst,
    Term,
)
from reasoner.values import floats
from reasoner.values.arith import as_unsigned
from reasoner.values.functor_library import FunctorLoadError
from reasoner.values.records import AdtType, RecordText, RecordType, ValueType, fits, nested_text
from reasoner.values.types import Value

EXIT_OK = 0
EXIT_INPUT_ERROR = 1
EXIT_PROGRAM_ERROR = 2
EXIT_CHECK_FAILED = 3


QUIET_HELP = "no progress display (it shows only when standard error is a terminal)"


def _run(args: argparse.Namespace) -> int:
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


def _workload(args: argparse.Namespace) -> int:
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


def _replay(args: argparse.Namespace) -> int:
    analyzed = analyze_program(args)
    inputs = load_inputs(analyzed, Path(args.facts))
    workload = read_workload(analyzed, args.epochs)
    records: list[EpochRecord] = []
    status = EXIT_OK
    live: list[Materialization] = []

    def keep(m: Materialization, _record: EpochRecord) -> None:
        live[:] = [m]

    with Terminal(args.quiet, total=len(workload.epochs) + 1) as terminal:
        terminal.say("epoch 0")
        for record in replay(
            analyzed,
            inputs,
            workload,
            strategy=args.strategy,
            switching_parameter=args.switching_parameter,
            engines=_engines(args),
            check=args.check,
            observe=keep,
            progress=terminal.bootstrap("epoch 0: "),
        ):
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
        f"state {record.state_bytes / 2**20:,.0f} MB"
    )
    if record.peak_memory_bytes is not None:
        line += f", peak {record.peak_memory_bytes / 2**20:,.0f} MB"
    if record.check_seconds is not None:
        verdict = "FAILED" if record.differences else "ok"
        line += f"  check {verdict} ({record.check_seconds:.3f}s)"
    return line


def _write_json(path: str, data: object) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputDataError(f"cannot write: {exc.strerror}", path) from None


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction within [0, 1], got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _engine_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="Bootstrap executor: auto (chosen per stratum: reference for small strata, "
        "Spark for huge ones, else local), reference (per-tuple), local (vectorized, "
        "Polars), spark",
    )
    parser.add_argument(
        "--spark-master",
        default=DEFAULT_SPARK_MASTER,
        help="Spark master URL: local[*] (default) or spark://host:port",
    )
    parser.add_argument(
        "--spark-iteration",
        type=_non_negative_int,
        default=DEFAULT_SPARK_ITERATION,
        metavar="ROWS",
        help="on Spark, run iterations driven by fewer rows on the in-process kernel "
        f"(default {DEFAULT_SPARK_ITERATION:,}; 0: every iteration on Spark)",
    )


def _engines(args: argparse.Namespace) -> EngineSettings:
    try:
        return EngineSettings(args.engine, args.spark_master, spark_iteration=args.spark_iteration)
    except ValueError as error:  # e.g. `--engine spark` without PySpark
        print(f"reasoner: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reasoner", description="Elastic incremental Datalog engine (Soufflé-compatible)."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="evaluate a program once, like `souffle -F -D`")
    program_arguments(run)
    run.add_argument("-F", "--facts", default=".", help="directory of <relation>.facts inputs")
    run.add_argument("-D", "--output", default=".", help="directory for <relation>.csv outputs")
    run.add_argument("--stats", help="write JSON statistics (strata, sizes, time, memory) here")
    run.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
    _engine_arguments(run)
    run.set_defaults(handler=_run)

    workload = commands.add_parser(
        "workload",
        help="write the elastic paper's 13-epoch workload over a program's inputs",
        description="Epoch 0 is the whole input; epochs 1-6 retract and re-insert small random "
        "sets, 7 retracts a large one, 8-11 are small again, 12 re-inserts the large set, so "
        "the facts end equal to FACTS_DIR.",
    )
    program_arguments(workload)
    workload.add_argument("-F", "--facts", default=".", help="directory of <relation>.facts")
    workload.add_argument("--out", required=True, help="new (or empty) directory for the epochs")
    workload.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    workload.add_argument(
        "--small", type=_non_negative_int, default=10, help="tuples per small update (10)"
    )
    workload.add_argument(
        "--large", type=_fraction, default=0.1, help="fraction of the input in a large update (0.1)"
    )
    workload.set_defaults(handler=_workload)

    rep = commands.add_parser(
        "replay",
        help="play a workload of epochs through the elastic engine",
        description="Exit status: 0 ok, 1 input error, 2 program error, 3 --check failed.",
    )
    program_arguments(rep)
    rep.add_argument("-F", "--facts", default=".", help="directory of <relation>.facts inputs")
    rep.add_argument("--epochs", required=True, help="directory of epochs (0001/insert/...)")
    rep.add_argument(
        "--check", action="store_true", help="compare with a fresh Bootstrap after every epoch"
    )
    rep.add_argument("--report", help="write a JSON report (per epoch strategy, time, impact)")
    rep.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
    rep.add_argument(
        "-D",
        "--output",
        help="after the last epoch, write the program's .output relations here (as `run -D`; "
        "not when --check found a difference)",
    )
    mode = rep.add_mutually_exclusive_group()
    mode.add_argument(
        "--switching-parameter",
        type=_non_negative_float,
        default=DEFAULT_SWITCHING_PARAMETER,
        help="Update deadline as a fraction of the last Bootstrap time "
        f"({DEFAULT_SWITCHING_PARAMETER})",
    )
    mode.add_argument(
        "--always-update",
        dest="strategy",
        action="store_const",
        const="update",
        help="never fall back to Bootstrap",
    )
    mode.add_argument(
        "--always-bootstrap",
        dest="strategy",
        action="store_const",
        const="bootstrap",
        help="recompute every epoch",
    )
    _engine_arguments(rep)
    rep.set_defaults(handler=_replay, strategy="auto")

    explain = commands.add_parser(
        "explain",
        help="print the Update plans of every stratum, or with --why, why tuples hold or not",
    )
    program_arguments(explain)
    explain.add_argument("-F", "--facts", default=".", help="directory of the .facts inputs")
    explain.add_argument(
        "--why",
        action="append",
        metavar="TUPLE",
        help="a tuple such as 'tc(1, \"a\")': print a proof that it holds, or why it does not "
        "(repeatable)",
    )
    explain.add_argument("--json", action="store_true", help="with --why: print JSON")
    explain.set_defaults(handler=_explain)

    # Commands of other parts (the service's `serve`), found by their entry points: the
    # engine does not import them.
    for entry in sorted(entry_points(group="reasoner.commands"), key=lambda e: e.name):
        try:
            register = entry.load()
        except Exception as error:  # one broken part must not take the others down
            print(
                f"reasoner: warning: command {entry.name!r} unavailable: {error}", file=sys.stderr
            )
            continue
        register(commands)
    return parser


_PROGRAM_ERRORS = frozenset({UNKNOWN_RELATION, ARITY_MISMATCH, TYPE_MISMATCH})
"""What `--why` may name that the program cannot hold: program errors, as the README lists
them (exit status 2), not input-data ones."""


def _explain(args: argparse.Namespace) -> int:
    analyzed = analyze_program(args)
    if not args.why:
        sys.stdout.write(explain_program(analyzed))
        return EXIT_OK
    tuples = [_ground_atom(text, analyzed) for text in args.why]
    materialization = Materialization(analyzed, maintained=False)
    materialization.load(load_inputs(analyzed, Path(args.facts), read=read_facts_batch))
    materialization.bootstrap()
    explainer = Explainer(analyzed, materialization.state, materialization.symbols)
    answers: list[tuple[str, tuple[Value, ...], str, dict | None, list[dict] | None]] = []
    for relation, row in tuples:
        try:
            encoded = explainer.encode(relation, row)
            if explainer.holds(relation, encoded):
                proof = explainer.explain(relation, encoded)
                answers.append((relation, row, proof.render(), proof.as_json(), None))
            else:
                failures = explainer.why_not(relation, encoded)
                text = _why_not_text(relation, row, failures)
                answers.append((relation, row, text, None, [f.as_json() for f in failures]))
        except ExplainError as error:
            if error.code in _PROGRAM_ERRORS:  # a tuple the program cannot have: exit 2
                raise InvalidDelta(error.code, f"--why {relation}: {error.message}") from None
            raise InputDataError(f"{error.code}: {error.message}", args.program) from None
    if args.json:
        json.dump(
            floats.json_safe(
                [
                    {"relation": r, "row": list(row), "holds": proof is not None, "proof": proof}
                    | ({} if failures is None else {"why_not": failures})
                    for r, row, _, proof, failures in answers
                ]
            ),
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(text for _, _, text, _, _ in answers))
    return EXIT_OK


def _ground_atom(text: str, analyzed: AnalyzedProgram) -> tuple[str, tuple[Value, ...]]:
    """`tc(1, "a")`: a relation and the constants of a tuple, as `--why` takes them. A
    literal not written negative is read in its column's type (`0xFF..FF` in an unsigned
    column is 2^64 - 1), as a literal in a rule is; a record of constants is its text
    (`[1, "a"]`)."""
    literals = parse_body(text, "<--why>")
    atom = literals[0] if len(literals) == 1 else None
    if not isinstance(atom, Atom) or not all(map(_is_constant, atom.args)):
        raise InputDataError(f'`{text}` is not a tuple such as tc(1, "a")', "--why")
    if atom.relation in analyzed.goal_directed:
        raise InputDataError(
            f"`{atom.relation}` is computed only where the program asks for it (the magic-set "
            "transformation): explain a relation that reads it",
            "--why",
        )
    info = analyzed.relations.get(atom.relation)
    types = info.value_types if info is not None and info.arity == len(atom.args) else ()
    return atom.relation, tuple(
        _constant(arg, types[index] if types else None) for index, arg in enumerate(atom.args)
    )


def _is_constant(term: Term) -> bool:
    if isinstance(term, RecordTerm | BranchTerm):
        return all(map(_is_constant, term.args))
    return isinstance(term, NumberConst | StringConst | NilConst)


def _constant(term: Term, column: ValueType | None) -> Value:
    if isinstance(term, RecordTerm | BranchTerm | NilConst):
        # Its text in the column's type (an unsigned field's 2^64 - 1 as such); else as
        # written, for the explainer to refuse.
        value = evaluate(term)
        if isinstance(column, RecordType | AdtType) and fits(value, column):
            return RecordText(nested_text(value, column))
        return render(term)
    literal = cast(NumberConst | StringConst, term)
    if isinstance(literal, NumberConst) and literal.kind == "float":  # its IEEE pattern
        return floats.from_bits(literal.value)
    if isinstance(literal, NumberConst) and literal.kind != "number" and column == "unsigned":
        return as_unsigned(literal.value)
    return literal.value


def _why_not_text(relation: str, row: tuple[Value, ...], failures: list[Failure]) -> str:
    shown_row = ", ".join(map(shown, row))
    lines = [f"{relation}({shown_row}) does not hold"]
    if not failures:
        lines.append("  no rule derives it, and it is not a fact")
    for failure in failures:
        binding = ", ".join(f"{k} = {v!r}" for k, v in failure.binding.items())
        lines.append(f"  {failure.rule}")
        lines.append(
            f"    {failure.literal}: {failure.reason}" + (f" (with {binding})" if binding else "")
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ProgramError as exc:
        print(exc.format(), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except InputDataError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_INPUT_ERROR
    except InvalidDelta as exc:  # met while evaluating: a float sum whose rounding is
        # Soufflé's order of rows, a `match` pattern or a `substr` cut known only then, a
        # user-defined functor that raised
        print(str(exc), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except FunctorLoadError as exc:  # `--functors`, `-l`: part of the program
        print(f"reasoner: error: {exc}", file=sys.stderr)
        return EXIT_PROGRAM_ERROR


if __name__ == "__main__":
    sys.exit(main())
