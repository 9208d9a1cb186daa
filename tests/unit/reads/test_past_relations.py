"""A relation as it was (`reasoner.reads.past_relations`) reads as the set it stands for: the store
less `gone`, plus `back`, through every access a query makes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reasoner.reads.past_relations import PastRelation
from reasoner.storage.state import RelationStore

ROWS = st.sets(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=20)


@given(now=ROWS, then=ROWS, probes=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4))))
def test_a_past_relation_reads_as_the_rows_it_stands_for(
    now: set[tuple[int, int]], then: set[tuple[int, int]], probes: list[tuple[int, int]]
) -> None:
    store = RelationStore("r", 2)
    for row in sorted(now):
        store.add(row, 0, 1)
    past = PastRelation(store, now - then, then - now)
    assert len(past) == len(then)
    assert sorted(past.iters) == sorted(then)
    for x, y in probes:
        assert ((x, y) in past.iters) == ((x, y) in then)
        for key in ({0: x}, {1: y}, {0: x, 1: y}):
            expected = {t for t in then if all(t[c] == v for c, v in key.items())}
            selected = past.select(key)
            assert sorted(selected) == sorted(expected), key
