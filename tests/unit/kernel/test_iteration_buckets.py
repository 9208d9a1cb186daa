"""An Update schedules each candidate in its iteration's bucket, found by the iteration in a
map that places iterations by their own low bits (`buffers.Map.direct`): a chain's
iterations come in runs, which then share cache lines. Down a chain of thousands of
iterations the map grows many times, and past its size the iterations wrap around its
slots: the state must stay the one a fresh Bootstrap gives, iteration and count."""

from __future__ import annotations

from reasoner import Delta
from reasoner.analysis import check_program
from reasoner.materialization import Materialization

PROGRAM = """
.decl edge(x: number, y: number)
.decl start(x: number)
.decl reach(x: number)
reach(x) :- start(x).
reach(y) :- reach(x), edge(x, y).
"""
LENGTH = 5_000


def test_an_update_down_a_chain_of_thousands_of_iterations_is_a_fresh_bootstrap() -> None:
    m = Materialization(check_program(PROGRAM))
    edges = [(i, i + 1) for i in range(LENGTH)]
    m.load({"edge": edges, "start": [(0,)]})
    m.bootstrap()
    deltas = [
        Delta(retract={"start": [(0,)]}),  # every iteration's tuple goes
        Delta(insert={"start": [(0,)]}),
        Delta(retract={"edge": [(LENGTH // 2, LENGTH // 2 + 1)]}),  # the chain's second half
        Delta(insert={"start": [(LENGTH // 2 + 1,)], "edge": [(LENGTH // 2, LENGTH // 2 + 1)]}),
    ]
    for delta in deltas:
        report = m.apply(delta, strategy="update")
        assert report.strategy == "update"
        assert m.differences(m.rebuilt()) == {}
    assert len(m.facts["start"]) == 2
