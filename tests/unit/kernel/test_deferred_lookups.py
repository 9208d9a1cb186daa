"""An Update plan's last step, a tuple's lookup, is put off in a ring of 16
(`reasoner.kernel.deferred`) so that the cache misses of many overlap. Over a transitive
closure, and two mutually recursive relations, whose deleted tuples are re-discovered by
plans of different widths, the ring wraps many times, its entries of different plans. The
state must still equal a fresh Bootstrap's, tuple by tuple with iteration and count, on one
lane and on two, and an Update stopped with lookups waiting must change nothing and leave
none for the next."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.support.deadline import BootstrapCancelled
from tests.unit.kernel.test_lanes import lanes

TC = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
# Two relations of one stratum: a deleted b's re-discovery puts off a lookup wider than a
# deleted a's, both in one ring.
TWO = """
.decl edge(x: number, y: number)
.decl a(x: number, y: number)
.decl b(x: number, y: number, z: number)
a(x, y) :- edge(x, y).
b(x, y, z) :- a(x, y), edge(y, z).
a(x, z) :- b(x, _, z).
"""
# A path of 400 nodes, each of its edges beside a detour one step longer: a retracted edge
# leaves every tuple across it derived one iteration later, and those whose body did not
# change there (through the detour's last node) are found by re-discovery alone.
CHAIN = [(i, i + 1) for i in range(399)] + [
    edge for i in range(399) for edge in ((i, 1000 + i), (1000 + i, i + 1))
]
RETRACTED = [(i, i + 1) for i in range(100, 300, 9)]


def _fresh(program: str, edges: list[tuple[int, int]]) -> dict:
    m = Materialization(
        check_program(program), engines=EngineSettings("reference"), maintained=False
    )
    m.load({"edge": edges})
    m.bootstrap()
    return m.snapshot()


def _live(program: str, count: int) -> Materialization:
    with lanes(count, 1):
        m = Materialization(check_program(program), engines=EngineSettings("reference"))
        m.load({"edge": CHAIN})
        m.bootstrap()
    return m


@pytest.mark.parametrize("program", [TC, TWO], ids=["tc", "two"])
@pytest.mark.parametrize("count", [1, 2])
def test_many_deleted_heads_leave_the_state_of_a_bootstrap(program: str, count: int) -> None:
    """Thousands of tuples deleted and re-discovered, then half the edges back: after each,
    the state is a fresh Bootstrap's."""
    m = _live(program, count)
    remaining = [e for e in CHAIN if e not in RETRACTED]
    with lanes(count, 1):
        m.apply(Delta(retract={"edge": RETRACTED}), strategy="update")
    assert m.snapshot() == _fresh(program, remaining)
    with lanes(count, 1):
        m.apply(Delta(insert={"edge": RETRACTED[::2]}), strategy="update")
    assert m.snapshot() == _fresh(program, remaining + RETRACTED[::2])


@pytest.mark.parametrize("count", [1, 2])
def test_an_update_stopped_with_lookups_waiting_leaves_none_behind(count: int) -> None:
    """The epoch's check raises at its first call, before any enumeration, or at its 30th,
    inside one (it runs every 16,384 steps; on two lanes, 15 lookups were waiting on a lane
    then). Nothing changes, and another epoch afterwards leaves a fresh Bootstrap's state."""
    other = [(i, i + 1) for i in range(50, 350, 11)]
    for stop_at in (1, 30):
        m = _live(TC, count)
        before = m.snapshot()
        calls = 0

        def check(stop_at: int = stop_at) -> None:
            nonlocal calls
            calls += 1
            if calls == stop_at:
                raise BootstrapCancelled("stopped")

        with lanes(count, 1), pytest.raises(BootstrapCancelled):
            m.apply(Delta(retract={"edge": RETRACTED}), strategy="update", check=check)
        assert m.snapshot() == before, stop_at
        with lanes(count, 1):
            m.apply(Delta(retract={"edge": other}), strategy="update")
        assert m.snapshot() == _fresh(TC, [e for e in CHAIN if e not in other]), stop_at
