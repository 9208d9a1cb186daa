"""An Update schedules each candidate in its iteration's bucket, found by the iteration in a
map that places iterations by their own low bits (`buffers.Map.direct`): a chain's
iterations come in runs, which then share cache lines. Where the map places a key
changes no result, only how fast it is found; what this checks is that down a chain of
thousands of iterations, the map growing many times and a later Update's iterations
starting past its size, the state stays the one a fresh Bootstrap gives, iteration and
count."""

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


def test_runs_of_iterations_that_share_the_maps_slots_are_found() -> None:
    """Two runs of iterations 8,192 apart, a power of two, so that placed by their own bits
    they take the same slots whatever the map's size. The far run's 70 buckets are made
    first (70 edges out at once) and wait while the near run's fill the same slots, until a
    key lands far enough past its own slot to turn the map mixed: the waiting ones must be
    found there after."""
    m = Materialization(check_program(PROGRAM))
    far, near = 8_300, 40  # chain `far` from 0; chain `near` from 100,000
    edges = [(i, i + 1) for i in range(far)] + [(100_000 + i, 100_001 + i) for i in range(near)]
    m.load({"edge": edges, "start": [(0,), (100_000,)]})
    m.bootstrap()
    cut = {"edge": [(i, i + 1) for i in range(8_192, 8_262)], "start": [(100_000,)]}
    for delta in (Delta(retract=cut), Delta(insert=cut)):
        report = m.apply(delta, strategy="update")
        assert report.strategy == "update"
        assert m.differences(m.rebuilt()) == {}
