"""A live materialization: a checked program, its input facts and the derived proof-count state.

This is the engine's front door for the CLI and the service. It owns the symbol table (so that
values cross its boundary as the user's ints and strings), the facts (the EDB: inputs and facts
asserted on derived relations) and the state. Each `apply` is one epoch: it first tries Update
under the switching deadline and falls back to a full Bootstrap past it, and either way the
state afterwards equals a fresh Bootstrap of the facts (Theorem 3.5 of the elastic paper).

The facade keeps construction, the locks (`reading`, `evaluating`), the Bootstrap and the
publication of what an epoch computed; the work itself lives in the layers below it: checking
and encoding a delta in `reasoner.elastic.prepare`, the epoch (Algorithm 3 and its fallback) in
`reasoner.elastic.apply`, decoding the committed relations in `reasoner.reads.relations`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from reasoner.analysis import check_preprocessed
from reasoner.analysis.model import AnalyzedProgram, RelationInfo
from reasoner.analysis.negation_locals import is_internal
from reasoner.analysis.symbol_order import constant_order, shows_symbol_numbers
from reasoner.elastic import switch
from reasoner.elastic.apply import (
    RELEASED_INDEX_BYTES,
    apply_epoch,
    commit_facts,
    update_memory_budget,
)
from reasoner.elastic.changes import EpochChanges
from reasoner.elastic.epoch import BOOTSTRAP, UNCHANGED, BootstrapReport, Delta, EpochReport
from reasoner.elastic.group import GroupFold, GroupWrite, PreparedGroup
from reasoner.elastic.prepare import PreparedDelta, encoded, encoded_columns, source
from reasoner.elastic.prepare import prepare as prepare_delta
from reasoner.elastic.program_text import ProgramText, RuleEntry
from reasoner.elastic.progress import BootstrapProgress
from reasoner.elastic.restratify import StratumKey, StratumKeys
from reasoner.errors import InvalidDelta
from reasoner.executors.bootstrap import StratumRun
from reasoner.executors.registry import EngineChoice, EngineSettings, run_bootstrap, summary
from reasoner.io.batch import FactBatch
from reasoner.kernel.run import StratumUpdate
from reasoner.reads import relations as reads
from reasoner.storage import TupleSet
from reasoner.storage.state import State, Tuple
from reasoner.support.concurrency import ReadWriteLock, read_optimistically
from reasoner.support.deadline import Check, clock
from reasoner.support.process_memory import given_back_after, mark_peak, peak_memory_bytes
from reasoner.syntax.preprocess import preprocess
from reasoner.values.functor_library import FunctorLibrary
from reasoner.values.symbols import SymbolTable, TableMark
from reasoner.values.types import Value

T = TypeVar("T")


@dataclass(slots=True)
class _Built:
    """A state computed off to the side, with what is compiled against it."""

    state: State
    arities: dict[str, int]
    runs: tuple[StratumRun, ...]
    plans: dict[StratumKey, StratumUpdate]
    engine: EngineChoice


class Materialization:
    """The program, the facts given to it, and everything they derive.

    One writer at a time applies epochs (`apply` serialises callers); readers wrap their reads
    in `reading()` and see the last published epoch, never half of one.
    """

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        *,
        switching_parameter: float = switch.DEFAULT_SWITCHING_PARAMETER,
        min_update_seconds: float = switch.DEFAULT_MIN_UPDATE_SECONDS,
        symbols: SymbolTable | None = None,
        program: ProgramText | None = None,
        maintained: bool = True,
        engines: EngineSettings | None = None,
        epoch: int = 0,
        bulk_update_rows: int | None = None,
    ) -> None:
        self.analyzed = analyzed
        self.maintained = maintained
        """Epochs follow the Bootstrap: compile every stratum's Update plans with it, so no
        epoch pays for compiling. Off for a one-shot evaluation and for reference copies that
        are only read."""
        self.program = program
        """The program's text, needed to add and remove rules (None: built from an AST)."""
        self.engines = engines if engines is not None else EngineSettings()
        """Which executor bootstraps (`auto`, `reference`, `local`, `spark`) and Spark's master."""
        self.switching_parameter = switching_parameter
        self.min_update_seconds = min_update_seconds
        self.bulk_update_rows = bulk_update_rows
        """The candidates of one Update iteration from which the rest of its stratum is
        evaluated in bulk (`reasoner.elastic.bulk`; 0: from the first; -1 or None: never, the
        default, where only the switch sends a stratum there)."""
        self.symbols = symbols if symbols is not None else SymbolTable()
        self.state = State()
        self.arities = self._arities(analyzed)
        """Every relation's arity, for the plans (one dict, updated as the program changes)."""
        for name, info in analyzed.relations.items():
            self.state.relation(name, info.arity)
        self.facts: dict[str, TupleSet] = {
            name: TupleSet(info.arity) for name, info in analyzed.relations.items()
        }
        """The data: facts loaded or inserted by deltas (on input or derived relations)."""
        self.program_facts: dict[str, set[Tuple]] = {}
        """Facts written in the program text: part of the program, so a delta cannot retract
        them (retracting the same row as data leaves it present, as a fresh run would)."""
        for text in constant_order(analyzed.written or analyzed.program):  # as Soufflé numbers
            self.symbols.intern(text)
        self._set_program_facts(analyzed)
        self.epoch = epoch
        """The number of the last epoch applied: one that resumes a stored history (the
        service's) starts at its last epoch, so that the engine and the store number alike."""
        self.last_bootstrap_seconds = 0.0
        self._last_runs: dict[tuple[str, ...], StratumRun] = {}
        """The last Bootstrap's strata, by their relations: `auto`'s estimate of the next."""
        self._plans: dict[StratumKey, StratumUpdate] = {}
        self._stratum_keys = StratumKeys()
        self._lock = ReadWriteLock()
        self._writer = threading.Lock()

    @classmethod
    def from_text(
        cls,
        text: str,
        filename: str = "<program>",
        *,
        user_functors: FunctorLibrary | None = None,
        **options: Any,
    ) -> Materialization:
        """`options`: the constructor's keywords. `text` goes through the C preprocessor
        (`reasoner.syntax.preprocess`) without reading any file: an `#include` is refused.
        `user_functors`: the implementations of the functors the program, and any text added
        to it later, may declare (`reasoner.values.functor_library`)."""
        source = preprocess(text, filename, files={})
        program = ProgramText([source.text], filename, user_functors)
        analyzed = check_preprocessed(source, filename, user_functors)
        return cls(analyzed, program=program, **options)

    @staticmethod
    def _arities(analyzed: AnalyzedProgram) -> dict[str, int]:
        return {name: info.arity for name, info in analyzed.relations.items()}

    def _set_program_facts(self, analyzed: AnalyzedProgram) -> None:
        self.program_facts = self.program_facts_of(analyzed)

    def program_facts_of(self, analyzed: AnalyzedProgram) -> dict[str, set[Tuple]]:
        """The facts the program text asserts, per relation, encoded."""
        facts: dict[str, set[Tuple]] = {name: set() for name in analyzed.relations}
        for name, rows in analyzed.facts.items():
            facts[name].update(encoded(self.symbols, analyzed.relations[name], rows))
        return facts

    def load(self, inputs: Mapping[str, Iterable[Sequence[Value]]]) -> None:
        """Add input facts before the first Bootstrap (a bulk load, not an epoch)."""
        row_order = shows_symbol_numbers(self.analyzed)
        for name, rows in inputs.items():
            info = self.analyzed.relations[name]
            if name in self.analyzed.inlined and rows:
                raise ValueError(f"`{name}` is an inline relation: it takes no facts")
            if isinstance(rows, FactBatch) and rows.matches(info.types):
                columns = encoded_columns(self.symbols, info, rows, row_order=row_order)
                self.facts[name].update_columns(columns)
            else:
                self.facts[name].update(encoded(self.symbols, info, rows))

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Hold while a delta is prepared and applied: whatever they intern (symbols, records,
        Update plans compiled with their ids) stays only if the epoch is published. A delta
        refused, failing or changing nothing leaves the tables as they were at the start, so
        its memory goes back and no later symbol's id (`ord`) depends on it. Nests: an inner
        scope keeps what was interned before it began."""
        mark = self.symbols.mark()
        plans = set(self._plans)
        epoch = self.epoch
        try:
            yield
        finally:
            if self.epoch == epoch:
                self._forget(mark, plans)

    def _forget(self, mark: TableMark, plans: set[StratumKey]) -> None:
        """Return the tables to `mark` and drop the plans compiled since (`plans`: the keys
        before), under the exclusive lock: a read overlapping it starts again."""
        added = [key for key in self._plans if key not in plans]
        if mark == self.symbols.mark() and not added:
            return
        with self._lock.exclusive():
            for key in added:
                del self._plans[key]
            self.symbols.rollback(mark)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold while reading: the state is one published epoch for the duration."""
        with self._lock.shared():
            yield

    def read(self, read: Callable[[], T]) -> T:
        """`read()` on one published epoch without blocking the writer while it runs (see
        `reasoner.support.concurrency.read_optimistically`): for reads that may take long."""
        return read_optimistically(self._lock, read)

    # -- Bootstrap ------------------------------------------------------------------------------

    def _build(
        self,
        analyzed: AnalyzedProgram,
        facts: Mapping[str, TupleSet],
        check: Check | None = None,
        progress: BootstrapProgress | None = None,
    ) -> _Built:
        """Recompute every stratum from the facts into a new state (Algorithm 2), and compile
        the Update plans against it so that the first Update pays no compilation."""
        state = State(building=True)
        arities = self._arities(analyzed)
        # Those of `analyzed`, which a rule change may have made differ (an inline relation).
        program_facts = (
            self.program_facts if analyzed is self.analyzed else self.program_facts_of(analyzed)
        )
        for name, arity in arities.items():
            state.load_facts(name, arity, facts[name])
            state.load_facts(name, arity, program_facts.get(name, ()))
        choice = self.engines.choose()
        started = None
        if progress is not None:
            progress.watch(analyzed, state)
            check, started = progress.checking(check), progress.started
        runs = run_bootstrap(
            choice, self.engines, analyzed, state, self.symbols, check, started, self._last_runs
        )
        state.built()
        if progress is not None:
            progress.finish()
        self._last_runs = {run.relations: run for run in runs}
        plans = {
            self._stratum_keys.of(s, analyzed): StratumUpdate(s, state, self.symbols, arities)
            for s in (analyzed.strata if self.maintained else ())
            if s.aggregate is None and not s.stepwise  # a stepwise stratum is Bootstrapped
        }
        return _Built(state, arities, runs, plans, summary(choice, runs))

    def _publish_built(self, built: _Built) -> None:
        with self._lock.exclusive():
            self.state = built.state
            self.arities = built.arities
            self._plans = built.plans

    def bootstrap(
        self, check: Check | None = None, progress: BootstrapProgress | None = None
    ) -> BootstrapReport:
        """Recompute the state from the program and the facts, and publish it. `check` may
        stop the computation by raising (see `apply`); the published state is then unchanged.
        `progress` is told of each stratum and of the state's size as it goes."""
        with self._writer:
            replaced = self.state.nbytes
            report = self._bootstrap(check, progress)
        given_back_after(report.seconds, replaced)
        return report

    def _bootstrap(
        self, check: Check | None = None, progress: BootstrapProgress | None = None
    ) -> BootstrapReport:
        start = time.perf_counter()
        self.state.release_lookups(RELEASED_INDEX_BYTES)  # read by scans meanwhile
        built = self._build(self.analyzed, self.facts, check, progress)
        self._publish_built(built)
        seconds = time.perf_counter() - start
        self.last_bootstrap_seconds = seconds
        return BootstrapReport(built.runs, seconds, built.engine)

    # -- preparing a delta ----------------------------------------------------------------------

    def rules(self) -> list[RuleEntry]:
        """The program's rules with their ids (one per source clause)."""
        return self._source().rules()

    def program_text(self) -> str:
        return self._source().text

    def _source(self) -> ProgramText:
        return source(self.program)

    def prepare(self, delta: Delta) -> PreparedDelta:
        """Check a delta against the current epoch; raise `ProgramError` / `InvalidDelta`.
        It interns the delta's symbols: a caller that applies it later holds `evaluating`
        around both, so that they go again if no epoch is published."""
        return prepare_delta(
            delta,
            epoch=self.epoch,
            analyzed=self.analyzed,
            program=self.program,
            facts=self.facts,
            program_facts=self.program_facts,
            symbols=self.symbols,
        )

    def prepare_group(self, deltas: Sequence[Delta]) -> PreparedGroup:
        """Check deltas of facts (`reasoner.elastic.group.groupable`) against the current
        epoch and fold them, in order, into one: a delta refused is refused alone, and what
        it interned is rolled back at once. Stops before a delta whose facts would declare a
        relation (it changes the program: an epoch of its own). As `prepare`, hold
        `evaluating` around this and the `apply` of the group's delta."""
        fold = GroupFold(self.analyzed, self.facts, self.program_facts, self.symbols)
        outcomes: list[GroupWrite | InvalidDelta] = []
        for delta in deltas:
            mark, plans = self.symbols.mark(), set(self._plans)
            try:
                outcome = fold.add(delta)
            except InvalidDelta as refused:
                self._forget(mark, plans)
                outcomes.append(refused)
                continue
            if outcome is None:
                break
            outcomes.append(outcome)
        return PreparedGroup(fold.prepared(self.epoch, self.program), tuple(outcomes))

    # -- epochs ---------------------------------------------------------------------------------

    def apply(
        self,
        delta: Delta | PreparedDelta,
        *,
        strategy: str = "auto",
        include_changes: bool = False,
        check: Check | None = None,
        before_publish: Callable[[EpochChanges], None] | None = None,
    ) -> EpochReport:
        """Apply one delta as one epoch.

        `check` is called throughout the evaluation (Update and Bootstrap) and cancels the
        epoch by raising `BootstrapCancelled`: nothing changes. `before_publish` runs once the
        epoch is computed and before it is published (the service commits it there), with
        the epoch's changes (`reasoner.elastic.changes`); if it raises, nothing changes
        either. A delta that changes nothing publishes no epoch and calls nothing.

        strategy "auto": Update under the switching deadline; past it a Bootstrap of what is
        left (the strata from where the Update was given up, each alone, where that pays) or of
        the whole program, which also runs if Update fails; "update": Update with no deadline,
        errors propagate; "bootstrap": recompute.
        Invalid deltas raise `InvalidDelta` / `ProgramError` before anything changes.
        """
        with self._writer, self.evaluating():
            start = clock()
            prepared = delta if isinstance(delta, PreparedDelta) else self.prepare(delta)
            if prepared.epoch != self.epoch:
                raise ValueError(
                    f"delta prepared against epoch {prepared.epoch}, now at epoch {self.epoch}"
                )
            if prepared.changes_nothing:
                return EpochReport(
                    epoch=self.epoch,
                    strategy=UNCHANGED,
                    seconds=clock() - start,
                    inserted=0,
                    retracted=0,
                    strata=(),
                    changes={} if include_changes else None,
                    warnings=prepared.warnings,
                    state_bytes=self.state.nbytes,
                )
            replaced = self.state.nbytes  # freed if the epoch bootstraps
            marked = mark_peak()
            report = apply_epoch(
                self, prepared, start, strategy, include_changes, check, before_publish
            )
            report = replace(
                report,
                state_bytes=self.state.nbytes,
                peak_memory_bytes=peak_memory_bytes() if marked else None,
            )
        given_back_after(report.seconds, replaced if report.strategy == BOOTSTRAP else 0)
        return report

    def _adopt(self, prepared: PreparedDelta, facts: dict[str, TupleSet] | None = None) -> None:
        """Make the delta's facts and program current and count the epoch (under the exclusive
        lock, so a reader never sees a new state with the old epoch number or the reverse).
        `facts`: the facts after the delta, when a Bootstrap made them already."""
        self.epoch += 1
        if prepared.analyzed is not None:
            self.analyzed = prepared.analyzed
            self.program = prepared.program
            dropped = {name for name in self.state.relations if name not in self.analyzed.relations}
            for name in dropped:
                del self.state.relations[name]
            # Plans hold the tables they read and write: those of dropped relations are gone
            # (a rule added again later makes its relations, and its plans, anew).
            for key in [k for k in self._plans if any(n in dropped for n, _ in k[-1])]:
                del self._plans[key]
            self.arities.clear()
            self.arities.update(self._arities(self.analyzed))
            self._set_program_facts(self.analyzed)
        if facts is not None:
            self.facts = facts
        else:
            commit_facts(self.facts, prepared.inserts, prepared.retracts, self.analyzed)

    def _update_memory_budget(self) -> int:
        """Bytes an Update's bookkeeping may take before the epoch falls back (see
        `reasoner.elastic.apply.update_memory_budget`)."""
        return update_memory_budget(self.state)

    # -- reading --------------------------------------------------------------------------------

    def derived_size(self) -> int:
        """Tuples of the derived relations users see: what a first Bootstrap inserted."""
        return sum(self.size(n) for n in self.analyzed.stratum_of if not is_internal(n))

    def relation_names(self) -> list[str]:
        return list(self.analyzed.relations)

    def rows(self, name: str) -> list[tuple[Value, ...]]:
        """Every tuple of a relation, as user values."""
        return reads.rows(self.symbols, self.analyzed.relations[name], self.state[name])

    def batch(self, name: str, *, ordered: bool = True) -> FactBatch | list[tuple[()]]:
        """Every tuple of a relation in user values, as columns (rows for arity 0), in value
        order unless not `ordered`: a relation is written out without a Python object per
        tuple, sorted on the integers (a symbol by its rank among the symbols) rather than on
        strings."""
        info = self.analyzed.relations[name]
        return reads.batch(self.symbols, info, self.state[name], ordered=ordered)

    def _batch_of(
        self, info: RelationInfo, columns: Sequence[np.ndarray], *, ordered: bool
    ) -> FactBatch:
        """Engine columns of relation `info` in user values: the change sets' decoding."""
        return reads.batch_of(self.symbols, info, columns, ordered=ordered)

    def size(self, name: str) -> int:
        return len(self.state[name])

    def encode(self, name: str, row: Sequence[Value]) -> tuple[int, ...] | None:
        """The engine tuple for a row, or None if it names a symbol never seen (so is absent)."""
        return reads.encode(self.symbols, self.analyzed.relations[name], row)

    def lookup(self, name: str, row: Sequence[Value]) -> tuple[int, int] | None:
        """(iteration, count) of a tuple, or None when it is not in the materialization."""
        t = self.encode(name, row)
        if t is None:
            return None
        return self.state[name].get(t)

    def rebuilt(self) -> Materialization:
        """A fresh materialization of the same program and facts, bootstrapped from scratch:
        the reference the maintained state must equal after every epoch (`replay --check`)."""
        fresh = Materialization(
            self.analyzed,
            switching_parameter=self.switching_parameter,
            min_update_seconds=self.min_update_seconds,
            symbols=self.symbols,
            maintained=False,
            engines=EngineSettings("reference"),
        )
        for name, rows in self.facts.items():
            fresh.facts[name] = rows.copy()
        fresh.bootstrap()
        return fresh

    def differences(self, other: Materialization) -> dict[str, int]:
        """Per relation, how many tuples differ in presence, iteration or count (empty: equal)."""
        return reads.differences(self.analyzed.relations, self.state, other.state)

    def snapshot(self) -> dict[str, dict[tuple[Value, ...], tuple[int, int]]]:
        """Every relation as {row: (iteration, count)} in user values, for comparing states."""
        return reads.snapshot(self.symbols, self.analyzed.relations, self.state)
