"""An evaluation's allocations, charged to its budget where they are made.

An evaluation's budget is polled between pieces of work (`check`), and memory is sampled
there; but one step can allocate more than any slice should: a `cat` of two 500 MB symbols
makes 1 GB before the next check runs (a rule doubling a 1 MB string twelve times grew the
process by 2.9 GB against an 800 MB allowance). So the steps whose allocation their operands
size (a functor's string, a packed record) `charge` it *before* making it, to the budget the
evaluating thread runs under, which refuses there once the charges would take the process past
its allowance. The budget is the one the evaluation already polls (the service's
`EpochBudget`); this module only carries it to the call sites, which receive no `check`.

Outside `charging_to` (a query, a test, the command line) nothing is charged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Meter(Protocol):
    def charge(self, size: int) -> None:
        """Account for `size` bytes about to be allocated; raise to refuse them."""


_current = threading.local()


@contextmanager
def charging_to(meter: Meter | None) -> Iterator[None]:
    """Charge this thread's allocations to `meter` (None: to nothing). An evaluation runs on
    one thread (the service's writer; Spark's workers make no symbols), but for the kernel's
    lanes (`reasoner.support.lanes`), which carry its meter to theirs (`meter`)."""
    outer = getattr(_current, "meter", None)
    _current.meter = meter
    try:
        yield
    finally:
        _current.meter = outer


def meter() -> Meter | None:
    """The meter this thread's allocations are charged to, if any."""
    return getattr(_current, "meter", None)


def charge(size: int) -> None:
    """Charge `size` bytes to the running evaluation's budget, if there is one."""
    meter = getattr(_current, "meter", None)
    if meter is not None:
        meter.charge(size)
