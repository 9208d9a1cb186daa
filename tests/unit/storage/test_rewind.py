"""A table copied with its row ids, taken back to an iteration, changed, and compared with the
table it came from (`reasoner.storage.rewind`, `difference.aligned_difference`): the record
takes the old table to the new one, row by row."""

from __future__ import annotations

import numpy as np
import pytest

from reasoner.storage import Table, apply_rows
from reasoner.storage.difference import aligned_difference
from reasoner.storage.overlay import RowChanges
from reasoner.storage.rewind import rewind, rows_between
from reasoner.support import allocations


def _table(rows: dict[tuple[int, ...], tuple[int, int]], arity: int = 2) -> Table:
    table = Table(arity)
    for t, (iteration, count) in rows.items():
        table.add(t, iteration, count)
    return table


def _applied(table: Table, record: RowChanges) -> dict[tuple[int, ...], tuple[int, int]]:
    """`table`'s tuples once the record is committed, as (iteration, count)."""
    copy = table.copy()
    apply_rows(copy, record.rows, record.news, record.counts)
    return {t: (copy[t], copy.count(t)) for t in copy}


OLD = {(1, 2): (0, 1), (2, 3): (1, 1), (3, 4): (2, 2), (4, 5): (3, 1), (5, 6): (3, 1)}


def test_rewind_keeps_the_rows_below_the_iteration_with_their_ids() -> None:
    table = _table(OLD)
    table.stage((9, 9))
    copy = table.copy()
    rewind(copy, 2)
    assert dict(copy.items()) == {(1, 2): 0, (2, 3): 1}
    assert copy.row((2, 3)) == table.row((2, 3))
    assert rows_between(copy, 1, 2).tolist() == [table.row((2, 3))]
    assert rows_between(copy, 0, 1).tolist() == [table.row((1, 2))]


@pytest.mark.parametrize("slice_rows", [1, 2, 1 << 20])
def test_the_difference_records_changed_gone_rederived_and_new_rows(
    monkeypatch: pytest.MonkeyPatch, slice_rows: int
) -> None:
    """Below the copy's first appended row by row id, after it by probes (a slice at a time):
    a row derived again as it was is no change, one derived again otherwise is recorded at
    its old row, one not derived again is gone, a new tuple is staged."""
    from reasoner.storage import difference

    monkeypatch.setattr(difference, "APPENDED_SLICE", slice_rows)
    table = _table(OLD)
    copy = table.copy()
    rewind(copy, 2)
    copy.set((2, 3), 1, 3)  # kept below the iteration, its count changed
    copy.add((3, 4), 2, 2)  # derived again as it was
    copy.add((4, 5), 4, 1)  # derived again at another iteration
    copy.add((7, 8), 2, 1)  # new; (5, 6) is not derived again
    record = aligned_difference(table, copy)
    assert record.rows.dtype == np.int32
    assert _applied(table, record) == {
        (1, 2): (0, 1),
        (2, 3): (1, 3),
        (3, 4): (2, 2),
        (4, 5): (4, 1),
        (7, 8): (2, 1),
    }
    assert table.row((3, 4)) not in record.rows.tolist()
    assert table.is_staged((7, 8))


def test_a_nullary_relation_derived_again_or_not() -> None:
    table = _table({(): (1, 1)}, arity=0)
    copy = table.copy()
    rewind(copy, 1)
    assert len(aligned_difference(table, copy.copy()).rows) == 1  # gone
    copy.add((), 1, 1)
    assert len(aligned_difference(table, copy).rows) == 0


class _Meter:
    """An evaluation's budget that records its charges and refuses those past `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.charged: list[int] = []

    def charge(self, size: int) -> None:
        self.charged.append(size)
        if size > self.limit:
            raise MemoryError(f"refused {size} bytes")


def test_a_copy_is_charged_to_the_evaluation_before_it_is_made() -> None:
    """A bulk Update copies its stratum's tables (GBs on crdt.dl): the copy is charged to
    the running evaluation's budget first, and a refusal leaves nothing made."""
    table = Table(2)
    table.add_columns([np.arange(200_000), np.arange(200_000) % 7], 1)
    meter = _Meter(1 << 40)
    with allocations.charging_to(meter):
        copy = table.copy()
    assert meter.charged == [copy.nbytes]  # no index: its rows, statuses, counts and slots
    assert dict(copy.items()) == dict(table.items())
    with pytest.raises(MemoryError), allocations.charging_to(_Meter(1 << 20)):
        table.copy()


@pytest.mark.parametrize("slice_rows", [1, 2, 1 << 20])
def test_the_difference_with_a_table_made_apart_records_changed_gone_and_new_rows(
    monkeypatch: pytest.MonkeyPatch, slice_rows: int
) -> None:
    """A stratum made afresh (a rule change) is a new table: each of its tuples is probed in
    the committed one, and the committed rows none of them holds are gone."""
    from reasoner.storage import difference as module

    monkeypatch.setattr(module, "APPENDED_SLICE", slice_rows)
    table = _table(OLD)
    table.stage((9, 9))  # staged by the epoch, not in the result: not recorded
    result = _table({(1, 2): (0, 1), (2, 3): (2, 1), (3, 4): (2, 5), (7, 8): (1, 1)})
    record = module.difference(table, result)
    assert _applied(table, record) == {
        (1, 2): (0, 1),
        (2, 3): (2, 1),
        (3, 4): (2, 5),
        (7, 8): (1, 1),
    }
    assert table.row((1, 2)) not in record.rows.tolist()
    assert len(record.rows) == len(set(record.rows.tolist())) == 5  # 2 changed, 2 gone, 1 new
