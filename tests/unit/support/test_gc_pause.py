"""The collector pause around an epoch (`reasoner.support.gc_pause`)."""

from __future__ import annotations

import gc

from reasoner.support.gc_pause import collector_paused


def _generation_of(obj: object) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation)):
            return generation
    return None


def test_survivors_of_a_paused_block_go_straight_to_the_oldest_generation() -> None:
    """What an epoch adds to the state is long-lived: a young collection would only traverse
    it before promoting it."""
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        kept = [[i] for i in range(2000)]  # tracked objects, more than a young collection's quota
    assert gc.isenabled()
    assert _generation_of(kept[0]) == 2
    assert _generation_of(kept[-1]) == 2
    assert gc.get_count()[0] < 100  # no young collection is due for them


def test_a_nested_pause_leaves_the_collector_off_and_promotes_nothing() -> None:
    with collector_paused():
        with collector_paused():
            inner = [[0]]
        assert not gc.isenabled()
        assert _generation_of(inner[0]) == 0
    assert gc.isenabled()


def test_the_collector_stays_off_when_the_caller_had_turned_it_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
