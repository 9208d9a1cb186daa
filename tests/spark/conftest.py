"""One SparkSession (local[2], cheap settings) for every Spark test of the run.

A process holds one active SparkContext: tests that need another master (the standalone
cluster test) run their driver in a subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from reasoner.executors.spark import get_session, stop_session

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_session("local[2]", **TEST_CONF)
    yield session
    stop_session()
