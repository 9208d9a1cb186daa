"""The record that takes a committed table to another state of its relation, row by row:
what a stratum evaluated off to the side leaves in the epoch's overlay, as the compiled
Update's record would have been. A stratum made afresh after a rule change
(`reasoner.elastic.restratify`) is a new table, compared by hash probes (`difference`); the
rest of an Update in bulk (`reasoner.elastic.bulk`) is a copy of the committed table, compared
by row id up to its appended rows and by probes after (`aligned_difference`).

Compared as columns, not as Python tuples: a tuple a row took about a microsecond and 300
bytes, which a stratum of millions of rows paid twice (its old state against the new one, the
new against the old)."""

from __future__ import annotations

import numpy as np

from reasoner.storage.overlay import RowChanges
from reasoner.storage.rewind import aligned_changes, statuses_of
from reasoner.storage.table import ABSENT, Table

APPENDED_SLICE = 1 << 20
"""Rows probed at once: their values, row ids and statuses as int64 arrays are held a slice at
a time (a bulk evaluation of crdt.dl's skipBlank appends up to 152 M rows)."""

_Record = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Row ids, new iterations (`ABSENT`: absent) and counts (int64; the first two narrowed to
int32 once probed)."""


def difference(table: Table, result: Table) -> RowChanges:
    """The record that takes `table` to `result`, a table of the same relation made apart
    (a stratum made afresh): every tuple of `result` is probed in `table` (as
    `aligned_difference` probes appended rows), and every committed row of `table` that none
    of them holds is absent."""
    found, parts = _probed(table, result, result.committed_rows())
    ids = table.committed_rows()
    gone = ids[found[ids] == 0]
    parts.append((gone, np.full(len(gone), ABSENT, dtype=np.int64), np.zeros_like(gone)))
    return _joined(table, parts)


def aligned_difference(table: Table, result: Table) -> RowChanges:
    """The record that takes `table` to `result`, a copy of it (`Table.copy`, same row ids)
    that an evaluation changed. The rows `result` appended past `table`'s are probed in
    `table`: a tuple it holds already (the evaluation removed it and derived it again) is
    recorded at its row there, a new one staged. The rows below are then compared row by row
    (`rewind.aligned_changes`), those found skipped where `result` lacks them."""
    stop = table.nrows
    found, parts = _probed(table, result, result.committed_in(stop, result.nrows))
    parts.insert(0, aligned_changes(table, result, stop, found))
    return _joined(table, parts)


def _probed(table: Table, result: Table, rows: np.ndarray) -> tuple[np.ndarray, list[_Record]]:
    """`result`'s `rows` probed in `table` a slice at a time (`_appended`): a mark (1) for
    each of `table`'s rows found, and the record of each slice, its rows and iterations
    narrowed at once."""
    found = np.zeros(table.nrows, dtype=np.uint8)
    parts: list[_Record] = []
    for at in range(0, len(rows), APPENDED_SLICE):
        held, part = _appended(table, result, rows[at : at + APPENDED_SLICE])
        found[held] = 1
        parts.append((part[0].astype(np.int32), part[1].astype(np.int32), part[2]))
    return found, parts


def _joined(table: Table, parts: list[_Record]) -> RowChanges:
    """The parts of a record as one (they hold distinct rows)."""
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
