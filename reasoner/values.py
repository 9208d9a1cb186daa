"""One Python int object per distinct value of the maintained state.

Every engine value is an int (symbols are interned to ids, see `symbols.py`), but nothing makes
two equal ints the same object: a parsed fact, a row a Bootstrap converts from its frames and a
row Spark returns each get ints of their own. On CRDT that is 3.4 million int objects for
181,000 distinct values. Sharing them pays twice:

- memory: an int above 256 is a 32-byte object, and a 4-column tuple holds four;
- speed: a dict lookup whose key is built from the fields of another stored tuple (every probe
  of an Update: a head, an index key) compares the key it finds field by field, and fields
  that are the same object compare by identity, without reading either int. CRDT's 10-tuple
  Updates take about 8 % less time.

The price is paid by the Bootstrap: hashing a new tuple reads its ints from all over the pool
instead of from next to the tuple, and CRDT's Bootstrap takes 6-8 % longer.

Values in [0, `DENSE_LIMIT`) are kept in an object array indexed by value, so a whole column
of a frame is mapped with one gather; others in a dict, up to `SPARSE_LIMIT` of them (past that
a value is used as it comes: sharing is an optimization, never needed for correctness, and the
pool must not grow without bound in a long-running service).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

Tuple = tuple[int, ...]

DENSE_LIMIT = 1 << 22
"""Values 0 <= v < DENSE_LIMIT live in the array (at most 32 MiB of pointers)."""

SPARSE_LIMIT = 1 << 20
"""At most this many other values are shared."""


class ValuePool:
    """The shared int objects of one materialization (append-only, bounded)."""

    __slots__ = ("_filled", "_sparse", "_table")

    def __init__(self) -> None:
        self._table = np.empty(0, dtype=object)
        self._filled = np.zeros(0, dtype=bool)
        self._sparse: dict[int, int] = {}

    def __len__(self) -> int:
        return int(self._filled.sum()) + len(self._sparse)

    def value(self, v: int) -> int:
        """The shared object equal to `v`."""
        if 0 <= v < DENSE_LIMIT:
            if v >= len(self._table):
                self._grow(v + 1)
            elif self._filled[v]:
                return self._table[v]
            self._table[v] = v
            self._filled[v] = True
            return v
        shared = self._sparse.get(v)
        if shared is not None:
            return shared
        if len(self._sparse) < SPARSE_LIMIT:
            self._sparse[v] = v
        return v

    def row(self, t: Tuple) -> Tuple:
        return tuple(map(self.value, t))

    def column(self, values: np.ndarray) -> np.ndarray:
        """The shared objects of an int64 column, in order, as an object array."""
        if not len(values):
            return np.empty(0, dtype=object)
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= DENSE_LIMIT:
            distinct, positions = np.unique(values, return_inverse=True)
            shared = np.array([self.value(v) for v in distinct.tolist()], dtype=object)
            return shared[positions]
        if high >= len(self._table):
            self._grow(high + 1)
        missing = ~self._filled[values]
        if missing.any():
            new = np.unique(values[missing])
            self._table[new] = new.astype(object)
            self._filled[new] = True
        return self._table[values]

    def rows(self, columns: Sequence[np.ndarray]) -> list[Tuple]:
        """Tuples of shared objects from int64 columns of equal length (at least one). Zipping
        the object arrays themselves costs no more than Polars' `rows()`, which makes new
        ints."""
        return list(zip(*(self.column(c) for c in columns), strict=True))

    def tuples(self, rows: Iterable[Tuple], arity: int) -> list[Tuple]:
        """`rows` (tuples of ints) rebuilt from shared objects, in one pass per column."""
        rows = list(rows)
        if not rows or not arity:
            return rows
        try:
            matrix = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
        except OverflowError:  # a value past 64 bits: the caller's checks will name it
            return [self.row(t) for t in rows]
        return self.rows([matrix[:, i] for i in range(arity)])

    def _grow(self, size: int) -> None:
        size = min(max(size, 2 * len(self._table), 1024), DENSE_LIMIT)
        table = np.empty(size, dtype=object)
        table[: len(self._table)] = self._table
        filled = np.zeros(size, dtype=bool)
        filled[: len(self._filled)] = self._filled
        self._table, self._filled = table, filled
