"""String interning: the engine works on integers only.

Every `symbol` value is replaced by a dense integer id at the boundary (input, program
constants) and mapped back at the boundary (output, queries). Equality of symbols becomes
integer equality, tuples stay small and hash fast, and both Bootstrap executors (in-process
and Spark) can treat every column as a 64-bit integer.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from reasoner.support.polars_on_demand import pl
from reasoner.support.string_ids import held_of, numbered
from reasoner.values import floats
from reasoner.values.arith import as_unsigned, wrap64
from reasoner.values.records import AdtType, Codec, RecordTable, RecordType, ValueType
from reasoner.values.types import FLOAT, RECORD, SYMBOL, UNSIGNED, Value

BULK_INTERN = 20_000
"""Strings in a column from which `intern_column` interns its distinct values only."""


class SymbolOrder:
    """The order of the symbols at one moment. `keys`: per id, an int64 that sorts as the
    strings do, twice the string's rank (odd keys are left for strings that are not
    symbols, see `key`); `by_rank`: the ids in that order. A symbol interned later moves the
    keys of the strings after it, not their order: a read that compares keys takes them all
    from one `SymbolOrder`."""

    __slots__ = ("_lookup", "_strings", "by_rank", "keys")

    def __init__(
        self,
        keys: np.ndarray,
        by_rank: np.ndarray,
        strings: list[str],
        lookup: Callable[[str], int | None],
    ) -> None:
        """`strings`: the symbols by id then; `lookup`: the table's `SymbolTable.lookup`,
        asked only when a key is (a run that sorts its output by the keys never maps
        LUBM-30's 945 k symbols)."""
        self.keys = keys
        self.by_rank = by_rank
        self._strings = strings
        self._lookup = lookup

    def key(self, text: str) -> int:
        """The key of `text`: its own for a symbol known then, else the odd key between its
        neighbours in string order. The table's map may have moved on (a rollback, then other
        strings under the same ids): what it says is taken only where the strings agree."""
        strings = self._strings
        ident = self._lookup(text)
        if ident is not None and ident < len(strings) and strings[ident] == text:
            return int(self.keys[ident])
        rank = bisect_left(self.by_rank, text, key=strings.__getitem__)
        if rank < len(strings) and strings[self.by_rank[rank]] == text:
            return 2 * rank
        return 2 * rank - 1


@dataclass(frozen=True, slots=True)
class TableMark:
    """How many symbols and records a `SymbolTable` held at one moment: what `rollback`
    returns it to."""

    symbols: int
    records: int


class SymbolTable:
    """A bidirectional map between strings and ids 0, 1, 2, ...; and the numbering of record
    values (`reasoner.values.records`), which hold symbols' ids: whatever reads or makes a value
    reaches both through this one table.

    It only grows, except that an evaluation refused (`rollback`) takes back what it
    interned: an epoch's symbols stay only if it commits, so a refused write keeps no memory
    and shifts no later symbol's id (`ord`)."""

    __slots__ = (
        "_generation",
        "_ids",
        "_map_lock",
        "_mapped",
        "_order",
        "_series",
        "_strings",
        "records",
    )

    def __init__(self, strings: Iterable[str] = (), records: RecordTable | None = None) -> None:
        """`strings`: the symbols of ids 0, 1, ... (a table stored before), all distinct;
        `records`: the record table whose fields hold these ids."""
        self.records = records if records is not None else RecordTable()
        self._strings: list[str] = list(strings)
        self._ids: dict[str, int] = {text: ident for ident, text in enumerate(self._strings)}
        """The id of each of the first `_mapped` strings; the others are added by the first
        lookup that does not find its string there (`_id_map`)."""
        if len(self._ids) != len(self._strings):
            raise ValueError("a symbol table's strings are distinct")
        self._mapped = len(self._strings)
        self._generation = 0
        """Counts the rollbacks: a cache is of the strings of one generation, since after a
        rollback the same count of symbols can be other strings."""
        self._order: tuple[int, SymbolOrder] | None = None
        """(generation, the order of the first len(keys) symbols then)."""
        self._series: tuple[int, pl.Series] | None = None
        self._map_lock = threading.Lock()

    @classmethod
    def of_distinct(cls, strings: list[str]) -> SymbolTable:
        """A table of `strings`, which are distinct already (a fact file's reader numbers each
        once): its map from string to id is made only when a lookup needs it. A file read to
        be interned into the run's table needs none, and making one for LUBM-30's 945,280
        symbols took 0.3 s, a cache miss each."""
        table = cls()
        table._strings = strings
        return table

    def __len__(self) -> int:
        return len(self._strings)

    def mark(self) -> TableMark:
        """Where the tables stand: an evaluation begins here, and `rollback` returns to it."""
        return TableMark(len(self._strings), len(self.records))

    def rollback(self, mark: TableMark) -> None:
        """Forget every symbol and record interned since `mark` (a refused evaluation's): no
        tuple holds them, their memory is freed and the next symbol takes the next id after
        the mark's. A reader running meanwhile must be one that a publication would repeat
        (the engine rolls back under its exclusive lock)."""
        self.records.rollback(mark.records)
        with self._map_lock:
            added = self._strings[mark.symbols :]
            if not added:
                return
            del self._strings[mark.symbols :]
            ids = self._ids
            for text in added:  # mapped or not (a reader may have mapped past `_mapped`)
                ids.pop(text, None)
            self._mapped = min(self._mapped, mark.symbols)
            if len(added) > len(self._strings):
                # A dict keeps its size after deletions: a compact copy gives the memory back.
                self._ids = ids.copy()
            # The strings are cut before the generation moves, so a cache a reader makes in
            # the new generation holds only strings kept.
            self._generation += 1
            self._order = None
            self._series = None

    def since(self, count: int) -> list[str]:
        """The symbols of ids `count` and after, in id order: what a store appends to the
        symbols it holds (the first `count`), so that a restart numbers them alike."""
        return self._strings[count:]

    def intern(self, text: str) -> int:
        ident = self.lookup(text)
        if ident is None:
            ident = len(self._strings)
            self._ids[text] = ident
            self._strings.append(text)
            self._mapped = len(self._strings)
        return ident

    def _id_map(self) -> dict[str, int]:
        """The id of every string: the strings appended unmapped (`intern_distinct`) are
        added first. A reader may do it while the writer interns, and both add the same
        pairs; under `_map_lock`, which `rollback` holds too, so that no reader puts back a
        string rolled back (optimistic reads run beside a rollback)."""
        if self._mapped < len(self._strings):
            with self._map_lock:
                mapped, count = self._mapped, len(self._strings)
                if mapped < count:
                    tail = zip(self._strings[mapped:count], range(mapped, count), strict=True)
                    self._ids.update(tail)
                    self._mapped = count
        return self._ids

    def intern_column(self, texts: list[str] | tuple[str, ...] | pl.Series) -> np.ndarray:
        """The ids of a column of strings (interning the new ones), as int64. A Polars column
        is interned a distinct value at a time (in order of first occurrence, so the ids are
        those a row-by-row interning gives) and mapped back in Polars: a column repeats its
        values (LUBM's 300,000 fields hold 30,000 strings). A short one goes row by row: each
        Polars operation costs about a millisecond whatever its size."""
        if not isinstance(texts, list | tuple):  # a Series (not asked: asking imports Polars)
            if len(texts) >= BULK_INTERN:
                return mapped_distinct(texts, self.intern)
            texts = texts.to_list()
        out = numbered(
            self._id_map(), self._strings, texts if isinstance(texts, list) else list(texts)
        )
        self._mapped = len(self._strings)
        return out

    def intern_distinct(self, texts: list[str]) -> np.ndarray:
        """`intern_column` for strings known to be distinct (a fact file's own table), as
        many as this table holds several times over: the few already here keep their ids,
        the others take the next ones in order, unmapped until a lookup misses in the map
        (`_id_map`). Interning LUBM-30's 945,280 symbols one at a time into the map took
        0.41-0.56 s, a cache miss each, on one thread; a run whose rules' constants are
        interned already never looks one of them up."""
        if len(self._strings) * 4 > len(texts):
            return self.intern_column(texts)
        ids = self._id_map()
        repeated = held_of(ids, texts) if ids else None
        out = len(self._strings) + np.arange(len(texts), dtype=np.int64)
        if repeated is None or not repeated.any():
            self._strings.extend(texts)
            return out
        known = np.flatnonzero(repeated).tolist()
        out -= np.cumsum(repeated)
        out[known] = [ids[texts[i]] for i in known]
        start = 0
        for at in known:  # the new strings between the known ones, a slice at a time
            self._strings.extend(texts[start:at])
            start = at + 1
        self._strings.extend(texts[start:])
        return out

    def resolve_column(self, ids: np.ndarray) -> list[str]:
        """The strings of a column of ids: `resolve`, a column at a time."""
        return list(map(self._strings.__getitem__, ids.tolist()))

    def resolve_series(self, ids: np.ndarray) -> pl.Series:
        """The strings of a column of ids as a Polars column, taken from a column of every
        symbol (made again when symbols were added): no Python string per row."""
        generation = self._generation
        count = len(self._strings)
        cached = self._series
        if cached is None or cached[0] != generation or len(cached[1]) != count:
            strings = self._strings[:count]
            try:
                series = pl.Series(strings, dtype=pl.String())
            except UnicodeEncodeError:
                # A write being refused for an unpaired surrogate holds its symbol until it
                # rolls back; no row holds it, and UTF-8 cannot encode it: it is null here.
                series = pl.Series(list(map(_utf8_or_none, strings)), dtype=pl.String())
            cached = self._series = (generation, series)
        return cached[1].gather(ids)

    def lookup(self, text: str) -> int | None:
        """The id of `text`, or None if it was never interned (so no tuple can contain it)."""
        ident = self._ids.get(text)
        if ident is None and self._mapped < len(self._strings):
            ident = self._id_map().get(text)
        return ident

    def resolve(self, ident: int) -> str:
        return self._strings[ident]

    def order(self) -> SymbolOrder:
        """The symbols' order now (see `SymbolOrder`). Recomputed when symbols were added since
        the last call; reads in value order use it to sort ids without strings."""
        generation = self._generation
        count = len(self._strings)
        cached = self._order
        if cached is None or cached[0] != generation or len(cached[1].keys) != count:
            # The permutation as int64 at once, and no list of the strings in order: of the
            # 0.5 s that LUBM-30's 945 k symbols took, 0.13 s went to the list and to
            # scattering ranks from a list of ints.
            strings = self._strings[:count]
            by_rank = np.fromiter(
                sorted(range(count), key=strings.__getitem__), dtype=np.int64, count=count
            )
            keys = np.empty(count, dtype=np.int64)
            keys[by_rank] = np.arange(0, 2 * count, 2, dtype=np.int64)
            cached = self._order = (generation, SymbolOrder(keys, by_rank, strings, self.lookup))
        return cached[1]

    def order_keys(self) -> np.ndarray:
        return self.order().keys

    def order_key(self, text: str) -> int:
        return self.order().key(text)

    def codec(self, intern: bool = True) -> Codec:
        """Record text <-> id over this table; `intern=False` only looks values up (a query's
        constant that no tuple holds reads as None)."""
        records = self.records
        if intern:
            return Codec(self.intern, self.resolve, records.pack, records.rows.__getitem__)
        return Codec(self.lookup, self.resolve, records.lookup, records.rows.__getitem__)

    def encoder(self, types: Sequence[ValueType]):
        """A function mapping a row of user values to an engine tuple for a relation's value
        types (a symbol interned, an unsigned as its 64-bit pattern, a float as its IEEE
        pattern, a record's text packed)."""
        symbol_cols = [i for i, t in enumerate(types) if t == SYMBOL]
        unsigned_cols = [i for i, t in enumerate(types) if t == UNSIGNED]
        float_cols = [i for i, t in enumerate(types) if t == FLOAT]
        record_cols = _record_columns(types)
        if not symbol_cols and not unsigned_cols and not float_cols and not record_cols:
            return tuple
        intern = self.intern
        parse = self.codec().parse

        def encode(row: Sequence[Value]) -> tuple[int, ...]:
            out = list(row)
            for i in symbol_cols:
                out[i] = intern(cast(str, out[i]))
            for i in unsigned_cols:
                out[i] = wrap64(cast(int, out[i]))
            for i in float_cols:
                out[i] = floats.to_bits(float(out[i]))
            for i, kind in record_cols:
                out[i] = cast(int, parse(cast(str, out[i]), kind))
            return cast(tuple[int, ...], tuple(out))

        return encode

    def decoder(self, types: Sequence[ValueType]):
        """The inverse of `encoder`: engine tuple -> row of user values."""
        symbol_cols = [i for i, t in enumerate(types) if t == SYMBOL]
        unsigned_cols = [i for i, t in enumerate(types) if t == UNSIGNED]
        float_cols = [i for i, t in enumerate(types) if t == FLOAT]
        record_cols = _record_columns(types)
        if not symbol_cols and not unsigned_cols and not float_cols and not record_cols:
            return tuple
        strings = self._strings
        text = self.codec().format

        def decode(row: Sequence[int]) -> tuple[Value, ...]:
            out: list[Value] = list(row)
            for i in symbol_cols:
                out[i] = strings[row[i]]
            for i in unsigned_cols:
                out[i] = as_unsigned(row[i])
            for i in float_cols:
                out[i] = floats.FloatValue(floats.from_bits(row[i]))
            for i, kind in record_cols:
                out[i] = text(row[i], kind)
            return tuple(out)

        return decode

    def encode_rows(
        self, types: Sequence[ValueType], rows: Iterable[Sequence[Value]]
    ) -> list[tuple[int, ...]]:
        encode = self.encoder(types)
        return [encode(r) for r in rows]


def mapped_distinct(column: pl.Series, number: Callable[[str], int]) -> np.ndarray:
    """`number` of each value of a column of strings, as int64, called once per distinct
    value (in order of first occurrence) and mapped back in Polars."""
    distinct = column.unique(maintain_order=True)
    ids = pl.Series(list(map(number, distinct.to_list())), dtype=pl.Int64)
    return column.replace_strict(distinct, ids, return_dtype=pl.Int64).to_numpy()


def _record_columns(types: Sequence[ValueType]) -> list[tuple[int, RecordType | AdtType]]:
    """The record columns of `types`, with their types. A column typed only `record` (how it
    is stored) has lost what its text needs: a caller gave storage types for value types."""
    if RECORD in types:
        raise TypeError("a record column needs its record type (`RelationInfo.value_types`)")
    return [(i, t) for i, t in enumerate(types) if isinstance(t, RecordType | AdtType)]


def _utf8_or_none(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text
