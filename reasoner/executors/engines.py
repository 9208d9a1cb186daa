"""The Bootstrap executors' names and defaults, apart from the executors themselves.

The command line builds its options from these before it imports the engine (which imports
Polars and fixes the size of its thread pool, `reasoner.support.jobs`), so this module
imports nothing of the engine.
"""

from __future__ import annotations

from typing import Literal, get_args

Engine = Literal["auto", "reference", "local", "spark"]
"""Where a Bootstrap runs: the one list of them, which the settings and the command line
take."""
ENGINES: tuple[Engine, ...] = get_args(Engine)
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_SPARK_THRESHOLD = 50_000_000
"""Rows of a stratum (read by its first iteration, plus what it derived in the last Bootstrap)
from which `auto` runs it on a Spark cluster whatever the estimate of speed: where the
in-process state stops fitting comfortably in memory (not on a `local` master, see
`EngineSettings.local_master`)."""

DEFAULT_SPARK_ITERATION = 2_000_000
"""Rows below which an iteration of a Spark Bootstrap runs on the in-process kernel instead
(for iteration 1, its driving relations and the indexes the kernel would build; after it,
the rows of N_{k-1}). A Spark iteration costs a few jobs, 0.3-2 s of scheduling and planning
whatever its size (seconds more for the first queries of a new session), about what the
kernel takes for two million rows (crdt.dl: 1.5 million derived tuples a second): Spark pays
only for iterations larger than that, and a deep recursion's tail of small iterations (CRDT's
thousands) would otherwise cost seconds each. 0 runs every iteration on Spark."""
