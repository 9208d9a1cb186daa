"""The `reasoner` command's options, declared apart from the commands that read them.

Parsing them imports nothing of the engine: `--jobs` sizes Polars' thread pool, which is fixed
when Polars is first imported (`reasoner.support.jobs`), and `reasoner --help` or a mistyped
option should not wait for the engine's imports either.
"""

from __future__ import annotations

import argparse

from reasoner.executors.engines import DEFAULT_SPARK_ITERATION, DEFAULT_SPARK_MASTER, ENGINES
from reasoner.support.jobs import JOBS_VARIABLE, JobsError, parse_jobs

QUIET_HELP = "no progress display (it shows only when standard error is a terminal)"


def program_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", help="the Datalog program (.dl)")
    parser.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory for the preprocessor's #include (repeatable), as Soufflé's -I",
    )
    parser.add_argument(
        "-M",
        "--macro",
        action="append",
        default=[],
        metavar="MACROS",
        help="preprocessor macros, 'NAME' or 'NAME=VALUE' separated by spaces, as Soufflé's -M",
    )
    parser.add_argument(
        "--functors",
        action="append",
        default=[],
        metavar="FILE.py",
        help="a Python module whose top-level functions implement the program's .functor "
        "declarations, by name (repeatable; before the -l libraries)",
    )
    parser.add_argument(
        "-l",
        "--libraries",
        action="append",
        default=[],
        metavar="NAME",
        help="a C library of functors, libNAME.so, called through ctypes as Soufflé's 64-bit "
        "build calls it (repeatable), as Soufflé's -l; without it, libfunctors.so if the "
        "program needs it and it is there",
    )
    parser.add_argument(
        "-L",
        "--library-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of -l's libraries (repeatable; default .), as Soufflé's -L",
    )
    parser.add_argument(
        "-m",
        "--magic-transform",
        default="",
        metavar="RELATIONS",
        help="apply the magic-set transformation to these relations (comma-separated, '*' for "
        'all), as Soufflé\'s --magic-transform and `.pragma "magic-transform"`',
    )


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction within [0, 1], got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def engine_arguments(parser: argparse.ArgumentParser) -> None:
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
        type=non_negative_int,
        default=DEFAULT_SPARK_ITERATION,
        metavar="ROWS",
        help="on Spark, run iterations driven by fewer rows on the in-process kernel "
        f"(default {DEFAULT_SPARK_ITERATION:,}; 0: every iteration on Spark)",
    )


def jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        metavar="N",
        help=f"threads the evaluation may use, as Soufflé's -j (default: ${JOBS_VARIABLE}, "
        "else every core this process may run on): Polars' stages and the kernel's "
        "Bootstrap and Update use them",
    )


def _jobs(text: str) -> int:
    try:
        return parse_jobs(text, "--jobs")
    except JobsError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--jobs: ")) from None
