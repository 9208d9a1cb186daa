"""Bootstrap, vectorized: Algorithm 2 of the elastic paper as bulk Polars operations.

The result is exactly the reference `StratumBootstrap`'s (reasoner/executors/bootstrap.py): per
stratum, iteration 1 counts every instantiation over I_0; iteration k >= 2 counts, with the
first-position decomposition, the instantiations whose first recursive atom in N_{k-1} is at
position i (recursive atoms before i range over I_{k-2}, the ones after over I_{k-1}); counts
are grouped by head and the heads already in I_{k-1} are dropped. Every relation is a frame of
Int64 columns (symbols are interned ints); see `polars_plan.py` for how a rule becomes joins.

During a stratum's fixpoint each of its relations is kept as I_{k-2} ("old") and N_{k-1}
("delta") — so the iteration column is implicit: an atom restricted to I_{k-2} reads "old",
the driver reads "delta", any other recursive atom reads both. N_k is loaded into the `State`
(the Update structures: the compiled table and its indexes, as columns) at the end
of iteration k, as the reference does, so the state always holds I_{k-1} during iteration k.

**Iterations up to a million rows run the per-tuple loop.** A Polars iteration costs about
1-4 ms of CPU whatever its size (a dozen operations per rule); the reference's per-tuple
plans on the compiled kernel (`StratumBootstrap.compiled`) cost a fraction of a microsecond
per driving tuple, and CRDT's recursions are thousands of iterations deep. So every iteration
is first sized: the rows that drive it (N_{k-1} of every driving atom that its constants
keep; for iteration 1 the driving relations, times any unindexed full scan, plus any hash
index the kernel would first build). Below `SMALL_ITERATION` rows (`DELTA_ITERATION` after
iteration 1) it runs the reference's plans over the same state, as a larger one whose probes
are selective does (`KERNEL_ROW_COST`); otherwise Polars. The two agree tuple for tuple and
count for count, so a stratum may switch between them at any iteration.

Memory: the relations are only in the `State` (the compiled tables, about 40 bytes a 4-ary
tuple with one index, see reasoner/compact), for every size and for one-shot runs alike. The
frames of a running stratum's relations (`Growing`) are built while Polars iterations need
them: a stratum whose iterations stay small keeps none (`Stale`), and a linear recursion keeps
its delta alone (`Growing.forget_old`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from reasoner.analysis.model import AggregateDefinition, AnalyzedProgram, Stratum
from reasoner.executors.aggregate import bootstrap_aggregate
from reasoner.executors.bootstrap import Started, StratumBootstrap, StratumRun, in_slices
from reasoner.executors.local.aggregate import store_aggregate
from reasoner.executors.local.frames import Frames
from reasoner.executors.local.growing import Growing, KernelRows, New, Stale, live
from reasoner.executors.local.packed_keys import WEIGHT, group_count
from reasoner.executors.local.polars_plan import (
    AtomPattern,
    Hoisted,
    Projected,
    Projections,
    columns,
    empty_frame,
)
from reasoner.executors.local.rule_job import RuleJob
from reasoner.plan.joins import JoinPlan, atom_at, plan_rule, positive_atoms
from reasoner.plan.work import first_work, joined_rows
from reasoner.storage.state import RelationStore, State
from reasoner.support.deadline import Check
from reasoner.support.polars_on_demand import loaded as polars_loaded
from reasoner.support.polars_on_demand import pl
from reasoner.syntax.ast import Atom, Rule
from reasoner.values.symbols import SymbolTable

if TYPE_CHECKING:
    from reasoner.kernel.bootstrap import CompiledStratumBootstrap

SMALL_ITERATION = 1_000_000
"""A first iteration driven by fewer rows than this runs the reference's plans (see above):
since new heads keep their counts in their tables, the kernel is faster than Polars on most
shapes measured, 1:1 joins to fan-outs of 300 and products (60 k rows by keys of 200: 1.7 s
against 2.5 s; docs/notes/notes-2026-12-01-staging.md). Past it Polars' two threads win by
1.2-2.2x (docs/notes/notes-2026-12-01-polars-free.md), and more on many cores, where the
kernel's count is serial."""

DELTA_ITERATION = 1_000_000
"""The same after iteration 1 (graph10000-rmat1k 0.26 -> 0.15 s;
docs/notes/notes-2026-12-01-fold.md)."""

POLARS_IMPORT_ROWS = 500_000
"""Driving rows added to both bounds while Polars is not imported: the import (75 ms and
36 MiB) outweighs what Polars saves on an iteration up to about half a million rows past
them (iteration 1 alone, two lanes: crdt_linear's laterSibling2, 1.14 M rows, took both the
same time; 1.6 M rows of 1:3 joins took the kernel 0.53 s, Polars 0.35 s)."""

KERNEL_ROW_COST = 10
INDEX_ROW_COST = 0.3
"""Costs per row, a row a Polars join reads being 1: a driving row of the kernel (its probes
and its head), and a row of an index the kernel builds first. A Polars join reads whole
relations where the kernel probes an index for what its driving rows find, so the kernel also
wins a large iteration whose driving rows are few beside what they join with. Measured on
crdt.dl (`reasoner run`, whole process): its nextVisible, 104,852 hasValue rows joined with the
151.7 M rows of skipBlank, took Polars 20.8 s and 7 GB for the frame and the join, the kernel
0.1 s; its skipBlank, a linear recursion over the 182 k rows of nextElem with iterations of
10-20 k rows, took 143 s with Polars above 10,000 rows, 127 s with the kernel up to 20,000. The
run: 168 s and 12.5 GB peak before, 128 s and 5.7 GB after."""

_PARTITION_ROWS = 1 << 21
"""Under a cancellation check, an iteration's head rows are grouped (and compared with the
known tuples) in hash partitions of about this many rows, the check between them: one
Polars group-by over the tens of millions of rows a cartesian product yields within its
deadline runs for many seconds."""
_PARTITION = "_p"


def _positive(rule: Rule) -> list[Atom]:
    return [literal for literal in rule.body if isinstance(literal, Atom)]


def _stacked(parts: list[pl.DataFrame], arity: int = 0) -> pl.DataFrame:
    """The rows of head or relation frames, one frame (`_w` 1 for the parts without one when
    some have it); an empty relation frame of `arity` when there are no parts."""
    if not parts:
        return empty_frame(arity)
    if len(parts) == 1:
        return parts[0]
    if any(WEIGHT in p.columns for p in parts):
        one = pl.lit(1, dtype=pl.Int64).alias(WEIGHT)
        return pl.concat([p if WEIGHT in p.columns else p.with_columns(one) for p in parts])
    return pl.concat(parts)


class VectorizedStratum:
    """Algorithm 2 for one stratum, iteration by iteration in Polars or in the reference loop."""

    def __init__(
        self,
        stratum: Stratum,
        state: State,
        symbols: SymbolTable,
        arities: dict[str, int],
        frames: Frames,
        small_iteration: int | None = None,
        check: Check | None = None,
    ) -> None:
        self.stratum = stratum
        self.state = state
        self.symbols = symbols
        self.check = check
        self.reference = StratumBootstrap(stratum, state, symbols, arities, check)
        self.frames = frames
        self.small = SMALL_ITERATION if small_iteration is None else small_iteration
        self.small_delta = DELTA_ITERATION if small_iteration is None else small_iteration
        self.import_rows = POLARS_IMPORT_ROWS if small_iteration is None else 0
        self.growing: dict[str, Growing | Stale] = {
            name: Growing(
                state[name].arity, KernelRows.of(state[name], state[name].table.committed_rows())
            )
            for name in stratum.relations
        }
        self._delta_jobs: list[RuleJob] | None = None
        self._kernel_delta: dict[str, np.ndarray] | None = None
        """N_{k-1} as row ids when the kernel made it (None when Polars did)."""

    # -- sizing ------------------------------------------------------------------------------

    def _sizes(self) -> dict[str, int]:
        return {name: len(rel) for name, rel in self.state.relations.items()}

    def _first_on_kernel(self, plans: list[JoinPlan]) -> bool:
        """Whether iteration 1 runs the reference's plans rather than Polars: when it is small
        (its driving rows and the indexes the kernel would build, fewer than
        `SMALL_ITERATION` rows), when it joins nothing (Polars' joins are what pays for its
        frames), or when its probes are selective (see `KERNEL_ROW_COST`)."""
        if self.small == 0:
            return False
        work = first_work(plans, self.state.relations)
        if work.driving + work.indexed < self._bound(self.small) or not work.joined:
            return True
        return (KERNEL_ROW_COST - 1) * work.driving + INDEX_ROW_COST * work.indexed < work.joined

    def _kernel_limit(self, jobs: list[RuleJob]) -> int:
        """The driving rows (N_{k-1}) below which an iteration after the first runs on the
        kernel: `DELTA_ITERATION`, or more where the probes are selective (the kernel costs
        `KERNEL_ROW_COST` d against Polars' d plus the rows it joins with)."""
        if self.small_delta == 0:
            return 0
        relations = self.state.relations
        joined = sum(joined_rows(job.join, relations) for job in jobs)
        return max(self._bound(self.small_delta), joined // (KERNEL_ROW_COST - 1))

    def _bound(self, rows: int) -> int:
        """A bound on an iteration's rows, raised while Polars is not imported."""
        return rows if polars_loaded() else rows + self.import_rows

    # -- one iteration -----------------------------------------------------------------------

    def _reference_first(self) -> dict[str, New]:
        """Iteration 1 exactly as `StratumBootstrap.run` does it."""
        kernel = self.reference.compiled()
        return self._kernel_rows(kernel.first_iteration(self.check))

    def _kernel_fixpoint(
        self, kernel: CompiledStratumBootstrap, k: int, limit: int
    ) -> tuple[int, int, bool]:
        """Iterations k, k + 1, ... in the kernel while they stay under `limit`: (the last iteration
        that derived anything, how many tuples were derived, whether the fixpoint was
        reached). If not, the next iteration is large, and the tuples the kernel derived
        join the frames of the stratum's relations for Polars."""
        delta = self._kernel_delta
        if delta is None:  # N_{k-1} came from Polars: its tuples' rows
            delta = {}
            for name in self.stratum.relations:
                delta[name] = live(self.growing[name]).delta_ids(self.state[name])
        since = {name: self.state[name].table.nrows for name in self.stratum.relations}
        last, derived, rest = kernel.fixpoint(k, delta, limit, self.check)
        self._kernel_delta = rest or None
        for name in self.stratum.relations:
            store = self.state[name]
            growing = self.growing[name]
            if not rest:
                self.growing[name] = Stale()
            elif store.arity == 0:
                self.growing[name] = Growing.of_nullary(store, last)
            else:
                assert isinstance(growing, Growing)
                growing.extend(store, since[name], last)
        return last, derived, not rest

    def _kernel_rows(self, rows: dict[str, np.ndarray]) -> dict[str, New]:
        """N_k from the kernel (committed), as rows (a frame once Polars reads them)."""
        self._kernel_delta = rows
        empty = np.empty(0, np.int64)
        return {
            name: (None, KernelRows.of(self.state[name], rows.get(name, empty)))
            for name in self.stratum.relations
        }

    def _polars(self, jobs: list[RuleJob], k: int) -> dict[str, New]:
        """Evaluate `jobs` over the frames, group by head, drop heads in I_{k-1}, load N_k."""
        self._kernel_delta = None
        relations = self.stratum.relations
        growing = self.growing
        frames = self.frames
        first = k == 1
        local: dict[tuple, pl.DataFrame | int] = {}
        projections = Projections()

        def reader(restricted: set[int]):
            def projected(
                body_index: int, pattern: AtomPattern, negations: tuple[Hoisted, ...]
            ) -> pl.DataFrame | int:
                if pattern.relation not in relations:
                    return frames.projected(pattern, negations)
                assert not negations  # only static atoms take negations
                older = body_index in restricted
                key = (older, *pattern.key)
                if key not in local:
                    rel = live(growing[pattern.relation])
                    local[key] = projections.project(pattern, rel.old() if older else rel.full())
                return local[key]

            return projected

        results: dict[str, list[pl.DataFrame]] = {name: [] for name in relations}
        for job in jobs:
            if self.check is not None:
                self.check()
            if job.driver is None:
                driver = None
            elif job.driver not in relations:
                driver = frames.get(job.driver)
            else:
                rel = live(growing[job.driver])
                driver = rel.full() if first else rel.delta()
                if driver.height == 0:
                    continue
            self._run_job(job, driver, reader(job.older), results[job.head], projections)
        return {name: self._load_new_heads(name, parts, k) for name, parts in results.items()}

    def _run_job(
        self,
        job: RuleJob,
        driver: pl.DataFrame | None,
        projected: Projected,
        parts: list,
        projections: Projections,
    ) -> None:
        """Append the head rows of `job` over `driver` (a whole one projected through
        `projections`) to `parts`. Under a cancellation check the driver is cut into slices,
        the check between them (a plan is linear in its driving rows, so the parts add up to
        the same counts): one Polars join whose output explodes would run to its end first."""
        negated = self.frames.negated
        if self.check is None or driver is None:
            out = job.plan.run(driver, projected, negated, projections.project)
            if out is not None:
                parts.append(out)
            return

        def run(start: int, stop: int) -> None:
            out = job.plan.run(driver.slice(start, stop - start), projected, negated)
            if out is not None:
                parts.append(out)

        in_slices(driver.height, run, self.check)

    def _load_new_heads(self, name: str, parts: list[pl.DataFrame], k: int) -> New:
        """N_k of one relation (tuple -> count, and as a frame) from its plans' head rows,
        loaded into the state at iteration k."""
        store = self.state[name]
        arity = store.arity
        if not parts:
            return [], None
        if arity == 0:
            total = sum(
                int(p.get_column(WEIGHT).sum()) if WEIGHT in p.columns else p.height for p in parts
            )
            if total == 0 or len(store):
                return [], None
            store.add_batch({(): total}, k)
            return [()], None
        cols = columns(arity)
        total = sum(p.height for p in parts)
        if self.check is None or total <= _PARTITION_ROWS:
            grouped = self._unknown_counts(store, _stacked(parts))
        else:
            grouped = self._unknown_counts_partitioned(store, parts, total)
        if grouped is None:
            return [], None

        def load(start: int, stop: int) -> None:
            """Rows [start, stop) into the state, as columns. Under a check this goes in
            slices: indexing a large iteration's rows takes a while."""
            part = grouped.slice(start, stop - start)
            store.add_columns(
                [part.get_column(c).to_numpy() for c in cols],
                part.get_column(WEIGHT).to_numpy(),
                k,
            )

        if self.check is None:
            load(0, grouped.height)
        else:
            in_slices(grouped.height, load, self.check)
        return None, grouped.select(cols)

    def _unknown_counts(self, store: RelationStore, heads: pl.DataFrame) -> pl.DataFrame | None:
        """The distinct `heads` rows not in I_{k-1} (the relation's committed tuples), counted
        (`_w`); None when there are none. Known heads are dropped by hash probes of the
        compiled table, which cost per candidate, not per tuple of the relation."""
        cols = columns(store.arity)
        grouped = group_count(heads, cols)
        if len(store):
            absent = store.table.absent([grouped.get_column(c).to_numpy() for c in cols])
            grouped = grouped.filter(pl.Series(absent, dtype=pl.Boolean))
        return grouped if grouped.height else None

    def _unknown_counts_partitioned(
        self, store: RelationStore, parts: list[pl.DataFrame], total: int
    ) -> pl.DataFrame | None:
        """`_unknown_counts` of the `total` head rows of `parts`, in hash partitions of about
        `_PARTITION_ROWS` rows with the check between them."""
        assert self.check is not None
        cols = columns(store.arity)
        count = -(-total // _PARTITION_ROWS)
        weighted = any(WEIGHT in p.columns for p in parts)
        pieces = []
        for head_pieces in self._partitioned(parts, cols, count, weighted):
            self.check()
            if not head_pieces:
                continue
            piece = self._unknown_counts(store, _stacked(head_pieces))
            if piece is not None:
                pieces.append(piece)
        return pl.concat(pieces) if pieces else None

    def _partitioned(
        self, frames: list[pl.DataFrame], cols: list[str], count: int, weighted: bool
    ) -> list[list[pl.DataFrame]]:
        """The rows of `frames` in `count` partitions by the hash of `cols`, cut in slices of
        `_PARTITION_ROWS` rows with the check between them; `weighted`: every piece gets a
        `_w` column (1 where its frame had none)."""
        assert self.check is not None
        partitions: list[list[pl.DataFrame]] = [[] for _ in range(count)]
        one = pl.lit(1, dtype=pl.Int64).alias(WEIGHT)
        for frame in frames:
            for start in range(0, frame.height, _PARTITION_ROWS):
                self.check()
                piece = frame.slice(start, _PARTITION_ROWS)
                if weighted and WEIGHT not in piece.columns:
                    piece = piece.with_columns(one)
                number = (pl.struct(cols).hash(0) % count).alias(_PARTITION)
                split = piece.with_columns(number).partition_by(
                    _PARTITION, as_dict=True, include_key=False
                )
                for (index,), rows in split.items():
                    partitions[index].append(rows)
        return partitions

    # -- the fixpoint ------------------------------------------------------------------------

    def _delta_jobs_list(self) -> list[RuleJob]:
        if self._delta_jobs is None:
            jobs = []
            relations = self.stratum.relations
            sizes = self._sizes()
            for rule in self.stratum.rules:
                positions = [
                    i for i in positive_atoms(rule) if atom_at(rule, i).relation in relations
                ]
                for n, pos in enumerate(positions):
                    jobs.append(
                        RuleJob(
                            plan_rule(rule, pos, sizes),
                            set(positions[:n]),
                            self.symbols,
                            self.stratum,
                        )
                    )
            self._delta_jobs = jobs
        return self._delta_jobs

    def _advance(self, new: dict[str, New]) -> int:
        derived = 0
        for name, (rows, frame) in new.items():
            growing = live(self.growing[name])
            growing.advance(rows, frame)
            derived += growing.delta_size()
        return derived

    def _joins_old(self) -> bool:
        """Whether an iteration after the first joins with a relation of the stratum other
        than through its delta: a rule with two atoms or more over the stratum's relations.
        (A non-recursive stratum keeps its frames all the same: the strata above read them.)"""
        relations = self.stratum.relations
        return any(
            len([atom for atom in _positive(rule) if atom.relation in relations]) > 1
            for rule in self.stratum.rules
        )

    def run(self) -> StratumRun:
        start = time.perf_counter()
        stratum = self.stratum
        sizes = self._sizes()
        plans = [plan_rule(rule, None, sizes) for rule in stratum.rules]
        if self._first_on_kernel(plans):
            new = self._reference_first()
        else:
            jobs = [RuleJob(plan, set(), self.symbols, stratum) for plan in plans]
            new = self._polars(jobs, 1)
        derived = self._advance(new)
        return self._fixpoint(2, derived, start)

    def resume(
        self, k: int, below: dict[str, np.ndarray], delta: dict[str, np.ndarray]
    ) -> StratumRun:
        """Iterations k, k + 1, ... over a state that holds I_{k-1} of the stratum's
        relations, each tuple at its iteration: `below` the row ids of I_{k-2}, `delta` those
        of N_{k-1}. The rest of an Update, evaluated in bulk (`reasoner.elastic.bulk`)."""
        start = time.perf_counter()
        derived = 0
        for name in self.stratum.relations:
            store = self.state[name]
            if not store.arity:
                self.growing[name] = growing = Growing.of_nullary(store, k - 1)
            else:
                growing = Growing(store.arity, KernelRows(store, below[name]))
                growing.advance(None, KernelRows(store, delta[name]))
                self.growing[name] = growing
            derived += growing.delta_size()
        return self._fixpoint(k, derived, start)

    def _fixpoint(self, k: int, derived: int, start: float) -> StratumRun:
        """Iterations k, k + 1, ... to the fixpoint, N_{k-1} (`derived` tuples) in `growing`."""
        stratum = self.stratum
        if stratum.recursive and not self._joins_old():
            for rel in self.growing.values():
                if isinstance(rel, Growing):
                    rel.forget_old()
        iterations = k - 1 if derived else 0
        while stratum.recursive and derived and iterations == k - 1:
            if self.check is not None:
                self.check()
            jobs = self._delta_jobs_list()
            work = rows = 0
            for job in jobs:
                assert job.driver is not None  # a delta plan is driven by its delta
                rel = live(self.growing[job.driver])
                rows += rel.delta_size()
                work += rel.matching(self.state[job.driver], job.driver_pattern)
            if rows == 0:
                break
            limit = self._kernel_limit(jobs)
            if work < limit:
                last, count, done = self._kernel_fixpoint(self.reference.compiled(), k, limit)
                if count:
                    derived += count
                    iterations = last
                if done:
                    break
                k = last + 1
                continue
            count = self._advance(self._polars(jobs, k))
            if count:
                derived += count
                iterations = k
            k += 1
        for name in stratum.relations:
            rel = self.growing[name]
            if isinstance(rel, Stale) or not rel.keeps_old:
                self.frames.frames.pop(name, None)  # built from the state when asked for
                continue
            self.frames.frames[name] = rel
        return StratumRun(
            stratum.index,
            tuple(sorted(stratum.relations)),
            iterations,
            derived,
            time.perf_counter() - start,
        )


class VectorizedBootstrap:
    """The vectorized executor over one program's strata, run one at a time in order, so that
    a Bootstrap may hand some strata to another executor (`reasoner.executors.registry`): the
    frames of relations that a later stratum reads are kept between them."""

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        state: State,
        symbols: SymbolTable,
        small_iteration: int | None = None,
        check: Check | None = None,
    ) -> None:
        self.arities = {name: info.arity for name, info in analyzed.relations.items()}
        for name, arity in self.arities.items():
            state.relation(name, arity)
        self.state = state
        self.symbols = symbols
        self.small_iteration = small_iteration
        self.check = check
        self.frames = Frames(state)
        self.last_reader = _last_readers(analyzed.strata)

    def run_stratum(self, position: int, stratum: Stratum) -> StratumRun:
        """Bootstrap the stratum at `position` of the program's strata (its lower strata
        done, by this executor or another: the frames read the state)."""
        if stratum.aggregate is not None:
            run = self._aggregate(stratum, stratum.aggregate)
        elif stratum.stepwise:  # on the kernel, one iteration at a time (`executors.choice`)
            run = StratumBootstrap(stratum, self.state, self.symbols, self.arities).run(self.check)
        else:
            run = VectorizedStratum(
                stratum,
                self.state,
                self.symbols,
                self.arities,
                self.frames,
                self.small_iteration,
                self.check,
            ).run()
        self.frames.projections.clear()
        self.frames.keep({name for name, last in self.last_reader.items() if last > position})
        return run

    def _aggregate(self, stratum: Stratum, definition: AggregateDefinition) -> StratumRun:
        started = time.perf_counter()
        source = self.state[definition.source]
        target = self.state[definition.name]
        if source.arity:
            derived = store_aggregate(definition, self.frames.get(definition.source), target)
        else:  # no columns for a frame to group: the relation's one row is one instantiation
            derived = bootstrap_aggregate(stratum, self.state)
        return StratumRun.of_aggregate(stratum, derived, time.perf_counter() - started)


def bootstrap_vectorized(
    analyzed: AnalyzedProgram,
    state: State,
    symbols: SymbolTable,
    *,
    small_iteration: int | None = None,
    check: Check | None = None,
    started: Started | None = None,
) -> tuple[StratumRun, ...]:
    """Bootstrap every stratum of `analyzed` in order, vectorized; same result as running the
    reference `StratumBootstrap(stratum, state, symbols, arities).run()` on each.

    On entry `state` holds every relation's facts at iteration 0 with count 1 (symbols interned
    through `symbols`, which the rules' string constants are interned through as well). On
    return it holds every derived tuple with its iteration and count, indexes included.
    `small_iteration`: the driving rows below which any iteration runs on the kernel (0: none
    does); None: `SMALL_ITERATION` for iteration 1, `DELTA_ITERATION` after it.
    `check`: cooperative cancellation as in `StratumBootstrap` — called before every iteration,
    and between slices of the driving rows of every plan, Polars or reference; it stops the
    run by raising, leaving a partial state to be discarded.
    """
    runner = VectorizedBootstrap(analyzed, state, symbols, small_iteration, check)
    runs = []
    for position, stratum in enumerate(analyzed.strata):
        if started is not None:
            started(stratum)
        runs.append(runner.run_stratum(position, stratum))
    return tuple(runs)


def _last_readers(strata: tuple[Stratum, ...]) -> dict[str, int]:
    """The position of the last stratum that reads each relation. A frame is dropped once no
    later stratum reads it: crdt.dl's skipBlank, 4.6 GB as a frame beside its table, stayed to
    the end of the run."""
    last: dict[str, int] = {}
    for position, stratum in enumerate(strata):
        for name in stratum.reads():
            last[name] = position
    return last
