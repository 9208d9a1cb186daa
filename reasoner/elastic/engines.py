"""Which executor runs a Bootstrap, and why.

Three executors produce the same state (tuple, iteration, count):

- `reference`: the per-tuple counting loop (the compiled kernel, `reasoner.update`). Its cost
  per iteration is tiny, which is what deep recursions with small deltas (CRDT) need.
- `local`: the vectorized in-process executor (Polars), which switches to the per-tuple loop
  for iterations whose delta is small, so it is never much worse than `reference`.
- `spark`: the same plans as Spark DataFrame jobs, for data that outgrows one process or when a
  cluster is configured. Every Spark iteration costs jobs, so only large iterations go there
  (`DEFAULT_SPARK_ITERATION`); the small ones run on the per-tuple kernel, as in `local`.

`auto` picks `spark` when the input is at least `spark_threshold` facts, `reference` below
`SMALL_INPUT` facts (no Polars to import for a small program), and `local` otherwise:
a configured cluster alone is no reason, since each Spark iteration is a job and the in-process
executors win on anything one process holds (a deployment with a cluster then waited 22-70 s
for Spark to bootstrap an empty program). The choice and its reason go into every report, so
a user can see why an epoch took the time it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from reasoner.analysis.model import AnalyzedProgram
from reasoner.elastic.bootstrap import Check, Started, StratumBootstrap, StratumRun
from reasoner.gc_pause import collector_running
from reasoner.state import State
from reasoner.symbols import SymbolTable

ENGINES = ("auto", "reference", "local", "spark")
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_SPARK_THRESHOLD = 50_000_000
"""Input facts from which `auto` hands Bootstrap to Spark. Measured on the benchmarks, Spark's
per-iteration job overhead makes it lose to the in-process executors on every input this
machine holds; the threshold is where the in-process state itself stops fitting comfortably in
memory."""

DEFAULT_SPARK_ITERATION = 2_000_000
"""Rows below which an iteration of a Spark Bootstrap runs on the in-process kernel instead
(for iteration 1, its driving relations and the indexes the kernel would build; after it,
the rows of N_{k-1}). A Spark iteration costs a few jobs, 0.3-2 s of scheduling and planning
whatever its size (seconds more for the first queries of a new session), about what the
kernel takes for two million rows (crdt.dl: 1.5 million derived tuples a second): Spark pays
only for iterations larger than that, and a deep recursion's tail of small iterations (CRDT's
thousands) would otherwise cost seconds each. 0 runs every iteration on Spark."""

SMALL_INPUT = 2_000
"""Input facts below which `auto` bootstraps on the per-tuple kernel alone (`reference`): a
small program then never imports Polars (0.10 s here, the whole of a first Bootstrap of
graph1000-rand1k's 1,010 edges, which the kernel does in 0.004 s). From a few thousand facts
on, the vectorized executor's large iterations win it back (graph10000-rmat1k's 9,206 edges:
0.18-0.21 s local after the import, 0.27-0.29 s on the kernel alone)."""


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

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown bootstrap engine {self.engine!r}: one of {ENGINES}")
        if self.spark_iteration < 0:
            raise ValueError(f"spark_iteration must be >= 0, got {self.spark_iteration}")

    def choose(self, input_facts: int) -> EngineChoice:
        if self.engine != "auto":
            return EngineChoice(self.engine, "configured")
        if input_facts >= self.spark_threshold:
            return EngineChoice(
                "spark", f"{input_facts} input facts >= threshold {self.spark_threshold}"
            )
        if input_facts < SMALL_INPUT:
            return EngineChoice(
                "reference", f"{input_facts} input facts < {SMALL_INPUT}: the per-tuple kernel"
            )
        return EngineChoice(
            "local", f"{input_facts} input facts < Spark threshold {self.spark_threshold}"
        )


def run_bootstrap(
    choice: EngineChoice,
    settings: EngineSettings,
    analyzed: AnalyzedProgram,
    state: State,
    symbols: SymbolTable,
    check: Check | None = None,
    started: Started | None = None,
) -> tuple[StratumRun, ...]:
    """Bootstrap every stratum into `state` (which holds the facts at iteration 0); `started`
    is told of each stratum as it begins.

    `check` is called between iterations and slices of work and stops the run by raising
    (`BootstrapCancelled`), on Spark by cancelling the jobs under way (`CancellableJobs`)."""
    if choice.engine == "reference":
        arities = {name: info.arity for name, info in analyzed.relations.items()}
        runs = []
        for stratum in analyzed.strata:
            if started is not None:
                started(stratum)
            runs.append(StratumBootstrap(stratum, state, symbols, arities, check).run())
        return tuple(runs)
    if choice.engine == "local":
        # Imported on use: Polars and PySpark are heavy to import and not every run needs them.
        from reasoner.executors.local.vectorized import bootstrap_vectorized

        return bootstrap_vectorized(analyzed, state, symbols, check=check, started=started)
    from reasoner.executors.spark.bootstrap import bootstrap_spark
    from reasoner.executors.spark.session import get_session

    if check is not None:
        check()
    # The JVM's objects are freed through Python's cyclic collector (`collector_running`),
    # also when the caller paused it for an in-process evaluation (`reasoner run`).
    with collector_running():
        return bootstrap_spark(
            analyzed,
            state,
            symbols,
            get_session(settings.spark_master),
            check,
            small_iteration=settings.spark_iteration,
            decompose=settings.spark_decompose,
            started=started,
        )
