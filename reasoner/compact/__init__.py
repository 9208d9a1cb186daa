"""Compiled storage of the maintained state: relations as rows of int64 with hash tables of row
ids (`table.pyx`). Built by `pip install` (setup.py); see the module's docstring for the layout."""

from reasoner.compact.table import DEAD, STAGED, Index, Table

__all__ = ["DEAD", "STAGED", "Index", "Table"]
