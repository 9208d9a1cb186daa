"""`eqrel` relations under Bootstrap and Update: the equivalence closure, maintained exactly.

The tuples are checked against classes computed by union-find (the oracle, independent of the
engine's rules), and after every random delta the state (tuple, iteration, count) equals a
fresh Bootstrap, with and without rules feeding the relation from another.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization

PROGRAM = """
.decl link(x: number, y: number)
.decl same(x: number, y: number) eqrel
.decl apart(x: number, y: number)
same(x, y) :- link(x, y), x != 3.
same(7, 7).
apart(x, y) :- link(x, _), link(y, _), !same(x, y).
"""

Pair = tuple[int, int]
pairs = st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=8)


def classes(links: set[Pair]) -> set[Pair]:
    """Every pair of every class of the equivalence that `same`'s rule and fact generate."""
    parent: dict[int, int] = {}

    def find(v: int) -> int:
        parent.setdefault(v, v)
        while parent[v] != v:
            v = parent[v]
        return v

    for x, y in [*((x, y) for x, y in links if x != 3), (7, 7)]:
        parent[find(x)] = find(y)
    return {(a, b) for a in parent for b in parent if find(a) == find(b)}


def fresh(links: set[Pair]) -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"link": sorted(links)})
    m.bootstrap()
    return m


def same_tuples(m: Materialization) -> set[Pair]:
    return set(m.snapshot()["same"])


@given(start=pairs, steps=st.lists(st.tuples(pairs, pairs), max_size=4))
def test_eqrel_closure_under_updates(
    start: set[Pair], steps: list[tuple[set[Pair], set[Pair]]]
) -> None:
    m = fresh(start)
    links = set(start)
    assert same_tuples(m) == classes(links)
    for insert, retract in steps:
        m.apply(Delta(insert={"link": sorted(insert)}, retract={"link": sorted(retract - insert)}))
        links = (links - (retract - insert)) | insert
        assert same_tuples(m) == classes(links)
        assert m.snapshot() == fresh(links).snapshot()
