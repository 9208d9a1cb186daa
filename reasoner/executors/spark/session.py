"""The one SparkSession of the process: created on first use, reused afterwards.

A JVM start-up costs seconds and a process can hold only one active SparkContext, so the engine
keeps a single session. `local[*]` (every core of this machine) is the embedded default; a
`spark://host:port` URL runs the same plans on a standalone cluster (the driver stays in this
process, so results still come back here through Arrow).

The defaults are chosen for Bootstrap's workload, many small jobs: few shuffle partitions (the
per-task overhead dominates for deltas of a few thousand rows), no web UI or console progress
bar, Arrow for the transfers between the JVM and Python, and non-ANSI arithmetic (64-bit wrap
around and NULL for a division by zero, which is what the engine's semantics need).
"""

from __future__ import annotations

import os
import sys
import threading

from pyspark import SparkContext
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

DEFAULT_CONF: dict[str, str] = {
    "spark.app.name": "reasoner",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.ansi.enabled": "false",
    # Every query posts its plan description to the SQL status listener; the default
    # ("formatted") costs more to build than a small Bootstrap query takes to run.
    "spark.sql.ui.explainMode": "simple",
    # The generated code of a query is reused when the same query comes again (every
    # iteration of a recursion, every Bootstrap of a program); the default keeps only 100.
    "spark.sql.codegen.cache.maxEntries": "1000",
    # Checkpointed deltas and broadcast join sides are freed when the driver JVM collects
    # the objects that hold them; a service that runs Bootstrap after Bootstrap should not
    # wait half an hour (Spark's default) for that. (Those objects become garbage only once
    # Python has freed its py4j proxies of them: see `reasoner.support.gc_pause.collector_running`.)
    "spark.cleaner.periodicGC.interval": "1min",
}
"""Settings applied to every session `get_session` creates; keyword arguments override them."""

_lock = threading.Lock()
_session: SparkSession | None = None
_master: str | None = None


def _alive(session: SparkSession | None) -> bool:
    return (
        session is not None
        and SparkContext._active_spark_context is not None
        and session.sparkContext._jsc is not None
    )


def get_session(master: str = DEFAULT_MASTER, **conf: object) -> SparkSession:
    """The process's SparkSession for `master`, created (with `DEFAULT_CONF` and `conf`) if
    there is none yet.

    Configuration keys are Spark's own, passed verbatim:
    `get_session("local[2]", **{"spark.sql.shuffle.partitions": "2"})`. When the session exists
    already, SQL settings in `conf` are applied to it at run time (static ones, such as memory
    sizes, only take effect in a new session). Asking for another master stops the current
    session and starts a new one.
    """
    global _session, _master
    with _lock:
        if _alive(_session) and _master == master:
            assert _session is not None
            for key, value in conf.items():
                if _session.conf.isModifiable(key):
                    _session.conf.set(key, str(value))
            return _session
        if _alive(_session):
            assert _session is not None
            _session.stop()
        if master.startswith("local"):
            # Python workers (a decomposed stratum's tasks) run beside this process: the same
            # interpreter, hence this package and its compiled kernel. PySpark reads only the
            # environment for it; a cluster's workers use their own `python3` unless it is set.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.master(master)
        for key, value in {**DEFAULT_CONF, **{k: str(v) for k, v in conf.items()}}.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        # WARN, not ERROR: "Initial job has not accepted any resources" (no worker has
        # registered, or none has the cores and memory asked for) is a warning, and it is the
        # only sign of a cluster that cannot run the job.
        session.sparkContext.setLogLevel("WARN")
        _session, _master = session, master
        return session


def stop_session() -> None:
    """Stop the session `get_session` created, if any (the next call starts a new one)."""
    global _session, _master
    with _lock:
        if _alive(_session):
            assert _session is not None
            _session.stop()
        _session, _master = None, None
