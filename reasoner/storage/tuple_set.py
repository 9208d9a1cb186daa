"""A set of engine tuples in a compiled table: the facts of one relation.

The facts a materialization keeps (to rebuild its state, to tell a retraction of a fact from a
retraction of nothing) are as many as its input tuples: in Python sets they cost 250 bytes a
tuple, more than the whole compact state. Here they are rows of a `Table` at iteration 0, and
a Bootstrap copies them into the state as columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from reasoner.storage.renumber import compact
from reasoner.storage.table import Table

Tuple = tuple[int, ...]


class TupleSet:
    """The set operations the materialization needs, on a compiled table."""

    __slots__ = ("table",)

    def __init__(self, arity: int, rows: Iterable[Tuple] = ()) -> None:
        self.table = Table(arity)
        self.table.insert(rows, 0)

    @property
    def arity(self) -> int:
        return self.table.arity

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, t: object) -> bool:
        return t in self.table

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self.table)

    @classmethod
    def of_columns(cls, arity: int, columns: Sequence[np.ndarray]) -> TupleSet:
        """The set of the rows given as int64 columns (repeats kept once; arity > 0)."""
        out = cls(arity)
        out.table.insert_columns(columns, 0)
        return out

    def update_columns(self, columns: Sequence[np.ndarray]) -> None:
        """`update` with rows given as int64 columns (arity > 0)."""
        self.table.insert_columns(columns, 0)

    def update(self, rows: Iterable[Tuple]) -> None:
        if isinstance(rows, TupleSet) and self.arity:
            self.update_columns(rows.columns())
        else:
            self.table.insert(rows, 0)

    def difference_update(self, rows: Iterable[Tuple]) -> None:
        if isinstance(rows, TupleSet) and self.arity:
            self.table.remove_columns(rows.columns())
        else:
            remove = self.table.remove
            for t in rows:
                remove(t)
        compact(self.table)

    def columns(self) -> list[np.ndarray]:
        """The tuples as one int64 array per column."""
        return self.table.columns()[0]

    def copy(self) -> TupleSet:
        other = TupleSet(self.arity)
        other.table = self.table.copy()
        return other
