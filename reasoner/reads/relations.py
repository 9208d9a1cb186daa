"""Reads of the committed relations in user values: rows, column batches in value order, the
engine tuple of a row, and whole states as snapshots to compare.

It exists apart from the facade (`reasoner.materialization`) because decoding the engine's
integers back into the user's values (symbols, records, floats, unsigned) is a job of its own,
shared by the facade's reads and by the change sets an epoch hands on. The functions take what
they read (the symbol table, a relation's info, its store or columns) and change nothing; the
caller holds the facade's read lock around them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import numpy as np

from reasoner.analysis.model import RelationInfo
from reasoner.io.batch import FactBatch, field_kinds, user_numbers, value_order
from reasoner.storage.state import RelationStore, State
from reasoner.support.lanes import gather
from reasoner.support.ordering import sorted_rows
from reasoner.support.polars_on_demand import pl
from reasoner.values import floats
from reasoner.values.arith import wrap64
from reasoner.values.records import AdtType, RecordError, RecordType
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, Value


def rows(symbols: SymbolTable, info: RelationInfo, store: RelationStore) -> list[tuple[Value, ...]]:
    """Every tuple of a relation, as user values."""
    decode = symbols.decoder(info.value_types)
    return [decode(t) for t in store]


def batch(
    symbols: SymbolTable, info: RelationInfo, store: RelationStore, *, ordered: bool
) -> FactBatch | list[tuple[()]]:
    """Every tuple of a relation in user values, as columns (rows for arity 0), in value
    order unless not `ordered` (see `Materialization.batch`)."""
    if not info.arity:
        return [()] * len(store)
    if ordered and all(kind in (NUMBER, UNSIGNED, SYMBOL) for kind in info.types):
        # A relation's tuples are distinct: sorted as packed rows (a symbol by its rank),
        # with no permutation, nor a gather of each column by it (on an R-MAT closure of
        # 1.36 M tuples, 37 of the output's 100 ms; LUBM-30's 4.8 M triples of symbols
        # took 1.2 s in `np.lexsort`, their ranks and a row number not fitting one word).
        # The list holds the only reference to the copied columns, which `sorted_rows`
        # lets go before the sort.
        types = info.types
        order = symbols.order() if SYMBOL in types else None
        ranks, by_rank = (order.keys >> 1, order.by_rank) if order is not None else (None, None)
        keys = [
            gather(ranks, c) if kind == SYMBOL else user_numbers(c, kind)  # type: ignore[arg-type]
            for kind, c in zip(types, store.table.columns()[0], strict=True)
        ]
        in_order = sorted_rows(keys)
        if in_order is not None:
            engine = [
                gather(by_rank, column) if kind == SYMBOL else column.view(np.int64)  # type: ignore[arg-type]
                for kind, column in zip(types, in_order, strict=True)
            ]
            return FactBatch.of_encoded(engine, types, symbols, ordered=True)
    return batch_of(symbols, info, store.table.columns()[0], ordered=ordered)


def batch_of(
    symbols: SymbolTable, info: RelationInfo, columns: Sequence[np.ndarray], *, ordered: bool
) -> FactBatch:
    """Engine columns of relation `info` (arity > 0) in user values, `ordered` in value
    order (a sort that costs more than the decoding) or as they are."""
    texts = {
        index: _record_texts(symbols, column, kind)
        for index, (kind, column) in enumerate(zip(info.value_types, columns, strict=True))
        if isinstance(kind, RecordType | AdtType)
    }
    order: np.ndarray | slice = slice(None)
    if ordered:
        ranks = {index: rank for index, (_, rank) in texts.items()}
        order = value_order(columns, info.types, symbols, ranks)
        texts = {index: (text.gather(order), rank) for index, (text, rank) in texts.items()}
    if field_kinds(info.types) is not None:
        ordered_columns = [column[order] for column in columns]
        return FactBatch.of_encoded(ordered_columns, info.types, symbols, ordered=ordered)
    decoded = [
        texts[index][0]
        if index in texts
        else symbols.resolve_series(column[order])
        if kind == SYMBOL
        else user_numbers(column[order], kind)
        for index, (kind, column) in enumerate(zip(info.types, columns, strict=True))
    ]
    batch = FactBatch.of_columns(decoded, info.types)
    batch.ordered = ordered
    return batch


def _record_texts(
    symbols: SymbolTable, column: np.ndarray, kind: RecordType | AdtType
) -> tuple[pl.Series, np.ndarray]:
    """A column of record ids as their texts, and per row the rank of its text (records
    are written in the order of their text, as symbols are)."""
    distinct, inverse = np.unique(column, return_inverse=True)
    text = symbols.codec().format
    shown = [text(int(ident), kind) for ident in distinct]
    ranks = np.empty(len(shown), dtype=np.int64)
    ranks[sorted(range(len(shown)), key=shown.__getitem__)] = np.arange(len(shown))
    return pl.Series(shown, dtype=pl.String).gather(inverse.reshape(-1)), ranks[inverse]


def encode(
    symbols: SymbolTable, info: RelationInfo, row: Sequence[Value]
) -> tuple[int, ...] | None:
    """The engine tuple for a row, or None if it names a symbol never seen (so is absent)."""
    out: list[int] = []
    for value, kind in zip(row, info.value_types, strict=True):
        if kind == FLOAT:
            number = floats.user_float(value)
            if number is None:
                return None
            out.append(floats.to_bits(number))
            continue
        if (kind == SYMBOL or isinstance(kind, RecordType | AdtType)) != isinstance(value, str):
            return None  # a value of the other type: no tuple holds it
        if isinstance(kind, RecordType | AdtType):
            try:
                found = symbols.codec(intern=False).parse(cast(str, value), kind)
            except RecordError:
                return None
            if found is None:
                return None
            out.append(found)
        elif isinstance(value, str):
            ident = symbols.lookup(value)
            if ident is None:
                return None
            out.append(ident)
        elif kind == UNSIGNED:
            if not 0 <= value < 1 << 64:
                return None
            out.append(wrap64(cast(int, value)))
        else:
            out.append(cast(int, value))
    return tuple(out)


def differences(names: Iterable[str], state: State, other: State) -> dict[str, int]:
    """Per relation of `names`, how many tuples differ in presence, iteration or count
    between two states (empty: equal)."""
    out = {}
    for name in names:
        mine = state[name].snapshot()
        theirs = other[name].snapshot()
        differing = len(mine.keys() ^ theirs.keys()) + sum(
            1 for t, v in mine.items() if t in theirs and theirs[t] != v
        )
        if differing:
            out[name] = differing
    return out


def snapshot(
    symbols: SymbolTable, relations: Mapping[str, RelationInfo], state: State
) -> dict[str, dict[tuple[Value, ...], tuple[int, int]]]:
    """Every relation as {row: (iteration, count)} in user values, for comparing states."""
    result = {}
    for name, info in relations.items():
        decode = symbols.decoder(info.value_types)
        result[name] = {decode(t): v for t, v in state[name].snapshot().items()}
    return result
