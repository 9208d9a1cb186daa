"""The collector policy of a large state (reasoner.gc_pause): epochs end frozen, and nothing a
Bootstrap replaced or a thaw released stays unreclaimed."""

from __future__ import annotations

import gc
import weakref

import pytest

from reasoner import gc_pause, materialization
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization

TC = """
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


class _Cycle:
    """Cyclic garbage once dropped: only the collector can reclaim it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _collector():
    """Every state counts as large; the collector is left as it was found."""
    was_enabled = gc.isenabled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(materialization, "FREEZE_MIN_TUPLES", 1)
        yield patch
    gc.unfreeze()
    gc.collect()
    if was_enabled:
        gc.enable()


def _large() -> Materialization:
    m = Materialization.from_text(TC)
    m.load({"edge": [(i, i + 1) for i in range(20)]})
    m.bootstrap()
    return m


def test_update_epochs_end_frozen_with_the_collector_on() -> None:
    m = _large()
    assert gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    report = m.apply(Delta(insert={"edge": [(20, 21)]}))
    assert report.strategy == "update"
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen  # the epoch's new tuples were frozen with it


def test_a_bootstrap_reclaims_the_state_it_replaces() -> None:
    m = _large()
    probe = _Cycle()
    alive = weakref.ref(probe)
    m.state["tc"].extra[probe] = None  # held by the old state only
    del probe
    m.apply(Delta(insert={"edge": [(0, 5)]}))  # frozen with the old state
    m.apply(Delta(insert={"edge": [(5, 0)]}), strategy="bootstrap")
    assert alive() is None


def test_a_thaw_reclaims_foreign_garbage_frozen_by_an_epoch(_collector) -> None:
    _collector.setattr(gc_pause, "THAW_EVERY", 3)
    m = _large()
    probe = _Cycle()
    alive = weakref.ref(probe)
    del probe
    gc.freeze()  # as an epoch ending now would: garbage that no collection sees any more
    for i in range(3):
        m.apply(Delta(insert={"edge": [(100 + i, 200 + i)]}))
        assert (alive() is None) == (i == 2)  # the third freeze thaws and collects first
