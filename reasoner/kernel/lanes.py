"""The kernel's lanes: how many threads a Bootstrap's plans and an Update's enumerations and
classifications split their work among (`--jobs`), from how much work, and the threads
themselves. The compiled kernel (`reasoner.kernel.interpreter`) runs each lane's share
without the interpreter lock; what it needs of Python, pools and errors, is here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from reasoner.support import allocations
from reasoner.support.jobs import jobs_in_effect
from reasoner.support.process_memory import one_heap_for_all_threads

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

LANE_ROWS = 4096
"""Driving rows (a Bootstrap's), expected candidates (an Update's hand-over) or candidates (its
classification) from which a span is split among the lanes: handing a span to the threads and
back costs tens of microseconds, a row about one."""
LANES: int | None = None
"""The lanes of the kernel's Bootstrap and Update; None: the threads the engine may use
(`--jobs`)."""

_POOLS: dict[int, ThreadPoolExecutor] = {}

Lane = Callable[[int, int, int, object], None]
"""A lane's share of a span: (lane, start, stop, the allocation meter to charge)."""


class KernelWithLanes(Protocol):
    def set_lanes(self, jobs: int, lane_rows: int) -> None: ...


def lane_count() -> int:
    """The lanes work is split among: `LANES`, else the threads the engine may use."""
    return LANES or jobs_in_effect()


def set_lanes(kernel: KernelWithLanes) -> None:
    """Give `kernel` its lanes, read when it is made (tests set `LANES` and `LANE_ROWS`)."""
    kernel.set_lanes(lane_count(), LANE_ROWS)


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
    pool = _pool(lanes - 1)
    others = [pool.submit(lane, j, bounds[j], bounds[j + 1], meter) for j in range(1, lanes)]
    error: BaseException | None = None
    try:
        lane(0, bounds[0], bounds[1], meter)
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
