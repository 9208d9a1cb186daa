"""The engine's numbering of symbols and records, stored so that a restart numbers them as
before: a symbol's id is a value (`ord`), so the rows a rule derives from it, the change
feed and every read of a past epoch depend on it.

Per kind (`SYMBOL`, `RECORD`) the values of ids 0, 1, 2, ... are a log of segments in id
order. An epoch appends one segment of the values it interned (none if it interned none), in
the transaction that commits it, and its row in `epochs` says how many of each the engine
held then: a start-up loads exactly that many, before anything else is interned. The log
stays short as a relation's facts do, by Timsort's rule (`merge_runs`), looked at once every
`MERGE_EVERY` appends: a small write costs one small insert, and millions of symbols load
from a few Arrow blobs.

A segment is JSON (a list) when small, else an Arrow IPC file of one column: strings for
symbols, lists of int64 for records (the fields' engine values).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any, cast

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from reasoner import pl
from service.store import models, segments

SYMBOL = "symbol"
RECORD = "record"
_COLUMN = "value"
MERGE_EVERY = 32
"""Appends between two looks at a log's sizes (`append`): a look that merges rewrites and
re-encodes segments, some milliseconds, which every eighth small write paid when it was
`segments.SLACK`."""


@dataclass(frozen=True, slots=True)
class Interned:
    """Symbols and records in id order, from ids `first_symbol` and `first_record` on (a
    record's id counts from 1: 0 is nil, which is never stored)."""

    symbols: Sequence[str] = ()
    records: Sequence[tuple[int, ...]] = ()
    first_symbol: int = 0
    first_record: int = 0

    @property
    def symbol_count(self) -> int:
        """Symbols held with these: what an epoch's row says."""
        return self.first_symbol + len(self.symbols)

    @property
    def record_count(self) -> int:
        return self.first_record + len(self.records)


def encode(values: Sequence[Any], kind: str) -> bytes | memoryview:
    """Values of one kind as a segment: JSON when few, else Arrow (zstd)."""
    if len(values) > segments.SMALL_ROWS:
        try:
            column = _strings(values) if kind == SYMBOL else _lists(values)
        except UnicodeEncodeError:  # text Arrow cannot hold (an unpaired surrogate): JSON
            pass
        else:
            buffer = io.BytesIO()
            column.to_frame(_COLUMN).write_ipc(buffer, compression=segments.COMPRESSION)
            return buffer.getbuffer()
    return json.dumps(list(values), separators=(",", ":")).encode("ascii")


def _strings(values: Sequence[str]) -> pl.Series:
    return pl.Series(_COLUMN, list(values), dtype=pl.String())


def _lists(rows: Sequence[tuple[int, ...]]) -> pl.Series:
    """Records as a column of lists, made from their fields laid end to end (a list per
    tuple through Polars took 20 s a million)."""
    import pyarrow as pa  # here: the service starts without Arrow (and Polars) until a use

    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)), out=offsets[1:])
    fields = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(offsets[-1]))
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(fields))
    return cast(pl.Series, pl.from_arrow(lists))


def decode(data: bytes, kind: str) -> list[Any]:
    """A segment's values, in order (records as tuples)."""
    if bytes(data[:1]) == b"[":
        values = json.loads(data)
        return values if kind == SYMBOL else list(map(tuple, values))
    column = pl.read_ipc(io.BytesIO(data))[_COLUMN]
    if kind == SYMBOL:
        return column.to_list()
    lists = column.rechunk().to_arrow()
    offsets = lists.offsets.to_numpy().tolist()
    fields = lists.flatten().to_numpy().tolist()
    return [tuple(fields[start:end]) for start, end in pairwise(offsets)]


def append(connection: Connection, epoch: int, interned: Interned, *, merge: bool) -> bool:
    """The values an epoch interned, as the newest segments of their kind's log (one per
    `segments.MAX_SEGMENT_ROWS`); whether it appended any. `merge`: fold the log's runs as
    `merge_runs` says (which reads the log's sizes: a caller asks every few appends, not
    at each small write)."""
    appended = False
    for kind, values, first in (
        (SYMBOL, interned.symbols, interned.first_symbol),
        (RECORD, interned.records, interned.first_record + 1),
    ):
        if not values:
            continue
        appended = True
        for start in range(0, len(values), segments.MAX_SEGMENT_ROWS):
            part = values[start : start + segments.MAX_SEGMENT_ROWS]
            connection.execute(
                insert(models.interned).values(
                    kind=kind,
                    first=first + start,
                    epoch=epoch,
                    rows=len(part),
                    data=encode(part, kind),
                )
            )
        if merge:
            _merge(connection, kind)
    return appended


def read(connection: Connection, symbols: int, records: int) -> Interned | None:
    """The first `symbols` symbols and `records` records (an epoch's counts); None if the
    log holds fewer, which no commit leaves (the numbering is then unknown, as before it was
    stored)."""
    table = models.interned
    result = connection.execute(
        select(table.c.kind, table.c.data).order_by(table.c.kind, table.c.first)
    )
    values: dict[str, list[Any]] = {SYMBOL: [], RECORD: []}
    for kind, data in result:
        values[kind].extend(decode(data, kind))
    if len(values[SYMBOL]) < symbols or len(values[RECORD]) < records:
        return None
    return Interned(values[SYMBOL][:symbols], values[RECORD][:records])


def merge_runs(sizes: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs of consecutive segments (start, end) to fold into one each, given every
    segment's rows and bytes: Timsort's stack of runs over the whole log, oldest first, where
    the run below is folded with the one on top while it is at most twice as large (within
    `segments.MAX_SEGMENT_ROWS` and `segments.MAX_MERGED_BYTES`). A log made this way keeps
    its runs, so only what came since the last look is folded, into the runs before it as
    their sizes ask: a value is rewritten O(log n) times, and a log holds O(log n) runs."""
    stack: list[tuple[int, int, int, int]] = []  # start, end, rows, bytes
    for index, (rows, size) in enumerate(sizes):
        stack.append((index, index + 1, rows, size))
        while len(stack) > 1:
            (start, _, below_rows, below_bytes), (_, end, rows, size) = stack[-2:]
            if (
                below_rows > 2 * rows
                or below_rows + rows > segments.MAX_SEGMENT_ROWS
                or below_bytes + size > segments.MAX_MERGED_BYTES
            ):
                break
            stack[-2:] = [(start, end, below_rows + rows, below_bytes + size)]
    return [(start, end) for start, end, _, _ in stack if end - start > 1]


def _merge(connection: Connection, kind: str) -> None:
    """Fold the runs of `kind`'s log that `merge_runs` names. A folded segment keeps its
    first segment's key, so the log's order stays."""
    table = models.interned
    log = connection.execute(
        select(table.c.first, table.c.rows, func.length(table.c.data), table.c.epoch)
        .where(table.c.kind == kind)
        .order_by(table.c.first)
    ).all()
    for start, end in merge_runs([(rows, size) for _, rows, size, _ in log]):
        firsts = [first for first, _, _, _ in log[start:end]]
        merged: list[Any] = []
        for (data,) in connection.execute(
            select(table.c.data)
            .where(table.c.kind == kind, table.c.first.in_(firsts))
            .order_by(table.c.first)
        ):
            merged.extend(decode(data, kind))
        connection.execute(delete(table).where(table.c.kind == kind, table.c.first.in_(firsts[1:])))
        connection.execute(
            update(table)
            .where(table.c.kind == kind, table.c.first == firsts[0])
            .values(rows=len(merged), data=encode(merged, kind), epoch=log[end - 1][3])
        )
