"""When the kernel's work goes to the lanes (`reasoner.support.lanes`: how many), handed to
them at a gate (`reasoner.kernel.gate`): a Bootstrap's plans from `LANE_ROWS` on, an Update's
enumerations and classifications from `UPDATE_LANE_ROWS`. The compiled kernel
(`reasoner.kernel.interpreter`) runs each lane's share without the interpreter lock."""

from __future__ import annotations

from typing import Protocol

from reasoner.support.lanes import lane_count

LANE_ROWS = 4096
"""Driving rows (a Bootstrap's), expected candidates (an Update's hand-over) or candidates (its
classification) from which a span is split among the lanes: a row costs about a microsecond.
crdt.dl's Bootstrap at -j 2 took 46.6-47.6 s from 4,096 rows, 47.8-49.0 s from 1,024."""

UPDATE_LANE_ROWS = 1024
"""The same for an Update (a span handed out at the gate costs a few microseconds, against
170-300 us through a thread pool). crdt.dl's skipBlank Update walks 14,149
iterations of 2,400 changes on average: from 1,024 rows on 2 lanes its deletion epoch took
29.2-34.0 s against 47.0-52.7 s on one lane (from 4,096 rows, before the limits `_hand` and
`_classify` now keep: 43.6 s against 39.9 and 33.7 s from 1,024)."""


class KernelWithLanes(Protocol):
    def set_lanes(self, jobs: int, lane_rows: int) -> None: ...


def set_lanes(kernel: KernelWithLanes, *, update: bool = False) -> None:
    """Give `kernel` its lanes, an Update's if `update`, read when it is made (tests set
    `reasoner.support.lanes.LANES`, `LANE_ROWS` and `UPDATE_LANE_ROWS`)."""
    kernel.set_lanes(lane_count(), UPDATE_LANE_ROWS if update else LANE_ROWS)
