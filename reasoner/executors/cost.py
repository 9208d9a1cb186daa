"""What a stratum's Bootstrap is expected to cost on each executor: `auto`'s choice.

The estimate uses what is known when the stratum begins, without running a plan:

- the rows its first iteration reads (`reasoner.plan.work.first_work`: the driving rows and
  the indexes to build), from the sizes of the lower strata, which are done by then;
- the same stratum in the last Bootstrap (`StratumRun`): its iterations, the tuples it
  derived, and its seconds when it ran in process;
- for Spark, the cores it has (`spark_cores`, or the `local[N]` master's N).

The constants are this machine's measurements (bench/results/2026-11-27/spark-warm.md): the
per-tuple kernel derives about 1.5 million tuples a second on one thread (crdt.dl); a Spark
iteration costs 0.3-2 s of jobs whatever its size, and Spark's joins get through about 40,000
rows a second per core (lubm1-rdfs on `local[2]`, every iteration on Spark: 230,000 rows read
and derived in 4 iterations, 5-6 s). So Spark pays for a large stratum with few iterations on
dozens of cores, never on two.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from reasoner.analysis.model import Stratum
from reasoner.executors.bootstrap import StratumRun
from reasoner.plan.joins import plan_rule
from reasoner.plan.pivot import pivot_columns
from reasoner.plan.work import first_work
from reasoner.storage.state import State

IN_PROCESS_ROWS_PER_SECOND = 1_500_000
SPARK_ITERATION_SECONDS = 0.5
SPARK_ROWS_PER_CORE_SECOND = 40_000
SPARK_MARGIN = 2.0
"""How much faster Spark must be expected to be: the estimate is rough, and a stratum's last
seconds in process may include a pause of the machine."""
UNKNOWN_ITERATIONS = 10
"""Iterations assumed for a recursive stratum never bootstrapped before."""
SMALL_STRATUM = 2_000
"""Rows below which a stratum runs on the per-tuple kernel alone (`reference`): a small
program then never imports Polars (0.10 s here, the whole of a first Bootstrap of
graph1000-rand1k's 1,010 edges, which the kernel does in 0.004 s). From a few thousand rows
on, the vectorized executor's large iterations win it back (graph10000-rmat1k's 9,206 edges:
0.18-0.21 s local after the import, 0.27-0.29 s on the kernel alone)."""

IN_PROCESS = ("reference", "local")


def master_cores(master: str) -> int:
    """The cores a `local[N]` / `local[*]` / `local` master has; 0 for a cluster, whose cores
    this process cannot know without asking it (`spark_cores` says)."""
    if master == "local":
        return 1
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master)
    if match is None:
        return 0
    return os.cpu_count() or 1 if match.group(1) == "*" else int(match.group(1))


@dataclass(frozen=True, slots=True)
class StratumEstimate:
    """A stratum's expected size and seconds on each executor."""

    rows: int
    """Rows its first iteration reads plus the tuples it derived last time."""
    in_process_seconds: float
    spark_seconds: float | None
    """None when Spark's cores are unknown (a cluster without `spark_cores`)."""

    @classmethod
    def of(
        cls, stratum: Stratum, state: State, previous: StratumRun | None, spark_cores: int
    ) -> StratumEstimate:
        sizes = {name: len(store) for name, store in state.relations.items()}
        work = first_work((plan_rule(rule, None, sizes) for rule in stratum.rules), state.relations)
        derived = previous.derived if previous is not None else 0
        rows = work.driving + work.indexed + work.joined + derived
        if previous is not None and previous.engine in IN_PROCESS:
            in_process = previous.seconds
        else:
            in_process = rows / IN_PROCESS_ROWS_PER_SECOND
        spark = None
        if spark_cores:
            if previous is not None:
                iterations = max(previous.iterations, 1)  # iteration 1 runs, if empty
            else:
                iterations = UNKNOWN_ITERATIONS if stratum.recursive else 1
            if pivot_columns(stratum):
                iterations = min(iterations, 2)  # iteration 1, then the rest in one job
            spark = iterations * SPARK_ITERATION_SECONDS + rows / (
                SPARK_ROWS_PER_CORE_SECOND * spark_cores
            )
        return cls(rows, in_process, spark)
