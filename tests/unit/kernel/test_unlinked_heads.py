"""An Update's iteration of many candidates appends its new heads to their tables without
linking them into the key indexes, and links them all at its end (`Table._append` unlinked,
`Table._link_pending`), so that their misses overlap. A non-linear transitive closure probes
its own relation by key at every iteration: a head not linked by the next one would be
missed there. The state must equal a fresh Bootstrap's, tuple by tuple with iteration and
count, on one lane and on two, and an Update stopped with heads unlinked must change nothing
and leave none for the next."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.support.deadline import BootstrapCancelled
from tests.unit.kernel.test_lanes import lanes

# tc joined with itself: `tc(x, y), tc(y, z)` driven by a new tc(x, y) probes tc by its
# first column, and by a new tc(y, z) by its second, where the heads of the iterations
# before are.
NONLINEAR = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), tc(y, z).
"""
# Three paths of 100 nodes; the two edges joining them add 30,000 tuples over several
# iterations. A tuple from the first path to the third joins one from the first to the
# second with one from the second to the third, both new, from iterations before.
LEFT = [(i, i + 1) for i in range(99)] + [(i, i + 1) for i in range(200, 299)]
RIGHT = [(i, i + 1) for i in range(100, 199)]
JOIN = [(99, 100), (199, 200)]


def _fresh(edges: list[tuple[int, int]]) -> dict:
    m = Materialization(
        check_program(NONLINEAR), engines=EngineSettings("reference"), maintained=False
    )
    m.load({"edge": edges})
    m.bootstrap()
    return m.snapshot()


def _live(count: int) -> Materialization:
    with lanes(count, 1):
        m = Materialization(check_program(NONLINEAR), engines=EngineSettings("reference"))
        m.load({"edge": LEFT + RIGHT})
        m.bootstrap()
    return m


@pytest.mark.parametrize("count", [1, 2])
def test_heads_new_in_an_iteration_are_found_by_key_in_the_next(count: int) -> None:
    m = _live(count)
    with lanes(count, 1):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update")
    assert m.snapshot() == _fresh(LEFT + RIGHT + JOIN)
    with lanes(count, 1):
        m.apply(Delta(retract={"edge": JOIN}), strategy="update")
    assert m.snapshot() == _fresh(LEFT + RIGHT)


@pytest.mark.parametrize("count", [1, 2])
def test_an_update_stopped_with_heads_unlinked_leaves_none_behind(count: int) -> None:
    """The epoch's check raises at its 2nd call, within the insertion's iterations (it runs
    every 16,384 steps). Nothing changes, and the same insertion afterwards leaves a fresh
    Bootstrap's state."""
    m = _live(count)
    before = m.snapshot()
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise BootstrapCancelled("stopped")

    with lanes(count, 1), pytest.raises(BootstrapCancelled):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update", check=check)
    assert m.snapshot() == before
    with lanes(count, 1):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update")
    assert m.snapshot() == _fresh(LEFT + RIGHT + JOIN)
