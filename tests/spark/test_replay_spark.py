"""`replay --check --engine spark` on a transitive-closure benchmark graph: the state a Spark
Bootstrap loads into the Update structures is maintained by Update through the 13-epoch
workload, equal to a fresh reference Bootstrap after every epoch.

The Spark Bootstrap runs where the elastic engine needs one (epoch 0 and any fallback); the
check's rebuilds use the reference executor, so Spark is compared with an independent engine.
graph10000-rmat1k is measured by hand (docs/notes/notes-2026-11-24.md): its 13 reference
rebuilds of a 262,144-tuple closure take minutes here.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from reasoner.analysis import check_program
from reasoner.cli.replay import replay
from reasoner.cli.workload import elastic_pattern
from reasoner.executors.registry import EngineSettings
from reasoner.io.facts import load_inputs


def test_graph1000_replays_with_check_on_spark(spark: SparkSession, bench_dir: Path) -> None:
    source = bench_dir / "graph1000-rand1k"
    analyzed = check_program((source / "program.dl").read_text(encoding="utf-8"))
    inputs = load_inputs(analyzed, source)
    workload = elastic_pattern(inputs, seed=1)
    master = spark.sparkContext.master  # the session of the run: no second SparkContext
    records = list(
        replay(
            analyzed,
            inputs,
            workload,
            engines=EngineSettings("spark", master, spark_iteration=0),
            check=True,
        )
    )
    assert len(records) == 13
    assert records[0].report.engine == "spark"
    assert records[0].report.inserted == 11_550
    assert [r.differences for r in records] == [{}] * 13
    assert all(r.report.engine == "spark" for r in records if r.report.strategy == "bootstrap")
