"""A C library of user-defined functors, built for a test from its source with the machine's C
compiler (the tests that need one skip without it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def build_library(source: Path, directory: Path, name: str = "functors") -> Path:
    """`lib<name>.so` in `directory`, compiled from `source` (C) as Soufflé's documentation
    builds a functor library: `gcc -shared -fPIC`."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the functor library")
    library = directory / f"lib{name}.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-lm"],
        check=True,
        capture_output=True,
    )
    return library
