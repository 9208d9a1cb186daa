"""A relation's rows as columnar batches of user values, for exports that stream.

A page of a read decodes each row into Python values; an export of millions of rows cannot
afford that. Here the rows leave the state as one int64 array per column (`snapshot`, a copy
taken inside a read of one published epoch, about 8 bytes a value), and each batch becomes a
Polars frame of user values without a Python object per value: numbers as they are, unsigned
and float patterns viewed as their types, symbols gathered from a column of every symbol
(`SymbolTable.resolve_series`). Record and ADT columns are the exception: their text is made a
value at a time, as a page makes it. Rows come in the state's order (not sorted: an export is
the relation, not a page of it).

The symbols and records a snapshot holds were committed with its epoch, and committed ones
never change (a refused write rolls back only what it interned), so the batches may be made
after the read has ended, while later epochs are written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from reasoner.io.batch import polars_type
from reasoner.storage import TupleSet
from reasoner.storage.state import RelationStore
from reasoner.support.polars_on_demand import pl
from reasoner.values.records import AdtType, RecordType, ValueType
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, SYMBOL, UNSIGNED, ColumnType

BATCH_ROWS = 65_536
"""Rows per batch: a few megabytes of values, and a response that starts at once."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A relation's rows at one epoch, as stored: one int64 array per column, or (nullary)
    whether its one row holds."""

    columns: tuple[np.ndarray, ...]
    rows: int


def snapshot(store: RelationStore | TupleSet) -> Snapshot:
    """The committed rows of `store`, a relation's or its facts' (call it inside a read of
    one published epoch)."""
    if store.arity == 0:
        return Snapshot((), len(store.table))
    columns = store.table.columns()[0]
    return Snapshot(tuple(columns), len(columns[0]))


def frames(
    taken: Snapshot,
    names: Sequence[str],
    types: Sequence[ValueType],
    symbols: SymbolTable,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pl.DataFrame]:
    """`taken`'s rows as frames of at most `batch_rows` rows, one column per name, of user
    values; at least one frame (empty for an empty relation: its columns tell their types).
    A nullary relation has no columns to hold its row: refused by the caller."""
    if not names:
        raise ValueError("a nullary relation has no columns to export")
    starts = range(0, taken.rows, batch_rows) if taken.rows else range(1)
    for start in starts:
        stop = min(start + batch_rows, taken.rows)
        yield pl.DataFrame(
            [
                _series(name, column[start:stop], kind, symbols)
                for name, column, kind in zip(names, taken.columns, types, strict=True)
            ]
        )


def _series(name: str, values: np.ndarray, kind: ValueType, symbols: SymbolTable) -> pl.Series:
    if kind == SYMBOL:
        return symbols.resolve_series(values).alias(name)
    if kind == UNSIGNED:
        return pl.Series(name, values.view(np.uint64), dtype=pl.UInt64)
    if kind == FLOAT:
        return pl.Series(name, values.view(np.float64), dtype=pl.Float64)
    if isinstance(kind, RecordType | AdtType):
        text = symbols.codec().format
        return pl.Series(name, [text(value, kind) for value in values.tolist()], dtype=pl.String)
    return pl.Series(name, values, dtype=pl.Int64)


def answer_frames(
    rows: Sequence[tuple],
    names: Sequence[str],
    types: Sequence[ColumnType],
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pl.DataFrame]:
    """A query's answer (rows of user values, as `QueryResult` holds them; `types` its
    storage types) as `frames` gives a relation's. The rows are Python values already: a
    batch is built from them, a value at a time in Polars' own loop."""
    if not names:
        raise ValueError("an answer without variables has no columns to export")
    schema = {name: polars_type(kind) for name, kind in zip(names, types, strict=True)}
    starts = range(0, len(rows), batch_rows) if rows else range(1)
    for start in starts:
        chunk = rows[start : start + batch_rows]
        yield pl.DataFrame(list(chunk), schema=schema, orient="row")
