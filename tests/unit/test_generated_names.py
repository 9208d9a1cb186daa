"""Generated code names its runtime objects injectively, whatever the relations are called.

The compiled plans reach the relations' dicts and hash indexes through globals named after them.
Named after the relation's own name, `X_a_0_1` was both the index of `a` on columns (0, 1) and
the index of `a_0` on column (1,): the plan below probed one for the other and a fresh Bootstrap
derived nothing, while Update (whose plans registered the indexes in another order) was right
(issue 28). Names are now made of a number per relation (`PlanCompiler.number`).
"""

from __future__ import annotations

import pytest

from reasoner.elastic.engines import EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.executors.local.codegen import PlanCompiler
from reasoner.materialization import Materialization
from reasoner.state import State
from reasoner.symbols import SymbolTable

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


def test_index_and_relation_names_differ_for_names_that_mangle_alike() -> None:
    names = ("a", "a_0", "a_0_1", "a0", "a_", "a__0", "R_a", "X_a_0")
    arities = dict.fromkeys(names, 3)
    compiler = PlanCompiler(State(), SymbolTable(), arities)
    namespace: dict = {}
    indexes = {
        compiler.index_dict(namespace, name, columns)
        for name in names
        for columns in ((0,), (1,), (0, 1), (1, 2), (0, 1, 2))
    }
    relations = {compiler.relation_dict(namespace, name) for name in names}
    assert len(indexes) == len(names) * 5
    assert len(relations) == len(names)
    assert not indexes & relations
