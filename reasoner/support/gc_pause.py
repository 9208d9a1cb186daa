"""Pausing Python's cyclic garbage collector while an epoch runs (and running it where the
garbage is cyclic: Spark, `collector_running`).

An Update allocates hundreds of thousands of short-lived tuples (candidates, overlay records)
and no reference cycles: reference counting frees all of them. With the collector on, every
700 allocations trigger a young-generation pass, and the first allocation after an Update
traverses every record the epoch still holds (on CRDT, about 4 % of a 10-tuple epoch). Paused
until the epoch is committed, most of those objects are already freed when the collector
resumes.

The ones still alive then are the epoch's additions to the state (new tuples, index buckets,
records): long-lived by construction, and after a re-insertion on CRDT some 30,000 of them.
Left in the young generation, they cost the first collection after the epoch 2-6 ms of
traversal (3-4 % of such an epoch) before it promotes them anyway. So the pause ends by moving
every tracked object to the oldest generation without traversing it: `gc.freeze()` then
`gc.unfreeze()`, two list splices. Cyclic garbage the block made is found by the next full
collection instead of a young one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block and promote what survives it to the oldest
    generation (see the module docstring). Nested uses are fine: only the outermost one turns
    the collector back on, and only if it was on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


@contextmanager
def collector_running() -> Iterator[None]:
    """Enable the cyclic collector for the block, whatever the caller chose, and restore the
    caller's choice afterwards.

    For work whose garbage is cyclic and holds more than Python memory: every py4j proxy of a
    JVM object that had a method called on it is in a reference cycle (it caches the bound
    method, which points back at it), so the JVM object is released only when the collector
    frees the proxy. A Spark Bootstrap under a paused collector therefore keeps every
    iteration's query plan alive in the driver, broadcast tables included: CRDT's 8,000-deep
    recursion filled the 1 GiB driver heap about 200 iterations in."""
    collecting = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not collecting:
            gc.disable()
