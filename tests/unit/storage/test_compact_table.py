"""The compiled table (`reasoner.storage.Table`) against a dict model: growth, deletion and
tombstones, re-insertion after deletion, compaction, keys built to collide, the bounds of a
64-bit row, and the snapshot and iteration guarantees the plans and the readers rely on."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.storage import Table, TupleSet, apply_rows, compact, count_where
from tests.conftest import examples

INT64 = st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(0, 40)


def _groups(model: dict[tuple, int], staged: set[tuple], columns: tuple[int, ...]) -> dict:
    out: dict[object, set] = {}
    for t in (*model, *staged):
        key = tuple(t[c] for c in columns)
        out.setdefault(key[0] if len(columns) == 1 else key, set()).add(t)
    return out


operations = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "remove", "stage", "unstage", "set", "compact", "insert", "stage_batch"]
        ),
        st.tuples(SMALL, st.one_of(SMALL, INT64)),
        st.integers(0, 5),
    ),
    max_size=300,
)


@settings(max_examples=examples(200))
@given(operations)
def test_the_table_behaves_as_a_dict_with_indexes(ops) -> None:
    table = Table(2)
    for columns in ((0,), (1,), (1, 0)):
        table.index(columns)
    model: dict[tuple, int] = {}
    staged: set[tuple] = set()
    for op, t, iteration in ops:
        if op == "add" and t not in model:
            table.add(t, iteration)
            model[t] = iteration
            staged.discard(t)
        elif op == "remove":
            assert table.remove(t) == (t in model or t in staged)
            model.pop(t, None)
            staged.discard(t)
        elif op == "stage":
            assert table.stage(t) == (t not in model and t not in staged)
            if t not in model:
                staged.add(t)
        elif op == "unstage":
            assert table.unstage(t) == (t in staged)
            staged.discard(t)
        elif op == "set" and t in model:
            table.set(t, iteration)
            model[t] = iteration
        elif op == "compact":
            compact(table, force=True)
        elif op == "insert":  # a batch, with a repeat: rows held (committed or staged) stay
            batch = [t, t, (t[1] % 41, t[0])]
            new = {u for u in batch if u not in model and u not in staged}
            columns = [np.array([u[c] for u in batch], dtype=np.int64) for c in range(2)]
            assert table.insert_columns(columns, iteration) == len(new)
            model.update(dict.fromkeys(new, iteration))
        elif op == "stage_batch":  # the rows held keep their status; a repeat gets one row
            batch = [t, (t[1] % 41, t[0]), t]
            columns = [np.array([u[c] for u in batch], dtype=np.int64) for c in range(2)]
            new = {u for u in batch if u not in model and u not in staged}
            assert table.insert_columns(columns, -5, staged=True) == len(new)
            staged |= new
        assert len(table) == len(model)
        assert dict(table.items()) == model
        assert set(table.staged_rows()) == staged
        counts = np.bincount(np.array(list(model.values()), dtype=np.int64))
        assert table.iteration_counts().tolist() == counts.tolist()
        assert all(table.get(u) == i and u in table for u, i in model.items())
        assert all(u not in table and table.is_staged(u) for u in staged)
        for columns, index in table.indexes.items():
            assert {k: set(rows) for k, rows in index.items()} == _groups(model, staged, columns)


def test_growth_keeps_every_row_and_the_index() -> None:
    table = Table(3)
    index = table.index((1,))
    for i in range(100_000):
        table.add((i, i % 97, -i), i % 5)
    assert len(table) == 100_000
    assert all(table.get((i, i % 97, -i)) == i % 5 for i in range(0, 100_000, 997))
    assert len(index) == 97
    assert sorted(t[0] for t in index.get(13)) == list(range(13, 100_000, 97))


def test_reinsertion_after_deletion_and_tombstones_do_not_accumulate() -> None:
    table = Table(2)
    index = table.index((0,))
    for round_ in range(50):
        for i in range(1000):
            table.add((i, round_), round_)
        for i in range(1000):
            assert table.remove((i, round_))
        compact(table)
    assert len(table) == 0 and len(index) == 0
    assert index.get(5) is None
    table.add((5, 1), 7)
    assert table.get((5, 1)) == 7 and index.get(5) == ((5, 1),)
    # 50,000 insertions and as many deletions leave tables sized for 1,000 rows, not 50,000.
    assert table.nbytes < 200_000


def test_keys_built_to_collide_stay_fast_and_correct() -> None:
    """Multiples of a large power of two agree on every low bit: a table hashing the raw value
    would put them all in one probe sequence. The seeded hash spreads them."""
    table = Table(1)
    index = table.index((0,))
    keys = [i << 32 for i in range(50_000)]
    for k in keys:
        table.add((k,), 0)
    assert all((k,) in table for k in keys)
    assert ((1 << 32) + 1,) not in table
    assert all(index.get(k) == ((k,),) for k in keys[:1000])


def test_a_probe_returns_a_snapshot() -> None:
    table = Table(2)
    index = table.index((0,))
    table.add((1, 1), 0)
    table.add((1, 2), 0)
    rows = index.get(1)
    for t in rows:
        table.add((1, t[1] + 10), 0)  # inserting while iterating the probe's rows is safe
    assert set(rows) == {(1, 1), (1, 2)}
    assert set(index.get(1)) == {(1, 1), (1, 2), (1, 11), (1, 12)}


def test_a_group_of_every_row_of_its_table_is_not_taken_for_a_loop() -> None:
    """`Index.get` refuses a group longer than its table (a chain that loops), not one as
    long, staged rows included."""
    table = Table(2)
    index = table.index((0,))
    for j in range(5):
        table.add((1, j), 0)
    table.stage((1, 5))
    assert sorted(index.get(1)) == [(1, j) for j in range(6)]


def test_iterating_a_changing_table_raises() -> None:
    table = Table(1)
    table.add((1,), 0)
    table.add((2,), 0)
    rows = iter(table)
    next(rows)
    table.add((3,), 0)
    with pytest.raises(RuntimeError):
        next(rows)


def test_rows_hold_64_bit_ints_only() -> None:
    table = Table(2)
    table.add((2**63 - 1, -(2**63)), 0)
    assert (2**63 - 1, -(2**63)) in table
    assert (2**63, 0) not in table  # not representable: absent, as in a dict
    assert table.get((1, 2, 3)) is None  # another arity: absent
    with pytest.raises(ValueError):
        table.add((2**64, 0), 0)
    with pytest.raises(TypeError):
        table.get([1, 2])
    with pytest.raises(ValueError):
        table.add((1, 2), -1)


def test_columns_round_trip_and_staged_rows_commit() -> None:
    table = Table(2)
    table.stage((3, 30))
    table.add_columns([np.array([1, 2, 3]), np.array([10, 20, 30])], 4)
    assert dict(table.items()) == {(1, 10): 4, (2, 20): 4, (3, 30): 4}
    assert table.staged == 0
    values, iterations = table.columns()
    assert [v.tolist() for v in values] == [[3, 1, 2], [30, 10, 20]]
    assert iterations.tolist() == [4, 4, 4]
    with pytest.raises(KeyError):
        table.add_columns([np.array([1]), np.array([10])], 5)


def test_the_empty_tuple() -> None:
    table = Table(0)
    index = table.index(())
    assert () not in table
    table.add((), 2)
    assert table.get(()) == 2 and index.get(()) == ((),)
    table.remove(())
    assert len(table) == 0 and () not in index


def test_rows_widen_when_a_value_needs_64_bits() -> None:
    table = Table(2)
    index = table.index((1,))
    for i in range(1000):
        table.add((i, i % 10), 1)
    narrow = table.nbytes
    assert not table.wide
    table.add((2**40, 3), 2)
    assert table.wide and table.nbytes > narrow
    assert all(table.get((i, i % 10)) == 1 for i in range(1000))
    assert table.get((2**40, 3)) == 2
    assert len(index.get(3)) == 101
    other = Table(1)
    other.add_columns([np.array([1, -(2**35)])], 0)
    assert other.wide and dict(other.items()) == {(1,): 0, (-(2**35),): 0}


def test_a_tuple_set_is_a_set() -> None:
    facts = TupleSet(2, [(1, 2), (1, 2), (3, 4)])
    assert len(facts) == 2 and (1, 2) in facts and (2, 1) not in facts
    facts.update([(3, 4), (5, 6)])
    copy = facts.copy()
    facts.difference_update([(1, 2), (7, 8)])
    assert set(facts) == {(3, 4), (5, 6)}
    assert set(copy) == {(1, 2), (3, 4), (5, 6)}
    assert [c.tolist() for c in copy.columns()] == [[1, 3, 5], [2, 4, 6]]
    empty = TupleSet(0)
    empty.update([(), ()])
    assert len(empty.copy()) == 1


def test_absent_probes_committed_rows() -> None:
    one, two = Table(2), Table(2)
    for t in [(1, 2), (3, 4), (5, 6)]:
        one.add(t, 0)
    two.add((3, 4), 5)
    two.stage((5, 6))  # staged is not committed
    two.add((2**40, 1), 0)
    assert two.absent(one.columns()[0]).tolist() == [True, False, True]
    assert one.absent(two.columns()[0]).tolist() == [False, True]


def test_rows_of_columns_finds_rows_of_any_status() -> None:
    """Row ids of rows given as columns, staged ones too (the kernel drives an iteration
    from them), -1 for a row no tuple holds; the columns must match the arity."""
    table = Table(2)
    table.add((3, 4), 0)
    table.stage((2**40, 1))
    rows = table.rows_of_columns([np.array([2**40, 3, 3]), np.array([1, 4, 5])])
    assert rows.tolist() == [table.row((2**40, 1)), table.row((3, 4)), -1]
    assert rows.tolist() == table.rows_of([(2**40, 1), (3, 4), (3, 5)]).tolist()
    with pytest.raises(ValueError, match="1 columns for a relation of arity 2"):
        table.rows_of_columns([np.array([3])])


def test_counts_beside_the_rows_and_past_32_bits() -> None:
    table = Table(1)
    table.add((1,), 0)
    table.add((2,), 3, 7)
    table.add_columns([np.array([3, 4])], 2, np.array([1, 2**40]))
    assert [table.count((i,)) for i in (1, 2, 3, 4)] == [1, 7, 1, 2**40]
    assert table.counts_view.get((9,), 1) == 1
    table.update({(4,): 5, (2,): 4}, {(2,): 2**33})  # (4,) back to one derivation
    assert table.items_with_counts() == {(1,): (0, 1), (2,): (4, 2**33), (3,): (2, 1), (4,): (5, 1)}
    counts = table.columns(with_counts=True)[2]
    assert counts.tolist() == [1, 2**33, 1, 1]
    table.remove((2,))
    table.add((2,), 1)
    assert table.count((2,)) == 1
    with pytest.raises(ValueError):
        table.set((1,), 0, 0)


def test_counts_on_both_sides_of_the_16_bit_word() -> None:
    """A count up to 65,535 sits in the row's count word, a larger one in the table's dict;
    a count moves between them both ways, and a compaction keeps both kinds."""
    table = Table(1)
    table.add_columns([np.arange(4000)], 1, np.full(4000, 65535))
    table.set((0,), 1, 65536)
    table.set((1,), 1, 2**31)
    table.set((2,), 1, 65536)
    table.set((2,), 1, 3)  # back into the word
    for value in range(3, 3000):
        table.remove((value,))
    assert compact(table)
    assert table.items_with_counts() == {
        (0,): (1, 65536),
        (1,): (1, 2**31),
        (2,): (1, 3),
        **{(v,): (1, 65535) for v in range(3000, 4000)},
    }
    assert table.columns(with_counts=True)[2][:3].tolist() == [65536, 2**31, 3]


def test_a_copy_beside_a_writer_sees_only_real_rows() -> None:
    """`columns` lets go of the GIL while it copies: a writer growing, compacting and widening
    the table meanwhile makes it start again, never read moved memory."""
    table = Table(2)
    table.add_columns([np.arange(300_000), np.arange(300_000)], 0)
    done = threading.Event()

    def write() -> None:
        i = 300_000
        while not done.is_set():
            for j in range(i, i + 5000):
                table.add((j, j), 1)
            for j in range(i - 300_000, i - 295_000):
                table.remove((j, j))
            compact(table)
            i += 5000
        table.add((2**40, 2**40), 2)  # widening, too

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(30):
            (first, second), iterations = table.columns()
            assert len(first) == len(second) == len(iterations)
            assert (first == second).all()
    finally:
        done.set()
        writer.join()
    (first, second), _ = table.columns()
    assert len(first) == len(table) and (first == second).all()


def test_the_row_level_operations_the_update_kernel_uses() -> None:
    """By row id, as the compiled Update records an epoch: a staged row committed, a
    committed one re-dated with a large count, one removed; a discard's unstaging touches
    staged rows only; ids map back and forth to tuples."""
    table = Table(2)
    table.add((1, 2), 0)
    table.add((3, 4), 1)
    table.stage((5, 6))
    table.stage((7, 8))
    rows = table.rows_of([(1, 2), (3, 4), (5, 6), (7, 8), (9, 9)])
    assert rows.tolist()[-1] == -1 and len(set(rows[:4].tolist())) == 4
    assert table.tuples(rows[:4]) == [(1, 2), (3, 4), (5, 6), (7, 8)]
    assert (7, 8) in table.staged_view and (1, 2) not in table.staged_view
    assert len(table.staged_view) == 2 and sorted(table.staged_view) == [(5, 6), (7, 8)]
    assert sorted(table.committed_rows().tolist()) == sorted(rows[:2].tolist())
    absent = 1 << 62
    apply_rows(table, rows[[0, 1, 2]], np.array([absent, 3, 2]), np.array([0, 2**40, 1]))
    assert dict(table.items()) == {(3, 4): 3, (5, 6): 2}
    assert table.count((3, 4)) == 2**40 and table.count((5, 6)) == 1
    table.unstage_rows(rows)  # (7, 8) only: the rest is committed or gone
    assert len(table.staged_view) == 0 and len(table) == 2
    with pytest.raises(KeyError):
        apply_rows(table, rows[[0]], np.array([1]), np.array([1]))  # a removed row


def test_an_update_record_of_int32_rows_and_iterations_commits_as_int64_does() -> None:
    """The overlay holds an Update's record as int32 row ids and iterations (2**31 - 1 for
    "absent") and int32 counts, int64 counts for a relation where one does not fit: 12 B a
    row instead of 24 while the strata above run. Committed and read back, each width gives
    the same table; an iteration of 2**31 - 1 is no table's, since it means absent."""
    absent = 2**31 - 1
    for counts in (np.array([0, 7, 1], dtype=np.int32), np.array([0, 2**40, 1])):
        table = Table(2)
        table.add((1, 2), 0)
        table.add((3, 4), 1)
        table.stage((5, 6))
        rows = table.rows_of([(1, 2), (3, 4), (5, 6)]).astype(np.int32)
        assert table.committed_mask(rows).tolist() == [True, True, False]
        apply_rows(table, rows, np.array([absent, 3, 2], dtype=np.int32), counts)
        assert dict(table.items()) == {(3, 4): 3, (5, 6): 2}
        assert table.count((3, 4)) == int(counts[1]) and table.count((5, 6)) == 1
        assert table.committed_mask(rows).tolist() == [False, True, True]
    with pytest.raises(ValueError, match="2\\*\\*31 - 1"):
        table.add((7, 8), absent)


def test_a_dropped_table_with_indexes_is_freed_without_the_cycle_collector() -> None:
    """No reference cycle between a table and its indexes: a state dropped during an epoch
    (which defers the collector) goes at once, not at the next full collection."""
    gc.collect()
    gc.disable()
    try:
        table = Table(2)
        table.add_columns([np.arange(100), np.arange(100)], 0)
        index = table.index((1,))
        assert index.get(7) == ((7, 7),)
        assert table.indexes[(1,)].columns == (1,)
        del table, index
        assert gc.collect() == 0
    finally:
        gc.enable()


@settings(max_examples=examples(100))
@given(
    st.lists(st.tuples(SMALL, st.one_of(SMALL, INT64)), max_size=60, unique=True),
    st.lists(st.integers(0, 59), max_size=10, unique=True),
    st.integers(0, 70),
    st.integers(0, 70),
    SMALL,
)
def test_count_where_is_the_size_of_a_selection_over_committed_rows(
    rows: list[tuple[int, int]], removed: list[int], start: int, stop: int, value: int
) -> None:
    """`count_where` counts the committed rows of a row id range holding given values: what
    the Spark planner broadcasts by, so a count too low would be a wrong plan."""
    table = Table(2)
    for t in rows:
        table.add(t, 0)
    for i in removed:
        if i < len(rows):
            table.remove(rows[i])
    ids = table.committed_in(start, stop)
    first, second = table.values_of(ids)
    assert count_where(table, [0], [value], start, stop) == int((first == value).sum())
    both = int(((first == value) & (second == value)).sum())
    assert count_where(table, [0, 1], [value, value], start, stop) == both
    assert count_where(table, [], [], start, stop) == len(ids)
    with pytest.raises(ValueError, match="no column 2"):
        count_where(table, [2], [value], start, stop)


def test_a_table_full_of_tombstones_is_rebuilt_with_room_not_at_every_insertion() -> None:
    """A few rows retracted and as many others added, epoch after epoch, on a table whose
    tombstones filled it while its entries alone nearly fill the same size: each rebuild must
    leave room for many more insertions, not just the next few. Rebuilt at the same size, the
    table (and its key table) were rebuilt at nearly every cycle: O(rows) per insertion."""
    table = Table(2)
    table.index((0,))
    for i in range(815):  # 1,024 slots hold 819 entries under the 0.8 load
        table.add((i, i), 1)
    before = table.rebuilds
    added = 10_000
    for cycle in range(100):
        for j in range(5):
            assert table.remove((5 * cycle + j, 5 * cycle + j))
        compact(table)
        for _ in range(5):
            table.add((added, added), 1)
            added += 1
    assert table.rebuilds - before <= 2
    assert len(table) == 815
