"""Applying a prepared delta as one epoch: Algorithm 3 of the elastic paper around the kernel.

It exists apart from the facade (`reasoner.materialization`) because the epoch is the engine's
longest job: Update, stratum by stratum in topological order, into an overlay under the switching
deadline and memory budget (`reasoner.elastic.switch`; the walk is
`reasoner.elastic.strata_update`, where a stratum the switch gives up is bootstrapped alone);
past the memory budget, after a failed Update, or when a rule change reshapes a relation, the
fallback to a full Bootstrap of the facts after the delta; then the change set handed to the
caller before publication, and the report. Either way the state after the epoch equals a fresh
Bootstrap of the facts (Theorem 3.5).

The facade owns what an epoch changes (the state, its Update plans, the facts, the lock that
publishes them): `apply_epoch` and `update_strata` take it as a parameter and publish through
it (`Materialization._build`, `Materialization._adopt`); the other functions take only what
they use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from reasoner.analysis.model import AnalyzedProgram, RelationInfo
from reasoner.analysis.negation_locals import is_internal
from reasoner.elastic import switch
from reasoner.elastic.changes import ChangedRows, Diff, EpochChanges, rebuilt_diff
from reasoner.elastic.epoch import EpochReport, StratumReport
from reasoner.elastic.forecast import Forecast, earliest, stratum_costs
from reasoner.elastic.prepare import FactRows, PreparedDelta
from reasoner.elastic.restratify import (
    StratumKey,
)
from reasoner.elastic.strata_update import update_strata
from reasoner.executors.registry import EngineChoice
from reasoner.storage import TupleSet
from reasoner.storage.overlay import Overlay
from reasoner.storage.state import State, Tuple
from reasoner.support.deadline import (
    Check,
    clock,
)
from reasoner.support.gc_pause import collector_paused
from reasoner.support.process_memory import give_back_memory
from reasoner.values.records import ValueType
from reasoner.values.symbols import SymbolTable

if TYPE_CHECKING:
    from reasoner.materialization import Materialization

Listed = dict[str, tuple[set[Tuple], set[Tuple]]] | None
"""Per derived relation, its (retracted, inserted) tuples, for a report that lists them."""

MIN_UPDATE_MEMORY = 256 << 20
"""The memory bound of an Update's bookkeeping on a small state (see `_update_memory_budget`)."""

RELEASED_INDEX_BYTES = 64 << 20
"""A fallback frees the key indexes of the old state's relations whose indexes hold this much
or more: the old state is only read, by scans, until the new one is published, or until the
next Update rebuilds them if the fallback fails (a cancelled epoch returns at once). On
crdt.dl they are 2.7 of the old state's 7.5 GB, beside the new state's 4 GB and its
Bootstrap's frames; a small relation's indexes save little and would slow its reads. Tuple
tables of this much or more go too (skipBlank's is 1 GiB): the comparison after the Bootstrap
probes the new state's alone (`reasoner.elastic.changes.rebuilt_diff`), and a lookup scans."""


def apply_epoch(  # noqa: PLR0915
    m: Materialization,
    prepared: PreparedDelta,
    start: float,
    strategy: str,
    include_changes: bool,
    check: Check | None,
    before_publish: Callable[[EpochChanges], None] | None,
) -> EpochReport:
    """Apply `prepared` to `m`'s epoch as the next one (see `Materialization.apply`), timed
    from `start` (a point on the deadlines' `clock`): Update unless `strategy` is "bootstrap",
    Bootstrap past its deadline."""
    new = prepared.analyzed or m.analyzed
    reason = None
    abandoned: tuple[StratumReport, ...] = ()
    # The relations users see before or after the epoch, inputs included: a change set.
    visible = [
        name
        for name in dict.fromkeys([*m.analyzed.relations, *new.relations])
        if not is_internal(name)
    ]
    # Every relation derived before or after the epoch: a rule change can drop a derived
    # relation from the program (its tuples all go) or leave it with facts alone.
    derived = list(dict.fromkeys([*m.analyzed.stratum_of, *new.stratum_of]))
    kept = [name for name in derived if name in new.relations]
    old_types = {name: info.value_types for name, info in m.analyzed.relations.items()}
    types = {**old_types, **{name: info.value_types for name, info in new.relations.items()}}
    types_of = (old_types, types)
    relations = (m.analyzed.relations, new.relations)
    # A relation a rule change reshapes (another arity or column types; it holds no
    # facts) is a new relation under an old name: no Update can carry its tuples over.
    reshaped = {
        name
        for name, info in m.analyzed.relations.items()
        if new is not m.analyzed
        and name in new.relations
        and new.relations[name].shape != info.shape
    }
    if strategy != "bootstrap" and not reshaped:
        # After a failed fallback; the kernel walks chains unchecked, and reads would scan on.
        m.state.restore_lookups()
        overlay = Overlay(m.state)
        seconds = switch.update_seconds(
            m.switching_parameter, m.last_bootstrap_seconds, m.min_update_seconds
        )
        predicted = _forecast(m, new, start, seconds)
        deadline = switch.update_deadline(
            strategy, start, seconds, check, m._update_memory_budget, predicted
        )
        cached = set(m._plans)
        walked: list[StratumReport] = []  # the Update's strata, kept for a fallback's report

        def overlay_rows(name: str) -> Diff:
            """A relation's changes while the overlay holds them (a relation the rule
            change drops loses every row)."""
            if name not in m.state:
                return ChangedRows.none(), ChangedRows.none()
            table = m.state[name].table
            if name not in new.relations:
                return ChangedRows.all_of(table), ChangedRows.none()
            gone, inserted = overlay.presence_rows(name)
            return ChangedRows(table, gone), ChangedRows(table, inserted)

        def update() -> tuple[tuple[StratumReport, ...], dict[str, tuple[int, int]], Listed]:
            strata = update_strata(m, overlay, prepared, deadline, predicted, walked)
            dropped = [n for n in derived if n not in new.relations and n in m.state]
            sizes = {name: overlay.presence_sizes(name) for name in kept}
            sizes.update((name, (len(m.state[name]), 0)) for name in dropped)
            # Tuples only for a report that lists them: the compiled Update records
            # changes by row id.
            listed = _listed(derived, overlay_rows) if include_changes else None
            return strata, sizes, listed

        with (
            collector_paused()
        ):  # until the overlay's records are freed (reasoner.support.gc_pause)
            attempt = switch.attempt_update(strategy, update, lambda: _discard(m, overlay, cached))
            if attempt.fallback_reason is None:
                try:
                    if check is not None:
                        check()  # an epoch that finished past its deadline is refused
                    if before_publish is not None:
                        _epoch_changes(m, visible, overlay_rows, relations).hand_to(before_publish)
                except BaseException:
                    _discard(m, overlay, cached)
                    raise
                with m._lock.exclusive():
                    overlay.commit()
                    m._adopt(prepared)
                assert attempt.outcome is not None  # Update finished
                strata, sizes, listed = attempt.outcome
                gave_up = next((s.fallback_reason for s in strata if s.fallback_reason), None)
                return _report(
                    m.symbols,
                    m.epoch,
                    start,
                    "update",
                    strata,
                    sizes,
                    listed,
                    prepared,
                    types_of,
                    gave_up,
                )
        reason = attempt.fallback_reason
        abandoned = tuple(walked)
        # What the discarded Update freed is in the C heap, which glibc keeps: given back
        # now, or the Bootstrap's Polars frames (another allocator) come on top of it.
        give_back_memory()
    before = m.state
    before.release_lookups(RELEASED_INDEX_BYTES)
    facts = facts_after(m.facts, prepared, new)
    built_at = time.perf_counter()
    built = m._build(new, facts, check)
    if check is not None:
        check()
    # The derived relations' changes now (the report counts them); any other's when the
    # caller of `before_publish` asks for it, while both states exist.
    states = [before, built.state]
    changes = {
        name: rebuilt_diff(before, built.state, name, reshaped=name in reshaped) for name in derived
    }

    def rebuilt_rows(name: str) -> Diff:
        if name not in changes:
            old, rebuilt = states
            if name not in old.relations and name not in rebuilt.relations:
                return ChangedRows.none(), ChangedRows.none()
            changes[name] = rebuilt_diff(old, rebuilt, name, reshaped=name in reshaped)
        return changes[name]

    if before_publish is not None:
        _epoch_changes(m, visible, rebuilt_rows, relations).hand_to(before_publish)
    with m._lock.exclusive():
        m.state, m.arities, m._plans = built.state, built.arities, built.plans
        m._adopt(prepared, facts)
    m.last_bootstrap_seconds = time.perf_counter() - built_at
    sizes = {name: (len(changes[name][0]), len(changes[name][1])) for name in derived}
    listed = _listed(derived, rebuilt_rows) if include_changes else None
    del before  # the old state's memory goes back before the report is made
    states.clear()
    changes.clear()
    strata = tuple(
        StratumReport(run.index, run.relations, "bootstrap", run.seconds) for run in built.runs
    )
    return _report(
        m.symbols,
        m.epoch,
        start,
        "bootstrap",
        strata,
        sizes,
        listed,
        prepared,
        types_of,
        reason,
        built.engine,
        abandoned,
    )


def _epoch_changes(
    m: Materialization,
    names: Sequence[str],
    diff: Callable[[str], Diff],
    relations: tuple[Mapping[str, RelationInfo], Mapping[str, RelationInfo]],
) -> EpochChanges:
    return EpochChanges(
        names,
        diff,
        relations,
        m.symbols.decoder,
        lambda info, columns: m._batch_of(info, columns, ordered=False),
    )


def _discard(m: Materialization, overlay: Overlay, cached: set[StratumKey]) -> None:
    """Undo an Update that will not be committed: its overlay, the relations a rule change
    added to the state, their arities, and the Update plans compiled over those relations
    (`cached`: the plan keys from before the epoch). The kernels give back all their
    buffers: a fallback's Bootstrap would otherwise run beside the abandoned Update's
    bookkeeping."""
    created = bool(overlay.created)
    overlay.discard()
    for plans in m._plans.values():
        plans.release()
    m.arities.clear()
    m.arities.update(m._arities(m.analyzed))
    if created:
        for key in set(m._plans) - cached:
            del m._plans[key]


def _forecast(
    m: Materialization, analyzed: AnalyzedProgram, start: float, seconds: float
) -> Forecast | None:
    """The forecast of an Update begun at `start` with a deadline of `seconds`, from the
    last Bootstrap's time per stratum; None when it did not run one of the program's strata
    (the deadline alone decides)."""
    if m.last_bootstrap_seconds <= 0:
        return None
    costs = stratum_costs(
        {s.index: tuple(sorted(s.relations)) for s in analyzed.strata},
        {relations: run.seconds for relations, run in m._last_runs.items()},
    )
    if costs is None:
        return None
    return Forecast(
        costs,
        m.last_bootstrap_seconds,
        start,
        start + seconds,
        earliest(start, seconds, m.min_update_seconds),
    )


def facts_after(
    facts: Mapping[str, TupleSet], prepared: PreparedDelta, analyzed: AnalyzedProgram
) -> dict[str, TupleSet]:
    """The facts once the delta is applied, for a Bootstrap, leaving the current ones as
    they are: a relation the delta changes is copied (or, inserted into while empty, is
    the delta's set itself), the others are shared. `facts`: the current ones."""
    after: dict[str, TupleSet] = {}
    for name, info in analyzed.relations.items():
        current = facts_of(facts, name, info.arity)
        retracted = prepared.retracts.get(name)
        inserted = prepared.inserts.get(name)
        if not (retracted or inserted):
            after[name] = current
        elif isinstance(inserted, TupleSet) and not retracted and not current:
            after[name] = inserted
        else:
            after[name] = current.copy()
            if retracted:
                after[name].difference_update(retracted)
            if inserted:
                after[name].update(inserted)
    return after


def facts_of(facts: Mapping[str, TupleSet], name: str, arity: int) -> TupleSet:
    """The facts of `name` for a relation of `arity`: a new set when it has none, or a
    set of another arity (a rule change may reshape a relation holding no facts; one
    holding facts keeps its shape, see `reasoner.elastic.prepare`)."""
    current = facts.get(name)
    if current is None or current.arity != arity:
        return TupleSet(arity)
    return current


def commit_facts(
    facts: dict[str, TupleSet],
    inserts: dict[str, FactRows],
    retracts: dict[str, FactRows],
    analyzed: AnalyzedProgram,
) -> None:
    for name, rows in retracts.items():
        facts[name].difference_update(rows)
    for name, info in analyzed.relations.items():
        facts[name] = facts_of(facts, name, info.arity)
    for name in [n for n in facts if n not in analyzed.relations]:
        del facts[name]
    for name, rows in inserts.items():
        facts[name].update(rows)


def update_memory_budget(state: State) -> int:
    """Bytes an Update's bookkeeping may take before the epoch falls back: the state's own
    size (at least `MIN_UPDATE_MEMORY`). A Bootstrap needs about as much beside the old
    state, so an Update that needs more is the more expensive way, however long its
    deadline."""
    return max(MIN_UPDATE_MEMORY, state.nbytes)


def _report(
    symbols: SymbolTable,
    epoch: int,
    start: float,
    strategy: str,
    strata: tuple[StratumReport, ...],
    sizes: dict[str, tuple[int, int]],
    listed: Listed,
    prepared: PreparedDelta,
    types: tuple[Mapping[str, tuple[ValueType, ...]], Mapping[str, tuple[ValueType, ...]]],
    reason: str | None = None,
    engine: EngineChoice | None = None,
    abandoned: tuple[StratumReport, ...] = (),
) -> EpochReport:
    """The report of epoch number `epoch`. `sizes`: (retracted, inserted) per derived
    relation; `listed`: their tuples, for a report that lists them; `types`: the column types
    of the relations before and after the epoch (retracted tuples have the first, inserted
    ones the second). A relation the analysis made for itself (`is_internal`) is left out, as
    everywhere users look."""
    sizes = {name: size for name, size in sizes.items() if not is_internal(name)}
    detail = None
    if listed is not None:
        detail = {}
        old_types, new_types = types
        for name, (gone, new) in listed.items():
            if (gone or new) and not is_internal(name):
                decode_gone = symbols.decoder(old_types.get(name, new_types[name]))
                decode_new = symbols.decoder(new_types[name])
                detail[name] = {
                    "inserted": sorted(decode_new(t) for t in new),
                    "retracted": sorted(decode_gone(t) for t in gone),
                }
    return EpochReport(
        epoch=epoch,
        strategy=strategy,
        seconds=clock() - start,
        inserted=sum(new for _gone, new in sizes.values()),
        retracted=sum(gone for gone, _new in sizes.values()),
        strata=strata,
        fallback_reason=reason,
        changes=detail,
        rules_added=prepared.rules_added,
        rules_removed=prepared.rules_removed,
        warnings=prepared.warnings,
        engine=None if engine is None else engine.engine,
        engine_reason=None if engine is None else engine.reason,
        update_strata=abandoned,
    )


def _listed(names: Iterable[str], rows: Callable[[str], Diff]) -> Listed:
    """The tuples each relation lost and gained, for a report that lists them: from the row
    ids the epoch's change set is made of, so that the report and the feed always agree."""
    listed: dict[str, tuple[set[Tuple], set[Tuple]]] = {}
    for name in names:
        gone, inserted = rows(name)
        listed[name] = (set(gone.tuples()), set(inserted.tuples()))
    return listed
