"""The lanes' fan-out: shares on the pool's threads and this one, and work split again inside a
lane (a table rebuilt by a lane) run on that lane's thread instead of waiting on a pool whose
threads are all busy with the outer shares."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from reasoner.support import lanes


def test_work_split_again_inside_a_lane_runs_on_the_lanes_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lanes, "LANES", 2)
    monkeypatch.setattr(lanes, "_POOLS", {})  # a pool that waits forever stays this test's
    inner: list[tuple[str, int, int]] = []
    outer: dict[int, str] = {}

    def share(j: int, start: int, stop: int, meter: object) -> None:
        inner.append((threading.current_thread().name, start, stop))

    def lane(j: int, start: int, stop: int, meter: object) -> None:
        outer[j] = threading.current_thread().name
        lanes.fan_out(share, 2, 10 * j, 10 * j + 10)

    # On a pool of one thread, a nested share sent to the pool would wait on its own lane
    # forever: run the whole in a thread of its own, so that such a wait fails the test.
    done = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            lanes.fan_out(lane, 2, 0, 2)
        except BaseException as exc:  # reported below
            errors.append(exc)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(30), "a share split inside a lane waited on the busy pool"
    assert not errors
    assert len(set(outer.values())) == 2  # the calling thread and the pool's
    for j, thread in outer.items():
        assert sorted((a, b) for name, a, b in inner if name == thread) == [
            (10 * j, 10 * j + 5),
            (10 * j + 5, 10 * j + 10),
        ]


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_gather_on_the_lanes_is_numpys(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Each lane gathers its share of the index into its share of one result: no row lost,
    moved or repeated at the shares' bounds, whatever the number of lanes."""
    monkeypatch.setattr(lanes, "LANES", count)
    monkeypatch.setattr(lanes, "GATHER_LANE_ROWS", 1)
    generator = np.random.default_rng(0)
    values = generator.integers(-(1 << 62), 1 << 62, 1_000)
    for size in (0, 1, 2, 7, 10_001):
        index = generator.integers(0, len(values), size).astype(np.int32)
        gathered = lanes.gather(values, index)
        assert gathered.dtype == values.dtype
        assert np.array_equal(gathered, values[index])
