"""A Spark standalone cluster on loopback: a master and N workers, started and stopped here.

    with standalone(Path("logs"), workers=2, cores=1, memory="1g") as cluster:
        ...  # a driver started with master `cluster.url` runs its jobs on the workers

Every daemon is started from the installed pyspark (`spark-class`, no separate Spark install)
in a session of its own, with its log in `logs`; the context waits until the master's status
page counts every worker alive, and on leaving (passed or not) stops the workers, then the
master, each with its process group (the executors a worker forked for a driver go with it).

The workers run the decomposed Spark strata's tasks, which import this package and its
compiled kernel (`reasoner.executors.spark.decomposed`): their Python is `python` (default:
the interpreter running this, whose environment has the package), passed as `PYSPARK_PYTHON`;
`env` adds to their environment (a `PYTHONPATH`, say). A driver must bind to loopback too:
`driver_conf()` gives the settings it needs (Spark's own keys).

Used by tests/spark/test_cluster.py and by the scaling study (`bench/scaling.py`).
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
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from bench.harness import session_rss

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0


class ClusterError(RuntimeError):
    """The cluster did not come up (the message ends with the tail of every daemon's log)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master_state(ui_port: int) -> dict | None:
    """The master's state, or None while it is not serving it yet: the port refuses, or,
    for a moment after the web UI binds, `/json/` answers with the HTML status page."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as reply:
            return json.load(reply)
    except (OSError, json.JSONDecodeError):
        return None


def stop(process: subprocess.Popen) -> None:
    """Stop a daemon started here, and what it forked (its process group): SIGTERM, then
    SIGKILL after `STOP_TIMEOUT` seconds."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)
    except ProcessLookupError:
        pass


@dataclass
class Cluster:
    url: str
    """The master's URL, `spark://127.0.0.1:PORT`, for a driver's `master`."""
    ui_port: int
    logs: Path
    workers: int
    cores: int
    processes: list[subprocess.Popen] = field(default_factory=list)

    def state(self) -> dict | None:
        return master_state(self.ui_port)

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:]
            for path in sorted(self.logs.glob("*.log"))
        )

    def rss(self) -> int:
        """Resident bytes of the master, the workers and the executors they run (each daemon
        is the leader of its session, and its executors stay in that session)."""
        return sum(session_rss(p.pid) for p in self.processes if p.poll() is None)

    def driver_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """What a driver on this machine sets to use the whole cluster from loopback: one
        executor per worker with all of the worker's cores."""
        return {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * self.workers),
        }


@contextmanager
def standalone(
    logs: Path,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    start_timeout: float = START_TIMEOUT,
) -> Iterator[Cluster]:
    """A master and `workers` workers of `cores` cores and `memory` each, on loopback; raises
    `ClusterError` when they do not all come up within `start_timeout` seconds."""
    logs.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    environment = {
        **os.environ,
        **(env or {}),
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(logs),
        "PYSPARK_PYTHON": python,
    }
    url = f"spark://127.0.0.1:{port}"
    master_cmd = [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
    master_cmd += ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)]
    commands = {"master": master_cmd}
    for n in range(workers):
        worker_cmd = [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url]
        worker_cmd += ["--host", "127.0.0.1", "--webui-port", str(free_port())]
        worker_cmd += ["--cores", str(cores), "--memory", memory]
        worker_cmd += ["--work-dir", str(logs / f"w{n}")]
        commands[f"worker{n}"] = worker_cmd
    cluster = Cluster(url, ui_port, logs, workers, cores)
    with ExitStack() as stack:
        for name, cmd in commands.items():
            log = stack.enter_context(open(logs / f"{name}.log", "wb"))
            process = subprocess.Popen(
                cmd,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            cluster.processes.append(process)
            # Callbacks run last-in first-out: the workers stop before the master.
            stack.callback(stop, process)
        deadline = time.monotonic() + start_timeout
        while True:
            state = cluster.state()
            if state and state.get("aliveworkers", 0) >= workers:
                break
            if time.monotonic() > deadline or any(p.poll() is not None for p in cluster.processes):
                raise ClusterError(f"standalone cluster did not start\n{cluster.log_tail()}")
            time.sleep(0.5)
        yield cluster
