"""Keeping Python's cyclic garbage collector off the materialization's state.

The state holds millions of objects that only reference counting ever frees (tuples of ints,
dicts of them), yet the cyclic collector keeps walking them:

- An Update allocates hundreds of thousands of short-lived objects (candidates, overlay
  records) and no reference cycles. With the collector on, every 700 allocations trigger a
  young-generation pass over them. `collector_paused` turns it off for the epoch.
- A dict becomes tracked (and young) again whenever a new tuple is put into it, so the first
  young collection after an epoch that inserted tuples traverses whole relations: on CRDT, 2-27
  ms every other epoch, about 4 % of a 10-tuple Update. A full collection walks the entire
  state (about 45 ms on CRDT's settled 1 GB state; 0.35 s are spent collecting during its
  Bootstrap).

For a large state the epoch therefore ends by freezing (`gc.freeze`): every object alive moves
to the permanent generation, which no collection traverses, at O(1) cost. What that costs:
objects frozen while reachable that later become cyclic garbage are reclaimed only once they
are thawed. The engine makes such garbage when a Bootstrap replaces the state (the generated
plans of the old state hold it in reference cycles), so after a Bootstrap `collect_and_freeze`
thaws, collects once (the work the collector would otherwise spread over the next epochs) and
freezes again. Anything else frozen (another thread's objects) is reclaimed at the latest
`THAW_EVERY` freezes later, when everything is thawed and collected once.

Freezing is for states of at least `FREEZE_MIN_TUPLES` tuples: below that a collection is cheap
and the collector keeps its usual schedule.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_MIN_TUPLES = 100_000
"""States at least this large are frozen after every epoch (see the module docstring)."""

THAW_EVERY = 1000
"""Freezes after which everything is thawed and collected once, bounding how long foreign
cyclic garbage that happened to be frozen can live."""

_lock = threading.Lock()
_freezes = 0
"""Freezes since the last thaw, process-wide (the collector's generations are)."""


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """Disable the cyclic collector for the block (nested uses are fine: only the outermost
    one turns it back on, and only if it was on). `freeze`: move the survivors of the block to
    the permanent generation before turning it back on (`freeze_survivors`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if freeze:
                freeze_survivors()
            gc.enable()


def freeze_survivors() -> None:
    """Freeze every object alive; every `THAW_EVERY`-th call thaws and collects first."""
    global _freezes
    with _lock:
        _freezes += 1
        if _freezes >= THAW_EVERY:
            _thaw_and_collect()
        gc.freeze()


def collect_and_freeze() -> None:
    """After a Bootstrap replaced the state: reclaim the old one's reference cycles (frozen or
    not), then freeze the new state."""
    with _lock:
        _thaw_and_collect()
        gc.freeze()


def _thaw_and_collect() -> None:
    global _freezes
    _freezes = 0
    gc.unfreeze()
    gc.collect()
