"""A recursive stratum with a subsumption or a choice-domain runs in Soufflé's order
(`StratumBootstrap._stepwise`): the rules that read none of it first, then the others over all
that left, facts included; the first pass ends with one subsumption sweep over the facts and
its tuples at once (`StratumBootstrap._first_pass`). `tests/golden/first_pass/` holds the
cases and what the 64-bit Soufflé 2.5 wrote for them; the oracle defines the same order on its
own."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.oracle.evaluation import comparable, evaluate
from tests.souffle_golden import Golden
from tests.updates import check_updates, fresh_from

GOLDEN = Golden("first_pass")
OUTPUTS = ("D", "C", "W", "E", "A")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_rule_reading_a_fact_of_its_stratum_starts_after_the_first_pass(engine: str) -> None:
    m = Materialization.from_text(GOLDEN.program, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


def test_the_state_is_the_oracles_iteration_by_iteration() -> None:
    """Iterations and counts too: `D(1, 0)` at iteration 1, `W(1, 1)` at 1, the loop's
    first round at 2."""
    m = Materialization.from_text(GOLDEN.program)
    m.bootstrap()
    assert comparable(m.snapshot(), m.analyzed) == comparable(evaluate(m.analyzed, {}), m.analyzed)
    assert m.snapshot()["D"] == {(1, 0): (1, 1)}
    assert m.snapshot()["W"][(1, 1)] == (1, 1)


def test_updates_rebuild_it_in_the_same_order() -> None:
    text = GOLDEN.program.replace("\nB(1).\n", "\n.decl seed(x: number)\nB(x) :- seed(x).\n")
    analyzed = check_program(text)
    fresh = fresh_from(analyzed)
    steps = [
        Delta(insert={"seed": [(1,)]}),
        Delta(insert={"seed": [(2,)]}, retract={"seed": [(1,)]}),
        Delta(insert={"seed": [(1,)]}),
    ]
    final = check_updates(fresh({}), {}, steps, fresh)
    assert final["seed"] == {(1,), (2,)}
