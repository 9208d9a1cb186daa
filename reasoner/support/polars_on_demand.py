"""Polars, imported the first time the engine uses it.

Importing Polars takes about 75 ms and 36 MiB: a sixth of the time and a third of the peak
of `reasoner run` on graph10000-rmat1k, whose facts are numbers (`reasoner.io.fact_text`)
and whose iterations all run on the compiled kernel, so that it never calls Polars. The
modules on such a run's path name Polars as `pl` from here: the first attribute read imports
it, type checkers see the module itself.

`reasoner.support.jobs` sizes Polars' thread pool in the environment before that import,
wherever it happens, and reads `sys.modules` to know whether it has.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["loaded", "pl"]


def loaded() -> bool:
    """Whether Polars is imported in this process yet, by the engine or by anything else."""
    return "polars" in sys.modules


class _OnDemand:
    """Stands for the module until an attribute is read, then hands out the module's."""

    __slots__ = ("_module",)

    def __init__(self) -> None:
        self._module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module("polars")
        return getattr(module, name)


if TYPE_CHECKING:
    import polars as pl
else:
    pl = _OnDemand()
