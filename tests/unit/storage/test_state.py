"""RelationStore's hash indexes stay equal to a recomputation across insertions, removals,
staging and commits, and commits leave every tuple with the (iteration, count) they were given."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reasoner.materialization import Materialization
from reasoner.storage.overlay import INF
from reasoner.storage.state import RelationStore, State
from reasoner.storage.tuple_set import TupleSet

COLUMNS = ((0,), (1,), (0, 1), ())
"""Key columns: column 0 draws from few values, so groups hold many rows."""

tuples = st.tuples(st.integers(0, 2), st.integers(0, 12))
kinds = st.sampled_from(["add", "remove", "stage", "recount", "commit"])
operations = st.lists(st.tuples(kinds, tuples))


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
    staged: dict[tuple[int, int], int] = {}
    counts: dict[tuple[int, int], int] = {}
    expected: dict[tuple[int, int], tuple[int, int]] = {}
    """(iteration, count) of every tuple once the staged changes are committed."""
    for op, t in ops:
        present = t in store.iters or t in store.extra
        if op == "add" and not present:
            store.add(t, 1, 2)
            expected[t] = (1, 2)
        elif op == "remove" and t in store.iters and staged.get(t) != INF:
            staged[t] = INF
            counts[t] = 7  # a stale count of a removed tuple is ignored
            del expected[t]
        elif op == "stage" and not present:
            store.stage(t)
            staged[t] = 3
            expected[t] = (3, 1)
        elif op == "recount" and t in store.iters and t not in staged:
            count = 1 + store.get(t)[1] % 3  # 2 -> 3 -> 1 -> 2: to and from the implicit 1
            staged[t] = 4
            if count != 1:
                counts[t] = count
            expected[t] = (4, count)
        elif op == "commit":
            store.apply(staged, counts, INF)
            staged, counts = {}, {}
            assert {u: store.get(u) for u in store.iters} == expected
        for columns in COLUMNS:
            index = store.indexes[columns]
            assert {k: set(b) for k, b in index.items()} == _expected(store, columns)
            assert all(len(b) == len(set(b)) for _k, b in index.items())


def test_copy_is_independent() -> None:
    store = RelationStore("r", 2)
    store.add((1, 2), 0, 1)
    store.add((2, 3), 4, 2)
    copy = store.copy()
    assert copy.snapshot() == store.snapshot()
    copy.remove((1, 2))
    assert (1, 2) in store and (1, 2) not in copy


def test_a_state_being_built_marks_its_tables_until_it_is_built() -> None:
    """Only a state no reader can reach lets its tables change their slots on the lanes:
    every table it makes or copies in while building, none once built or published."""
    state = State(building=True)
    made = state.relation("r", 2).table
    state.load_facts("f", 2, TupleSet(2, [(1, 2)]))
    assert made.building and state["f"].table.building
    state.built()
    assert not made.building and not state["f"].table.building
    assert not state.relation("s", 1).table.building
    assert not State().relation("r", 2).table.building
    m = Materialization.from_text(".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x).")
    m.load({"e": [(1,), (2,)]})
    m.bootstrap()
    assert not any(store.table.building for store in m.state.relations.values())
