"""A large table's hash table rebuilt and retagged by the lanes: every row is found where one
thread's rebuild would find it, the rows removed before are gone, and the table grows as one
thread's does (its count of used slots is the same)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import reasoner.storage.table as table_module
from reasoner.storage.table import Table
from reasoner.support import lanes

FIRST = 1_600_000  # past 0.8 x 2**21 rows with what follows: a rebuild into 2**22 slots
REMOVED = 100_000
THEN = 700_000  # the rows pass 2**21, past which the slots give up a hash bit (a retag)
MORE = 1_200_000  # and past 0.8 x 2**22 live rows: one more rebuild, into 2**23 slots


def _columns(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 1 << 40, n, dtype=np.int64), rng.integers(0, 50, n, dtype=np.int64)]


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


def test_a_large_table_is_rebuilt_and_retagged_on_the_lanes_as_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lanes, "LANES", 1)
    alone, kept, removed, absent = _grown()

    calls: list[tuple[str, int, int, list[tuple[str, int, int]]]] = []
    fan_out = lanes.fan_out

    def recorded(lane: lanes.Lane, count: int, start: int, stop: int) -> None:
        shares: list[tuple[str, int, int]] = []
        calls.append((lane.__name__, start, stop, shares))

        def share(j: int, a: int, b: int, meter: object) -> None:
            shares.append((threading.current_thread().name, a, b))
            lane(j, a, b, meter)

        fan_out(share, count, start, stop)

    monkeypatch.setattr(lanes, "LANES", 3)
    monkeypatch.setattr(table_module, "fan_out", recorded)
    split, *_ = _grown()

    assert {kind for kind, *_ in calls} == {"_fill", "_place", "_retag"}, calls
    assert [len(shares) for kind, *_, shares in calls if kind == "_place"][-1] == 3
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
