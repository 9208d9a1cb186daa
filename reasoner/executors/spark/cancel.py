"""A Bootstrap's deadline and cancellation, carried into Spark's running jobs.

The in-process executors call their `check` between slices of work; a Spark action is one call
that may run for minutes, so checking before and after it lets an epoch overrun its deadline
by a whole job. Here the run's actions go under a job group of their own, and a watcher thread
calls `check` every `POLL_SECONDS`: when it raises, the watcher cancels the group
(`SparkContext.cancelJobGroup`, interrupting the tasks), the action in the evaluating thread
fails, and that failure is replaced by the `check`'s own exception, so the caller sees the
same `BootstrapCancelled` an in-process run raises.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from types import TracebackType

from pyspark.sql import SparkSession

POLL_SECONDS = 0.05
"""How often the watcher calls `check` while a Spark run is under way."""

Check = Callable[[], None]


class CancellableJobs:
    """`with CancellableJobs(session, check) as jobs:` around the Spark actions of one run.

    The job group is set on the entering thread (PySpark pins each Python thread to a JVM
    thread, so only this run's actions carry it). `jobs.check()` is the run's own check, to be
    called between iterations: it raises what the watcher saw, or calls `check` itself."""

    def __init__(self, session: SparkSession, check: Check) -> None:
        self._context = session.sparkContext
        self._check = check
        self._group = f"reasoner-bootstrap-{uuid.uuid4().hex}"
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="spark-cancel", daemon=True)
        self.error: BaseException | None = None
        """What `check` raised in the watcher, once it has; the run is being cancelled."""

    def __enter__(self) -> CancellableJobs:
        self._context.setJobGroup(self._group, "reasoner Bootstrap", interruptOnCancel=True)
        self._watcher.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._watcher.join()
        # None unsets a property (PySpark's stub says str).
        self._context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        self._context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
        self._context.setLocalProperty("spark.job.interruptOnCancel", None)  # type: ignore[arg-type]
        if exc is not None and self.error is not None and exc is not self.error:
            raise self.error from exc

    def check(self) -> None:
        if self.error is not None:
            raise self.error
        self._check()

    def _watch(self) -> None:
        """Once `check` has raised, cancel the group's active jobs at every poll until the run
        ends: the evaluating thread may start another action before it sees the first fail."""
        tracker = self._context.statusTracker()
        while not self._stop.wait(POLL_SECONDS):
            if self.error is None:
                try:
                    self._check()
                    continue
                except BaseException as error:  # handed to the evaluating thread
                    self.error = error
            group = set(tracker.getJobIdsForGroup(self._group))
            if group.intersection(tracker.getActiveJobsIds()):
                self._context.cancelJobGroup(self._group)
