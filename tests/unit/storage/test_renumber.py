"""A table's compaction (`reasoner.storage.compact`): when it runs, that it renumbers the
rows without rehashing or relinking them (the hash tables and chains rewritten in place), and
that a re-insertion after a compacted retraction fits the arrays the table has."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from reasoner.storage import Table, apply_rows, commit_rows, compact
from reasoner.storage.renumber import PASS_REMOVALS, THREAD_ROWS
from reasoner.storage.table import ABSENT


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


def _twins() -> tuple[Table, Table]:
    """Two equal tables of 30,000 rows, with rows re-dated, a count beyond a row's word, and
    staged rows after the committed ones."""
    tables = []
    for _ in range(2):
        table, _ = _filled(30_000)
        for r in range(0, 30_000, 11):
            table.set((r % 97, r, -r), r % 5, 3 + r)
        table.set((6, 6, -6), 2, 2**40)
        for i in range(60):
            table.stage((1_000_000 + i, i, 0))
        tables.append(table)
    return tables[0], tables[1]


def _record(table: Table, gone: list[tuple], kept: list[tuple]) -> tuple[np.ndarray, ...]:
    """An Update's record: `gone` removed, `kept` committed at iteration 7 with count 2."""
    rows = table.rows_of(gone + kept).astype(np.int32)
    news = np.array([ABSENT] * len(gone) + [7] * len(kept), dtype=np.int32)
    counts = np.array([0] * len(gone) + [2] * len(kept), dtype=np.int32)
    return rows, news, counts


def _structure(table: Table) -> tuple:
    """What a reader can see of a table, in its rows' and chains' order, and its sizes."""
    return (
        list(table.items_with_counts().items()),
        sorted(table.staged_rows()),
        table.nrows,
        table.layout,
        [(list(table.indexes[k].items()), len(table.indexes[k])) for k in ((0,), (1, 2))],
    )


def test_a_commit_that_compacts_leaves_the_table_that_removals_one_by_one_do() -> None:
    """Removed: every third row, a run of a thousand, the last row of every group (its
    head), a whole group, a staged row and the row whose count is beyond its word. The
    removals leave their tuple slots to the compaction, which must leave the rows, their
    order, the hash tables and every chain exactly as `apply_rows` then `compact`."""
    one_by_one, at_once = _twins()
    dead = set(range(0, 30_000, 3)) | set(range(3_000, 4_000)) | set(range(29_903, 30_000))
    dead |= {r for r in range(30_000) if r % 97 == 5} | {6}
    gone = [(r % 97, r, -r) for r in sorted(dead)] + [(1_000_003, 3, 0)]
    kept = [(r % 97, r, -r) for r in range(1, 600, 3) if r not in dead]
    kept.append((1_000_010, 10, 0))
    apply_rows(one_by_one, *_record(one_by_one, gone, kept))
    assert compact(one_by_one)
    assert commit_rows(at_once, *_record(at_once, gone, kept))
    assert not compact(at_once)  # renumbered already: nothing left to compact
    assert _structure(at_once) == _structure(one_by_one)
    assert (6, 6, -6) not in at_once and (5, 5, -5) not in at_once
    assert at_once.get((1, 1, -1)) == 7 and at_once.count((1, 1, -1)) == 2
    # A removed tuple's slot is a tombstone: a tuple of the same key goes back in as new.
    for table in (one_by_one, at_once):
        for r in (1, 2, 4_001, 29_902):
            assert table.remove((r % 97, r, -r))
        table.insert([(5, 5, -5), (0, 0, 0), (6, 6, -6)], 3)
    assert _structure(at_once) == _structure(one_by_one)
    assert at_once.get((6, 6, -6)) == 3 and at_once.count((6, 6, -6)) == 1


def test_a_record_removing_too_few_rows_to_compact_is_applied_row_by_row() -> None:
    one_by_one, at_once = _twins()
    gone = [(r % 97, r, -r) for r in range(0, 30_000, 40)]
    apply_rows(one_by_one, *_record(one_by_one, gone, []))
    assert not commit_rows(at_once, *_record(at_once, gone, []))
    assert at_once.nrows == 30_060  # the dead rows wait for a later compaction
    assert _structure(at_once) == _structure(one_by_one)
    assert not compact(at_once)


def test_a_record_with_a_row_no_table_holds_still_leaves_the_table_renumbered() -> None:
    """The rows before the bad one are applied, as by `apply_rows`, and the table is
    renumbered all the same, so that no slot is left naming a dead row."""
    one_by_one, at_once = _twins()
    gone = [(r % 97, r, -r) for r in range(0, 30_000, 2)]
    rows, news, counts = _record(at_once, gone, [])
    rows[10_000] = 40_000
    with pytest.raises(KeyError):
        apply_rows(one_by_one, rows, news, counts)
    with pytest.raises(KeyError):
        commit_rows(at_once, rows, news, counts)
    assert at_once.nrows == len(at_once) + 60 == 30_060 - 10_000
    assert at_once.items_with_counts() == one_by_one.items_with_counts()
    for key in ((0,), (1, 2)):
        assert _groups(at_once, key) == _groups(one_by_one, key)
    assert (0, 0, 0) not in at_once and at_once.insert([(0, 0, 0)], 1) == 1


def test_a_renumbering_shared_among_threads_leaves_the_table_one_thread_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The renumbering's passes run on a thread a `THREAD_ROWS` rows, each claiming the next
    pass: the rows, their order, the hash tables and the chains both ways stay what one
    thread makes (four threads here)."""
    import reasoner.support.lanes as lanes

    rows = 4 * THREAD_ROWS + 50_000
    tables = []
    for threads in (1, 4):
        monkeypatch.setattr(lanes, "LANES", threads)
        table, columns = _filled(rows)
        table.set((5, 5, -5), 3, 2**40)
        table.remove_columns([c[1::3] for c in columns])
        assert compact(table)
        tables.append(table)
    one, shared = tables
    kept = [(r % 97, r, -r) for r in range(rows) if r % 3 != 1]
    assert shared.nrows == len(kept) == rows - rows // 3
    assert _structure(one) == _structure(shared)
    # Every tuple is found in the tuple table at its new id, whichever part of it holds it.
    assert shared.rows_of(kept).tolist() == list(range(len(kept)))
    # Rows leave groups from the middle: each group's `prev` links were renumbered too.
    middle = [(4, r, -r) for r in range(392, rows, 97 * 300)]  # 392 = 4 (mod 97), 2 (mod 3)
    assert all(t in shared for t in middle)
    for table in tables:
        table.remove_columns([np.array(c) for c in zip(*middle, strict=True)])
    assert (
        _groups(one, (0,))
        == _groups(shared, (0,))
        == _expected_groups(set(kept) - set(middle), (0,))
    )


def _large_twins(rows: int, indexed: bool = True) -> tuple[Table, Table]:
    """Two equal tables of `rows` rows (`_filled`, or without its key indexes), a count
    beyond a row's word and staged rows after the committed ones."""
    tables = []
    for _ in range(2):
        table = _filled(rows)[0] if indexed else Table(3)
        if not indexed:
            ids = np.arange(rows, dtype=np.int64)
            table.insert_columns([ids % 97, ids, -ids], 1)
        table.set((6, 6, -6), 2, 2**40)
        for i in range(60):
            table.stage((1_000_000 + i, i, 0))
        tables.append(table)
    return tables[0], tables[1]


def _mixed_record(
    table: Table, rows: int, seed: int, dtype: type = np.int32, share: int = 3
) -> tuple[np.ndarray, ...]:
    """A record over `_large_twins`' rows in a random order: one row in `share` removed
    (heads of groups and rows from their middles alike; none when `share` is 0), the staged
    rows and the row whose count is beyond its word among them; every tenth other row
    committed at 7 with count 2, and the staged rows committed when nothing is removed."""
    order = np.random.default_rng(seed).permutation(rows)
    gone = {(r % 97, r, -r) for r in order[: rows // share].tolist()} if share else set()
    if share:
        gone |= {(6, 6, -6)} | {(1_000_000 + i, i, 0) for i in range(60)}
    entries = [(r % 97, r, -r) for r in order.tolist()]
    entries = [t for t in entries if t in gone or t[1] % 10 == 0] + [
        (1_000_000 + i, i, 0) for i in range(60)
    ]
    record = table.rows_of(entries).astype(dtype)
    news = np.array([ABSENT if t in gone else 7 for t in entries], dtype=dtype)
    return record, news, np.where(news == ABSENT, 0, 2).astype(dtype)


def _row_by_row(table: Table, record: tuple[np.ndarray, ...], stop: int) -> None:
    """The record's first `stop` entries applied as `apply_rows` applies a record of fewer
    than `PASS_REMOVALS` removals: each removal in turn out of the tuple table and every chain
    (`Table._kill`)."""
    for start in range(0, stop, PASS_REMOVALS - 1):
        end = min(stop, start + PASS_REMOVALS - 1)
        apply_rows(table, *(words[start:end] for words in record))


# Each word width on one thread and on several: a case builds two tables of 200,000 rows.
@pytest.mark.parametrize(("threads", "dtype"), [(1, np.int64), (2, np.int32), (4, np.int64)])
@pytest.mark.parametrize("compacting", [False, True])
def test_a_large_record_removes_its_rows_a_structure_at_a_time_as_row_by_row(
    monkeypatch: pytest.MonkeyPatch, threads: int, compacting: bool, dtype: type
) -> None:
    """From `PASS_REMOVALS` removals, a record's leave their chains (and, by `apply_rows`,
    their tuple slots) in passes after its loop, one a structure, shared among the threads.
    The table is the one that removing them row by row in the record's order leaves: rows,
    counts, chains in order, slots (found, and reused as tombstones by later writes)."""
    import reasoner.support.lanes as lanes

    monkeypatch.setattr(lanes, "LANES", threads)
    rows = 3 * PASS_REMOVALS + 1_000
    by_row, in_passes = _large_twins(rows)
    record = _mixed_record(in_passes, rows, seed=threads, dtype=dtype)
    assert (record[1] == ABSENT).sum() >= PASS_REMOVALS
    _row_by_row(by_row, record, len(record[0]))
    if compacting:
        assert compact(by_row)
        assert commit_rows(in_passes, *record)
    else:
        apply_rows(in_passes, *record)
    assert _structure(in_passes) == _structure(by_row)
    kept = [t for t, _ in by_row.items()]
    assert in_passes.rows_of(kept).tolist() == by_row.rows_of(kept).tolist()
    later = [(r % 97, r, -r) for r in range(0, rows, 7)]
    for table in (by_row, in_passes):
        table.remove_columns([np.array(c) for c in zip(*later, strict=True)])
        assert table.insert(later[::2], 4) == len(later[::2])
    assert _structure(in_passes) == _structure(by_row)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_a_group_left_in_chain_order_is_unlinked_as_row_by_row(
    monkeypatch: pytest.MonkeyPatch, dtype: type
) -> None:
    """A group's rows removed head first, each its group's head once the one before it has
    left (a few entries before, with commits between): the unlink pass hashed some of them
    ahead as heads and the others only once they became heads. The chains end as row by
    row."""
    import reasoner.support.lanes as lanes

    monkeypatch.setattr(lanes, "LANES", 2)
    rows = 3 * PASS_REMOVALS + 1_000
    by_row, in_passes = _large_twins(rows)
    chain = [(5, r, -r) for r in range(rows - 1, -1, -1) if r % 97 == 5]  # the head first
    assert in_passes.indexes[(0,)].get(5)[: len(chain)] == tuple(chain)
    others = [(r % 97, r, -r) for r in range(0, rows, 2) if r % 97 != 5]
    committed = [(r % 97, r, -r) for r in range(1, rows, 20) if r % 97 != 5]
    entries = [t for pair in zip(chain, committed, strict=False) for t in pair] + others
    gone = set(chain) | set(others)
    record = in_passes.rows_of(entries).astype(dtype)
    news = np.array([ABSENT if t in gone else 7 for t in entries], dtype=dtype)
    record = (record, news, np.where(news == ABSENT, 0, 2).astype(dtype))
    assert (news == ABSENT).sum() >= PASS_REMOVALS
    _row_by_row(by_row, record, len(entries))
    apply_rows(in_passes, *record)
    assert in_passes.indexes[(0,)].get(5) is None
    assert _structure(in_passes) == _structure(by_row)


@pytest.mark.parametrize("shape", ["no key index", "only commits"])
def test_a_large_record_of_no_chain_or_no_removal_is_applied_as_row_by_row(
    monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """Without a key index only the tuple slots' pass runs; without a removal, none."""
    import reasoner.support.lanes as lanes

    monkeypatch.setattr(lanes, "LANES", 2)
    rows = 3 * PASS_REMOVALS + 1_000
    by_row, in_passes = _large_twins(rows, indexed=shape != "no key index")
    record = _mixed_record(in_passes, rows, seed=3, share=3 if shape == "no key index" else 0)
    _row_by_row(by_row, record, len(record[0]))
    apply_rows(in_passes, *record)
    assert in_passes.items_with_counts() == by_row.items_with_counts()
    assert sorted(in_passes.staged_rows()) == sorted(by_row.staged_rows())
    assert in_passes.layout == by_row.layout
    if shape == "no key index":  # the slots of the removed rows are tombstones
        assert in_passes.insert([(5, 5, -5)], 4) == by_row.insert([(5, 5, -5)], 4)
        assert in_passes.items_with_counts() == by_row.items_with_counts()


@pytest.mark.parametrize("compacting", [False, True])
@pytest.mark.parametrize("refused", ["no such row", "a row removed twice"])
def test_a_large_record_refused_midway_takes_the_rows_before_out_of_every_chain(
    monkeypatch: pytest.MonkeyPatch, compacting: bool, refused: str
) -> None:
    """A row no table holds, or one the record removed already, after 100,000 entries of a
    large record: those entries are applied, their removals out of every chain and tuple slot
    before the error is raised (a reader must not meet a dead row in a group), as row by
    row, and the collector is left as the caller had it."""
    import reasoner.support.lanes as lanes

    monkeypatch.setattr(lanes, "LANES", 2)
    rows = 300_000
    by_row, in_passes = _large_twins(rows)
    record = _mixed_record(in_passes, rows, seed=7)
    gone = np.flatnonzero(record[1][:100_000] == ABSENT)
    record[0][100_000] = rows + 1_000 if refused == "no such row" else record[0][gone[-1]]
    record[1][100_000] = ABSENT
    assert (record[1] == ABSENT).sum() >= PASS_REMOVALS
    _row_by_row(by_row, record, 100_000)
    if compacting:  # the collector is as the caller had it, on or off
        gc.disable()
    try:
        with pytest.raises(KeyError):
            (commit_rows if compacting else apply_rows)(in_passes, *record)
        assert gc.isenabled() is not compacting
    finally:
        gc.enable()
    if compacting:
        assert compact(by_row, force=True)
    assert _structure(in_passes) == _structure(by_row)
    for key in ((0,), (1, 2)):
        assert _groups(in_passes, key) == _expected_groups(
            {t for t, _ in in_passes.items()} | set(in_passes.staged_rows()), key
        )
