"""Compiled storage of the maintained state: relations as rows of integers with hash tables of
row ids (`table.pyx`, built by `pip install` through setup.py; its docstring gives the layout),
two tables compared row by row (`compare.pyx`), an Update's record committed to a table and
its compaction (`renumber.pyx`), selections by scanning the rows (`scans.pyx`), and sets of
tuples on them (`tuple_set.py`).
An epoch's uncommitted changes (`overlay.py`) are recorded by row, and a relation evaluated
off to the side is compared with the committed one into such a record (`difference.py`; a
copy with the same row ids, taken back to an iteration, `rewind.pyx`).
A table's hash tables are rebuilt, its key indexes built, and rows claimed by a count on the
lanes linked, on several threads (`table_lanes.pyx`, `claims.pxd`).

Layer: the ground floor beside `values`, above `support` and `errors`; it imports nothing else
of the engine (the sorted rows of `reads.pages` are named for types only). Used by the plans,
the kernel, the executors, the epoch and the reads.
"""

from reasoner.storage.compare import missing_rows, unmarked_rows
from reasoner.storage.renumber import apply_rows, commit_rows, compact
from reasoner.storage.scans import count_where, matching, release_slots
from reasoner.storage.table import Counts, Index, Staged, Table
from reasoner.storage.tuple_set import TupleSet

__all__ = [
    "Counts",
    "Index",
    "Staged",
    "Table",
    "TupleSet",
    "apply_rows",
    "commit_rows",
    "compact",
    "count_where",
    "matching",
    "missing_rows",
    "release_slots",
    "unmarked_rows",
]
