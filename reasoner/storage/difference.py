"""The record that takes a committed table to another state of its relation, row by row:
what a stratum evaluated off to the side leaves in the epoch's overlay, as the compiled
Update's record would have been. A stratum made afresh after a rule change
(`reasoner.elastic.restratify`) is a new table, compared by hash probes (`difference`); the
rest of an Update in bulk (`reasoner.elastic.bulk`) is a copy of the committed table, compared
by row id up to its appended rows (`aligned_difference`).

Compared as columns, not as Python tuples: a tuple a row took about a microsecond and 300
bytes, which a stratum of millions of rows paid twice (its old state against the new one, the
new against the old)."""

from __future__ import annotations

import numpy as np

from reasoner.storage.overlay import RowChanges
from reasoner.storage.rewind import aligned_changes, statuses_of
from reasoner.storage.table import ABSENT, Table

APPENDED_SLICE = 1 << 20
"""Appended rows probed at once: their values, row ids and statuses as int64 arrays are held a
slice at a time (a bulk evaluation of crdt.dl's skipBlank appends up to 152 M rows)."""

_Record = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Row ids, new iterations (`ABSENT`: absent) and counts, int64."""

Statuses = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A table's committed row ids, their iterations and counts (int64), in row
order: read before the evaluation that changes what the table will hold."""


def committed_statuses(table: Table) -> Statuses:
    """`table`'s committed row ids, iterations and counts, without its values."""
    ids = table.committed_rows()
    return (ids, *statuses_of(table, ids))


def difference(table: Table, committed: Statuses, result: Table) -> RowChanges:
    """The record that takes `table`, whose committed statuses are `committed`, to `result`
    (the relation as an evaluation off to the side left it): every row whose iteration or count
    differs, every committed row `result` lacks (absent), and a staged row for every tuple of
    `result` the table lacks."""
    ids, old_iterations, old_counts = committed
    values, iterations, counts = result.columns(with_counts=True)
    if table.arity:
        rows = table.rows_of_columns(values)
        missing = rows < 0
        if missing.any():
            new = [v[missing] for v in values]
            table.insert_columns(new, 0, staged=True)
            rows[missing] = table.rows_of_columns(new)
    else:  # at most one tuple, which columns cannot count
        if len(counts):
            table.stage(())
        rows = np.full(len(counts), table.row(()), dtype=np.int64)
    was = table.committed_mask(rows)
    at = np.searchsorted(ids, rows[was])
    same = np.zeros(len(rows), dtype=np.bool_)
    same[was] = (old_iterations[at] == iterations[was]) & (old_counts[at] == counts[was])
    kept = np.zeros(len(ids), dtype=np.bool_)
    kept[at] = True
    gone = ids[~kept]
    changed = ~same
    news = np.concatenate([iterations[changed], np.full(len(gone), ABSENT)])
    new_counts = np.concatenate([counts[changed], np.zeros(len(gone), dtype=np.int64)])
    return RowChanges.narrowed(table, np.concatenate([rows[changed], gone]), news, new_counts)


def aligned_difference(table: Table, result: Table, stop: int) -> RowChanges:
    """The record that takes `table` to `result`, a copy of it (`Table.copy`, same row ids)
    that an evaluation changed. The rows `result` appended from row `stop` on are probed in
    `table`, a slice at a time: a tuple it holds already (the evaluation removed it and
    derived it again) is recorded at its row there, a new one staged. The rows below `stop`
    are then compared row by row (`rewind.aligned_changes`), those found skipped where
    `result` lacks them."""
    found = np.zeros(stop, dtype=np.uint8)
    parts: list[_Record] = []
    appended = result.committed_in(stop, result.nrows)
    for at in range(0, len(appended), APPENDED_SLICE):
        held, part = _appended(table, result, appended[at : at + APPENDED_SLICE])
        found[held] = 1
        parts.append((part[0].astype(np.int32), part[1].astype(np.int32), part[2]))
    parts.insert(0, aligned_changes(table, result, stop, found))
    rows, news, counts = (np.concatenate(column) for column in zip(*parts, strict=True))
    return RowChanges.narrowed(table, rows, news, counts)


def _appended(table: Table, result: Table, appended: np.ndarray) -> tuple[np.ndarray, _Record]:
    """The rows of `table` that hold tuples of `result`'s rows `appended`; and the record of
    those tuples where they change `table`: at the row that holds one at another iteration or
    count (or staged), at a row staged for one anew."""
    news, counts = statuses_of(result, appended)
    if table.arity:
        values = result.values_of(appended)
        rows = table.rows_of_columns(values)
    else:
        rows = np.array([table.row(())] * len(appended), dtype=np.int64)
    held = rows >= 0
    was_news, was_counts = statuses_of(table, rows[held])
    same = np.zeros(len(rows), dtype=np.bool_)
    same[held] = (was_news == news[held]) & (was_counts == counts[held])
    if not held.all():
        if table.arity:
            new = [v[~held] for v in values]
            table.insert_columns(new, 0, staged=True)
            rows[~held] = table.rows_of_columns(new)
        else:
            table.stage(())
            rows[:] = table.row(())
    return rows[held], (rows[~same], news[~same], counts[~same])
