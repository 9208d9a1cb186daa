"""A relation's facts in the store, as its log of segments (`service.store.segments`): a
delta's rows appended, the newest segments merged, the whole log read back folded; and an
epoch's change set, written in the same segments' form, chunk by chunk.

These run inside the transactions `service.store.repository.Store` opens: a delta's facts,
its change set and its epoch row commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from reasoner import FactBatch, pl
from service.store import models, segments

Row = Sequence[Any]
Facts = FactBatch | Sequence[Row]
"""One relation's facts: a batch, or rows (of a relation of arity 0, `()`; or a few rows in
user values, read back from JSON segments)."""
ChangeChunk = tuple[str, bool, Facts]
"""Part of an epoch's change set: (relation, present, rows), present True for rows the
relation gained, False for rows it lost."""


def segments_of(
    facts: Facts, *, present: bool, max_rows: int
) -> Iterator[tuple[int, bytes | memoryview]]:
    """`facts` as segments of at most `max_rows` entries each: (rows, blob)."""
    count = len(facts)
    if not count:
        return
    if count <= segments.SMALL_ROWS and (
        not isinstance(facts, FactBatch) or facts.encoded is not None
    ):
        # Numbers and symbols as read, or a relation of arity 0: their rows as text, with no
        # frame (a write of a few facts to a fresh server imported Polars for this, a fifth
        # of a second)
        names = facts.type_names() if isinstance(facts, FactBatch) else {}
        yield count, segments.encode_rows(names, list(facts), [present] * count)
        return
    values = facts.frame if isinstance(facts, FactBatch) else pl.DataFrame()
    values = segments.stored_columns(values)
    if count <= segments.SMALL_ROWS:  # a frame's (floats, records): arity 0 went above
        names = segments.type_names(values.schema)
        yield count, segments.encode_rows(names, values.rows(), [present] * count)
        return
    if values.width:
        log = segments.entries(values, present)
    else:
        log = pl.DataFrame({segments.PRESENT: [present] * count})
    for start in range(0, count, max_rows):
        part = log.slice(start, max_rows)
        yield part.height, segments.encode(part)


def append_segments(
    connection: Connection, relation: str, epoch: int, facts: Facts, *, present: bool
) -> None:
    """`facts` as the newest segments of `relation`'s log (one per `MAX_SEGMENT_ROWS`)."""
    for rows, data in segments_of(facts, present=present, max_rows=segments.MAX_SEGMENT_ROWS):
        connection.execute(
            insert(models.fact_segments).values(
                relation=relation, epoch=epoch, rows=rows, data=data
            )
        )


def write_changes(connection: Connection, epoch: int, changes: Iterable[ChangeChunk]) -> int:
    """An epoch's change set as rows of `epoch_changes`, in the order given, a chunk of at
    most `CHANGE_CHUNK_ROWS` rows each (a page of the feed decodes little beyond its own
    rows); how many rows it holds."""
    stored = 0
    seq = 0
    for relation, present, facts in changes:
        for rows, data in segments_of(facts, present=present, max_rows=segments.CHANGE_CHUNK_ROWS):
            connection.execute(
                insert(models.epoch_changes).values(
                    epoch=epoch, seq=seq, relation=relation, rows=rows, data=data
                )
            )
            seq += 1
            stored += rows
    return stored


def merge_newest(connection: Connection, relation: str) -> None:
    """Fold the newest segments of `relation` into one when `segments.merge_start` says so.
    The merged segment takes the place (id) of the newest, so the log's order stays."""
    table = models.fact_segments
    log = connection.execute(
        select(table.c.id, table.c.rows, func.length(table.c.data))
        .where(table.c.relation == relation)
        .order_by(table.c.id)
    ).all()
    start = segments.merge_start([(rows, size) for _, rows, size in log])
    if start is None:
        return
    ids = [segment_id for segment_id, _, _ in log[start:]]
    blobs = connection.execute(
        select(table.c.data).where(table.c.id.in_(ids)).order_by(table.c.id)
    ).scalars()
    merged = _merged(list(blobs), complete=start == 0)
    if isinstance(merged, int):  # the relation changed shape: what came before folds to nothing
        connection.execute(
            delete(table).where(table.c.relation == relation, table.c.id < ids[merged])
        )
        return
    rows, data = merged
    connection.execute(delete(table).where(table.c.id.in_(ids[:-1])))
    if rows:
        connection.execute(update(table).where(table.c.id == ids[-1]).values(rows=rows, data=data))
    else:
        connection.execute(delete(table).where(table.c.id == ids[-1]))


def _merged(blobs: list[bytes], *, complete: bool) -> int | tuple[int, bytes | memoryview]:
    """Consecutive segments folded into one: its rows and blob; or, when they are not all of
    the newest shape, where that shape begins. JSON segments fold in Python, and stay JSON
    when the result is small: a relation written a few facts at a time never needs Polars."""
    if all(map(segments.is_small, blobs)):
        small = [segments.read_small(data) for data in blobs]
        newest = segments.newest_shape(small)
        if newest > 0:
            return newest
        folded = segments.fold_small(small, complete=complete)
        if len(folded.rows) <= segments.SMALL_ROWS:
            return len(folded.rows), folded.encode()
        frame = folded.frame()
    else:
        frames = [segments.decode(data) for data in blobs]
        newest = segments.newest_shape(frames)
        if newest > 0:
            return newest
        frame = segments.fold(frames, complete=complete)
    return frame.height, segments.encode(frame)


def read_facts(connection: Connection) -> dict[str, Facts]:
    """Every relation's facts: its log of segments, folded."""
    table = models.fact_segments
    result = connection.execute(
        select(table.c.relation, table.c.data).order_by(table.c.relation, table.c.id)
    )
    facts: dict[str, Facts] = {}
    for relation, group in groupby(result, key=lambda row: row[0]):
        blobs = [data for _, data in group]
        if all(map(segments.is_small, blobs)):  # a few facts: rows, without Polars
            small = [segments.read_small(data) for data in blobs]
            facts[relation] = segments.fold_small(small, complete=True).user_rows()
            continue
        net = segments.fold([segments.decode(data) for data in blobs], complete=True)
        values = segments.user_columns(net.drop(segments.PRESENT))
        facts[relation] = FactBatch(values) if values.width else [()] * net.height
    return facts
