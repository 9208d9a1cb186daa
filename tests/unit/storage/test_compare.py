"""Two tables compared row by row (`reasoner.storage.compare`), alone and split among lanes:
what a fallback Bootstrap reports as retracted and inserted."""

from __future__ import annotations

import random

import numpy as np
import pytest

from reasoner.elastic.changes import missing_on_lanes
from reasoner.kernel.lanes import LANE_ROWS
from reasoner.storage import Table, missing_rows, release_slots, unmarked_rows
from reasoner.support import lanes


def test_missing_rows_compares_two_tables_row_by_row() -> None:
    """The committed rows of one table that another does not hold committed, whatever either
    table's word width, with staged and dead rows on both sides."""
    one, two = Table(2), Table(2)
    for t in [(1, 2), (3, 4), (5, 6), (7, 8)]:
        one.add(t, 0)
    one.stage((9, 9))  # not committed: never reported
    one.remove((7, 8))  # dead: never reported
    two.add((3, 4), 5)
    two.stage((5, 6))  # staged in the other: missing there
    two.add((2**40, 1), 0)  # a wide table
    assert two.wide and not one.wide
    assert one.tuples(missing_rows(one, two)) == [(1, 2), (5, 6)]
    assert two.tuples(missing_rows(two, one)) == [(2**40, 1)]
    assert len(missing_rows(one, one)) == 0
    assert len(missing_rows(Table(2), one)) == 0
    with pytest.raises(ValueError):
        missing_rows(one, Table(3))


def _random_pair(rows: int, seed: int) -> tuple[Table, Table, set[tuple[int, int]]]:
    """Two tables sharing most rows, some dead in each, and the tuples only the first holds
    committed."""
    rng = random.Random(seed)
    one, two = Table(2), Table(2)
    tuples = {(rng.randrange(rows), rng.randrange(4)) for _ in range(rows)}
    for t in sorted(tuples):
        if rng.random() < 0.9:
            one.add(t, 0)
        if rng.random() < 0.9:
            two.add(t, 0)
    for t in rng.sample(sorted(tuples), rows // 10):
        (one if rng.random() < 0.5 else two).remove(t)
    theirs = set(two.tuples(two.committed_rows()))
    return one, two, set(one.tuples(one.committed_rows())) - theirs


@pytest.mark.parametrize("rows", [0, 1, 15, 16, 17, 40, 5000])
def test_every_queued_probe_is_made_once_in_row_order(rows: int) -> None:
    """The probes trail their prefetches by a queue of 16 live rows: fewer rows than that,
    exactly that, dead rows between, and the rows left in the queue at the end are each
    reported once, in row order."""
    one, two, only_one = _random_pair(rows, seed=rows)
    found = missing_rows(one, two)
    assert found.tolist() == sorted(found.tolist())
    assert set(one.tuples(found)) == only_one and len(found) == len(only_one)


@pytest.mark.parametrize("live", [0, 1, 15, 16, 17, 33])
def test_each_live_row_is_probed_once_at_the_queue_s_bounds(live: int) -> None:
    """Against an empty table every committed row is missing: with as many live rows as the
    queue holds, one fewer, one more, and dead rows between them, none is dropped or doubled."""
    table = Table(2)
    for r in range(2 * live):
        table.add((r, r), 0)
    for r in range(0, 2 * live, 2):
        table.remove((r, r))
    assert table.committed == live
    assert missing_rows(table, Table(2)).tolist() == table.committed_rows().tolist()


def test_a_span_of_rows_is_compared_alone() -> None:
    """`start` and `stop` bound the rows compared, as each lane's share does."""
    one, two, _ = _random_pair(3000, seed=7)
    whole = missing_rows(one, two)
    parts = [missing_rows(one, two, a, b) for a, b in [(0, 1000), (1000, 1001), (1001, -1)]]
    assert np.concatenate(parts).tolist() == whole.tolist()
    assert missing_rows(one, two, 10**9, -1).tolist() == []


def _counted_lanes(monkeypatch: pytest.MonkeyPatch, count: int) -> list[int]:
    """Work split among `count` lanes; the list it returns gains the lanes of each fan-out."""
    fanned: list[int] = []
    fan_out = lanes.fan_out

    def counted(lane: lanes.Lane, lanes_: int, start: int, stop: int) -> None:
        fanned.append(lanes_)
        fan_out(lane, lanes_, start, stop)

    monkeypatch.setattr(lanes, "LANES", count)
    monkeypatch.setattr(lanes, "fan_out", counted)
    return fanned


def test_the_lanes_split_a_large_comparison_and_agree_with_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two, only_one = _random_pair(4 * LANE_ROWS, seed=3)
    fanned = _counted_lanes(monkeypatch, 3)
    split = missing_on_lanes(one, two)
    assert fanned == [3]
    assert split.tolist() == missing_rows(one, two).tolist()
    assert set(one.tuples(split)) == only_one


@pytest.mark.parametrize(("rows", "count"), [(0, 1), (17, 1), (5000, 1), (4 * LANE_ROWS, 3)])
def test_the_marks_of_one_way_give_the_other_way(
    rows: int, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of the second table that the first's probes mark, on one lane or three, leave
    unmarked exactly the rows `missing_rows` finds the other way; the first table's tuple
    table is released meanwhile, as a fallback's old state's is."""
    one, two, _ = _random_pair(rows, seed=rows)
    other_way = missing_rows(two, one)
    fanned = _counted_lanes(monkeypatch, count)
    release_slots(one)
    assert one.layout["tuple_slots"] == 0
    marks = np.zeros(two.nrows, dtype=np.uint8)
    assert missing_on_lanes(one, two, marks).tolist() == missing_rows(one, two).tolist()
    assert unmarked_rows(two, marks).tolist() == other_way.tolist()
    assert fanned == ([count] if count > 1 else [])


def test_marks_must_cover_every_row() -> None:
    one, two, _ = _random_pair(17, seed=1)
    short = np.zeros(two.nrows - 1, dtype=np.uint8)
    with pytest.raises(ValueError, match="a mark for every row"):
        missing_rows(one, two, marks=short)
    with pytest.raises(ValueError, match="a mark for every row"):
        unmarked_rows(two, short)
