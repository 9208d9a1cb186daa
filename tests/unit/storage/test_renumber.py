"""A table's compaction (`reasoner.storage.compact`): when it runs, that it renumbers the
rows without rehashing or relinking them (the hash tables and chains rewritten in place), and
that a re-insertion after a compacted retraction fits the arrays the table has."""

from __future__ import annotations

import numpy as np

from reasoner.storage import Table, compact


def _filled(rows: int) -> tuple[Table, list[np.ndarray]]:
    """A table of `rows` rows of three columns, with a key index of many-row groups (column
    0: 97 values) and one of one-row groups (columns 1 and 2), and its columns."""
    table = Table(3)
    table.index((0,))
    table.index((1, 2))
    ids = np.arange(rows, dtype=np.int64)
    columns = [ids % 97, ids, -ids]
    table.insert_columns(columns, 1)
    return table, columns


def _groups(table: Table, columns: tuple[int, ...]) -> dict:
    return {k: set(rows) for k, rows in table.indexes[columns].items()}


def _expected_groups(tuples: set[tuple], columns: tuple[int, ...]) -> dict:
    out: dict = {}
    for t in tuples:
        key = t[columns[0]] if len(columns) == 1 else tuple(t[c] for c in columns)
        out.setdefault(key, set()).add(t)
    return out


def test_compaction_starts_at_an_eighth_of_the_rows_dead() -> None:
    table, columns = _filled(16_384)
    last = 16_384 // 8 - 1
    table.remove_columns([c[:last] for c in columns])
    assert not compact(table)  # one row short of an eighth
    assert table.remove((last % 97, last, -last))
    assert compact(table)
    assert table.nrows == len(table) == 16_384 - 16_384 // 8
    small, small_columns = _filled(2_000)
    small.remove_columns([c[:1_000] for c in small_columns])
    assert not compact(small)  # half dead, but too few rows to be worth a pass


def test_renumbered_rows_keep_their_tuples_iterations_counts_and_groups() -> None:
    """Every third row dead, rows staged among them: the hash tables hold more entries than
    tombstones, so they are rewritten in place rather than rebuilt."""
    table, columns = _filled(30_000)
    for r in range(0, 30_000, 7):
        table.set((r % 97, r, -r), r % 5, 3 + r)
    table.set((1, 1, -1), 2, 2**40)  # a count beyond the row's word
    staged = {(1_000_000 + i, i, 0) for i in range(50)}
    for t in staged:
        table.stage(t)
    dead = [c[2::3] for c in columns]
    table.remove_columns(dead)
    before = table.items_with_counts()
    tuple_slots = table.layout["tuple_slots"]
    assert compact(table)
    assert table.layout["tuple_slots"] == tuple_slots  # not rehashed
    assert table.nrows == len(before) + len(staged)
    assert table.items_with_counts() == before
    assert set(table.staged_rows()) == staged
    assert all(table.get(t) == it for t, (it, _) in before.items())
    assert (2, 2, -2) not in table and (1, 1, -1) in table
    everything = set(before) | staged
    for key in ((0,), (1, 2)):
        assert _groups(table, key) == _expected_groups(everything, key)
    # The chains are links both ways: a row leaves a group of many after the renumbering.
    table.remove((1, 1, -1))
    assert _groups(table, (0,)) == _expected_groups(everything - {(1, 1, -1)}, (0,))


def test_a_table_of_mostly_tombstones_is_rebuilt_smaller() -> None:
    table, columns = _filled(40_000)
    tuple_slots = table.layout["tuple_slots"]
    table.remove_columns([c[:36_000] for c in columns])
    assert compact(table)
    assert table.layout["tuple_slots"] < tuple_slots
    left = {(r % 97, r, -r) for r in range(36_000, 40_000)}
    assert {t for t, _ in table.items()} == left
    for key in ((0,), (1, 2)):
        assert _groups(table, key) == _expected_groups(left, key)


def test_a_reinsertion_after_a_compacted_retraction_fits_the_arrays() -> None:
    """The reason compaction starts at an eighth: a retraction of a fifth then a re-insertion
    of the same rows would otherwise append them after the dead ones and grow the arrays."""
    table, columns = _filled(100_000)
    rows_bytes = table.layout["rows"]
    fifth = [c[::5] for c in columns]
    table.remove_columns(fifth)
    assert compact(table)
    assert table.insert_columns(fifth, 2) == 20_000
    assert table.layout["rows"] == rows_bytes
    assert len(table) == 100_000
