"""A table's key indexes released (`Table.release_chains`) and rebuilt: while released, every
probe answers by a scan exactly as the chains did (rows and order), and any write rebuilds
them first, so that no write ever meets a missing chain. The same of its tuple table
(`scans.release_slots`) and lookups."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.storage import Table, compact, matching, release_slots
from reasoner.storage.state import RelationStore
from reasoner.support import allocations
from reasoner.support.deadline import BootstrapCancelled
from tests.conftest import examples

ROWS = st.lists(st.tuples(*[st.integers(0, 6)] * 3), max_size=120, unique=True)
KEYS = [(0,), (1, 2)]


def _table(rows: list[tuple[int, int, int]], removed: list[int], staged: int) -> Table:
    table = Table(3)
    for t in rows:
        table.add(t, len(t) % 3)
    for i in removed:
        if i < len(rows):
            table.remove(rows[i])
    for i in range(staged):
        table.stage((7, i, i))  # staged rows are in the chains too
    for columns in KEYS:
        table.index(columns)
    return table


def _probes(table: Table) -> dict[tuple[tuple[int, ...], object], object]:
    """Every key's answer from every index, with `in`, in the order the index gives."""
    found: dict[tuple[tuple[int, ...], object], object] = {}
    for columns, index in table.indexes.items():
        keys = range(9) if len(columns) == 1 else [(a, b) for a in range(9) for b in range(9)]
        for key in keys:
            found[columns, key] = (index.get(key), key in index, len(index))
    return found


@settings(max_examples=examples(60))
@given(ROWS, st.lists(st.integers(0, 119), max_size=60), st.integers(0, 3))
def test_a_released_index_answers_as_its_chains_did(
    rows: list[tuple[int, int, int]], removed: list[int], staged: int
) -> None:
    table = _table(rows, removed, staged)
    before, layout = _probes(table), table.layout
    freed = table.release_chains()
    assert table.chains_released
    assert freed == layout["chains"] + layout["index_slots"]
    assert table.layout["chains"] == table.layout["index_slots"] == 0
    assert _probes(table) == before
    table.restore_chains()
    assert not table.chains_released
    assert _probes(table) == before
    assert table.layout == layout


@settings(max_examples=examples(60))
@given(ROWS, st.lists(st.integers(0, 119), max_size=60), st.integers(1, 400))
def test_a_write_rebuilds_the_chains_first(
    rows: list[tuple[int, int, int]], removed: list[int], added: int
) -> None:
    """Appends past the arrays' capacity (which must not grow a released chain), a removal,
    and a compaction each meet whole chains."""
    table, fresh = _table(rows, removed, 0), _table(rows, removed, 0)
    table.release_chains()
    for i in range(added):
        for t in (table, fresh):
            t.add((8, i, i % 5), 1)
    assert not table.chains_released
    assert _probes(table) == _probes(fresh)
    table.release_chains()
    for t in (table, fresh):
        t.remove((8, 0, 0))
    assert not table.chains_released
    assert _probes(table) == _probes(fresh)
    table.release_chains()
    for t in (table, fresh):
        for i in range(1, added):
            t.remove((8, i, i % 5))
        compact(t, force=True)
    assert _probes(table) == _probes(fresh)


def _lookups(table: Table, rows: list[tuple[int, int, int]]) -> list[object]:
    """Every lookup of a tuple: committed, removed, staged or absent."""
    tuples = [*rows, *[(7, i, i) for i in range(4)], (9, 9, 9)]
    return [
        (t in table, table.get(t), table.count(t), table.is_staged(t), table.row(t)) for t in tuples
    ]


@settings(max_examples=examples(60))
@given(ROWS, st.lists(st.integers(0, 119), max_size=60), st.integers(1, 3), st.integers(0, 4))
def test_a_released_tuple_table_answers_by_a_scan_until_a_write_rebuilds_it(
    rows: list[tuple[int, int, int]], removed: list[int], staged: int, write: int
) -> None:
    """Lookups answer as the tuple table did; then each kind of write (an append, a removal
    of a staged row, a block of rows, a compaction) rebuilds it first and leaves the table a
    twin of one never released; a copy builds its own and leaves its source released."""
    table, fresh = _table(rows, removed, staged), _table(rows, removed, staged)
    before, layout = _lookups(table, rows), table.layout
    assert release_slots(table) == layout["tuple_slots"] > 0
    assert table.layout["tuple_slots"] == release_slots(table) == 0
    assert _lookups(table, rows) == before
    for t in (table, fresh):
        if write == 0:
            t.add((8, 8, 8), 2)
        elif write == 1:
            assert t.remove((7, 0, 0))  # staged
        elif write == 2:
            t.add_columns([np.arange(3), np.arange(3) + 50, np.zeros(3, np.int64)], 4)
        elif write == 3:
            compact(t, force=True)
    copied = table.copy() if write == 4 else table
    assert copied.layout["tuple_slots"] > 0
    assert (table.layout["tuple_slots"] == 0) == (write == 4)  # a copy only reads its source
    assert _lookups(copied, rows) == _lookups(fresh, rows)
    assert _probes(table) == _probes(fresh)


def test_a_selection_on_a_released_table_scans_and_builds_no_index() -> None:
    store = RelationStore("r", 3)
    rows = [(i % 4, i % 3, i) for i in range(200)]
    for t in rows:
        store.add(t, 0, 1)
    store.stage((1, 1, 999))  # staged: not committed, so never selected
    store.index((0,))
    store.table.release_chains()
    for key in ({0: 1}, {1: 2}, {0: 1, 1: 1}):
        expected = [t for t in rows if all(t[c] == v for c, v in key.items())]
        assert sorted(store.select(key)) == sorted(expected)
    assert set(store.indexes) == {(0,)}  # none made for column 1


def test_matching_refuses_what_no_row_can_hold() -> None:
    table = Table(2)
    table.add((1, 2), 0)
    assert matching(table, (0,), (1,)) == [(1, 2)]
    assert matching(table, (0,), (2**70,)) == []


class _Refusing:
    """A meter that refuses its `allowed`-th charge and after."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.charges = 0

    def charge(self, size: int) -> None:
        self.charges += 1
        if self.charges > self.allowed:
            raise BootstrapCancelled(f"refused {size} bytes")  # as an epoch's budget does


def test_a_refused_restore_leaves_the_index_released_and_whole() -> None:
    """A charge may fail midway through a rebuild (an epoch's budget): the index must stay
    released, not half-linked, whatever charge fails; the next restore makes it whole."""
    table = Table(2)
    table.add_columns([np.arange(200_000) % 5_000, np.arange(200_000)], 1)
    for columns in ((0,), (1,)):
        table.index(columns)
    keys = [0, 17, 4_999, 150_000, 199_999]  # late rows: linked last
    expected = {c: [i.get(k) for k in keys] for c, i in table.indexes.items()}
    refused = 0
    for allowed in range(12):
        table.release_chains()
        try:
            with allocations.charging_to(_Refusing(allowed)):
                table.restore_chains()
        except BootstrapCancelled:
            refused += 1
            assert table.chains_released
        assert {c: [i.get(k) for k in keys] for c, i in table.indexes.items()} == expected
    assert refused >= 3  # the first index's chains, its key table, the second's
    table.restore_chains()
    assert not table.chains_released
    assert {c: [i.get(k) for k in keys] for c, i in table.indexes.items()} == expected
