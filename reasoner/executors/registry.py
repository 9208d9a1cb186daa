"""Which executor runs a Bootstrap, and why.

Three executors produce the same state (tuple, iteration, count):

- `reference`: the per-tuple counting loop (the compiled kernel, `reasoner.kernel`). Its cost
  per iteration is tiny, which is what deep recursions with small deltas (CRDT) need.
- `local`: the vectorized in-process executor (Polars), which switches to the per-tuple loop
  for iterations whose delta is small, so it is never much worse than `reference`.
- `spark`: the same plans as Spark DataFrame jobs, for data that outgrows one process or when a
  cluster with enough cores is configured. Every Spark iteration costs jobs, so only large
  iterations go there (`DEFAULT_SPARK_ITERATION`); the small ones run on the per-tuple kernel,
  as in `local`.

A configured engine runs every stratum. `auto` chooses per stratum, as each begins (its lower
strata done, so their sizes are known), by an estimate of each engine's cost
(`StratumEstimate`): the rows its first iteration reads, the iterations and tuples the same
stratum took in the last Bootstrap, and, for Spark, the cores it has. Spark takes a stratum that
would not fit in process (`spark_threshold` rows: on a cluster, since a `local` master's JVM
holds less than this process) or that its cores would finish sooner; a
configured cluster alone is no reason, since each Spark iteration costs jobs and the in-process
executors win on anything one process holds (a deployment with a cluster once waited 22-70 s
for Spark to bootstrap an empty program). The choice and its reason go into every stratum's
run and every report, so a user can see why an epoch took the time it did.
"""

from __future__ import annotations

import functools
import importlib.util
from collections import Counter
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from reasoner.analysis.model import AnalyzedProgram, Stratum
from reasoner.executors.bootstrap import ReferenceExecutor, Started, StratumRun
from reasoner.executors.contract import StratumExecutor
from reasoner.executors.cost import (
    SMALL_STRATUM,
    SPARK_MARGIN,
    StratumEstimate,
    master_cores,
)
from reasoner.executors.engines import (
    DEFAULT_SPARK_ITERATION,
    DEFAULT_SPARK_MASTER,
    DEFAULT_SPARK_THRESHOLD,
    ENGINES,
)
from reasoner.storage.state import State
from reasoner.support.deadline import Check
from reasoner.support.gc_pause import collector_running
from reasoner.values.symbols import SymbolTable


@functools.cache
def spark_installed() -> bool:
    """Whether PySpark is there: the engine installs without it (the `[spark]` extra)."""
    return importlib.util.find_spec("pyspark") is not None


NO_SPARK = "the spark engine needs PySpark, which is not installed: pip install 'reasoner[spark]'"


@dataclass(frozen=True, slots=True)
class EngineChoice:
    engine: str
    reason: str


@dataclass(frozen=True, slots=True)
class EngineSettings:
    engine: str = "auto"
    spark_master: str = DEFAULT_SPARK_MASTER
    spark_threshold: int = DEFAULT_SPARK_THRESHOLD
    spark_iteration: int = DEFAULT_SPARK_ITERATION
    spark_decompose: bool = True
    """A decomposable recursion (`reasoner.plan.pivot`) that reaches Spark runs there in one
    job; False runs it an iteration per job, as any other stratum (for comparisons)."""
    spark_cores: int = 0
    """The cores Spark has, for `auto`'s estimate; 0: the `local[N]` master's N, and none
    for a cluster (Spark then takes only the strata over `spark_threshold`)."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown bootstrap engine {self.engine!r}: one of {ENGINES}")
        if self.engine == "spark" and not spark_installed():
            raise ValueError(NO_SPARK)
        if self.spark_iteration < 0:
            raise ValueError(f"spark_iteration must be >= 0, got {self.spark_iteration}")
        if self.spark_cores < 0:
            raise ValueError(f"spark_cores must be >= 0, got {self.spark_cores}")

    def choose(self) -> EngineChoice:
        """The whole Bootstrap's executor: the configured one, or `auto` (chosen per stratum
        by `choose_stratum`)."""
        if self.engine != "auto":
            return EngineChoice(self.engine, "configured")
        return EngineChoice("auto", "chosen per stratum")

    def local_master(self) -> bool:
        """Whether Spark runs on this machine (`local[N]`): in a JVM whose heap holds less
        than this process can, so data too large for the process is no reason to go there
        (crdt.dl's 151 M-tuple stratum, sent to `local[*]`, died of Java heap space)."""
        return self.spark_master.startswith("local")

    def cores(self) -> int:
        """Spark's cores for the estimate: `spark_cores`, else the `local[N]` master's."""
        return self.spark_cores or master_cores(self.spark_master)

    def choose_stratum(
        self, stratum: Stratum, state: State, previous: StratumRun | None
    ) -> EngineChoice:
        """`auto`'s executor for a stratum about to begin (see the module's docstring)."""
        if self.engine != "auto":
            return EngineChoice(self.engine, "configured")
        choice = self._auto(stratum, state, previous)
        if choice.engine == "spark" and not spark_installed():
            return EngineChoice("local", f"{choice.reason}, but PySpark is not installed")
        return choice

    def _auto(self, stratum: Stratum, state: State, previous: StratumRun | None) -> EngineChoice:
        estimate = StratumEstimate.of(stratum, state, previous, self.cores())
        rows = f"{estimate.rows:,} rows"
        if estimate.rows >= self.spark_threshold and not self.local_master():
            return EngineChoice("spark", f"{rows} >= Spark threshold {self.spark_threshold:,}")
        # Before the seconds: the last run's are stale when its relations have shrunk since
        # (a cross product over a relation that was large), and no Spark job pays for itself
        # on so few rows.
        if estimate.rows < SMALL_STRATUM:
            return EngineChoice("reference", f"{rows} < {SMALL_STRATUM:,}: the per-tuple kernel")
        spark = estimate.spark_seconds
        if spark is not None and spark * SPARK_MARGIN < estimate.in_process_seconds:
            return EngineChoice(
                "spark",
                f"{rows}: {spark:.2f} s expected on {self.cores()} Spark cores, "
                f"{estimate.in_process_seconds:.2f} s in process",
            )
        faster = "" if spark is None else f" (Spark: {spark:.2f} s)"
        return EngineChoice(
            "local", f"{rows}: {estimate.in_process_seconds:.2f} s expected in process{faster}"
        )


def summary(choice: EngineChoice, runs: tuple[StratumRun, ...]) -> EngineChoice:
    """The Bootstrap's choice for reports: `auto` becomes the executor every stratum ran on,
    or `mixed`, with how many strata each took."""
    if choice.engine != "auto":
        return choice
    engines = Counter(run.engine for run in runs)
    engine = next(iter(engines)) if len(engines) == 1 else "mixed" if engines else "reference"
    parts = [
        "auto, strata per engine: "
        + (", ".join(f"{e} {n}" for e, n in sorted(engines.items())) or "none")
    ]
    parts += [
        f"{'/'.join(run.relations)} on Spark: {run.reason}" for run in runs if run.engine == "spark"
    ]
    return EngineChoice(engine, "; ".join(parts))


def run_bootstrap(
    choice: EngineChoice,
    settings: EngineSettings,
    analyzed: AnalyzedProgram,
    state: State,
    symbols: SymbolTable,
    check: Check | None = None,
    started: Started | None = None,
    history: Mapping[tuple[str, ...], StratumRun] | None = None,
) -> tuple[StratumRun, ...]:
    """Bootstrap every stratum into `state` (which holds the facts at iteration 0); `started`
    is told of each stratum as it begins. Each stratum runs on `choice`'s executor, or, for
    `auto`, on the one `settings.choose_stratum` picks from `history` (the last Bootstrap's
    runs, by their relations) and the state; the runs say which and why.

    `check` is called between iterations and slices of work and stops the run by raising
    (`BootstrapCancelled`), on Spark by cancelling the jobs under way (`CancellableJobs`)."""
    history = history or {}
    with _Executors(settings, analyzed, state, symbols, check) as executors:
        runs = []
        for position, stratum in enumerate(analyzed.strata):
            if started is not None:
                started(stratum)
            chosen = settings.choose_stratum(
                stratum, state, history.get(tuple(sorted(stratum.relations)))
            )
            run = executors.run(chosen.engine, position, stratum)
            runs.append(replace(run, engine=chosen.engine, reason=chosen.reason))
        return tuple(runs)


class _Executors:
    """The executors of one Bootstrap over one state, each started when a stratum first needs
    it (Polars and PySpark are heavy to import, a SparkSession slow to start) and kept for the
    strata after it."""

    def __init__(
        self,
        settings: EngineSettings,
        analyzed: AnalyzedProgram,
        state: State,
        symbols: SymbolTable,
        check: Check | None,
    ) -> None:
        self.settings = settings
        self.analyzed = analyzed
        self.state = state
        self.symbols = symbols
        self.check = check
        self.arities = {name: info.arity for name, info in analyzed.relations.items()}
        self._stack = ExitStack()
        self._started: dict[str, StratumExecutor] = {}
        """The executors started so far, by name."""

    def __enter__(self) -> _Executors:
        return self

    def __exit__(self, *exc: Any) -> None:
        # The executors see the exception that ends the run: Spark's replaces the failure of a
        # job it cancelled with the `check`'s own exception (`CancellableJobs`), which a plain
        # `close` would leave as Spark's job-cancelled error (an epoch timeout answered 500).
        self._stack.__exit__(*exc)

    def run(self, engine: str, position: int, stratum: Stratum) -> StratumRun:
        executor = self._started.get(engine)
        if executor is None:
            start = {
                "reference": self._start_reference,
                "local": self._start_local,
                "spark": self._start_spark,
            }[engine]
            executor = self._started[engine] = start()
        return executor.run_stratum(position, stratum)

    def _start_reference(self) -> StratumExecutor:
        return ReferenceExecutor(self.state, self.symbols, self.arities, self.check)

    def _start_local(self) -> StratumExecutor:
        from reasoner.executors.local.vectorized import VectorizedBootstrap

        return VectorizedBootstrap(self.analyzed, self.state, self.symbols, check=self.check)

    def _start_spark(self) -> StratumExecutor:
        from reasoner.executors.spark.bootstrap import spark_bootstrap
        from reasoner.executors.spark.session import get_session

        if self.check is not None:
            self.check()
        # The JVM's objects are freed through Python's cyclic collector
        # (`collector_running`), also when the caller paused it for an in-process
        # evaluation (`reasoner run`).
        self._stack.enter_context(collector_running())
        return self._stack.enter_context(
            spark_bootstrap(
                self.analyzed,
                self.state,
                self.symbols,
                get_session(self.settings.spark_master),
                self.check,
                small_iteration=self.settings.spark_iteration,
                decompose=self.settings.spark_decompose,
            )
        )
