"""A relation read a page at a time, in the order of its values.

Rows are ordered as their user values compare (numbers as numbers, symbols as strings, column
by column), and a page is the `limit` rows after a cursor row. Symbol ids become keys that
sort as their strings do (`RowOrder`), and only the page's rows are decoded.

Once a relation of `SORTED_MIN_ROWS` to `SORTED_MAX_ROWS` rows has a `SortedRows` (its
committed rows' ids in value order as of some moment, 4 bytes a row), a page costs a binary
search for the cursor (O(log n) rows read), the page's rows, and the rows committed since (ids
from `first_new` on, at most an eighth of the relation before it is sorted again); rows
removed since are skipped by their status. A `SortedRows` is built on a thread of its own, one at a
time, after the first read that finds none (copying the rows holds the GIL for a moment, the
sort of 3 million rows most of a second without it), and again when the rows it misses grow
many, or the table is renumbered (compacted) or replaced (a Bootstrap). Until then, and for
other relations, a page costs one pass over the relation: the columns come out as arrays,
a vectorized comparison keeps the rows after the cursor, and a partition per column picks the
smallest `limit` (a few tens of milliseconds on 3 million rows). Pages that cost a pass each
made flat-out reads slow a one-fact write fivefold on two cores: each write waited for the
pages being made.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from reasoner.storage import Table
from reasoner.storage.state import RelationStore
from reasoner.support.ordering import lexicographic_order
from reasoner.values import floats
from reasoner.values.records import AdtType, RecordType, ValueType
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, SYMBOL, UNSIGNED, Value

_BIAS = np.int64(-(1 << 63))
"""Flips an unsigned pattern's top bit: its keys then order as the unsigned values."""

Row = tuple[Value, ...]


def relation_page(
    store: RelationStore,
    types: Sequence[ValueType],
    symbols: SymbolTable,
    after: Row | None,
    limit: int,
) -> tuple[list[Row], Row | None]:
    """The first `limit` rows after `after` (user values) and the last of them when more
    follow (the next cursor), else None."""
    decode = symbols.decoder(types)
    if store.arity == 0:
        rows = [decode(t) for t in list(store.iters)]
        return ([], None) if after is not None else (rows[:limit], None)
    order = RowOrder(types, symbols)
    cursor = None if after is None else order.cursor(after)
    found = _current(store, order)
    if found is not None:
        values = _page_of_sorted(found, order, cursor, limit)
    else:
        values, _iterations = store.table.columns()
        if not len(values[0]):
            return [], None
        keys = order.keys(values)
        picked = _smallest(keys, limit + 1, None if cursor is None else _after(keys, cursor))
        values = [column[picked] for column in values]
    rows = [decode(t) for t in zip(*(v.tolist() for v in values), strict=True)]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1]
    return rows, None


class RowOrder:
    """How rows of a relation of these types compare: as int64 keys per column, numbers as
    they are, symbols by one `SymbolOrder` (so a cursor and the rows it is compared with
    agree, whatever symbols a write interns meanwhile) and records by their ids, which never
    change."""

    __slots__ = ("records", "symbols", "types")

    def __init__(self, types: Sequence[ValueType], symbols: SymbolTable) -> None:
        self.types = types
        self.symbols = symbols.order() if SYMBOL in types else None
        self.records = symbols.codec(intern=False)

    def keys(self, values: list[np.ndarray]) -> list[np.ndarray]:
        """The keys of rows given as engine columns (an unsigned's pattern with its top bit
        flipped, so that keys order as the unsigned values do; a float's as
        `reasoner.values.floats.order_keys` makes them, so they order as the floats do)."""
        if self.symbols is None and UNSIGNED not in self.types and FLOAT not in self.types:
            return values
        return [self._keys(v, t) for v, t in zip(values, self.types, strict=True)]

    def _keys(self, values: np.ndarray, kind: ValueType) -> np.ndarray:
        if kind == SYMBOL:
            assert self.symbols is not None  # made when there is a symbol column
            return self.symbols.keys[values]
        if kind == FLOAT:
            return floats.order_keys(values)
        return values ^ _BIAS if kind == UNSIGNED else values

    def cursor(self, after: Row) -> list[int]:
        """The keys of a cursor row (user values, which no row need hold)."""
        return [self._key(v, t) for v, t in zip(after, self.types, strict=True)]

    def _key(self, value: Value, kind: ValueType) -> int:
        if isinstance(kind, RecordType | AdtType):
            ident = self.records.parse(cast(str, value), kind)
            if ident is None:  # no row holds it, nor did any: a cursor this service never gave
                raise ValueError(f"no row holds the record {value!r}")
            return ident
        if kind == SYMBOL:
            assert self.symbols is not None
            return self.symbols.key(cast(str, value))
        if kind == FLOAT:
            return floats.order_key(cast(float, value))
        number = cast(int, value)
        return number - (1 << 63) if kind == UNSIGNED else number


def _after(keys: list[np.ndarray], cursor: list[int]) -> np.ndarray:
    """Which rows come after the cursor, lexicographically."""
    greater = np.zeros(len(keys[0]), dtype=bool)
    equal = np.ones(len(keys[0]), dtype=bool)
    for column, bound in zip(keys, cursor, strict=True):
        greater |= equal & (column > bound)
        equal &= column == bound
    return greater


def _smallest(keys: list[np.ndarray], k: int, wanted: np.ndarray | None) -> np.ndarray:
    """Positions of the `k` lexicographically smallest rows (all distinct) among the `wanted`
    ones (None: all), in order: the rows below the k-th value of the first column, and among
    those equal to it the smallest by the next columns. Only the first column is copied."""
    first = keys[0]
    if wanted is None:
        count = len(first)
    else:
        count = int(np.count_nonzero(wanted))
        first = np.where(wanted, first, np.iinfo(np.int64).max)
    if count <= k:
        positions = np.arange(len(first)) if wanted is None else np.flatnonzero(wanted)
        return positions[lexicographic_order([c[positions] for c in keys])]
    kth = np.partition(first, k - 1)[k - 1]
    below = np.flatnonzero(first < kth)
    equal = np.flatnonzero(first == kth)
    if wanted is not None:
        equal = equal[wanted[equal]]
    need = k - len(below)
    if len(keys) > 1 and len(equal) > need:
        equal = equal[_smallest([c[equal] for c in keys[1:]], need, None)]
    picked = np.concatenate([below, equal[:need]])
    return picked[lexicographic_order([c[picked] for c in keys])]


SORTED_MIN_ROWS = 50_000
"""Smaller relations are read a pass a page (a millisecond or so), never sorted."""
SORTED_MAX_ROWS = 1 << 24
"""Nor larger ones: sorting copies the rows' values first (8 bytes a value), 0.5 GB for 16 M
rows of arity 4, beside the state and outside any epoch's memory allowance."""
REBUILD_SHARE = 8
"""A `SortedRows` missing more than 1/8 of its table's rows (committed since, or removed
since) is built again."""
REBUILD_MIN = 4096


@dataclass(frozen=True, slots=True)
class SortedRows:
    """A table's committed rows in value order at one moment (see the module docstring):
    their ids alone, 4 bytes a row; a cursor is found by a binary search that reads the
    rows' values from the table."""

    table: Table
    renumbered: int
    """The table's `renumbered` then: the ids stand for the same rows while it stays."""
    first_new: int
    """The table's row count then: rows from this id on are not in `ids`."""
    ids: np.ndarray


_building_lock = threading.Lock()
_one_build = threading.Lock()
"""Sorts run one at a time: each copies its relation first."""


def _current(store: RelationStore, order: RowOrder) -> SortedRows | None:
    """The store's `SortedRows` when it still describes its table, else None; starts a build
    when there is none or it misses many rows."""
    table = store.table
    found = store.sorted_rows
    if not SORTED_MIN_ROWS <= table.committed <= SORTED_MAX_ROWS:
        return None
    if found is None or found.table is not table or found.renumbered != table.renumbered:
        _build_later(store, order)
        return None
    missing = (table.nrows - found.first_new) + (len(found.ids) - table.committed)
    if missing > max(REBUILD_MIN, len(found.ids) // REBUILD_SHARE):
        _build_later(store, order)
    return found


def _build_later(store: RelationStore, order: RowOrder) -> None:
    with _building_lock:
        if store.sorted_building:
            return
        store.sorted_building = True
    threading.Thread(target=_build, args=(store, order), name="reasoner-pages", daemon=True).start()


def _build(store: RelationStore, order: RowOrder) -> None:
    try:
        with _one_build:
            built = build_sorted_rows(store.table, order)
        if built is not None and built.table is store.table:
            store.sorted_rows = built
    finally:
        store.sorted_building = False


def build_sorted_rows(table: Table, order: RowOrder) -> SortedRows | None:
    """The table's rows in value order now; None while rows are staged (an Update in
    flight: their ids come before rows committed later, so `first_new` could not say)."""
    snapshot = table.committed_snapshot()
    if snapshot is None:
        return None
    ids, values, nrows, renumbered = snapshot
    permutation = np.lexsort(order.keys(values)[::-1])  # lets go of the GIL
    return SortedRows(table, renumbered, nrows, ids[permutation].astype(np.int32))


class _SortedKeys(Sequence[tuple[int, ...]]):
    """The order keys of the rows of a `SortedRows`, read on demand (for `bisect`)."""

    def __init__(self, found: SortedRows, order: RowOrder) -> None:
        self.found = found
        self.order = order

    def __len__(self) -> int:
        return len(self.found.ids)

    def __getitem__(self, position):
        values = self.found.table.values_of(self.found.ids[position : position + 1])
        return tuple(int(k[0]) for k in self.order.keys(values))


def _page_of_sorted(
    found: SortedRows,
    order: RowOrder,
    cursor: list[int] | None,
    limit: int,
) -> list[np.ndarray]:
    """The values of the first `limit` + 1 rows after `cursor` (keys) as columns: the sorted
    rows from the cursor on that are still committed, merged with the rows committed since."""
    table = found.table
    start = 0 if cursor is None else bisect_right(_SortedKeys(found, order), tuple(cursor))
    need = limit + 1
    chosen = []
    while need and start < len(found.ids):
        chunk = found.ids[start : start + 2 * need]
        alive = chunk[table.committed_mask(chunk)][:need]
        chosen.append(alive)
        need -= len(alive)
        start += len(chunk)
    picked = np.concatenate(chosen) if chosen else np.empty(0, dtype=np.int64)
    values = table.values_of(picked)
    new = table.committed_in(found.first_new, table.nrows)
    if not len(new):
        return values
    new_values = table.values_of(new)
    if cursor is not None:
        keep = _after(order.keys(new_values), cursor)
        new_values = [column[keep] for column in new_values]
    values = [np.concatenate(pair) for pair in zip(values, new_values, strict=True)]
    ranked = lexicographic_order(order.keys(values))[: limit + 1]
    return [column[ranked] for column in values]
