"""The C libraries the engine calls through `ctypes` (glibc's `malloc_trim`, libm's `pow`).

Each is opened by its usual soname first: the dynamic loader finds that by itself.
`ctypes.util.find_library` is the fallback only, for a C library of another name: it runs
`ldconfig` in a child process (about 2 ms) and imports `subprocess` and `tempfile` (about
8 ms), which every start would otherwise pay for two functions."""

from __future__ import annotations

import ctypes


def c_library(name: str, soname: str) -> ctypes.CDLL:
    """The library `name` (as `-l` spells it: "c", "m"), opened as `soname`, else wherever the
    system's search finds it; OSError when neither opens."""
    try:
        return ctypes.CDLL(soname)
    except OSError:
        from ctypes.util import find_library

        found = find_library(name)
        if found is None:
            raise
        return ctypes.CDLL(found)
