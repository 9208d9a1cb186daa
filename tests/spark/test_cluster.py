"""The Spark Bootstrap on a standalone cluster: a master and two workers on loopback.

All are started from the installed pyspark (`spark-class`, through `bench.standalone`, which
the scaling study uses too), with one core and a little memory, and stopped when the test ends,
passed or not. The driver runs in a subprocess (tests/spark/cluster_job.py) because this process
already holds the local[2] SparkContext.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.standalone import Cluster, ClusterError, standalone
from tests.conftest import REPO_ROOT

JOB_TIMEOUT = 300.0
WORKERS = 2


@pytest.fixture
def standalone_cluster(tmp_path: Path) -> Iterator[Cluster]:
    try:
        with standalone(tmp_path, workers=WORKERS, cores=1, memory="1g") as cluster:
            yield cluster
    except ClusterError as error:
        pytest.fail(str(error))


def test_bootstrap_on_a_standalone_cluster(standalone_cluster: Cluster) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-m", "tests.spark.cluster_job", standalone_cluster.url],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    assert result.returncode == 0, (
        f"{result.stdout}\n{result.stderr[-5000:]}\n{standalone_cluster.log_tail()}"
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["master"] == standalone_cluster.url
    assert summary["executors"] == WORKERS
    assert summary["workers_run_reasoner"]
    assert summary["same_state"] == {"decomposed": True, "an iteration per job": True}
    assert summary["tuples"] > 40
    state = standalone_cluster.state()
    assert state is not None
    apps = state.get("completedapps", []) + state.get("activeapps", [])
    assert any(app.get("name") == "reasoner" for app in apps)
    assert standalone_cluster.rss() > 0
