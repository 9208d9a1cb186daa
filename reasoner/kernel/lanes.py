"""When the kernel's work goes to the lanes: a Bootstrap's plans and an Update's enumerations
and classifications split among them (`reasoner.support.lanes`: how many, the threads) from
`LANE_ROWS` on. The compiled kernel (`reasoner.kernel.interpreter`) runs each lane's share
without the interpreter lock."""

from __future__ import annotations

from typing import Protocol

from reasoner.support.lanes import lane_count

LANE_ROWS = 4096
"""Driving rows (a Bootstrap's), expected candidates (an Update's hand-over) or candidates (its
classification) from which a span is split among the lanes: handing a span to the threads and
back costs tens of microseconds, a row about one."""


class KernelWithLanes(Protocol):
    def set_lanes(self, jobs: int, lane_rows: int) -> None: ...


def set_lanes(kernel: KernelWithLanes) -> None:
    """Give `kernel` its lanes, read when it is made (tests set `reasoner.support.lanes.LANES`
    and `LANE_ROWS`)."""
    kernel.set_lanes(lane_count(), LANE_ROWS)
