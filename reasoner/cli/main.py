"""The `reasoner` command: Soufflé-style batch runs of the engine, and epoch workloads.

This module parses the options and dispatches; the commands are in `reasoner.cli.commands`,
`reasoner.cli.epoch_commands` and `reasoner.cli.why`, imported only once the options are parsed
and `--jobs` applied (`reasoner.cli.arguments`). Exit statuses: `reasoner.cli.exit_status`.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, cast

from reasoner.cli.arguments import (
    QUIET_HELP,
    engine_arguments,
    fraction,
    jobs_argument,
    non_negative_float,
    non_negative_int,
    program_arguments,
)
from reasoner.cli.exit_status import EXIT_INPUT_ERROR, EXIT_PROGRAM_ERROR
from reasoner.elastic.switch import DEFAULT_SWITCHING_PARAMETER
from reasoner.errors import InputDataError, InvalidDelta, ProgramError
from reasoner.support.jobs import JobsError, requested_jobs, use_jobs
from reasoner.values.functor_library import FunctorLoadError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoints

ENGINE_COMMANDS = ("run", "workload", "replay", "explain")
"""The engine's own commands: parsing one needs no other part's commands."""


def entry_points(group: str) -> EntryPoints:
    """The installed entry points of `group`. `importlib.metadata` is imported here, not with
    the module: it loads the `email` package, 8-15 ms of a start whose command never reads
    it."""
    from importlib.metadata import entry_points as installed

    return installed(group=group)


def build_parser(other_parts: bool = True) -> argparse.ArgumentParser:
    """The command line; with `other_parts`, the commands other packages register too (read
    from every installed distribution's metadata: 5-10 ms, which `main` spares a command of
    the engine's own)."""
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
    engine_arguments(run)
    jobs_argument(run)
    run.set_defaults(handler="reasoner.cli.commands:run")

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
        "--small", type=non_negative_int, default=10, help="tuples per small update (10)"
    )
    workload.add_argument(
        "--large", type=fraction, default=0.1, help="fraction of the input in a large update (0.1)"
    )
    workload.set_defaults(handler="reasoner.cli.epoch_commands:workload")

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
        type=non_negative_float,
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
    engine_arguments(rep)
    jobs_argument(rep)
    rep.set_defaults(handler="reasoner.cli.epoch_commands:replay_epochs", strategy="auto")

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
    jobs_argument(explain)
    explain.set_defaults(handler="reasoner.cli.why:explain")

    if other_parts:
        _register_other_parts(commands)
    return parser


def _register_other_parts(commands: argparse._SubParsersAction) -> None:
    """Commands of other parts (the service's `serve`), found by their entry points: the
    engine does not import them."""
    for entry in sorted(entry_points(group="reasoner.commands"), key=lambda e: e.name):
        try:
            register = entry.load()
        except Exception as error:  # one broken part must not take the others down
            print(
                f"reasoner: warning: command {entry.name!r} unavailable: {error}", file=sys.stderr
            )
            continue
        register(commands)


def command() -> int:
    """The `reasoner` executable: `main`, and after one of the engine's own commands, an exit
    without the interpreter's teardown.

    Once such a command has returned, its files are closed, and what is left is freeing the
    state and every module object by object: 40-70 ms on graph10000-rmat1k, a tenth of its
    whole run (Soufflé's process just ends). Threads are joined and the exit handlers the
    command registered run first, as at any exit (`_exit_now` is registered before them, so it
    runs after them). After `serve`, an error the command raised, or an interrupt, the exit is
    Python's own."""
    argv = sys.argv[1:]
    if argv and argv[0] in ENGINE_COMMANDS:
        atexit.register(_exit_now)
    status = main(argv)
    _returned.append(status)
    return status


_returned: list[int] = []
"""The status `main` returned in this process (`command`): empty while it runs, or if it
raised."""


def _exit_now() -> None:
    if not _returned:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # e.g. a closed pipe: Python's own exit reports it
        return
    os._exit(_returned[-1])


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(not argv or argv[0] not in ENGINE_COMMANDS).parse_args(argv)
    try:
        _use_jobs(getattr(args, "jobs", None))
    except JobsError as error:
        print(f"reasoner: error: {error}", file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    try:
        return _handler(args.handler)(args)
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


def _use_jobs(jobs: int | None) -> None:
    """Size the evaluation's threads from `--jobs`, else `REASONER_JOBS` (refused here when it
    is not a number: `reasoner/__init__.py` only applies a valid one), before the command's
    module imports the engine."""
    if jobs is None:
        jobs = requested_jobs()
    if jobs is not None:
        use_jobs(jobs)


def _handler(
    handler: str | Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """A command's function: a "module:function" of the engine's commands, imported now that
    the options are parsed, or a function another package registered."""
    if callable(handler):
        return handler
    module, _, name = handler.partition(":")
    return cast(Callable[[argparse.Namespace], int], getattr(import_module(module), name))


if __name__ == "__main__":
    sys.exit(command())
