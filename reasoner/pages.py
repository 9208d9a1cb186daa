"""A relation read a page at a time, in the order of its values, without sorting it.

Rows are ordered as their user values compare (numbers as numbers, symbols as strings, column
by column), and a page is the `limit` rows after a cursor row. A read of a large relation must
not cost a sort of the relation, nor a Python object per row: the relation's columns come out
of the compiled table as arrays, symbol ids become keys that sort as their strings do
(`SymbolTable.order_keys`), a vectorized comparison keeps the rows after the cursor, and a
partition per column picks the smallest `limit`, so only the page's rows are ever decoded.
On 3 million rows that is a few tens of milliseconds (linear in the relation, with numpy's
constants), where sorting the decoded rows took seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reasoner.analysis.model import Value
from reasoner.state import RelationStore
from reasoner.symbols import SymbolTable
from reasoner.syntax.ast import SYMBOL, ColumnType

Row = tuple[Value, ...]


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
    values, _iterations = store.table.columns()
    if not len(values[0]):
        return [], None
    keys = _order_keys(values, types, symbols)
    wanted = None if after is None else _after(keys, _cursor_keys(after, types, symbols))
    picked = _smallest(keys, limit + 1, wanted)
    rows = [decode(t) for t in zip(*(v[picked].tolist() for v in values), strict=True)]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1]
    return rows, None


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
