"""A large table's hash tables made by the lanes (`reasoner.storage.table_lanes`): rebuilt,
every row is found where one thread's rebuild would find it, the rows removed before are gone,
the table grows as one thread's does (its count of used slots is the same), and a row being
added is the writer's, whatever a reader's probe loads meanwhile; a key index built on them
has one thread's groups, each chain in one thread's order."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import reasoner.storage.table_lanes as table_lanes
from reasoner.storage.table import Table
from reasoner.support import lanes

FIRST = 1_600_000  # past 0.8 x 2**21 rows with what follows: a rebuild into 2**22 slots
REMOVED = 100_000
THEN = 700_000  # the rows pass 2**21, past which the slots give up a hash bit
MORE = 1_200_000  # and past 0.8 x 2**22 live rows: one more rebuild, into 2**23 slots
KEYS = 5000  # the second column's values: the groups of an index on it


def _columns(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 1 << 40, n, dtype=np.int64), rng.integers(0, KEYS, n, dtype=np.int64)]


def _grown() -> tuple[Table, list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    first, extra = _columns(1, FIRST), _columns(2, THEN)
    extra[0] += 1 << 40  # apart from the first rows
    table = Table(2)
    table.add_columns(first, 0)
    removed = [c[:REMOVED] for c in first]
    assert table.remove_columns(removed) == REMOVED  # tombstones the rebuild drops
    table.add_columns([c[: THEN // 2] for c in extra], 1)
    table.add_columns([c[THEN // 2 :] for c in extra], 1)
    kept = [np.concatenate([a[REMOVED:], b]) for a, b in zip(first, extra, strict=True)]
    return table, kept, removed, [extra[0] + (1 << 41), extra[1]]


Calls = list[tuple[str, int, int, list[tuple[str, int, int]]]]


def _record_fan_out(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """The lanes' calls from here on: (the lane's work, start, stop, its shares as (thread,
    start, stop))."""
    calls: Calls = []
    fan_out = lanes.fan_out

    def recorded(lane: lanes.Lane, count: int, start: int, stop: int) -> None:
        shares: list[tuple[str, int, int]] = []
        calls.append((lane.__name__, start, stop, shares))

        def share(j: int, a: int, b: int, meter: object) -> None:
            shares.append((threading.current_thread().name, a, b))
            lane(j, a, b, meter)

        fan_out(share, count, start, stop)

    monkeypatch.setattr(table_lanes, "fan_out", recorded)
    return calls


def test_a_large_table_is_rebuilt_on_the_lanes_as_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lanes, "LANES", 1)
    alone, kept, removed, absent = _grown()

    calls = _record_fan_out(monkeypatch)
    monkeypatch.setattr(lanes, "LANES", 3)
    split, *_ = _grown()

    # The blocks are added on the lanes too (`add_rows`).
    assert {kind for kind, *_ in calls} == {"fill", "place_rows", "hash_rows", "claim", "store"}, (
        calls
    )
    assert [len(shares) for kind, *_, shares in calls if kind == "place_rows"][-1] == 3
    for _, start, stop, shares in calls:  # on the pool's threads too; the whole range
        assert len({thread for thread, _, _ in shares}) > 1
        bounds = sorted((a, b) for _, a, b in shares)
        assert [bounds[0][0], *(b for _, b in bounds)] == [start, *(a for a, _ in bounds[1:]), stop]

    assert len(split) == len(alone) == FIRST - REMOVED + THEN
    assert split.layout == alone.layout
    more = _columns(3, MORE)
    more[0] += 1 << 42
    for table in (split, alone):  # past the load that doubles the slots again
        table.add_columns(more, 2)
    assert split.layout == alone.layout
    assert alone.layout["tuple_slots"] == 4 * 2**23
    kept = [np.concatenate([a, b]) for a, b in zip(kept, more, strict=True)]
    rows = split.rows_of_columns(kept)
    assert (rows >= 0).all()
    assert rows.tolist() == alone.rows_of_columns(kept).tolist()
    assert (split.rows_of_columns(removed) == -1).all()
    assert (split.rows_of_columns(absent) == -1).all()


def test_a_key_index_built_on_the_lanes_has_one_threads_groups_and_chains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lanes, "LANES", 1)
    alone, *_ = _grown()
    one = alone.index((1,))
    monkeypatch.setattr(lanes, "LANES", 3)
    read, *_ = _grown()
    split, *_ = _grown()
    calls = _record_fan_out(monkeypatch)
    read.index((1,))  # a reader's: on its thread, as rows may come while the GIL is let go
    assert not calls
    split.index_position((1,))  # the writer's plans': on the lanes
    three = split.index((1,))
    assert [kind for kind, *_ in calls] == ["link_part", "fill", "place_heads"]
    assert all(len(shares) == 2 for *_, shares in calls)  # 2.2 M rows: two lanes of 2**20
    assert len(three) == len(one) == KEYS
    keys = range(0, KEYS, 7)
    assert [three.get(k) for k in keys] == [one.get(k) for k in keys]
    more = _columns(3, 1000)
    more[0] += 1 << 42
    for table in (split, alone):  # the index is kept as rows come and go
        table.add_columns(more, 2)
        table.remove_columns([c[:500] for c in more])
    assert [three.get(k) for k in keys] == [one.get(k) for k in keys]


def test_a_row_added_across_a_rebuild_is_the_writers_whatever_a_reader_probes_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rebuild lets go of the GIL, and a reader's probe loads its key into the table's
    `scratch`, where the writer's row was: the rebuild here probes as a reader would."""
    monkeypatch.setattr(lanes, "LANES", 2)
    table = Table(2)
    table.add_columns([np.arange(800_000), np.ones(800_000, dtype=np.int64)], 0)
    rebuilds: list[int] = []
    rehash = table_lanes.rehash

    def probed_meanwhile(t: Table, slots: int, count: int, lanes_: int) -> int:
        rebuilds.append(lanes_)
        assert t.get((-5, -5)) is None  # a reader's probe, loading (-5, -5)
        return rehash(t, slots, count, lanes_)

    monkeypatch.setattr(table_lanes, "rehash", probed_meanwhile)
    row = 800_000
    while not rebuilds:
        table.add((row, 2), 0)
        row += 1
    assert rebuilds == [2]
    assert (row - 1, 2) in table
    assert (-5, -5) not in table
    assert len(table) == row


BLOCK = 150_000  # past 2 x 2**16 rows: a block added at once splits among the lanes


def _table_with_history() -> tuple[Table, list[np.ndarray]]:
    """A table with committed rows, tombstones, staged rows and two key indexes, and a block
    to add: new rows (some past 32 bits, widening the table), rows staged before (committed
    in place), in random order."""
    rng = np.random.default_rng(7)
    table = Table(2)
    old = [rng.integers(0, 1 << 30, 200_000, dtype=np.int64), rng.integers(0, 900, 200_000)]
    table.add_columns(old, 0)
    table.remove_columns([c[::3] for c in old])
    table.index((1,))
    table.index((0,))
    staged = [(int(a) + (1 << 31), int(b)) for a, b in zip(*(c[:500] for c in old), strict=True)]
    for t in staged:
        table.stage(t)
    new = [rng.integers(0, 1 << 31, BLOCK, dtype=np.int64), rng.integers(0, 900, BLOCK)]
    new[0][::2] += 1 << 33  # apart from the old rows and each other
    new[0][1::2] += 1 << 34
    again = [np.array(column) for column in zip(*staged, strict=True)]
    block = [np.concatenate(pair) for pair in zip(new, again, strict=True)]
    order = rng.permutation(len(block[0]))
    return table, [c[order] for c in block]


def _state(table: Table, layout: bool = True) -> tuple[list, list, dict]:
    rows = sorted(((t, table.row(t), table.get(t), table.count(t)) for t in table),
                  key=lambda r: r[1])  # fmt: skip
    by_key = table.index((1,))
    chains = {k: list(by_key.get(k)) for k in range(0, 900, 13)}
    return rows, list(table.staged_rows()), chains | ({"layout": table.layout} if layout else {})


@pytest.mark.parametrize("count", [2, 3, 4])
@pytest.mark.parametrize("weighed", [False, True])
def test_a_block_added_on_the_lanes_is_added_as_on_one_thread(
    count: int, weighed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rows, row ids, iterations and counts (past 16 bits too), the staged rows
    committed in place, and the chains of every key index in one thread's order."""
    monkeypatch.setattr(lanes, "LANES", 1)
    alone, block = _table_with_history()
    counts = np.arange(1, len(block[0]) + 1, dtype=np.int64) * 7 if weighed else None
    alone.add_columns(block, 3, counts)
    monkeypatch.setattr(lanes, "LANES", count)
    split, _ = _table_with_history()
    calls = _record_fan_out(monkeypatch)
    split.add_columns(block, 3, counts)
    assert [kind for kind, *_ in calls][:3] == ["hash_rows", "claim", "store"]
    assert _state(split) == _state(alone)
    assert split.count(tuple(int(c[-1]) for c in block)) == (len(block[0]) * 7 if weighed else 1)


@pytest.mark.parametrize(
    ("spoil", "error"),
    [
        ("committed", KeyError),  # a row committed already
        ("twice", KeyError),  # a row given twice
        ("staged twice", KeyError),  # a row staged before, given twice
        ("count", ValueError),  # a count below 1
    ],
)
def test_a_block_the_lanes_refuse_leaves_the_table_as_it_was(
    spoil: str, error: type[Exception], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lanes, "LANES", 2)
    table, block = _table_with_history()
    before = _state(table, layout=False)  # widened and sized for the block: not a change
    counts = None
    if spoil == "committed":
        committed = next(iter(table))
        block = [np.append(c, v) for c, v in zip(block, committed, strict=True)]
    elif spoil == "twice":
        block = [np.append(c, c[BLOCK // 2]) for c in block]
    elif spoil == "staged twice":
        staged = next(iter(table.staged_rows()))
        block = [np.append(c, v) for c, v in zip(block, staged, strict=True)]
    else:
        counts = np.ones(len(block[0]), dtype=np.int64)
        counts[-1] = 0
    with pytest.raises(error):
        table.add_columns(block, 3, counts)
    assert _state(table, layout=False) == before
    table.add_columns([c[:-1] for c in block] if spoil != "count" else block, 3)
    assert len(table) == len(block[0]) - (spoil != "count") + len(before[0])


def test_a_block_whose_rows_fail_to_be_stored_leaves_the_table_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An interrupt while the lanes store the rows (raised once they have stopped): the
    claimed slots are emptied again, so the table reads as before and takes the block after."""
    monkeypatch.setattr(lanes, "LANES", 2)
    table, block = _table_with_history()
    before = _state(table, layout=False)
    fan_out = table_lanes.fan_out

    def interrupted(lane: lanes.Lane, count: int, start: int, stop: int) -> None:
        fan_out(lane, count, start, stop)
        if lane.__name__ == "store":
            raise KeyboardInterrupt

    monkeypatch.setattr(table_lanes, "fan_out", interrupted)
    with pytest.raises(KeyboardInterrupt):
        table.add_columns(block, 3)
    assert _state(table, layout=False) == before
    assert (table.rows_of_columns(block) >= 0).sum() == len(before[1])  # the staged only
    monkeypatch.setattr(table_lanes, "fan_out", fan_out)
    table.add_columns(block, 3)
    assert len(table) == len(before[0]) + len(block[0])


def test_a_block_is_looked_up_on_the_lanes_as_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each lane hashes and probes its share: every row is found at its own id, and a row the
    table does not hold is -1, wherever the shares split."""
    table = Table(2)
    held = _columns(3, 300_000)
    table.add_columns(held, 0)
    order = np.random.default_rng(4).permutation(400_000)
    absent = _columns(5, 100_000)
    absent[0] += 1 << 40
    probed = [np.concatenate([a, b])[order] for a, b in zip(held, absent, strict=True)]
    calls = _record_fan_out(monkeypatch)
    monkeypatch.setattr(lanes, "LANES", 3)
    rows = table.rows_of_columns(probed)
    assert [(kind, len(shares)) for kind, *_, shares in calls] == [("probe", 3)]
    assert rows.tolist() == np.where(order < 300_000, order, -1).tolist()  # rows in order


def test_a_table_being_built_is_retagged_on_the_lanes_as_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its slots take more row bits as it grows past 2**21 rows, each lane its share of every
    slot array in place: every row is found where it was, and none that is not held; a table
    a reader may reach is retagged on one thread."""
    calls = _record_fan_out(monkeypatch)
    monkeypatch.setattr(lanes, "LANES", 3)
    tables = []
    for building in (True, False):
        table = Table(2)
        table.building = building
        table.index_position((1,))
        rows = _columns(6, 2_200_000)
        for start in range(0, 2_200_000, 100_000):
            table.add_columns([c[start : start + 100_000] for c in rows], 0)
        tables.append(table)
        retags = [shares for kind, *_, shares in calls if kind == "share"]
        assert (len(retags) >= 2) is building  # the tuple table's and the index's slots
        assert all(len(shares) >= 2 for shares in retags)
        calls.clear()
    absent = [c + (1 << 41) for c in _columns(7, 1000)]
    monkeypatch.setattr(lanes, "LANES", 1)
    for table in tables:
        assert table.rows_of_columns(rows).tolist() == list(range(2_200_000))
        assert (table.rows_of_columns(absent) == -1).all()
    keys = range(0, KEYS, 7)
    built, alone = (table.index((1,)) for table in tables)
    assert [built.get(k) for k in keys] == [alone.get(k) for k in keys]
    assert built.get(3) is not None
