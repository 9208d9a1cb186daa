"""A relation read a page at a time, in the order of its values.

Rows are ordered as their user values compare (numbers as numbers, symbols as strings, column
by column), and a page is the `limit` rows after a cursor row. Symbol ids become keys that
sort as their strings do (`SymbolTable.order_keys`), and only the page's rows are decoded.

A page costs O(page) once the relation has a `SortedRows`: its committed rows' ids in value
order as of some moment, with their keys. Rows committed since then (ids from `first_new`
on) are few and merged in; rows removed since then are skipped by their status. It is built
on a thread of its own (a sort of 3 million rows takes most of a second, with the GIL let
go) after the first read that finds none, and again when the rows it misses grow many, the
table is renumbered (compacted) or replaced (a Bootstrap). Until then a page costs one pass
over the relation: the columns come out as arrays, a vectorized comparison keeps the rows
after the cursor, and a partition per column picks the smallest `limit` (a few tens of
milliseconds on 3 million rows). Pages cost O(relation) made flat-out reads slow a
one-fact write fivefold on two cores: each write waited for the pages being made.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from reasoner.analysis.model import Value
from reasoner.compact import Table
from reasoner.state import RelationStore
from reasoner.symbols import SymbolTable
from reasoner.syntax.ast import SYMBOL, ColumnType

Row = tuple[Value, ...]
OrderKeys = Callable[[list[np.ndarray]], list[np.ndarray]]
"""A relation's columns (engine values) -> their order keys (see `_order_keys`)."""


def relation_page(
    store: RelationStore,
    types: Sequence[ColumnType],
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
    order_keys = order_keys_for(types, symbols)
    cursor = None if after is None else _cursor_keys(after, types, symbols)
    found = _current(store, order_keys)
    if found is not None:
        values = _page_of_sorted(found, order_keys, cursor, limit)
    else:
        values, _iterations = store.table.columns()
        if not len(values[0]):
            return [], None
        keys = order_keys(values)
        picked = _smallest(keys, limit + 1, None if cursor is None else _after(keys, cursor))
        values = [column[picked] for column in values]
    rows = [decode(t) for t in zip(*(v.tolist() for v in values), strict=True)]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1]
    return rows, None


def order_keys_for(types: Sequence[ColumnType], symbols: SymbolTable) -> OrderKeys:
    """The order keys of a relation of these types (symbol keys as of each call)."""
    return partial(_order_keys, types=types, symbols=symbols)


def _order_keys(
    values: list[np.ndarray], types: Sequence[ColumnType], symbols: SymbolTable
) -> list[np.ndarray]:
    if SYMBOL not in types:
        return values
    order = symbols.order_keys()
    return [order[v] if t == SYMBOL else v for v, t in zip(values, types, strict=True)]


def _cursor_keys(after: Row, types: Sequence[ColumnType], symbols: SymbolTable) -> list[int]:
    return [
        symbols.order_key(v) if t == SYMBOL else v  # type: ignore[arg-type,misc]
        for v, t in zip(after, types, strict=True)
    ]


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
        return positions[np.lexsort([c[positions] for c in keys[::-1]])]
    kth = np.partition(first, k - 1)[k - 1]
    below = np.flatnonzero(first < kth)
    equal = np.flatnonzero(first == kth)
    if wanted is not None:
        equal = equal[wanted[equal]]
    need = k - len(below)
    if len(keys) > 1 and len(equal) > need:
        equal = equal[_smallest([c[equal] for c in keys[1:]], need, None)]
    picked = np.concatenate([below, equal[:need]])
    return picked[np.lexsort([c[picked] for c in keys[::-1]])]


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


def _current(store: RelationStore, order_keys: OrderKeys) -> SortedRows | None:
    """The store's `SortedRows` when it still describes its table, else None; starts a build
    when there is none or it misses many rows."""
    table = store.table
    found = store.sorted_rows
    if found is None or found.table is not table or found.renumbered != table.renumbered:
        _build_later(store, order_keys)
        return None
    missing = (table.nrows - found.first_new) + (len(found.ids) - table.committed)
    if missing > max(REBUILD_MIN, len(found.ids) // REBUILD_SHARE):
        _build_later(store, order_keys)
    return found


def _build_later(store: RelationStore, order_keys: OrderKeys) -> None:
    with _building_lock:
        if store.sorted_building:
            return
        store.sorted_building = True
    threading.Thread(
        target=_build, args=(store, order_keys), name="reasoner-pages", daemon=True
    ).start()


def _build(store: RelationStore, order_keys: OrderKeys) -> None:
    try:
        built = build_sorted_rows(store.table, order_keys)
        if built is not None and built.table is store.table:
            store.sorted_rows = built
    finally:
        store.sorted_building = False


def build_sorted_rows(table: Table, order_keys: OrderKeys) -> SortedRows | None:
    """The table's rows in value order now; None while rows are staged (an Update in
    flight: their ids come before rows committed later, so `first_new` could not say)."""
    snapshot = table.committed_snapshot()
    if snapshot is None:
        return None
    ids, values, nrows, renumbered = snapshot
    order = np.lexsort(order_keys(values)[::-1])  # lets go of the GIL
    return SortedRows(table, renumbered, nrows, ids[order].astype(np.int32))


class _SortedKeys(Sequence[tuple[int, ...]]):
    """The order keys of the rows of a `SortedRows`, read on demand (for `bisect`)."""

    def __init__(self, found: SortedRows, order_keys: OrderKeys) -> None:
        self.found = found
        self.order_keys = order_keys

    def __len__(self) -> int:
        return len(self.found.ids)

    def __getitem__(self, position):  # type: ignore[override]
        values = self.found.table.values_of(self.found.ids[position : position + 1])
        return tuple(int(k[0]) for k in self.order_keys(values))


def _page_of_sorted(
    found: SortedRows,
    order_keys: OrderKeys,
    cursor: list[int] | None,
    limit: int,
) -> list[np.ndarray]:
    """The values of the first `limit` + 1 rows after `cursor` (keys) as columns: the sorted
    rows from the cursor on that are still committed, merged with the rows committed since."""
    table = found.table
    start = 0 if cursor is None else bisect_right(_SortedKeys(found, order_keys), tuple(cursor))
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
        keep = _after(order_keys(new_values), cursor)
        new_values = [column[keep] for column in new_values]
    values = [np.concatenate(pair) for pair in zip(values, new_values, strict=True)]
    order = np.lexsort(order_keys(values)[::-1])[: limit + 1]
    return [column[order] for column in values]
