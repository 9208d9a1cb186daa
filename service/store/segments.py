"""Facts stored as columnar segments: a relation's facts are a short log of Arrow frames.

A delta appends, per relation it changes, a segment of the rows it retracted and one of the
rows it inserted (several past `MAX_SEGMENT_ROWS`), each row with a `present` column (True:
inserted, False: retracted); an Arrow IPC blob, or JSON for a few rows. A relation's facts
are the rows whose last entry in its log says present (`fold`). Three million edges are one
8 MB blob, written in a fraction of a second, where a database row per fact (with its key
and index entry) took 14 s.

The log stays short by merging its newest segments (`merge_start`): once it holds more than
`SLACK` segments, the newest are folded into one while the one before them is at most twice
as large as they are together, the rule of Timsort's stack of runs: a row is rewritten
O(log n) times over the life of the log, and the log holds `SLACK` + O(log n) segments. A
merge that reaches the oldest segment drops retracted rows for good.

A segment holds a row at most once: a delta's effective rows are distinct, and a merge keeps
one entry per row.

A relation's column types can change only while it holds no facts (the engine refuses a rule
change otherwise), so segments of an older shape fold to nothing: `fold` keeps the newest
shape's segments alone, and a merge that meets an older shape deletes its segments
(`newest_shape`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from reasoner import floats, pl

PRESENT = "present"
"""The column that says whether a segment's row was inserted (True) or retracted."""
_DTYPE_NAMES: Final = frozenset({"Int64", "UInt64", "String"})
"""The column types of a JSON segment, by the names of their Polars classes: Polars is
imported where first used, which a service that only starts never does."""
MAX_SEGMENT_ROWS = 1 << 20
MAX_MERGED_BYTES = 1 << 28
"""Rows per segment at most (a larger delta writes several), and the bytes a merge may
gather: a blob stays well below the databases' limit of 1 GB a value, even of long
symbols."""
CHANGE_CHUNK_ROWS = 1 << 18
"""Rows per chunk of an epoch's change set at most: a page of the feed reads a chunk
whole, so this bounds what it decodes beyond its own rows (5 ms), while chunks four times
smaller took twice as long to write (3 M rows: 250 against 130 ms)."""
SLACK = 8
"""Segments a log may hold before any merge: a write of a few facts then costs one small
insert, and a merge folds several small segments at once (1 ms of Polars work for each
write, that a merge of two one-row segments would cost, was most of a small write)."""
SMALL_ROWS = 256
"""Segments of at most this many entries are JSON (see `encode_rows`)."""
COMPRESSION: Final = "zstd"
"""Measured on 3 M pairs of integers: 8 MB (lz4 27 MB, none 48 MB), written in 53 ms and
read in 23 ms (lz4 63 and 55 ms)."""


def encode(log: pl.DataFrame) -> bytes | memoryview:
    """Entries of a log as a segment: an Arrow IPC file (a view of the buffer written, not a
    copy), or JSON for a few rows (`SMALL_ROWS`)."""
    if log.height <= SMALL_ROWS:
        values = log.select(_values(log))
        return encode_rows(type_names(values.schema), values.rows(), log[PRESENT].to_list())
    buffer = io.BytesIO()
    log.write_ipc(buffer, compression=COMPRESSION)
    return buffer.getbuffer()


def encode_rows(
    schema: Mapping[str, str], rows: Sequence[Sequence[Any]], present: Sequence[bool]
) -> bytes:
    """A few entries as a JSON segment, without a Polars operation (each costs a fraction of
    a millisecond, which a write of one fact would pay several times)."""
    document = {
        "schema": [[name, _checked(kind)] for name, kind in schema.items()],
        "rows": [list(row) for row in rows],
        PRESENT: list(present),
    }
    return json.dumps(document, separators=(",", ":")).encode("ascii")


def decode(data: bytes) -> pl.DataFrame:
    """A segment's entries: the values' columns and `PRESENT`."""
    if not is_small(data):
        return pl.read_ipc(io.BytesIO(data))
    return read_small(data).frame()


@dataclass(frozen=True, slots=True)
class SmallSegment:
    """A JSON segment's entries as Python values: what a restart or a merge of a relation
    holding a few facts reads, without importing Polars (a fifth of a second of a small
    server's start, and 30 MB it would keep)."""

    schema: tuple[tuple[str, str], ...]
    """(column, the name of its Polars type), in order: the segment's shape."""
    rows: list[tuple[Any, ...]]
    present: list[bool]

    def encode(self) -> bytes:
        return encode_rows(dict(self.schema), self.rows, self.present)

    def frame(self) -> pl.DataFrame:
        """The entries as `decode` gives a segment's."""
        schema = {name: _dtype(kind) for name, kind in self.schema}
        columns = list(zip(*self.rows, strict=True)) or [()] * len(schema)
        frame = {name: list(column) for name, column in zip(schema, columns, strict=True)}
        frame[PRESENT] = self.present
        return pl.DataFrame(frame, schema={**schema, PRESENT: pl.Boolean()})

    def user_rows(self) -> list[tuple[Any, ...]]:
        """The rows in user values: a float column's patterns (`FLOAT_BITS`) as floats."""
        bits = [c for c, (name, _) in enumerate(self.schema) if name.endswith(FLOAT_BITS)]
        if not bits:
            return self.rows
        return [
            tuple(floats.from_bits(v) if c in bits else v for c, v in enumerate(row))
            for row in self.rows
        ]


def is_small(data: bytes | memoryview) -> bool:
    """Whether a segment is JSON (`SMALL_ROWS` entries at most), not Arrow."""
    return bytes(data[:1]) == b"{"


def read_small(data: bytes | memoryview) -> SmallSegment:
    """A JSON segment's entries (`is_small`)."""
    document = json.loads(bytes(data))
    schema = tuple((name, _checked(kind)) for name, kind in document["schema"])
    return SmallSegment(schema, [tuple(row) for row in document["rows"]], document[PRESENT])


def type_names(schema: Mapping[str, pl.DataType]) -> dict[str, str]:
    """A frame's schema as `encode_rows` takes it: the names of the columns' Polars types."""
    return {name: type(dtype).__name__ for name, dtype in schema.items()}


def _checked(name: str) -> str:
    if name not in _DTYPE_NAMES:
        raise KeyError(name)
    return name


def _dtype(name: str) -> pl.DataType:
    return cast("pl.DataType", getattr(pl, _checked(name))())


FLOAT_BITS = ":bits"
"""The suffix of a float column's name in a segment, which holds its IEEE patterns."""


def stored_columns(values: pl.DataFrame) -> pl.DataFrame:
    """A relation's rows as segments hold them: a float column as its IEEE patterns (Int64,
    named `c0:bits`). A relation holds floats by their bits (0.0 and -0.0 are two rows, a
    NaN keeps its sign), where Polars compares them as numbers, and JSON loses a NaN's sign."""
    if pl.Float64() not in values.schema.dtypes():
        return values
    return values.select(
        pl.Series(name + FLOAT_BITS, values[name].to_numpy().view(np.int64))
        if dtype == pl.Float64()
        else pl.col(name)
        for name, dtype in values.schema.items()
    )


def user_columns(values: pl.DataFrame) -> pl.DataFrame:
    """The inverse of `stored_columns`."""
    if not any(name.endswith(FLOAT_BITS) for name in values.columns):
        return values
    return values.select(
        pl.Series(name.removesuffix(FLOAT_BITS), values[name].to_numpy().view(np.float64))
        if name.endswith(FLOAT_BITS)
        else pl.col(name)
        for name in values.columns
    )


def entries(values: pl.DataFrame, present: bool) -> pl.DataFrame:
    """Rows of a relation (columns `c0, c1, ...`) as entries of its log."""
    return values.with_columns(pl.lit(present).alias(PRESENT))


def _values(frame: pl.DataFrame) -> list[str]:
    return [name for name in frame.columns if name != PRESENT]


def newest_shape(frames: Sequence[pl.DataFrame] | Sequence[SmallSegment]) -> int:
    """Where the run of segments of the newest shape begins (see the module docstring)."""
    start = len(frames)
    while start > 0 and frames[start - 1].schema == frames[-1].schema:
        start -= 1
    return start


def fold(frames: Sequence[pl.DataFrame], *, complete: bool) -> pl.DataFrame:
    """The net effect of consecutive segments, as one segment: per row, its last entry.

    `complete`: the segments are the whole log, so a row whose last entry is a retraction is
    gone (dropped) and every row left is present."""
    if complete:
        frames = frames[newest_shape(frames) :]
    elif newest_shape(frames):
        raise ValueError("segments of different shapes cannot be merged")
    if complete and len(frames) == 1:  # a segment holds a row once: only drop retractions
        return frames[0].filter(pl.col(PRESENT))
    log = pl.concat(frames, how="vertical", rechunk=False)
    values = _values(log)
    # Arity 0: the relation holds its one tuple or not, as its last entry says.
    net = log.unique(subset=values, keep="last", maintain_order=True) if values else log.tail(1)
    if complete:
        net = net.filter(pl.col(PRESENT))
    return net


def fold_small(parts: Sequence[SmallSegment], *, complete: bool) -> SmallSegment:
    """`fold` of JSON segments, in Python: the same entries in the same order (a row's
    place is that of its last entry), since a relation's rows are interned in this order
    when its symbols are numbered anew."""
    if complete:
        parts = parts[newest_shape(parts) :]
    elif newest_shape(parts):
        raise ValueError("segments of different shapes cannot be merged")
    net: dict[tuple[Any, ...], bool] = {}
    for part in parts:
        for row, present in zip(part.rows, part.present, strict=True):
            net.pop(row, None)  # an arity-0 relation's one row, `()`, alike
            net[row] = present
    kept = [(row, present) for row, present in net.items() if present or not complete]
    return SmallSegment(parts[-1].schema, [row for row, _ in kept], [p for _, p in kept])


def merge_start(sizes: Sequence[tuple[int, int]]) -> int | None:
    """Where the newest segments of a log should be merged from, given each segment's rows
    and bytes: the first of the longest run of newest segments that each is at most twice
    as large as all after it together (within `MAX_SEGMENT_ROWS` and `MAX_MERGED_BYTES`);
    None when there is nothing to merge, or the log is no longer than `SLACK`."""
    if len(sizes) <= SLACK:
        return None
    start = len(sizes) - 1
    rows, size = sizes[start]
    while start > 0 and sizes[start - 1][0] <= 2 * rows:
        more_rows, more_bytes = sizes[start - 1]
        if rows + more_rows > MAX_SEGMENT_ROWS or size + more_bytes > MAX_MERGED_BYTES:
            break
        start -= 1
        rows += more_rows
        size += more_bytes
    return start if start < len(sizes) - 1 else None
