"""An epoch's facts on a relation without rules, recorded by row (`Overlay.record_facts`):
the same flips, commit and discard as the same facts recorded tuple by tuple."""

from __future__ import annotations

import numpy as np
import pytest

from reasoner.storage.overlay import INF, Overlay
from reasoner.storage.state import State

HELD = [(1, 2), (3, 4), (5, 6)]
RETRACTED = [(1, 2), (9, 9), (5, 6)]  # (9, 9) is no fact; (5, 6) is asserted again below
ASSERTED = [(7, 8), (5, 6), (3, 4)]  # (3, 4) is held already


def _state() -> State:
    state = State()
    store = state.relation("e", 2)
    for t in HELD:
        store.add(t, 0, 1)
    return state


def _columns(rows: list[tuple[int, int]]) -> list[np.ndarray]:
    return [np.array([t[c] for t in rows], dtype=np.int64) for c in range(2)]


def _by_tuple(overlay: Overlay) -> None:
    """What the epoch did before `record_facts`: retractions, then assertions, one by one."""
    for t in RETRACTED:
        overlay.set("e", t, INF, 0)
    for t in ASSERTED:
        overlay.set("e", t, 0, 1)


def _by_row(overlay: Overlay) -> None:
    overlay.record_facts("e", _columns(RETRACTED), _columns(ASSERTED))


@pytest.mark.parametrize("record", [_by_tuple, _by_row])
def test_facts_recorded_flip_and_commit_alike(record) -> None:
    state = _state()
    overlay = Overlay(state)
    record(overlay)
    assert overlay.presence_diff("e") == ({(1, 2)}, {(7, 8)})
    assert overlay.presence_sizes("e") == (1, 1)
    gone, new = overlay.presence_rows("e")  # int32 row ids, as the kernel takes them
    assert (gone.dtype, new.dtype) == (np.int32, np.int32)
    table = state["e"].table
    assert (table.tuples(gone), table.tuples(new)) == ([(1, 2)], [(7, 8)])
    overlay.commit()
    assert dict(state["e"].table.items()) == {(3, 4): 0, (5, 6): 0, (7, 8): 0}
    assert all(state["e"].get(t) == (0, 1) for t in [(3, 4), (5, 6), (7, 8)])


def test_a_discarded_record_leaves_the_relation_as_it_was() -> None:
    state = _state()
    overlay = Overlay(state)
    _by_row(overlay)
    assert overlay.rows["e"].rows.dtype == np.int32  # 12 bytes a fact, as a kernel's record
    overlay.discard()
    table = state["e"].table
    assert dict(table.items()) == dict.fromkeys(HELD, 0)
    assert list(table.staged_rows()) == []


def test_only_one_side_may_be_given() -> None:
    state = _state()
    overlay = Overlay(state)
    overlay.record_facts("e", None, _columns([(7, 8)]))
    assert overlay.presence_diff("e") == (set(), {(7, 8)})
    other = Overlay(_state())
    other.record_facts("e", _columns([(3, 4)]), None)
    assert other.presence_diff("e") == ({(3, 4)}, set())
