"""The program that the command line's options name (`reasoner.cli.arguments.program_arguments`),
read through the C preprocessor and analyzed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reasoner.analysis import check_preprocessed
from reasoner.analysis.model import AnalyzedProgram
from reasoner.errors import InputDataError
from reasoner.syntax.preprocess import parse_macros, preprocess
from reasoner.values.functor_library import FunctorLibrary


def analyze_program(args: argparse.Namespace) -> AnalyzedProgram:
    """The program of `args`, through the C preprocessor as Soufflé runs it (`-I`, `-M`)."""
    path = Path(args.program)
    try:
        text = path.read_text(encoding="utf-8-sig")  # without a byte-order mark
    except OSError as exc:
        raise InputDataError(f"cannot read program: {exc.strerror}", str(path)) from None
    for directory in args.include_dir:
        if not Path(directory).is_dir():
            raise InputDataError("include directory does not exist", directory)
    source = preprocess(
        text, str(path), include_dirs=args.include_dir, macros=parse_macros(args.macro)
    )
    magic = [name.strip() for name in args.magic_transform.split(",") if name.strip()]
    analyzed = check_preprocessed(source, str(path), _functor_library(args), magic)
    for warning in analyzed.warnings:
        print(f"warning: {warning.format()}", file=sys.stderr)
    return analyzed


def _functor_library(args: argparse.Namespace) -> FunctorLibrary:
    """The implementations of the program's `.functor`s: the Python modules of `--functors`,
    then the C libraries of `-l` (Soufflé's), in `-L`'s directories. Without `-l`, Soufflé's
    default `libfunctors.so` is looked for, if the program wants a functor none provides."""
    modules = [FunctorLibrary.python_module(path) for path in args.functors]
    names = [name for value in args.libraries for name in value.split()]
    directories = args.library_dir or ["."]
    shared = FunctorLibrary.shared_libraries(
        names or ["functors"], directories, required=bool(names)
    )
    return FunctorLibrary.merged(*modules, shared)
