"""An Update's iteration of many candidates appends its new heads to their tables without
linking them into the key indexes, and links them all at its end (`Table._append` unlinked,
`Table._link_pending`), so that their misses overlap. A non-linear transitive closure probes
its own relation by key at every iteration: a head not linked by the next one would be
missed there. The state must equal a fresh Bootstrap's, tuple by tuple with iteration and
count, on one lane and on two, and an Update stopped with heads unlinked must change nothing
and leave none for the next."""

from __future__ import annotations

from collections.abc import Callable

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
    assert m.state["tc"].table.unlinked == 0
    assert m.snapshot() == _fresh(LEFT + RIGHT + JOIN)
    with lanes(count, 1):
        m.apply(Delta(retract={"edge": JOIN}), strategy="update")
    assert m.snapshot() == _fresh(LEFT + RIGHT)


def _stopped_with_rows_unlinked(m: Materialization, count: int, then: Callable[[], None]) -> None:
    """Insert JOIN, the epoch's check calling `then` and raising at its first call that finds
    tc's table with rows not linked yet."""
    table = m.state["tc"].table
    seen = []

    def check() -> None:
        if table.unlinked:
            seen.append(table.unlinked)
            then()
            raise BootstrapCancelled("stopped")

    with lanes(count, 1), pytest.raises(BootstrapCancelled):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update", check=check)
    assert seen, "the check never ran with rows unlinked"
    assert table.unlinked == 0


@pytest.mark.parametrize("count", [1, 2])
def test_an_update_stopped_with_heads_unlinked_leaves_none_behind(count: int) -> None:
    """Nothing changes, and the same insertion afterwards leaves a fresh Bootstrap's state."""
    m = _live(count)
    before = m.snapshot()
    _stopped_with_rows_unlinked(m, count, lambda: None)
    assert m.snapshot() == before
    with lanes(count, 1):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update")
    assert m.snapshot() == _fresh(LEFT + RIGHT + JOIN)


def test_an_index_a_reader_builds_meanwhile_takes_the_unlinked_rows_once() -> None:
    """A reader that asks for a new index while the writer's rows wait (as a query beside an
    Update may, in the epoch's check) gets every row in it once: its groups end, and they
    hold what the tuples hold. (A row linked twice makes a group that loops: `get` raises.)"""
    m = _live(1)
    index = []
    _stopped_with_rows_unlinked(m, 1, lambda: index.append(m.state["tc"].table.index((1, 0))))
    with lanes(1, 1):
        m.apply(Delta(insert={"edge": JOIN}), strategy="update")
    tuples = set(m.state["tc"].table)
    grouped = [row for y, x in {(y, x) for x, y in tuples} for row in index[0].get((y, x))]
    assert sorted(grouped) == sorted(tuples)
