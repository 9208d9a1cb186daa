"""Choosing the Bootstrap executor, and the executors agreeing through the Materialization."""

from __future__ import annotations

import os

import pytest

from reasoner.analysis.model import Stratum
from reasoner.elastic.epoch import Delta
from reasoner.executors import registry
from reasoner.executors.bootstrap import StratumRun
from reasoner.executors.cost import master_cores
from reasoner.executors.registry import EngineChoice, EngineSettings, summary
from reasoner.materialization import Materialization
from reasoner.storage.state import State

PROGRAM = """\
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.decl sink(x: number)
.input edge
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
sink(y) :- tc(_, y), !edge(y, _).
"""


def _stratum_of(text: str, inputs: dict, relation: str) -> tuple[Stratum, State]:
    """A program's stratum holding `relation`, and a state with the inputs loaded."""
    m = Materialization.from_text(text)
    m.load(inputs)
    state = State()
    for name, info in m.analyzed.relations.items():
        state.load_facts(name, info.arity, m.facts[name])
    stratum = next(s for s in m.analyzed.strata if relation in s.relations)
    return stratum, state


def _edges(n: int) -> dict:
    return {"edge": [(i, i + 1) for i in range(n)]}


def test_auto_chooses_per_stratum_from_its_rows() -> None:
    """The kernel for a small stratum, Polars for a larger one, a cluster from the threshold;
    a configured cluster alone (its cores unknown) is no reason, and a `local` master's JVM
    holds less than the process, so the threshold sends nothing there."""
    for master in ("local[*]", "spark://10.0.0.1:7077"):
        auto = EngineSettings("auto", master, spark_threshold=50_000)
        small = auto.choose_stratum(*_stratum_of(PROGRAM, _edges(100), "tc"), None)
        assert small.engine == "reference" and "per-tuple kernel" in small.reason
        larger = auto.choose_stratum(*_stratum_of(PROGRAM, _edges(5_000), "tc"), None)
        assert larger.engine == "local"
        huge = auto.choose_stratum(*_stratum_of(PROGRAM, _edges(60_000), "tc"), None)
        expected = "local" if auto.local_master() else "spark"
        assert (huge.engine, "threshold" in huge.reason) == (expected, expected == "spark")
    assert EngineSettings("reference").choose_stratum(
        *_stratum_of(PROGRAM, _edges(60_000), "tc"), None
    ) == EngineChoice("reference", "configured")


def test_auto_sends_a_slow_stratum_to_a_cluster_with_enough_cores() -> None:
    """The last Bootstrap's seconds in process against Spark's iterations and cores: a few
    slow iterations go to 64 cores, a deep recursion does not (each iteration costs jobs),
    and 2 cores never win."""
    stratum, state = _stratum_of(PROGRAM, _edges(5_000), "tc")
    slow = StratumRun(0, ("tc",), 3, 10_000_000, 60.0, "local", "")
    deep = StratumRun(0, ("tc",), 5_000, 10_000_000, 60.0, "local", "")
    cluster = EngineSettings("auto", "spark://10.0.0.1:7077", spark_cores=64)
    assert (
        EngineSettings("auto", "spark://10.0.0.1:7077").choose_stratum(stratum, state, slow).engine
        == "local"
    )
    chosen = cluster.choose_stratum(stratum, state, slow)
    assert chosen.engine == "spark" and "64 Spark cores" in chosen.reason
    stratum_sink, state_sink = _stratum_of(PROGRAM, _edges(5_000), "sink")
    deep_sink = StratumRun(1, ("sink",), 5_000, 10_000_000, 60.0, "local", "")
    assert cluster.choose_stratum(stratum_sink, state_sink, deep_sink).engine == "local"
    assert cluster.choose_stratum(stratum, state, deep).engine == "spark"  # tc decomposes
    assert EngineSettings("auto", "local[2]").choose_stratum(stratum, state, slow).engine == "local"


def test_a_small_stratum_stays_in_process_however_long_it_took_last_time() -> None:
    """The last run's seconds are stale once its relations shrank (a property test met a
    12-row stratum sent to a local Spark because its cross product had taken 2 s before)."""
    stratum, state = _stratum_of(PROGRAM, _edges(10), "tc")
    slow = StratumRun(0, ("tc",), 3, 100, 60.0, "local", "")
    cluster = EngineSettings("auto", "spark://10.0.0.1:7077", spark_cores=64)
    assert cluster.choose_stratum(stratum, state, slow).engine == "reference"


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[4, 2]", 4),
        ("local[*]", os.cpu_count()),
        ("spark://h:7077", 0),
    ],
)
def test_master_cores(master: str, cores: int) -> None:
    assert master_cores(master) == cores


def test_auto_reports_each_stratum_s_executor_and_the_mix() -> None:
    """A chain of 100 edges: 100 rows for tc's stratum (the kernel), its 5,050 paths for
    sink's (Polars); the report names the mix, each run its executor and reason."""
    m = Materialization.from_text(PROGRAM)
    m.load(_edges(100))
    report = m.bootstrap()
    engines = {run.relations: run.engine for run in report.strata}
    assert engines == {("tc",): "reference", ("sink",): "local"}
    assert report.engine.engine == "mixed"
    assert all(run.reason for run in report.strata)
    assert m.differences(m.rebuilt()) == {}
    assert report.engine.reason.startswith("auto, strata per engine: ")
    assert summary(EngineChoice("auto", ""), report.strata).engine == report.engine.engine


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


def test_without_pyspark_auto_stays_in_process_and_spark_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine installs without the `[spark]` extra: `auto` then keeps a stratum it would
    send to Spark in process, saying why, and `spark` is refused naming the extra."""
    monkeypatch.setattr(registry, "spark_installed", lambda: False)
    auto = EngineSettings("auto", "spark://10.0.0.1:7077", spark_threshold=50_000)
    chosen = auto.choose_stratum(*_stratum_of(PROGRAM, _edges(60_000), "tc"), None)
    assert chosen.engine == "local" and "PySpark is not installed" in chosen.reason
    with pytest.raises(ValueError, match=r"reasoner\[spark\]"):
        EngineSettings("spark")
