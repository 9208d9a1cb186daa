"""`.pragma "key" "value"`: Soufflé's command-line options written into a program.

Options that only tune how Soufflé evaluates (inlining, join order, parallelism, profiling)
cannot change a result, so a program carrying them runs here unchanged, with a warning that
they have no effect. The magic-set transformation is applied as Soufflé applies it
(`reasoner.analysis.magic`). Options that change what the program
means or where its data lives (macros, functor libraries, input and output directories,
provenance) are refused with the option named: running without them could give an answer
that is not Soufflé's. Functor libraries in particular are never named by a program: the
command line or the service's settings load them, and a program posted to the service can use
only those (`reasoner.values.functor_library`).
"""

from __future__ import annotations

from reasoner.analysis.report import Reporter
from reasoner.errors import IGNORED_PRAGMA, UNSUPPORTED_PRAGMA
from reasoner.syntax.ast import Program

TUNING = frozenset(
    {
        "auto-schedule",
        "compile",
        "debug-report",
        "disable-transformers",
        "dl-program",
        "emit-statistics",
        "generate",
        "index-stats",
        "inline-exclude",
        "jobs",
        "legacy",
        "no-warn",
        "profile",
        "profile-use",
        "RamSIPS",
        "swig",
        "verbose",
        "wno",
    }
)
"""Soufflé options that affect only its own evaluation."""

_LIBRARIES = (
    "a program never names the libraries of its functors: they are loaded where the engine "
    "starts (`reasoner run -l NAME -L DIR` or `--functors FILE.py`; the service's "
    "`REASONER_FUNCTORS`)"
)
MEANINGFUL = {
    "fact-dir": "give the input directory on the command line (-F) instead",
    "output-dir": "give the output directory on the command line (-D) instead",
    "include-dir": "the C preprocessor is not run",
    "macro": "the C preprocessor is not run",
    "library-dir": _LIBRARIES,
    "libraries": _LIBRARIES,
    "provenance": "provenance relations are not produced (the proof counts answer why a tuple "
    "is there)",
}
"""Soufflé options that change what a program computes or reads, with why each is refused."""


APPLIED = frozenset({"magic-transform", "magic-transform-exclude"})
"""Soufflé options applied here (`reasoner.analysis.magic`)."""


def check_pragmas(program: Program, reporter: Reporter) -> None:
    for pragma in program.pragmas:
        if pragma.key in APPLIED:
            continue
        if pragma.key in TUNING:
            reporter.warning(
                IGNORED_PRAGMA,
                f'`.pragma "{pragma.key}"` only tunes Soufflé\'s evaluation: ignored here',
                pragma.span,
            )
        elif pragma.key in MEANINGFUL:
            reporter.error(
                UNSUPPORTED_PRAGMA,
                f'`.pragma "{pragma.key}"` is not supported: {MEANINGFUL[pragma.key]}',
                pragma.span,
            )
        else:
            reporter.error(UNSUPPORTED_PRAGMA, f"unknown pragma `{pragma.key}`", pragma.span)
