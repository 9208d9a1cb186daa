"""Bootstrap (Algorithm 2 of the elastic paper) on Spark: the same state as `StratumBootstrap`.

Per stratum, counting semi-naive evaluation with every relation a DataFrame (`c0 ...`):

- iteration 1: every rule over I_0 (the relations as they are on entry, plus the lower strata);
- iteration k >= 2: for every recursive body atom i of every rule, atom i over N_{k-1}, the
  recursive atoms before i over I_{k-2}, the ones after it over I_{k-1}: the first-position
  decomposition, which counts each instantiation once, by its first atom in N_{k-1}.

**One query and one collect per iteration.** The derivations of every head relation of the
stratum go into one union (a relation tag column), counted per head by one aggregation and
streamed to the driver as Arrow batches (`arrow_batches`). The state in the driver is the
relation: it drops the heads it holds already (hash probes, `Table.absent`), commits N_k at
iteration k (`add_columns`, no Python tuple per row) and sends N_k back to Spark as the next
delta. No query anti-joins against all of I_{k-1}, and none reads Spark's own results, so there
is no lineage to cut and no second job per iteration; the driver also knows every relation's
and every delta's size without asking Spark: plans over an empty relation are skipped, the
loop stops on an empty iteration, and small join sides are broadcast.

A relation lives on Spark as its last delta N_{k-1} plus pieces holding I_{k-2} (its rows on
entry, then older deltas), so I_{k-2} and I_{k-1} are unions, not filters. Every upload is a
lazily marked local checkpoint: the first query that reads it writes its blocks, and later
iterations read them where they are. Older pieces are merged four at a time, like the digits
of a base-4 counter over iterations, so a deep recursion with tiny deltas keeps O(log k)
pieces (small query plans) and copies each tuple O(log k) times. No query mentions k, so every
iteration runs the same query text and Spark reuses the code it generated for it.

**Small iterations run in process.** An iteration driven by fewer rows than the
`small_iteration` setting (`reasoner.executors.cost.DEFAULT_SPARK_ITERATION`) runs on the
per-tuple kernel over the same state (the reference's plans, as the vectorized executor runs
its small iterations), so a stratum with small inputs never reaches Spark and a deep
recursion's tail of small iterations costs microseconds each instead of Spark jobs. The two
agree tuple for tuple and count for count, so a stratum may switch at any iteration: to the
kernel, the rows Spark's last iteration committed drive it; back to Spark, the stratum's
relations are uploaded again, their newest iteration as the delta.

**Functors run in process.** `cat`, `substr`, `to_string` make symbols, which only the
driver's symbol table can number, so a stratum whose rules call a functor (`range` too)
runs every iteration on the kernel (its inputs may still have come from Spark).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from reasoner.analysis.model import AggregateDefinition, AnalyzedProgram, Stratum
from reasoner.analysis.numeric import uses_driver_arithmetic
from reasoner.analysis.terms import calls_functor, leaves
from reasoner.executors.aggregate import ITERATION, bootstrap_aggregate
from reasoner.executors.bootstrap import Started, StratumBootstrap, StratumRun
from reasoner.executors.engines import DEFAULT_SPARK_ITERATION
from reasoner.executors.spark.aggregate import aggregate_batches
from reasoner.executors.spark.arrow_stream import arrow_batches
from reasoner.executors.spark.cancel import CancellableJobs
from reasoner.executors.spark.decomposed import run_decomposed, workers_run_reasoner
from reasoner.executors.spark.plans import SparkPlan, column_names
from reasoner.plan.joins import atom_at, plan_rule, positive_atoms
from reasoner.plan.pivot import pivot_columns
from reasoner.plan.work import first_work
from reasoner.storage import count_where
from reasoner.storage.state import RelationStore, State
from reasoner.support.deadline import Check, unchecked
from reasoner.syntax.ast import Atom, Comparison, Negation, NumberConst, StringConst, Term
from reasoner.values.symbols import SymbolTable

if TYPE_CHECKING:
    from reasoner.kernel.bootstrap import CompiledStratumBootstrap

MERGE_FANOUT = 4
"""Pieces covering the same number of iterations are merged this many at a time."""


ARROW_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"
"""Rows per Arrow batch: PySpark makes one partition of each when it creates a DataFrame."""


EAGER_ROWS = 100_000
"""An upload of this many rows is checkpointed at once: one job, small next to writing its
rows, and no source (`_Piece`) kept beside them until the next query has run. Lazily
checkpointed, such uploads ran `crdt_linear` (all on Spark) out of a 1 GiB driver heap by its
third Bootstrap; eagerly, it ran as fast and within it."""


BROADCAST_BYTES = 8 << 20
"""A join side known to be at most this large (8 bytes a value) is broadcast."""


def _schema(arity: int) -> StructType:
    return StructType([StructField(c, LongType(), False) for c in column_names(arity)])


@dataclass
class _Piece:
    """Rows of a relation on Spark: a lazily marked local checkpoint, and until a query that
    reads it has run (and so written its blocks), the DataFrame it was made from.

    Spark registers a query's metrics weakly: once the DataFrame a lazy checkpoint was made
    from is unreachable, the JVM's collector may drop them, and every task that later writes
    the checkpoint's blocks logs an error ("non-existent accumulator"). Kept any longer, the
    source would keep its rows (an upload's Arrow batches, a merge's pieces) in the JVM
    beside the checkpoint's blocks. (Large uploads are checkpointed at once, `EAGER_ROWS`.)
    """

    frame: DataFrame
    source: DataFrame | None = None
    span: int = 1
    """How many iterations the piece covers (the rows on entry count as one)."""
    read: bool = False
    """A query under construction reads the piece (`_Relation.written` once it has run)."""

    def reading(self) -> DataFrame:
        """The frame, for a query under construction: its source goes once the query ran."""
        self.read = True
        return self.frame


@dataclass
class _Relation:
    """A relation on Spark: the last delta, and pieces holding everything older.

    The relation itself lives in the state (the driver), which commits every N_k; Spark holds
    copies for the joins. While a stratum runs, `pieces` hold I_{k-2} and `delta` holds
    N_{k-1}, so I_{k-1} is their union and the first-position decomposition needs no filter on
    an iteration column.
    """

    name: str
    arity: int
    size: int = 0
    pieces: list[_Piece] = field(default_factory=list)
    delta: _Piece | None = None
    delta_size: int = 0
    split: int = 0
    """The row id of the state's table where the delta's rows begin (the pieces' end)."""
    end: int = 0
    """The table's row count when the delta was uploaded: Spark's copy is rows [0, end)."""

    @property
    def columns(self) -> list[str]:
        return column_names(self.arity)

    def _union(self, frames: list[DataFrame], session: SparkSession) -> DataFrame:
        if not frames:
            return session.createDataFrame([], _schema(self.arity))
        return reduce(DataFrame.union, frames)

    def full(self, session: SparkSession) -> DataFrame:
        """Every tuple so far: I_{k-1} while a stratum runs."""
        delta = [self.delta] if self.delta is not None else []
        return self._union([piece.reading() for piece in self.pieces + delta], session)

    def older(self, session: SparkSession) -> DataFrame:
        """I_{k-2}: every tuple but the last delta's."""
        return self._union([piece.reading() for piece in self.pieces], session)

    def last(self) -> DataFrame:
        """N_{k-1}."""
        assert self.delta is not None
        return self.delta.reading()

    def written(self) -> None:
        """A query has run: the blocks of the pieces it read are written, and their sources
        can go."""
        for piece in [*self.pieces, *([self.delta] if self.delta is not None else [])]:
            if piece.read:
                piece.source, piece.read = None, False

    def advance(self, delta: _Piece | None, rows: int, partitions: int) -> None:
        """N_k arrived (None when empty): N_{k-1} joins the older pieces."""
        if self.delta is not None:
            self.add_piece(self.delta, partitions)
        self.delta, self.delta_size = delta, rows
        self.size += rows
        self.split = self.end

    def add_piece(self, piece: _Piece, partitions: int) -> None:
        """Pieces covering the same number of iterations are merged `MERGE_FANOUT` at a time,
        like the digits of a base-4 counter over iterations: a deep recursion with tiny deltas
        keeps O(log k) pieces (small query plans) and copies each tuple O(log k) times."""
        self.pieces.append(piece)
        while len(self.pieces) >= MERGE_FANOUT and (
            len({p.span for p in self.pieces[-MERGE_FANOUT:]}) == 1
        ):
            merging = self.pieces[-MERGE_FANOUT:]
            merged = reduce(DataFrame.union, [p.frame for p in merging]).coalesce(partitions)
            del self.pieces[-MERGE_FANOUT:]
            span = sum(p.span for p in merging)
            self.pieces.append(_Piece(merged.localCheckpoint(eager=False), merged, span))


class _InProcess:
    """The kernel's side of a stratum that Spark evaluates: its plans, compiled on first use
    (the lower strata's sizes, which the join orders follow, are known by then), and the rows
    of the last iteration Spark committed, which drive the kernel when it takes over."""

    def __init__(self, runner: SparkBootstrap, stratum: Stratum) -> None:
        self.runner = runner
        self.stratum = stratum
        self.since: dict[str, int] = {}
        self._compiled: CompiledStratumBootstrap | None = None

    def compiled(self) -> CompiledStratumBootstrap:
        if self._compiled is None:
            runner = self.runner
            self._compiled = StratumBootstrap(
                self.stratum, runner.state, runner.symbols, runner._arities(), runner.check
            ).compiled()
        return self._compiled

    def mark(self) -> None:
        """Spark's next iteration is about to commit N_k: remember where its rows start."""
        state = self.runner.state
        self.since = {name: state[name].table.nrows for name in self.stratum.relations}

    def delta_rows(self) -> dict[str, np.ndarray]:
        """The row ids of N_{k-1}, which Spark's last iteration committed: the rows from
        `mark` on, since a Bootstrap only appends."""
        state = self.runner.state
        return {
            name: state[name].table.committed_in(self.since.get(name, 0), state[name].table.nrows)
            for name in self.stratum.relations
        }


class SparkBootstrap:
    """Evaluates every stratum of a program on one SparkSession, updating `state` as it goes."""

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        state: State,
        symbols: SymbolTable,
        session: SparkSession,
        check: Check = unchecked,
        small: int = DEFAULT_SPARK_ITERATION,
        decompose: bool = True,
    ) -> None:
        self.analyzed = analyzed
        self.small = small
        """Iterations driven by fewer rows run on the kernel (0: every one on Spark)."""
        self.decompose = decompose
        """Whether a decomposable recursion runs in one job (else an iteration per job)."""
        self.state = state
        self.symbols = symbols
        self.session = session
        self.check = check
        """Called before every iteration (`CancellableJobs` reaches the jobs in between)."""
        self.relations: dict[str, _Relation] = {}
        self.partitions = max(1, int(session.conf.get("spark.sql.shuffle.partitions") or 1))

    # -- relations ------------------------------------------------------------------------------

    def _store(self, name: str) -> RelationStore:
        return self.state.relation(name, self.analyzed.relations[name].arity)

    def relation(self, name: str) -> _Relation:
        """The relation on Spark, uploaded from the state (through Arrow) on first use."""
        rel = self.relations.get(name)
        if rel is None:
            rel = self._load(name, None)
        return rel

    def _load(self, name: str, delta: np.ndarray | None) -> _Relation:
        """Upload a relation from the state, as one piece; with `delta`, the row ids of N_{k-1}
        (a stratum going back to Spark after iterations on the kernel), which are the table's
        last rows (a Bootstrap appends iteration after iteration), those rows become the delta
        and the older ones the piece."""
        store = self._store(name)
        rel = self.relations[name] = _Relation(name, store.arity)
        end = store.table.nrows
        split = end if delta is None or not len(delta) else int(delta.min())
        older = store.table.committed_in(0, split)
        if len(older):
            rel.add_piece(self._upload(rel, older), self.partitions)
            rel.size = len(older)
        self._advance(rel, split)
        return rel

    def _upload(self, rel: _Relation, rows: np.ndarray) -> _Piece:
        """Rows of a relation's table (ids) as a DataFrame, through Arrow, kept on Spark as a
        local checkpoint, so later iterations read its blocks where they are instead of
        receiving the rows again with every task. (Left a local relation, the rows would
        also be filtered and projected in the driver by the optimizer of every query that
        reads them, `ConvertToLocalRelation`, one thread at a time.) Below `EAGER_ROWS` the
        checkpoint is marked lazily: the first query that reads it writes its blocks, with no
        job of its own."""
        table, arity = self._store(rel.name).table, rel.arity
        if not arity:  # no column to carry the rows: a range of as many
            source = self.session.range(len(rows)).select()
            return _Piece(source.localCheckpoint(eager=False), source)
        arrays = [pa.array(column, type=pa.int64()) for column in table.values_of(rows)]
        batch = pa.Table.from_arrays(arrays, schema=_arrow_schema(arity))
        # One partition per Arrow batch, and a task carries its partition's rows until the
        # checkpoint holds them: batches of `partitions` equal parts, not Spark's default
        # 10,000 rows (381 tasks for 3.8 M rows, each job that reads the upload first
        # serializing 1.4 GB of tasks).
        conf = self.session.conf
        previous = conf.get(ARROW_BATCH_ROWS, None)
        conf.set(ARROW_BATCH_ROWS, str(max(1, -(-len(rows) // self.partitions))))
        try:
            source = self.session.createDataFrame(batch, schema=_schema(arity))
        finally:
            if previous is None:
                conf.unset(ARROW_BATCH_ROWS)
            else:
                conf.set(ARROW_BATCH_ROWS, previous)
        if len(rows) >= EAGER_ROWS:
            return _Piece(source.localCheckpoint(eager=True))
        return _Piece(source.localCheckpoint(eager=False), source)

    def _advance(self, rel: _Relation, start: int) -> int:
        """N_k is the table's rows from `start` on: uploaded as the new delta. Returns |N_k|."""
        table = self._store(rel.name).table
        rows = table.committed_in(start, table.nrows)
        rel.advance(self._upload(rel, rows) if len(rows) else None, len(rows), self.partitions)
        rel.split, rel.end = start, table.nrows
        return len(rows)

    def _selected(self, plan: SparkPlan, i: int, part: str) -> int:
        """The rows of body atom i's frame (`part`: the relation's "full" copy, its "older"
        pieces or its "delta") that hold the atom's constants: the exact size of the side the
        join sees, counted in the state's table. Spark knows no size of uploaded data, and a
        selection such as `triple(p, "domain", c)` over millions of triples is often a few
        rows, which broadcast makes a map-side join instead of a shuffle of the large side."""
        literal = plan.rule.body[i]
        atom = literal.atom if isinstance(literal, Negation) else literal
        assert isinstance(atom, Atom), "i is a body atom's index, positive or negated"
        rel = self.relations.get(atom.relation)
        size = self.size(atom.relation)
        if rel is not None:
            size = {"full": rel.size, "older": rel.size - rel.delta_size, "delta": rel.delta_size}[
                part
            ]
        constants = [
            (col, arg.value if isinstance(arg, NumberConst) else self.symbols.intern(arg.value))
            for col, arg in enumerate(atom.args)
            if isinstance(arg, NumberConst | StringConst)
        ]
        if not constants or not size:
            return size
        table = self._store(atom.relation).table
        start, stop = 0, table.nrows
        if rel is not None:
            start, stop = (rel.split, rel.end) if part == "delta" else (0, rel.end)
            if part == "older":
                stop = rel.split
        columns, values = zip(*constants, strict=True)
        return count_where(table, columns, values, start, stop)

    def size(self, name: str) -> int:
        rel = self.relations.get(name)
        return rel.size if rel is not None else len(self._store(name))

    # -- one iteration --------------------------------------------------------------------------

    def _collect(self, derivations: dict[str, list[DataFrame]], k: int) -> int:
        """N_k of every relation of the stratum, from one query and one collect; committed into
        the state at iteration k and uploaded as the next delta. Returns |N_k| summed.

        The derivations of all head relations are unioned (a tag column `_r` says whose, the
        columns padded with zeros to the widest head) and counted per head by one aggregation.
        The driver drops the heads its state holds already (hash probes over the candidates,
        `Table.absent`) instead of Spark anti-joining them against all of I_{k-1}, and sends
        N_k back as a local relation: no query reads Spark's own results, so none has a
        lineage to cut or a second job to run."""
        heads = [
            name
            for name, frames in derivations.items()
            if frames and not (self.relations[name].arity == 0 and self.relations[name].size)
        ]
        width = max((self.relations[name].arity for name in heads), default=0)
        tagged = []
        for tag, name in enumerate(heads):
            arity = self.relations[name].arity
            padding = [F.lit(0).cast(LongType()).alias(f"c{j}") for j in range(arity, width)]
            tagged += [
                frame.select(F.lit(tag).alias("_r"), *column_names(arity), *padding)
                for frame in derivations[name]
            ]
        starts = {name: self._store(name).table.nrows for name in derivations}
        if tagged:
            counted = reduce(DataFrame.union, tagged).groupBy("_r", *column_names(width))
            # Batch by batch as Spark sends them (a head is one group, so in one batch), each
            # column read in place (`to_numpy` on a batch's int64 array copies nothing): the
            # driver holds one batch of the result at a time, not all of it.
            for batch in arrow_batches(counted.agg(F.count(F.lit(1)).alias("cnt"))):
                tags = batch.column("_r").to_numpy()
                counts = batch.column("cnt").to_numpy()
                values = [batch.column(c).to_numpy() for c in column_names(width)]
                for tag, name in enumerate(heads):
                    chosen = np.flatnonzero(tags == tag)
                    if len(chosen):
                        self._commit(name, [v[chosen] for v in values], counts[chosen], k)
            for rel in self.relations.values():
                rel.written()
        return sum(self._advance(self.relations[name], start) for name, start in starts.items())

    def _commit(self, name: str, values: list[np.ndarray], counts: np.ndarray, k: int) -> None:
        """Add the heads the state does not hold yet, with their counts, at iteration k."""
        store = self._store(name)
        if not store.arity:
            store.add_batch({(): int(counts.sum())}, k)
            return
        columns = values[: store.arity]
        new = store.table.absent(columns)
        store.add_columns([column[new] for column in columns], counts[new], k)

    def _runnable(self, plan: SparkPlan, sizes: dict[int, int]) -> bool:
        """False when the rule cannot derive anything: a positive atom ranges over nothing, or
        a wildcard-only negation's relation is non-empty."""
        if any(sizes[i] == 0 for i in plan.positive):
            return False
        return all(self.size(plan.relation(i)) == 0 for i in plan.negated_any)

    def _broadcast_rows(self, arity: int) -> int:
        return BROADCAST_BYTES // (8 * max(arity, 1))

    def _evaluate(
        self,
        plan: SparkPlan,
        frames: dict[int, DataFrame | None],
        rows: dict[int, int],
    ) -> DataFrame:
        for i in plan.negated:
            name = plan.relation(i)
            frames[i] = self.relation(name).full(self.session) if self.size(name) else None
            rows[i] = self._selected(plan, i, "full")
        # Per-relation thresholds would need the arity per side; the widest atom bounds them.
        arity = max((len(self.analyzed.relations[plan.relation(i)].types) for i in rows), default=1)
        return plan(frames, self.session, rows=rows, broadcast_rows=self._broadcast_rows(arity))

    # -- one stratum ----------------------------------------------------------------------------

    def _intern_constants(self, stratum: Stratum) -> None:
        """Intern every string constant of the stratum's rules, as compiling them in-process
        does, whether or not a rule turns out to run (plans over empty relations are skipped)."""
        for rule in stratum.rules:
            for literal in (*rule.body, rule.head):
                if isinstance(literal, Comparison):
                    terms: tuple[Term, ...] = (literal.left, literal.right)
                else:
                    terms = (literal.atom if isinstance(literal, Negation) else literal).args
                for term in terms:
                    for leaf in leaves(term):
                        if isinstance(leaf, StringConst):
                            self.symbols.intern(leaf.value)

    def run_stratum(  # noqa: C901, PLR0915
        self, position: int, stratum: Stratum
    ) -> StratumRun:
        """Counting semi-naive evaluation of one stratum: each iteration on Spark when it is
        large, on the in-process kernel when it is driven by fewer than `small` rows (see
        `DEFAULT_SPARK_ITERATION`), switching at any iteration: both commit N_k into the state.
        A decomposable recursion (`pivot_columns`) that reaches Spark runs its remaining
        iterations there in one job (`run_decomposed`)."""
        self.check()
        if stratum.aggregate is not None:
            return self._aggregate(stratum, stratum.aggregate)
        if stratum.stepwise:  # on the kernel, one iteration at a time (`executors.choice`)
            kernel = StratumBootstrap(stratum, self.state, self.symbols, self._arities())
            return kernel.run(self.check)  # its relations reach Spark when a stratum reads them
        start = time.perf_counter()
        names = stratum.relations
        self._intern_constants(stratum)
        sizes = {name: len(store) for name, store in self.state.relations.items()}
        local = _InProcess(self, stratum)
        first = [plan_rule(rule, None, sizes) for rule in stratum.rules]
        work = first_work(first, self.state.relations)
        # A string functor reads and extends the driver's symbol table, which Spark's
        # workers do not have: such a stratum runs in process, every iteration of it.
        # So does one that divides unsigned values, which Spark's longs cannot, or takes a
        # power, which must be the C library's (`DRIVER_OPERATORS`).
        in_process = calls_functor(stratum.rules) or uses_driver_arithmetic(stratum.rules)
        small = sys.maxsize if in_process else self.small
        if work.driving + work.indexed < small:
            rows = local.compiled().first_iteration(self.check)
            derived = sum(len(r) for r in rows.values())
            on_spark = False
        else:
            local.mark()
            derived = self._first_iteration(stratum, sizes)
            rows = {}
            on_spark = True
        stale = not on_spark
        """Spark's copies of the stratum's relations lack tuples committed without it."""
        pending = derived
        """|N_{k-1}|."""
        iterations = 1 if derived else 0
        pivot = pivot_columns(stratum) if self.decompose else ()
        plans: list[tuple[SparkPlan, int, frozenset[int]]] | None = None
        k = 2
        while stratum.recursive and iterations == k - 1:
            self.check()
            if not on_spark:
                last, count, rest = local.compiled().fixpoint(k, rows, small, self.check)
                if count:
                    derived += count
                    iterations = last
                    stale = True
                if not rest:
                    break
                on_spark, k, pending = True, last + 1, sum(map(len, rest.values()))
                rows = rest
                continue
            if pending < self.small:
                rows = local.delta_rows()
                on_spark = False
                continue
            if pivot and workers_run_reasoner(self.session):
                last, count = run_decomposed(
                    self.session,
                    stratum,
                    pivot,
                    self.state,
                    self.symbols,
                    self._arities(),
                    k,
                    self.partitions,
                )
                if count:
                    derived += count
                    iterations = last
                    stale = True
                break
            if stale:  # back to Spark: N_{k-1} (the kernel's last rows) is the delta
                for name in names:
                    self._load(name, rows.get(name))
                stale = False
            if plans is None:
                plans = self._delta_plans(stratum, sizes)
            local.mark()
            pending = self._delta_iteration(plans, names, k)
            if not pending:
                break
            derived += pending
            iterations = k
            k += 1

        for name in names:
            if stale:  # uploaded again if a later stratum reads it
                self.relations.pop(name, None)
            else:
                self.relations[name].advance(None, 0, self.partitions)
        return StratumRun(
            stratum.index,
            tuple(sorted(names)),
            iterations,
            derived,
            time.perf_counter() - start,
        )

    def _aggregate(self, stratum: Stratum, definition: AggregateDefinition) -> StratumRun:
        """An aggregate's stratum: a `groupBy().agg` on Spark when its source is large (and
        has columns), else in process, as any small iteration."""
        start = time.perf_counter()
        source = self._store(definition.source)
        if source.arity and self.size(definition.source) >= max(self.small, 1):
            target = self._store(definition.name)
            frame = self.relation(definition.source).full(self.session)
            derived = 0
            for columns in aggregate_batches(definition, frame, source.arity):
                target.add_columns(columns, None, ITERATION)
                derived += len(columns[0])
            for rel in self.relations.values():
                rel.written()
        else:
            derived = bootstrap_aggregate(stratum, self.state)
        return StratumRun.of_aggregate(stratum, derived, time.perf_counter() - start)

    def _arities(self) -> dict[str, int]:
        return {name: info.arity for name, info in self.analyzed.relations.items()}

    def _first_iteration(self, stratum: Stratum, sizes: dict[str, int]) -> int:
        """Iteration 1 on Spark: every instantiation over I_0 counts (N_0 = I_0)."""
        session = self.session
        names = stratum.relations
        for name in names:
            self.relation(name)
        derivations: dict[str, list[DataFrame]] = {name: [] for name in names}
        for rule in stratum.rules:
            plan = SparkPlan.build(rule, None, self.symbols, sizes)
            atom_sizes = {i: self._selected(plan, i, "full") for i in plan.positive}
            if not self._runnable(plan, atom_sizes):
                continue
            frames: dict[int, DataFrame | None] = {
                i: self.relation(plan.relation(i)).full(session) for i in plan.positive
            }
            derivations[plan.head].append(self._evaluate(plan, frames, atom_sizes))
        return self._collect(derivations, 1)

    def _delta_plans(
        self, stratum: Stratum, sizes: dict[str, int]
    ) -> list[tuple[SparkPlan, int, frozenset[int]]]:
        """The plans of iterations k >= 2: each recursive atom in turn driven from N_{k-1}."""
        plans = []
        for rule in stratum.rules:
            positions = [
                i for i in positive_atoms(rule) if atom_at(rule, i).relation in stratum.relations
            ]
            for n, pos in enumerate(positions):
                plan = SparkPlan.build(rule, pos, self.symbols, sizes)
                plans.append((plan, pos, frozenset(positions[:n])))
        return plans

    def _delta_iteration(
        self, plans: list[tuple[SparkPlan, int, frozenset[int]]], names: frozenset[str], k: int
    ) -> int:
        """Iteration k >= 2 on Spark; |N_k|."""
        session = self.session
        derivations: dict[str, list[DataFrame]] = {name: [] for name in names}
        for plan, pos, older in plans:
            atom_sizes = {}
            for i in plan.positive:
                self.relation(plan.relation(i))
                part = "delta" if i == pos else "older" if i in older else "full"
                atom_sizes[i] = self._selected(plan, i, part)
            if not self._runnable(plan, atom_sizes):
                continue
            frames: dict[int, DataFrame | None] = {}
            for i in plan.positive:
                rel = self.relation(plan.relation(i))
                if i == pos:
                    frames[i] = rel.last()
                elif i in older:
                    frames[i] = rel.older(session)
                else:
                    frames[i] = rel.full(session)
            derivations[plan.head].append(self._evaluate(plan, frames, atom_sizes))
        return self._collect(derivations, k)

    def run(self, started: Started | None = None) -> tuple[StratumRun, ...]:
        runs = []
        for position, stratum in enumerate(self.analyzed.strata):
            if started is not None:
                started(stratum)
            runs.append(self.run_stratum(position, stratum))
        return tuple(runs)


def _arrow_schema(arity: int) -> pa.Schema:
    return pa.schema([pa.field(c, pa.int64(), nullable=False) for c in column_names(arity)])


@contextmanager
def spark_bootstrap(
    analyzed: AnalyzedProgram,
    state: State,
    symbols: SymbolTable,
    session: SparkSession,
    check: Check | None = None,
    small_iteration: int = DEFAULT_SPARK_ITERATION,
    decompose: bool = True,
) -> Iterator[SparkBootstrap]:
    """A `SparkBootstrap` to run strata with (`run_stratum`, in order, or `run`), set up as
    `bootstrap_spark` describes and restored on exit: the session's SQL arithmetic non-ANSI,
    `check` reaching the jobs under way, the uploaded copies released."""
    conf = session.conf
    previous_ansi = conf.get("spark.sql.ansi.enabled", None)
    conf.set("spark.sql.ansi.enabled", "false")
    runner = SparkBootstrap(
        analyzed, state, symbols, session, small=small_iteration, decompose=decompose
    )
    try:
        if check is None:
            yield runner
        else:
            with CancellableJobs(session, check) as jobs:
                runner.check = jobs.check
                yield runner
    finally:
        if previous_ansi is None:
            conf.unset("spark.sql.ansi.enabled")
        else:
            conf.set("spark.sql.ansi.enabled", previous_ansi)
        # The uploaded copies are freed once the JVM objects are unreachable (the session's
        # periodic GC sees to that): drop the Python references, also those a cancelled run's
        # traceback would keep.
        runner.relations.clear()


def bootstrap_spark(
    analyzed: AnalyzedProgram,
    state: State,
    symbols: SymbolTable,
    session: SparkSession,
    check: Check | None = None,
    small_iteration: int = DEFAULT_SPARK_ITERATION,
    decompose: bool = True,
    started: Started | None = None,
) -> tuple[StratumRun, ...]:
    """Run Bootstrap over every stratum on Spark; `state` ends as the in-process one would.

    On entry `state` holds every relation's facts at iteration 0 with count 1 (values interned
    through `symbols`, which also interns the rules' string constants). The session's SQL
    arithmetic is switched to non-ANSI (wrap-around) for the duration of the call.
    `check`: cooperative cancellation as for the in-process executors, which also reaches the
    Spark jobs under way (`CancellableJobs`): it stops the run by raising, within about
    `POLL_SECONDS` plus the time Spark takes to interrupt the tasks.
    `small_iteration`: see `DEFAULT_SPARK_ITERATION` (0 runs every iteration on Spark).
    `decompose`: a decomposable recursion that reaches Spark runs there in one job (False: an
    iteration per job, as any other stratum; for comparisons).
    """
    with spark_bootstrap(
        analyzed, state, symbols, session, check, small_iteration, decompose
    ) as runner:
        return runner.run(started)
