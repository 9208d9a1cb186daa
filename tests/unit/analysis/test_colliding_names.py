"""Relations whose names mangle alike are kept apart by every engine.

When plans were generated Python code, they reached the relations' dicts and hash indexes
through globals named after them: `X_a_0_1` was both the index of `a` on columns (0, 1) and the
index of `a_0` on column (1,), and a fresh Bootstrap of the program below derived nothing while
Update was right (issue 28). The kernel numbers relations; these programs stay as its check.
"""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization

PROGRAM = """.decl a(x: number, y: number, z: number)
.decl a_0(x: number, y: number)
.decl s(x: number, y: number)
r(z, w) :- s(x, y), a(x, y, z), a_0(w, y).
"""
FACTS = {"s": [(1, 2)], "a": [(1, 2, 3)], "a_0": [(7, 2)]}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_fresh_bootstrap_probes_each_relation_through_its_own_index(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine=engine))
    m.load(FACTS)
    m.bootstrap()
    assert m.rows("r") == [(3, 7)]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_and_a_fresh_bootstrap_agree(engine: str) -> None:
    settings = EngineSettings(engine=engine)
    live = Materialization.from_text(PROGRAM, engines=settings)
    live.bootstrap()
    live.apply(Delta(insert=FACTS), strategy="update")
    fresh = Materialization.from_text(PROGRAM, engines=settings)
    fresh.load(FACTS)
    fresh.bootstrap()
    assert live.rows("r") == [(3, 7)]
    assert live.snapshot() == fresh.snapshot()
