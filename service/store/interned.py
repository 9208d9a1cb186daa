"""The engine's numbering of symbols and records, stored so that a restart numbers them as
before: a symbol's id is a value (`ord`), so the rows a rule derives from it, the change
feed and every read of a past epoch depend on it.

Per kind (`SYMBOL`, `RECORD`) the values of ids 0, 1, 2, ... are a log of segments in id
order. An epoch appends one segment of the values it interned (none if it interned none), in
the transaction that commits it, and its row in `epochs` says how many of each the engine
held then: a start-up loads exactly that many, before anything else is interned. The log
stays short the way a relation's facts do (`segments.merge_start`): a small write costs one
small insert, and millions of symbols load from a few Arrow blobs.

A segment is JSON (a list) when small, else an Arrow IPC file of one column: strings for
symbols, lists of int64 for records (the fields' engine values).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy import Connection, delete, func, insert, select, update

from service.store import models, segments

SYMBOL = "symbol"
RECORD = "record"
_COLUMN = "value"


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
        dtype = pl.String() if kind == SYMBOL else pl.List(pl.Int64())
        try:
            column = pl.Series(_COLUMN, list(values), dtype=dtype)
        except UnicodeEncodeError:  # text Arrow cannot hold (an unpaired surrogate): JSON
            pass
        else:
            buffer = io.BytesIO()
            column.to_frame().write_ipc(buffer, compression=segments.COMPRESSION)
            return buffer.getbuffer()
    return json.dumps(list(values), separators=(",", ":")).encode("ascii")


def decode(data: bytes, kind: str) -> list[Any]:
    """A segment's values, in order (records as tuples)."""
    if bytes(data[:1]) == b"[":
        values = json.loads(data)
    else:
        values = pl.read_ipc(io.BytesIO(data))[_COLUMN].to_list()
    return values if kind == SYMBOL else list(map(tuple, values))


def append(connection: Connection, epoch: int, interned: Interned) -> None:
    """The values an epoch interned, as the newest segment of their kind's log."""
    for kind, values, first in (
        (SYMBOL, interned.symbols, interned.first_symbol),
        (RECORD, interned.records, interned.first_record + 1),
    ):
        if not values:
            continue
        connection.execute(
            insert(models.interned).values(
                kind=kind, first=first, epoch=epoch, rows=len(values), data=encode(values, kind)
            )
        )
        _merge_newest(connection, kind)


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


def _merge_newest(connection: Connection, kind: str) -> None:
    """Fold the newest segments of `kind` into one when `segments.merge_start` says so. The
    merged segment keeps the first one's key, so the log's order stays."""
    table = models.interned
    log = connection.execute(
        select(table.c.first, table.c.rows, func.length(table.c.data), table.c.epoch)
        .where(table.c.kind == kind)
        .order_by(table.c.first)
    ).all()
    start = segments.merge_start([(rows, size) for _, rows, size, _ in log])
    if start is None:
        return
    firsts = [first for first, _, _, _ in log[start:]]
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
        .values(rows=len(merged), data=encode(merged, kind), epoch=log[-1][3])
    )
