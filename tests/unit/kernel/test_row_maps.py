"""An Update that changes many rows keeps its statuses, and a stratum above its flips, in
arrays per relation instead of hash maps (`RowMap` in reasoner/kernel/buffers.pxd), and hands
the flips on a slice at a time: the state is still a fresh Bootstrap's, tuple by tuple with
iteration and count."""

from __future__ import annotations

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization

CHAIN = 520
PROGRAM = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.decl node(x: number)
.decl apart(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
node(x) :- edge(x, _).
node(y) :- edge(_, y).
apart(x, y) :- node(x), node(y), !tc(x, y).
"""


def _fresh(edges: set[tuple[int, int]]) -> dict:
    m = Materialization(check_program(PROGRAM), engines=EngineSettings("reference"))
    m.load({"edge": sorted(edges)})
    m.bootstrap()
    return m.snapshot()


def test_updates_of_many_rows_equal_a_fresh_bootstrap() -> None:
    """A chain of 520 nodes: `tc` holds 134,940 tuples and `apart` as many plus 520. Cutting
    the chain in the middle deletes 67,600 of `tc`, whose statuses pass 2,048 keys, where
    their map would double past `DENSE_FROM` slots and arrays cost less; the flips go to
    `apart` above it in slices (more than 65,536 rows) and into arrays too, and so do its
    67,600 new tuples. Joining the chain again re-inserts them as rows appended past the
    arrays' end; closing it into a cycle makes `tc` whole."""
    edges = {(i, i + 1) for i in range(CHAIN - 1)}
    m = Materialization(check_program(PROGRAM), engines=EngineSettings("reference"))
    m.load({"edge": sorted(edges)})
    m.bootstrap()
    middle = (CHAIN // 2 - 1, CHAIN // 2)
    for delta, after in (
        (Delta(retract={"edge": [middle]}), edges - {middle}),
        (Delta(insert={"edge": [middle]}), edges),
        (Delta(insert={"edge": [(CHAIN - 1, 0)]}), edges | {(CHAIN - 1, 0)}),
    ):
        report = m.apply(delta, strategy="update")
        assert report.strategy == "update"
        assert m.snapshot() == _fresh(after)
    assert m.size("tc") == CHAIN * CHAIN
    assert m.size("apart") == 0
