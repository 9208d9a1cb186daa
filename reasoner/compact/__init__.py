"""Compiled storage of the maintained state: relations as rows of integers with hash tables of
row ids (`table.pyx`, built by `pip install` through setup.py; its docstring gives the layout),
and sets of tuples on them (`tuple_set.py`)."""

from reasoner.compact.table import Counts, Index, Staged, Table
from reasoner.compact.tuple_set import TupleSet

__all__ = ["Counts", "Index", "Staged", "Table", "TupleSet"]
