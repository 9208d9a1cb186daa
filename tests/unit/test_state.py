"""RelationStore's hash indexes stay equal to a recomputation across insertions, removals,
staging and commits, through every bucket form (small tuple, dict, and back)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reasoner.elastic.overlay import INF
from reasoner.state import SMALL_BUCKET, RelationStore

COLUMNS = ((0,), (1,), (0, 1), ())
"""Key columns: column 0 draws from few values, so buckets grow past `SMALL_BUCKET`."""

tuples = st.tuples(st.integers(0, 2), st.integers(0, 3 * SMALL_BUCKET))
operations = st.lists(st.tuples(st.sampled_from(["add", "remove", "stage", "commit"]), tuples))


def _expected(store: RelationStore, columns: tuple[int, ...]) -> dict[object, set]:
    out: dict[object, set] = {}
    for t in (*store.iters, *store.extra):
        key = tuple(t[c] for c in columns)
        out.setdefault(key[0] if len(key) == 1 else key, set()).add(t)
    return out


@given(operations)
def test_indexes_match_a_recomputation(ops: list[tuple[str, tuple[int, int]]]) -> None:
    store = RelationStore("r", 2)
    for columns in COLUMNS:
        store.index(columns)
    staged: dict[tuple[int, int], tuple[int, int]] = {}
    for op, t in ops:
        present = t in store.iters or t in store.extra
        if op == "add" and not present:
            store.add(t, 1, 2)
        elif op == "remove" and t in store.iters:
            staged[t] = (INF, 0)
        elif op == "stage" and not present:
            store.stage(t)
            staged[t] = (3, 1)
        elif op == "commit":
            store.apply(staged, INF)
            staged = {}
        for columns in COLUMNS:
            index = store.indexes[columns]
            assert {k: set(b) for k, b in index.items()} == _expected(store, columns)
            assert all(len(b) == len(set(b)) for b in index.values())
            assert all((b.__class__ is tuple) == (len(b) <= SMALL_BUCKET) for b in index.values())
    assert all(store.get(t) in ((1, 2), (3, 1)) for t in store.iters)
