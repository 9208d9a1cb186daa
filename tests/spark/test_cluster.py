"""The Spark Bootstrap on a standalone cluster: a master and two workers on loopback.

All are started from the installed pyspark (`spark-class`), with one core and a little
memory, and stopped when the test ends, passed or not. The driver runs in a subprocess
(tests/spark/cluster_job.py) because this process already holds the local[2] SparkContext.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pyspark
import pytest

from tests.conftest import REPO_ROOT

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
START_TIMEOUT = 120.0
JOB_TIMEOUT = 300.0
WORKERS = 2


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _master_state(ui_port: int) -> dict | None:
    """The master's state, or None while it is not serving it yet: the port refuses, or,
    for a moment after the web UI binds, `/json/` answers with the HTML status page."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as reply:
            return json.load(reply)
    except (OSError, json.JSONDecodeError):
        return None


def _stop(process: subprocess.Popen) -> None:
    """Stop a daemon this test started (and the executors it forked: its process group)."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass


class Cluster:
    def __init__(self, url: str, ui_port: int, logs: Path) -> None:
        self.url = url
        self.ui_port = ui_port
        self.logs = logs

    def state(self) -> dict | None:
        return _master_state(self.ui_port)

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:]
            for path in sorted(self.logs.glob("*.log"))
        )


@pytest.fixture
def standalone_cluster(tmp_path: Path) -> Iterator[Cluster]:
    port, ui_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp_path),
        "PYSPARK_PYTHON": sys.executable,
    }
    url = f"spark://127.0.0.1:{port}"
    master_cmd = [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
    master_cmd += ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)]
    commands = {"master": master_cmd}
    for n in range(WORKERS):
        worker_cmd = [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url]
        worker_cmd += ["--host", "127.0.0.1", "--webui-port", str(_free_port())]
        worker_cmd += ["--cores", "1", "--memory", "1g", "--work-dir", str(tmp_path / f"w{n}")]
        commands[f"worker{n}"] = worker_cmd
    with ExitStack() as stack:
        processes = []
        for name, cmd in commands.items():
            log = stack.enter_context(open(tmp_path / f"{name}.log", "wb"))
            process = subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            processes.append(process)
        # Stop the workers before the master, even when the test fails.
        for process in processes:
            stack.callback(_stop, process)
        cluster = Cluster(url, ui_port, tmp_path)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            state = cluster.state()
            if state and state.get("aliveworkers", 0) >= WORKERS:
                break
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                pytest.fail(f"standalone cluster did not start\n{cluster.log_tail()}")
            time.sleep(0.5)
        yield cluster


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
