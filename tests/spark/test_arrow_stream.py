"""`arrow_batches`: a query's Arrow batches as they arrive, every row once, errors raised."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from reasoner.executors.spark.arrow_stream import arrow_batches


def test_every_row_of_every_partition_arrives_once(spark: SparkSession) -> None:
    frame = spark.range(0, 10_000, numPartitions=7).withColumn("twice", F.col("id") * 2)
    batches = list(arrow_batches(frame))
    assert len(batches) >= 7  # one or more per partition, not one concatenated table
    ids = sorted(i for batch in batches for i in batch.column("id").to_pylist())
    assert ids == list(range(10_000))
    for batch in batches:
        assert batch.column("twice").to_pylist() == [2 * i for i in batch.column("id").to_pylist()]


def test_an_empty_result_has_no_batch(spark: SparkSession) -> None:
    assert list(arrow_batches(spark.range(0, 10).filter(F.col("id") < 0))) == []


def test_a_failing_query_raises(spark: SparkSession) -> None:
    frame = spark.range(0, 100, numPartitions=3).select(
        F.when(F.col("id") == 77, F.raise_error(F.lit("boom at 77"))).otherwise(F.col("id"))
    )
    with pytest.raises(Exception, match="boom at 77"):
        list(arrow_batches(frame))
