"""Lanes: the threads a share of the engine's work splits among (`--jobs`), the pool they run
on and the fan-out that hands each its contiguous share. The compiled kernel's Bootstrap and
Update (`reasoner.kernel.lanes` says when they split), a fallback's comparison of two states,
and a large table's rebuild of its hash table run their shares here, each without the
interpreter lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from reasoner.support import allocations
from reasoner.support.jobs import jobs_in_effect
from reasoner.support.process_memory import one_heap_for_all_threads

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

LANES: int | None = None
"""The lanes work is split among; None: the threads the engine may use (`--jobs`)."""

_POOLS: dict[int, ThreadPoolExecutor] = {}
_IN_LANE = threading.local()

Lane = Callable[[int, int, int, object], None]
"""A lane's share of a span: (lane, start, stop, the allocation meter to charge)."""


def lane_count() -> int:
    """The lanes work is split among: `LANES`, else the threads the engine may use."""
    return LANES or jobs_in_effect()


def _pool(workers: int) -> ThreadPoolExecutor:
    """Threads for lanes 1, 2, ... (lane 0 is the caller's): one pool of each size, kept for
    the process, as a Bootstrap or an Update runs many spans."""
    pool = _POOLS.get(workers)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor  # 4 ms of a start that has one lane

        one_heap_for_all_threads()
        pool = _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="reasoner-lane")
    return pool


def fan_out(lane: Lane, lanes: int, start: int, stop: int) -> None:
    """`lane(j, start_j, stop_j, meter)` for each lane j over its contiguous share of
    [start, stop), lane 0 on this thread, growths charged to the caller's meter. An error of
    any lane is raised once all have stopped (the lanes share the kernel's buffers), the first
    lane's first."""
    meter = allocations.meter()
    bounds = [start + (stop - start) * j // lanes for j in range(lanes + 1)]
    if getattr(_IN_LANE, "active", False):
        # Work split again inside a lane runs on the lane's thread: the pool's threads may all
        # be busy with the outer shares, this one among them.
        for j in range(lanes):
            lane(j, bounds[j], bounds[j + 1], meter)
        return
    pool = _pool(lanes - 1)
    others = [
        pool.submit(_as_lane, lane, j, bounds[j], bounds[j + 1], meter) for j in range(1, lanes)
    ]
    error: BaseException | None = None
    try:
        _as_lane(lane, 0, bounds[0], bounds[1], meter)
    except BaseException as exc:
        error = exc
    error = _stopped(others, error)
    # The raised error's traceback holds this frame. Were the error still one of its locals,
    # or in a lane's future, the two would be a cycle keeping every frame it passed through
    # alive, with the state and the Update's records they hold, until the cyclic collector
    # ran (crdt.dl: 6 GB more at each fallback, until the process was killed).
    others.clear()
    if error is not None:
        try:
            raise error
        finally:
            error = None


def _as_lane(lane: Lane, j: int, start: int, stop: int, meter: object) -> None:
    """`lane`'s share, marked as run by a lane for a `fan_out` nested in it."""
    _IN_LANE.active = True
    try:
        lane(j, start, stop, meter)
    finally:
        _IN_LANE.active = False


def _stopped(others: list[Future[None]], error: BaseException | None) -> BaseException | None:
    """Wait until every lane of `others` has stopped (an interrupt while waiting does not stop
    one); `error`, or else the first error met."""
    for other in others:
        while True:
            try:
                failed = other.exception()
                break
            except BaseException as exc:
                error = error or exc
        if failed is not None:
            error = error or failed
    try:
        return error
    finally:
        error = None  # an interrupt met here holds this frame in its traceback: no cycle


GATHER_LANE_ROWS = 1 << 17
"""Rows from which `gather` splits among the lanes: a row costs a few nanoseconds (more where
the values do not fit the cache), a fan-out tens of microseconds."""


def gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """`values[index]`, its rows split among the lanes: NumPy lets the interpreter lock go
    while it gathers, and a large gather is cache misses that two cores overlap (LUBM-30's
    output gathers the ranks of 3 x 4.8 M symbols: 0.23 s on one lane)."""
    lanes = lane_count()
    if lanes == 1 or len(index) < GATHER_LANE_ROWS:
        return values[index]
    out = np.empty(len(index), dtype=values.dtype)

    def share(_lane: int, start: int, stop: int, _meter: object) -> None:
        out[start:stop] = values[index[start:stop]]

    fan_out(share, lanes, 0, len(index))
    return out
