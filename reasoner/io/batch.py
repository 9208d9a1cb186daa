"""Facts of one relation held as columns: a bulk load without a Python object per row.

Three million rows posted as a `.facts` body cost seconds as tuples at every step (splitting,
checking, interning, hashing, storing each one) and milliseconds as columns. A `FactBatch` is
still a sequence of rows, so any path that wants rows reads it as one; the materialization
encodes its columns at once (`SymbolTable.intern_column`), and the service's store writes
them as a columnar segment.

Columns are named `c0, c1, ...` by position and typed by the relation's column types
(`number` as Int64, `unsigned` as UInt64, `symbol` and a record's text as String). A relation
of arity 0 has no columns to count its rows, so its facts stay rows. A batch read from a file
or taken from the state holds the engine's columns instead (`FactBatch.of_encoded`: numbers
and symbols' ids), written out in C, and makes a frame only when one is asked for.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, BinaryIO, cast, overload

import numpy as np

from reasoner.io.fact_read import LANE_BYTES, parse_fields
from reasoner.io.fact_text import NUMBER_FIELD, SYMBOL_FIELD, UNSIGNED_FIELD, write_fields
from reasoner.io.facts import BYTE_ORDER_MARK, parse_facts_text, read_fact_file
from reasoner.support.lanes import gather, lane_count
from reasoner.support.ordering import lexicographic_order
from reasoner.support.polars_on_demand import pl
from reasoner.values import floats
from reasoner.values.records import ValueType, storage_type
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType, Value

Row = tuple[Value, ...]

_DTYPE_NAMES = {
    NUMBER: "Int64",
    UNSIGNED: "UInt64",
    FLOAT: "Float64",
    SYMBOL: "String",
    RECORD: "String",
}
"""The Polars type of each column type, by name: Polars is imported only when used."""
_FIELD_KINDS = {NUMBER: NUMBER_FIELD, UNSIGNED: UNSIGNED_FIELD, SYMBOL: SYMBOL_FIELD}
"""The column types a batch may hold encoded, without Polars (`FactBatch.encoded`), as
`reasoner.io.fact_text` names them."""


def column_names(arity: int) -> list[str]:
    return [f"c{i}" for i in range(arity)]


def frame_schema(types: Sequence[ValueType]) -> dict[str, pl.DataType]:
    """The Polars schema of a relation's facts."""
    return {
        name: polars_type(storage_type(kind))
        for name, kind in zip(column_names(len(types)), types, strict=True)
    }


def polars_type(kind: ColumnType) -> pl.DataType:
    """The Polars type of a column of `kind`."""
    return cast("pl.DataType", getattr(pl, _DTYPE_NAMES[kind])())


def _unicode(texts: Sequence[str]) -> bool:
    """Whether every text is Unicode, without an unpaired surrogate (UTF-8 encodes it)."""
    text = "".join(texts)
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def field_kinds(types: Sequence[ValueType]) -> np.ndarray | None:
    """The columns' kinds as `reasoner.io.fact_text` takes them; None when a column is of a
    type it does not read or write (a float, a record)."""
    if not types or any(kind not in _FIELD_KINDS for kind in types):
        return None
    return np.array([_FIELD_KINDS[cast(ColumnType, kind)] for kind in types], dtype=np.uint8)


def value_order(
    columns: Sequence[np.ndarray],
    types: Sequence[ColumnType],
    symbols: SymbolTable | None,
    record_ranks: Mapping[int, np.ndarray] | None = None,
) -> np.ndarray:
    """The permutation that puts rows of engine columns in value order: symbols by their
    rank among `symbols`, records by the rank of their text (`record_ranks`, per column),
    floats and unsigned by value."""
    ranks = symbols.order_keys() if symbols is not None and SYMBOL in types else None
    keys = [
        record_ranks[index]
        if record_ranks and index in record_ranks
        else ranks[column]  # type: ignore[index]  # ranks: a symbol column
        if kind == SYMBOL
        else floats.order_keys(column)
        if kind == FLOAT
        else user_numbers(column, kind)
        for index, (kind, column) in enumerate(zip(types, columns, strict=True))
    ]
    return lexicographic_order(keys)


def engine_numbers(column: pl.Series) -> np.ndarray:
    """A number, unsigned or float column of a batch as the engine holds it: int64, an
    unsigned value as its 64-bit pattern, a float as its IEEE pattern
    (`reasoner.analysis.numeric`)."""
    values = column.to_numpy()
    return values.view(np.int64) if values.dtype in (np.uint64, np.float64) else values


def user_numbers(column: np.ndarray, kind: ColumnType) -> np.ndarray:
    """The inverse of `engine_numbers` for a column of type `kind`."""
    if kind == FLOAT:
        return column.view(np.float64)
    return column.view(np.uint64) if kind == UNSIGNED else column


class FactBatch(Sequence[Row]):
    """Rows of one relation (arity > 0) in user values, held as a Polars frame; or, for a
    relation of numbers and symbols read or decoded without Polars, as the engine's columns
    (`encoded`) until something asks for the frame."""

    __slots__ = ("_frame", "_own_symbols", "_types", "encoded", "ordered", "symbols")

    def __init__(self, frame: pl.DataFrame, ordered: bool = False) -> None:
        if not frame.width:
            raise ValueError("a batch of facts has at least one column")
        self._frame: pl.DataFrame | None = frame
        self._types: tuple[ColumnType, ...] = ()
        self.encoded: tuple[np.ndarray, ...] | None = None
        """The columns as the engine holds them, when the batch was made of them
        (`of_encoded`): int64, an unsigned value as its 64-bit pattern, a symbol as its id
        in `symbols`."""
        self.symbols: SymbolTable | None = None
        self._own_symbols = False
        self.ordered = ordered
        """The rows are distinct and in value order already (`Materialization.batch`)."""

    @classmethod
    def of_encoded(
        cls,
        columns: Sequence[np.ndarray],
        types: Sequence[ValueType],
        symbols: SymbolTable | None = None,
        *,
        ordered: bool = False,
        own_symbols: bool = False,
    ) -> FactBatch:
        """Engine columns of one length (int64) of a relation whose columns are `number`,
        `unsigned` or `symbol`, a symbol's id one of `symbols`. `own_symbols`: the table is
        the batch's own, each of its symbols in the columns, numbered as met row by row (what
        the reader makes): `encoded_in` then interns them without looking for them."""
        if not columns or field_kinds(types) is None:
            raise ValueError("an encoded batch has number, unsigned or symbol columns only")
        if symbols is None and SYMBOL in types:
            raise ValueError("an encoded batch of symbols needs their table")
        if len(columns) != len(types) or len({len(column) for column in columns}) != 1:
            raise ValueError("an encoded batch has one column of one length per type")
        batch = cls.__new__(cls)
        batch._frame = None
        batch._types = tuple(cast(ColumnType, kind) for kind in types)
        batch.encoded = tuple(columns)
        batch.symbols = symbols
        batch._own_symbols = own_symbols
        batch.ordered = ordered
        return batch

    @property
    def frame(self) -> pl.DataFrame:
        """The rows as a Polars frame (made from `encoded` on the first read)."""
        if self._frame is None:
            assert self.encoded is not None
            columns = [self._user_column(c, series=True) for c in range(len(self._types))]
            schema = frame_schema(self._types)
            self._frame = pl.DataFrame(dict(zip(schema, columns, strict=True)), schema=schema)
        return self._frame

    def filtered(self, keep: np.ndarray) -> FactBatch:
        """The rows where `keep` (booleans, one a row) holds."""
        if self.encoded is None:
            return FactBatch(self.frame.filter(pl.Series(keep)))
        kept = [column[keep] for column in self.encoded]
        return FactBatch.of_encoded(kept, self._types, self.symbols)

    def encoded_in(self, symbols: SymbolTable) -> list[np.ndarray]:
        """The encoded columns with their symbols' ids in `symbols` (interning the new ones,
        in the order a row-by-row reading meets them)."""
        assert self.encoded is not None
        at = [c for c, kind in enumerate(self._types) if kind == SYMBOL]
        if not at or self.symbols is symbols:
            return list(self.encoded)
        assert self.symbols is not None
        if self._own_symbols:  # distinct, numbered as met: interned as they are
            mapping = symbols.intern_distinct(self.symbols.since(0))
        else:  # ids by first occurrence, row by row
            met = np.stack([self.encoded[c] for c in at], axis=1).reshape(-1)
            distinct, first = np.unique(met, return_index=True)
            order = distinct[np.argsort(first, kind="stable")]
            mapping = np.zeros(int(order.max(initial=-1)) + 1, dtype=np.int64)
            mapping[order] = symbols.intern_column(self.symbols.resolve_column(order))
        encoded = enumerate(self.encoded)
        return [gather(mapping, column) if c in at else column for c, column in encoded]

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[Value]], types: Sequence[ColumnType]) -> FactBatch:
        """Rows already checked against `types` (see `reasoner.materialization`): encoded
        when their types allow (a symbol numbered as met, row by row), else a frame."""
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(types)
        if field_kinds(types) is None:
            return cls.of_columns([list(column) for column in columns], types)
        return cls._of_plain_columns(columns, types)

    @classmethod
    def _of_plain_columns(
        cls, columns: Sequence[Sequence[Value]], types: Sequence[ColumnType]
    ) -> FactBatch:
        """`of_rows` of its rows' columns, for types without records or floats."""
        at = [c for c, kind in enumerate(types) if kind == SYMBOL]
        own = SymbolTable() if at else None
        # Row by row, as met: interleaved in C, not a Python step per field (LUBM's 10 %
        # delta, 30 k fields: 4.8 ms of an Update's 25).
        texts: tuple[str, ...] | list[str] = ()
        if at:
            symbol_columns = [cast(tuple[str, ...], columns[c]) for c in at]
            if len(at) == 1:
                texts = symbol_columns[0]
            else:
                texts = list(chain.from_iterable(zip(*symbol_columns, strict=True)))
        ids = own.intern_column(texts) if own is not None else None
        encoded = [
            ids[at.index(c) :: len(at)]  # type: ignore[index]  # ids: symbol columns
            if kind == SYMBOL
            else np.array(column, dtype=np.uint64).view(np.int64)
            if kind == UNSIGNED
            else np.array(column, dtype=np.int64)
            for c, (kind, column) in enumerate(zip(types, columns, strict=True))
        ]
        return cls.of_encoded(encoded, types, own, own_symbols=True)

    @classmethod
    def of_values(
        cls, rows: Sequence[Sequence[Value]], types: Sequence[ColumnType]
    ) -> FactBatch | None:
        """Rows straight from a client (JSON) as a batch when every one fits `types` exactly:
        `arity` values, ints (never bools) in 64 bits for numbers (unsigned for an
        `unsigned`), strings (Unicode) for symbols. None otherwise, for a row-by-row check to
        say which row does not fit. Each test is a pass in C over a column."""
        arity = len(types)
        if RECORD in types:
            return None  # a record's text is checked (and made canonical) row by row
        try:
            if not arity or set(map(len, rows)) != {arity}:
                return None
        except TypeError:  # a row that is not a sequence
            return None
        plain = field_kinds(types) is not None  # encoded by `of_rows`, without Polars
        schema = frame_schema(types) if not plain else {}
        series = []
        columns = list(zip(*rows, strict=True))
        for name, kind, column in zip(column_names(arity), types, columns, strict=True):
            if kind == FLOAT and set(map(type, column)) <= {float, int}:
                try:  # an int is the float of its value, as a literal without a point
                    column = tuple(map(float, column))
                except OverflowError:
                    return None
            elif set(map(type, column)) != ({str} if kind == SYMBOL else {int}):
                return None
            if plain:
                if kind == SYMBOL and not _unicode(cast(tuple[str, ...], column)):
                    return None
                continue
            try:
                series.append(pl.Series(name, column, dtype=schema[name], strict=True))
            except (OverflowError, TypeError, ValueError, pl.exceptions.PolarsError):
                return None  # past 64 bits, or a string that is not Unicode
        if not plain:
            return cls(pl.DataFrame(series))
        try:
            return cls._of_plain_columns(columns, types)
        except OverflowError:  # past 64 bits
            return None

    @classmethod
    def of_columns(
        cls,
        columns: Sequence[Sequence[Value] | np.ndarray | pl.Series],
        types: Sequence[ColumnType],
    ) -> FactBatch:
        """Columns of user values (lists, int64 arrays for numbers, Polars series) of these
        types."""
        schema = frame_schema(types)
        return cls(pl.DataFrame(dict(zip(schema, columns, strict=True)), schema=schema))

    def matches(self, types: Sequence[ValueType]) -> bool:
        """Whether the batch has exactly the columns of a relation of these types."""
        if self.encoded is not None:
            return self._types == tuple(map(storage_type, types))
        return self.frame.schema == pl.Schema(frame_schema(types))

    def __len__(self) -> int:
        return len(self.encoded[0]) if self.encoded is not None else self.frame.height

    def __iter__(self) -> Iterator[Row]:
        if self.encoded is None:
            return self.frame.iter_rows()
        columns = [self._user_column(c) for c in range(len(self._types))]
        return zip(*(c if isinstance(c, list) else c.tolist() for c in columns), strict=True)

    def distinct(self) -> int:
        """How many distinct rows the batch holds, without a Python object per row (a value
        is one engine value, a symbol one id of the batch's table)."""
        if self.encoded is None:
            return self.frame.n_unique()
        return len(np.unique(np.stack(self.encoded, axis=1), axis=0))

    def type_names(self) -> dict[str, str]:
        """An encoded batch's frame schema by the names of its Polars types (`Int64`),
        without making the frame or importing Polars (a frame's own schema says as much)."""
        assert self.encoded is not None
        names = column_names(len(self._types))
        return {name: _DTYPE_NAMES[kind] for name, kind in zip(names, self._types, strict=True)}

    def _user_column(self, column: int, series: bool = False) -> Any:
        """An encoded column in user values: numbers as an array, symbols as a list of
        strings (a Polars column when `series`)."""
        assert self.encoded is not None
        values, kind = self.encoded[column], self._types[column]
        if kind != SYMBOL:
            return user_numbers(values, kind)
        assert self.symbols is not None
        if series:
            return self.symbols.resolve_series(values)
        return self.symbols.resolve_column(values)

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> FactBatch: ...
    def __getitem__(self, index: int | slice) -> Row | FactBatch:
        if self.encoded is None:
            return (
                FactBatch(self.frame[index]) if isinstance(index, slice) else self.frame.row(index)
            )
        if isinstance(index, slice):
            sliced = [c[index] for c in self.encoded]
            return FactBatch.of_encoded(sliced, self._types, self.symbols)
        at = range(len(self))[index]
        row = [c[at : at + 1] for c in self.encoded]
        return next(iter(FactBatch.of_encoded(row, self._types, self.symbols)))

    def write_sorted(self, path: str | os.PathLike[str] | BinaryIO, delimiter: str) -> bool:
        """Write the rows as `reasoner.io.facts.format_rows` does (distinct, sorted, fields
        verbatim), in C for an encoded batch, else in Polars: strings sort as Python's do, as
        UTF-8 bytes order as code points. False, having written nothing, for a delimiter of
        more than one byte (which neither writes)."""
        if len(delimiter.encode("utf-8")) != 1:
            return False
        if self.encoded is not None:
            self._write_encoded(path, delimiter)
            return True
        frame = self.frame if self.ordered else self.frame.unique().sort(self.frame.columns)
        floating = [name for name, dtype in frame.schema.items() if dtype == pl.Float64()]
        if floating:  # as Soufflé writes a float (`%.17g`), which Polars does not
            frame = frame.with_columns(
                pl.col(name).map_elements(floats.float_text, return_dtype=pl.String())
                for name in floating
            )
        frame.write_csv(
            os.fspath(path) if isinstance(path, os.PathLike) else path,
            include_header=False,
            separator=delimiter,
            quote_style="never",
            line_terminator="\n",
        )
        return True

    def _write_encoded(self, path: str | os.PathLike[str] | BinaryIO, delimiter: str) -> None:
        """`write_sorted` of an encoded batch, sorted and deduplicated in NumPy (a symbol
        by its rank among the table's), written in C."""
        assert self.encoded is not None
        columns = list(self.encoded)
        if not self.ordered and len(columns[0]):
            order = value_order(columns, self._types, self.symbols)
            columns = [column[order] for column in columns]
            repeated = np.ones(len(order), dtype=bool)
            for column in columns:
                repeated[1:] &= column[1:] == column[:-1]
            repeated[0] = False
            columns = [column[~repeated] for column in columns]
        kinds = field_kinds(self._types)
        strings = self.symbols.since(0) if self.symbols is not None else None
        if not isinstance(path, str | os.PathLike):
            write_fields(path, columns, kinds, strings, ord(delimiter))
            return
        with open(path, "wb") as out:
            write_fields(out, columns, kinds, strings, ord(delimiter))

    def __repr__(self) -> str:
        return f"FactBatch({len(self)} rows, {len(self._types) or self.frame.width} columns)"


def read_facts_batch(
    path: str | os.PathLike[str], types: Sequence[ValueType], delimiter: str = "\t"
) -> FactBatch | list[Row]:
    """`reasoner.io.facts.read_facts`, as columns where it can (`parse_facts_batch`)."""
    mapped = _read_mapped(path, types, delimiter)
    if mapped is not None:
        return mapped
    return parse_facts_batch(read_fact_file(path), types, os.fspath(path), delimiter)


def _read_mapped(
    path: str | os.PathLike[str], types: Sequence[ValueType], delimiter: str
) -> FactBatch | None:
    """A large file of numbers and symbols read in place, mapped: its pages are the system's
    file cache, where reading copied them into fresh memory (LUBM-30's 625 MB: 0.2-0.5 s
    and as much system time again). None where the general reader is needed: a small file,
    one with a byte-order mark or a carriage return, one that is not plain text or not UTF-8
    (a symbol's bytes are decoded strictly, and any other byte is not plain), or one the
    system cannot map; that reader then reads it, or says what is wrong."""
    if field_kinds(types) is None:
        return None
    try:
        file = open(path, "rb")  # noqa: SIM115  # closed by the with below
    except OSError:
        return None
    with file:
        try:
            if os.fstat(file.fileno()).st_size < LANE_BYTES:
                return None
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # not a file the system maps (a pipe)
            return None
        with data:
            if data[: len(BYTE_ORDER_MARK)] == BYTE_ORDER_MARK or data.find(b"\r") >= 0:
                return None
            return _read_fields(data, types, delimiter)


def parse_facts_batch(
    body: str | bytes,
    types: Sequence[ValueType],
    filename: str = "<input>",
    delimiter: str = "\t",
) -> FactBatch | list[Row]:
    """`parse_facts_text`, as columns when the relation has any. `body`: text, or its UTF-8
    bytes (a large body is not decoded when it need not be).

    A body of numbers and symbols is read in C, in one pass, into the engine's columns
    (`_read_fields`); anything that reader does not take exactly as `parse_facts_text` would
    (a float or a record, an empty field or a line with another number of fields, a number
    that is not a plain 64-bit decimal) goes to `parse_facts_text`, which either reads it or
    names the first bad line."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if types and b"\r" in data and b"\r\n" in data:  # a byte is found at memchr's speed
        data = data.replace(b"\r\n", b"\n")
    encoded = _read_fields(data, types, delimiter)
    if encoded is not None:
        return encoded
    text = body if isinstance(body, str) else body.decode("utf-8")
    rows = parse_facts_text(text, types, filename, delimiter)
    return FactBatch.of_rows(rows, [storage_type(kind) for kind in types]) if types else rows


def _read_fields(
    data: bytes | mmap.mmap, types: Sequence[ValueType], delimiter: str
) -> FactBatch | None:
    """A body of `number`, `unsigned` and `symbol` columns as an encoded batch with its own
    symbol table, read in C on the lanes (`reasoner.io.fact_read`): None when a column is of
    another type, or the text is not plain."""
    kinds = field_kinds(types)
    if kinds is None or len(delimiter) != 1 or not delimiter.isascii():
        return None
    read = parse_fields(data, kinds, ord(delimiter), lane_count())
    if read is None:
        return None
    rows, strings = read
    columns = list(rows)  # each a contiguous view of the reader's one array
    own = SymbolTable.of_distinct(strings) if SYMBOL in types else None
    return FactBatch.of_encoded(columns, types, own, own_symbols=True)
