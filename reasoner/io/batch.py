"""Facts of one relation held as columns: a bulk load without a Python object per row.

Three million rows posted as a `.facts` body cost seconds as tuples at every step (splitting,
checking, interning, hashing, storing each one) and milliseconds as columns. A `FactBatch` is
still a sequence of rows, so any path that wants rows reads it as one; the materialization
encodes its columns at once (`SymbolTable.intern_column`), and the service's store writes
them as a columnar segment.

Columns are named `c0, c1, ...` by position and typed by the relation's column types
(`number` as Int64, `unsigned` as UInt64, `symbol` and a record's text as String). A relation
of arity 0 has no columns to count its rows, so its facts stay rows.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from typing import BinaryIO, cast, overload

import numpy as np

from reasoner.io.facts import parse_facts_text, read_fact_file
from reasoner.io.number_text import parse_numbers, write_numbers
from reasoner.support.polars_on_demand import pl
from reasoner.values import floats
from reasoner.values.records import ValueType, storage_type
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType, Value

Row = tuple[Value, ...]

_NUMBER_FIELD = r"^[+-]?[0-9]+$"
_UNSIGNED_FIELD = r"^\+?[0-9]+$"
BOM = "\ufeff".encode()
"""What a `number` (an `unsigned`) field may hold (as `reasoner.io.facts` reads one)."""
_DTYPE_NAMES = {
    NUMBER: "Int64",
    UNSIGNED: "UInt64",
    FLOAT: "Float64",
    SYMBOL: "String",
    RECORD: "String",
}
"""The Polars type of each column type, by name: Polars is imported only when used."""
INTEGERS = (NUMBER, UNSIGNED)
"""The column types a batch may hold as engine columns, without Polars (`FactBatch.numbers`)."""


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


def _unsigned_flags(types: Sequence[ColumnType]) -> np.ndarray:
    """Per column, 1 for `unsigned` (`reasoner.io.number_text`'s flags)."""
    return np.array([kind == UNSIGNED for kind in types], dtype=np.uint8)


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
    relation of numbers read or decoded without Polars, as engine columns (`numbers`) until
    something asks for the frame."""

    __slots__ = ("_frame", "_types", "numbers", "ordered")

    def __init__(self, frame: pl.DataFrame, ordered: bool = False) -> None:
        if not frame.width:
            raise ValueError("a batch of facts has at least one column")
        self._frame: pl.DataFrame | None = frame
        self._types: tuple[ColumnType, ...] = ()
        self.numbers: tuple[np.ndarray, ...] | None = None
        """The columns as the engine holds them, when the batch was made of them
        (`of_numbers`): int64, an unsigned value as its 64-bit pattern."""
        self.ordered = ordered
        """The rows are distinct and in value order already (`Materialization.batch`)."""

    @classmethod
    def of_numbers(
        cls, columns: Sequence[np.ndarray], types: Sequence[ValueType], ordered: bool = False
    ) -> FactBatch:
        """Engine columns of one length (int64) of a relation whose columns are all `number`
        or `unsigned` (`INTEGERS`)."""
        if not columns or any(kind not in INTEGERS for kind in types):
            raise ValueError("a batch of numbers has number or unsigned columns only")
        batch = cls.__new__(cls)
        batch._frame = None
        batch._types = tuple(cast(ColumnType, kind) for kind in types)
        batch.numbers = tuple(columns)
        batch.ordered = ordered
        return batch

    @property
    def frame(self) -> pl.DataFrame:
        """The rows as a Polars frame (made from `numbers` on the first read)."""
        if self._frame is None:
            assert self.numbers is not None
            columns = [
                user_numbers(column, kind)
                for column, kind in zip(self.numbers, self._types, strict=True)
            ]
            schema = frame_schema(self._types)
            self._frame = pl.DataFrame(dict(zip(schema, columns, strict=True)), schema=schema)
        return self._frame

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[Value]], types: Sequence[ColumnType]) -> FactBatch:
        """Rows already checked against `types` (see `reasoner.materialization`)."""
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(types)
        return cls.of_columns([list(column) for column in columns], types)

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
        schema = frame_schema(types)
        series = []
        for name, kind, column in zip(schema, types, zip(*rows, strict=True), strict=True):
            if kind == FLOAT and set(map(type, column)) <= {float, int}:
                try:  # an int is the float of its value, as a literal without a point
                    column = tuple(map(float, column))
                except OverflowError:
                    return None
            elif set(map(type, column)) != ({str} if kind == SYMBOL else {int}):
                return None
            try:
                series.append(pl.Series(name, column, dtype=schema[name], strict=True))
            except (OverflowError, TypeError, ValueError, pl.exceptions.PolarsError):
                return None  # past 64 bits, or a string that is not Unicode
        return cls(pl.DataFrame(series))

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
        if self.numbers is not None:
            return self._types == tuple(map(storage_type, types))
        return self.frame.schema == pl.Schema(frame_schema(types))

    def __len__(self) -> int:
        return len(self.numbers[0]) if self.numbers is not None else self.frame.height

    def __iter__(self) -> Iterator[Row]:
        if self.numbers is None:
            return self.frame.iter_rows()
        return zip(*(self._user_column(c).tolist() for c in range(len(self.numbers))), strict=True)

    def _user_column(self, column: int) -> np.ndarray:
        assert self.numbers is not None
        return user_numbers(self.numbers[column], self._types[column])

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> FactBatch: ...
    def __getitem__(self, index: int | slice) -> Row | FactBatch:
        if self.numbers is None:
            return (
                FactBatch(self.frame[index]) if isinstance(index, slice) else self.frame.row(index)
            )
        if isinstance(index, slice):
            return FactBatch.of_numbers([c[index] for c in self.numbers], self._types)
        return tuple(self._user_column(c)[index].item() for c in range(len(self.numbers)))

    def write_sorted(self, path: str | os.PathLike[str] | BinaryIO, delimiter: str) -> bool:
        """Write the rows as `reasoner.io.facts.format_rows` does (distinct, sorted, fields
        verbatim), in Polars: strings sort as Python's do, as UTF-8 bytes order as code
        points. False, having written nothing, for a delimiter Polars cannot write (more than
        one byte)."""
        if len(delimiter.encode("utf-8")) != 1:
            return False
        if self.numbers is not None:
            self._write_numbers(path, delimiter)
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

    def _write_numbers(self, path: str | os.PathLike[str] | BinaryIO, delimiter: str) -> None:
        """`write_sorted` of a batch of `numbers`, sorted and deduplicated in NumPy."""
        assert self.numbers is not None
        columns = list(self.numbers)
        if not self.ordered and len(columns[0]):
            keys = [self._user_column(c) for c in range(len(columns))]
            order = np.lexsort(keys[::-1])
            columns = [column[order] for column in columns]
            repeated = np.ones(len(order), dtype=bool)
            for column in columns:
                repeated[1:] &= column[1:] == column[:-1]
            repeated[0] = False
            columns = [column[~repeated] for column in columns]
        flags = _unsigned_flags(self._types)
        if isinstance(path, str | os.PathLike):
            with open(path, "wb") as out:
                write_numbers(out, columns, flags, ord(delimiter))
        else:
            write_numbers(path, columns, flags, ord(delimiter))

    def __repr__(self) -> str:
        return f"FactBatch({len(self)} rows, {len(self._types) or self.frame.width} columns)"


def read_facts_batch(
    path: str | os.PathLike[str], types: Sequence[ValueType], delimiter: str = "\t"
) -> FactBatch | list[Row]:
    """`reasoner.io.facts.read_facts`, as columns where it can (`parse_facts_batch`)."""
    return parse_facts_batch(read_fact_file(path), types, os.fspath(path), delimiter)


def parse_facts_batch(
    body: str | bytes,
    types: Sequence[ValueType],
    filename: str = "<input>",
    delimiter: str = "\t",
) -> FactBatch | list[Row]:
    """`parse_facts_text`, as columns when the relation has any. `body`: text, or its UTF-8
    bytes (a large body is not decoded when it need not be).

    A body of numbers only is read in C (`_read_numbers`), any other well-formed body by
    Polars, each in one pass; anything they cannot read exactly as
    `parse_facts_text` would (an empty line, a carriage return, a field that is not a plain
    64-bit decimal, a line with another number of fields) goes to `parse_facts_text`, which
    either reads it or names the first bad line."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if types and b"\r" in data and b"\r\n" in data:  # a byte is found at memchr's speed
        data = data.replace(b"\r\n", b"\n")
    numbers = _read_numbers(data, types, delimiter)
    if numbers is not None:
        return numbers
    plain = [kind for kind in types if kind in (NUMBER, UNSIGNED, SYMBOL)]
    fast = _read_plain(data, plain, delimiter) if plain and len(plain) == len(types) else None
    if fast is not None:
        return FactBatch(fast)
    text = body if isinstance(body, str) else body.decode("utf-8")
    rows = parse_facts_text(text, types, filename, delimiter)
    return FactBatch.of_rows(rows, [storage_type(kind) for kind in types]) if types else rows


def _read_numbers(data: bytes, types: Sequence[ValueType], delimiter: str) -> FactBatch | None:
    """A body of `number` and `unsigned` columns as a batch of `numbers`, read in C
    (`reasoner.io.number_text`): None when its types are others or the text is not plain."""
    if not types or any(kind not in INTEGERS for kind in types):
        return None
    if len(delimiter) != 1 or not delimiter.isascii():
        return None
    kinds = [cast(ColumnType, kind) for kind in types]
    rows = parse_numbers(data, _unsigned_flags(kinds), ord(delimiter))
    if rows is None:
        return None
    return FactBatch.of_numbers([np.ascontiguousarray(column) for column in rows.T], kinds)


def _fields_line_up(data: bytes, delimiter: str, arity: int, rows: int) -> bool:
    """Whether there are `rows` lines, none empty, each of `arity` fields. Polars skips an
    empty line, pads a short one and takes a trailing separator as the end of a line, so it
    cannot say: the lines and separators are counted here, a pass in numpy."""
    text = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(text == ord("\n"))
    if not data.endswith(b"\n"):
        ends = np.append(ends, len(text))
    if len(ends) != rows or (rows and (ends[0] == 0 or (np.diff(ends) == 1).any())):
        return False
    separators = np.flatnonzero(text == ord(delimiter))
    if len(separators) != (arity - 1) * rows:
        return False
    if arity == 1 or not rows:
        return True
    # As many separators as the lines need: each line's must all lie within it.
    per_line = separators.reshape(rows, arity - 1)
    starts = np.concatenate(([-1], ends[:-1]))
    return bool((per_line[:, 0] > starts).all() and (per_line[:, -1] < ends).all())


def _read_plain(data: bytes, types: Sequence[ColumnType], delimiter: str) -> pl.DataFrame | None:
    """The body as a typed frame, or None when it is not plain (see `parse_facts_batch`)."""
    if len(delimiter) != 1 or not delimiter.isascii() or delimiter == "\r" or not data:
        return None
    if data.startswith(BOM) or b"\r" in data:
        return None  # Polars would skip a byte-order mark: it is part of the first field
    arity = len(types)
    names = column_names(arity)
    # Numbers only, and no byte a number field cannot hold (Polars would skip a space): read
    # as integers at once. Otherwise as strings, the numbers checked and cast after.
    direct = all(kind == NUMBER for kind in types) and not data.translate(
        None, b"0123456789+-\n" + delimiter.encode("ascii")
    )
    try:
        raw = pl.read_csv(
            io.BytesIO(data),
            has_header=False,
            separator=delimiter,
            quote_char=None,
            schema=dict.fromkeys(names, pl.Int64() if direct else pl.String()),
            empty_string_is_null=False,
            truncate_ragged_lines=False,
            raise_if_empty=False,
            eol_char="\n",
        )
    except pl.exceptions.PolarsError:
        return None
    if raw.width != arity or not _fields_line_up(data, delimiter, arity, raw.height):
        return None
    if direct:  # an empty field is null
        return raw if not any(raw.null_count().row(0)) else None
    for kind, pattern in ((NUMBER, _NUMBER_FIELD), (UNSIGNED, _UNSIGNED_FIELD)):
        numbers = [name for name, other in zip(names, types, strict=True) if other == kind]
        if not numbers:
            continue
        plain = raw.select(pl.all_horizontal(pl.col(numbers).str.contains(pattern)).all())
        if not plain.item():
            return None
        try:
            raw = raw.with_columns(pl.col(numbers).cast(polars_type(kind), strict=True))
        except pl.exceptions.PolarsError:  # past 64 bits
            return None
    return raw
