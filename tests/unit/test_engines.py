"""Choosing the Bootstrap executor, and the executors agreeing through the Materialization."""

from __future__ import annotations

import pytest

from reasoner.elastic.engines import SMALL_INPUT, EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization

PROGRAM = """\
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.decl sink(x: number)
.input edge
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
sink(y) :- tc(_, y), !edge(y, _).
"""


def test_auto_prefers_the_kernel_for_small_inputs_local_below_the_threshold_spark_above() -> None:
    for master in ("local[*]", "spark://10.0.0.1:7077"):  # a cluster alone is no reason
        auto = EngineSettings("auto", master, spark_threshold=10_000)
        assert auto.choose(SMALL_INPUT - 1).engine == "reference"
        assert auto.choose(SMALL_INPUT).engine == "local"
        assert auto.choose(9_999).engine == "local"
        assert auto.choose(10_000).engine == "spark"
        assert "threshold" in auto.choose(10_000).reason
    assert EngineSettings("auto", "spark://10.0.0.1:7077").choose(10**6).engine == "local"
    assert EngineSettings("reference").choose(10**9).engine == "reference"


def test_unknown_engines_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown bootstrap engine"):
        EngineSettings("gpu")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_each_in_process_engine_bootstraps_and_reports_itself(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load({"edge": [(i, i + 1) for i in range(30)]})
    report = m.bootstrap()
    assert report.engine.engine == engine
    assert m.differences(m.rebuilt()) == {}
    epoch = m.apply(Delta(retract={"edge": [(10, 11)]}), strategy="bootstrap")
    assert (epoch.engine, epoch.engine_reason) == (engine, "configured")
    assert m.differences(m.rebuilt()) == {}
    assert m.apply(Delta(insert={"edge": [(10, 11)]}), strategy="update").engine is None
