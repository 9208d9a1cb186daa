"""A decomposable recursion on Spark in one job: each task runs the stratum to its fixpoint.

When a stratum's recursion has pivot columns (`reasoner.plan.pivot`), the relation is
repartitioned by them once, the lower relations the rules read are broadcast, and every task
loads its partition into a state of its own and runs the stratum's remaining iterations on
the compiled kernel (`CompiledStratumBootstrap.fixpoint`, the in-process Bootstrap's own
loop). The groups never interact, so a task's iterations are the global ones and its counts
exact; the tasks send back the tuples they derived with (iteration, count), and the driver
commits them to the state iteration by iteration, as any other executor does.

This replaces one distributed job per iteration, which costs Spark's per-job overhead
(planning, scheduling, a shuffle, a collection) thousands of times on a deep recursion, by
one job whose cost is the data's. It needs the workers to run this package (the same Python
and the compiled kernel): `workers_run_reasoner` asks them once per SparkContext, and a
cluster whose workers cannot is evaluated an iteration per job instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np
from pyspark import Broadcast
from pyspark.sql import SparkSession

from reasoner.analysis.model import Stratum
from reasoner.analysis.terms import atoms_of
from reasoner.executors.bootstrap import StratumBootstrap
from reasoner.storage.state import RelationStore, State
from reasoner.values.symbols import SymbolTable

log = logging.getLogger(__name__)

_reachable: dict[str, bool] = {}
"""Per SparkContext (its application id): whether its workers import the kernel."""


@dataclass(frozen=True)
class StratumTask:
    """What every task of a decomposed stratum needs besides its partition (broadcast once)."""

    stratum: Stratum
    arities: dict[str, int]
    symbols: list[str]
    """The driver's symbols in id order, so that constants and symbol order agree."""
    lower: dict[str, list[np.ndarray] | bool]
    """Every lower relation the rules read: its columns, or for arity 0 whether it holds ()."""
    start: int
    """The first iteration the tasks run (N_{start-1} drives it)."""


Columns = tuple[list[np.ndarray], np.ndarray, np.ndarray]
"""A relation's rows as one int64 array per column, their iterations and their counts."""


def _take(rows: Columns, chosen: np.ndarray) -> Columns:
    values, iterations, counts = rows
    return [column[chosen] for column in values], iterations[chosen], counts[chosen]


def _add_by_iteration(store: RelationStore, rows: Columns) -> dict[int, np.ndarray]:
    """Commit rows (each with its iteration and count) into `store`, an iteration at a time
    and in iteration order, after one sort; the row ids each iteration got."""
    values, iterations, counts = _take(rows, np.argsort(rows[1], kind="stable"))
    added = {}
    bounds = np.flatnonzero(np.diff(iterations)) + 1
    for chunk in np.split(np.arange(len(iterations)), bounds):
        if not len(chunk):
            continue
        iteration = int(iterations[chunk[0]])
        before = store.table.nrows
        store.add_columns([column[chunk] for column in values], counts[chunk], iteration)
        added[iteration] = store.table.committed_in(before, store.table.nrows)
    return added


def _task_state(task: StratumTask) -> tuple[State, SymbolTable]:
    state, symbols = State(), SymbolTable()
    for text in task.symbols:
        symbols.intern(text)
    for name, content in task.lower.items():
        store = state.relation(name, task.arities[name])
        if isinstance(content, bool):
            if content:
                store.add_batch({(): 1}, 0)
        else:
            store.add_columns(content, None, 0)
    return state, symbols


def run_partition(broadcast: Broadcast[StratumTask], parts: Iterator[Columns]) -> Iterator[Columns]:
    """One task: its partition of the relation (every tuple with iteration and count) in, the
    tuples its fixpoint derives from iteration `start` on out."""
    task = broadcast.value
    (name,) = task.stratum.relations
    for part in parts:
        state, symbols = _task_state(task)
        store = state.relation(name, task.arities[name])
        delta = _add_by_iteration(store, part).get(task.start - 1)
        if delta is None:
            continue
        bootstrap = StratumBootstrap(task.stratum, state, symbols, task.arities)
        bootstrap.compiled().fixpoint(task.start, {name: delta}, 1 << 62, None)
        rows: Columns = store.table.columns(with_counts=True)
        yield _take(rows, rows[1] >= task.start)


def _probe(parts: Iterable[int]) -> Iterable[int]:
    import reasoner.kernel.interpreter  # noqa: F401  (the compiled part, which a worker must have)

    yield from parts


def workers_run_reasoner(session: SparkSession) -> bool:
    """Whether the session's workers can run `run_partition` (asked once per SparkContext)."""
    context = session.sparkContext
    key = context.applicationId
    if key not in _reachable:
        try:
            context.parallelize([0], 1).mapPartitions(_probe).collect()
            _reachable[key] = True
        except Exception as error:  # a worker without the package, or another Python
            log.warning(
                "Spark's workers cannot run the reasoner package (%s): recursive strata run "
                "an iteration per job instead of one job each",
                str(error).splitlines()[0] if str(error) else type(error).__name__,
            )
            _reachable[key] = False
    return _reachable[key]


def partition_by(values: list[np.ndarray], pivot: tuple[int, ...], parts: int) -> np.ndarray:
    """The partition of every row: a hash of its pivot columns (multiplicative, so that
    consecutive or strided ids spread evenly) modulo `parts`."""
    mixed = np.zeros(len(values[0]), dtype=np.uint64)
    for position in pivot:
        mixed = (mixed ^ values[position].view(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
    return ((mixed >> np.uint64(32)) % np.uint64(parts)).astype(np.int64)


def lower_relations(stratum: Stratum) -> set[str]:
    """The relations of lower strata that the stratum's rules read."""
    return {
        atom.relation
        for rule in stratum.rules
        for atom, _positive in atoms_of(rule.body)
        if atom.relation not in stratum.relations
    }


def run_decomposed(
    session: SparkSession,
    stratum: Stratum,
    pivot: tuple[int, ...],
    state: State,
    symbols: SymbolTable,
    arities: dict[str, int],
    start: int,
    partitions: int,
) -> tuple[int, int]:
    """Iterations `start`, `start` + 1, ... of a decomposable stratum to its fixpoint, in one
    Spark job, committed into `state`: (the last iteration that derived anything, how many
    tuples were derived). N_{start-1} is the relation's tuples of iteration `start` - 1."""
    (name,) = stratum.relations
    store = state[name]
    lower: dict[str, list[np.ndarray] | bool] = {}
    for relation in lower_relations(stratum):
        table = state.relation(relation, arities[relation]).table
        lower[relation] = table.columns()[0] if arities[relation] else len(table) > 0
    every = symbols.resolve_column(np.arange(len(symbols), dtype=np.int64))
    task = StratumTask(stratum, arities, every, lower, start)
    rows: Columns = store.table.columns(with_counts=True)
    partition = partition_by(rows[0], pivot, partitions)
    parts = [_take(rows, partition == p) for p in range(partitions)]
    context = session.sparkContext
    broadcast = context.broadcast(task)
    try:
        results = (
            context.parallelize(parts, len(parts))
            .mapPartitions(partial(run_partition, broadcast))
            .collect()
        )
    finally:
        broadcast.unpersist()
    results = [part for part in results if len(part[1])]
    log.debug(
        "stratum %d (%s): iterations from %d in one Spark job of %d tasks, pivot columns %s, "
        "%d tuples derived",
        stratum.index,
        name,
        start,
        len(parts),
        list(pivot),
        sum(len(part[1]) for part in results),
    )
    if not results:
        return start - 1, 0
    values = [np.concatenate([part[0][c] for part in results]) for c in range(store.arity)]
    iterations = np.concatenate([part[1] for part in results])
    counts = np.concatenate([part[2] for part in results])
    _add_by_iteration(store, (values, iterations, counts))
    return int(iterations.max()), len(iterations)
