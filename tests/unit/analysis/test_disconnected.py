"""Soufflé's PartitionBodyLiterals where it decides rows (`reasoner.analysis.disconnected`):
in a stratum with a subsumption or a choice-domain, a rule whose literals unconnected to its
head read the stratum starts one iteration after they first hold. `tests/golden/disconnected/`
holds the cases and what the 64-bit Soufflé 2.5 wrote for them."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.oracle.evaluation import evaluate
from tests.souffle_golden import Golden
from tests.updates import check_updates, fresh_from

GOLDEN = Golden("disconnected")
OUTPUTS = ("pair", "bond", "pick", "reach", "mix", "hop")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_rules_start_when_soufflé_starts_them(engine: str) -> None:
    m = Materialization.from_text(GOLDEN.program, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


def test_the_oracle_starts_them_so_too() -> None:
    """The oracle (`tests/oracle/late.py`) models the same starts on its own."""
    analyzed = check_program(GOLDEN.program)
    state = evaluate(analyzed, {})
    for name in OUTPUTS:
        assert {tuple(map(str, row)) for row in state[name]} == GOLDEN.rows(name), name


def test_only_order_dependent_strata_are_rewritten() -> None:
    """Elsewhere the rewrite would change iterations and counts, not rows: rules stay as
    written, and so do a rule whose unconnected literals read a lower stratum, an atom of a
    relation read only as `r(_)` (`mix`) and a nullary rule that would become a copy
    (`hop`)."""
    plain = check_program(
        ".decl e(x: number, y: number)\n.decl p(x: number)\n"
        "p(x) :- e(x, _).\np(y) :- p(x), e(x, y), p(_).\n"
    )
    assert not [name for name in plain.relations if "!disconnected" in name]
    analyzed = check_program(GOLDEN.program)
    moved = {name.split("!")[0] for name in analyzed.relations if "!disconnected" in name}
    assert moved == {"pair", "bond", "pick"}


def test_updates_keep_the_late_start() -> None:
    text = GOLDEN.program.replace("low(1).\n", ".decl seedlow(x: number)\nlow(x) :- seedlow(x).\n")
    analyzed = check_program(text)
    fresh = fresh_from(analyzed)
    steps = [
        Delta(insert={"seedlow": [(1,)]}),
        Delta(insert={"seedlow": [(3,)]}, retract={"seedlow": [(1,)]}),
        Delta(retract={"seedlow": [(3,)]}),
    ]
    check_updates(fresh({}), {}, steps, fresh)
