"""An epoch's Update, stratum by stratum in topological order, into the overlay
(`reasoner.elastic.apply` runs it under the switch and publishes it).

Each stratum takes its inputs' changes from the overlay and records its own there: by the
compiled Update (`reasoner.kernel.run`), an aggregate's or a choice's own way, or afresh
after a rule change. When the switch gives the Update up (its deadline, its forecast) where
that pays (`_alone_pays`: the strata left are a small enough share of the last Bootstrap, and
each fits the Update's memory budget in bulk), the strata below are kept, the one under way
keeps the iterations it settled and goes on in bulk (`reasoner.elastic.bulk`), and every
stratum above is bootstrapped alone: a fallback to a whole Bootstrap would spend all of that
again. The whole epoch falls back where it does not pay, past the memory budget, when the
Update fails, when the deadline stops a stratum that is not the compiled Update's (an
aggregate's, one made afresh), whose partial record cannot be gone on from, or when a stratum
to be made afresh comes after the switch gave up (it is made tuple by tuple,
`reasoner.elastic.restratify`, slower than a whole Bootstrap).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasoner.analysis.model import Stratum
from reasoner.elastic.bulk import bulk_bytes, finish_in_bulk
from reasoner.elastic.epoch import ABANDONED, UNCHANGED, StratumReport
from reasoner.elastic.forecast import Forecast
from reasoner.elastic.prepare import FactRows, PreparedDelta, as_set
from reasoner.elastic.restratify import (
    bootstrap_into_overlay,
    changed_strata,
    replace_contents,
    stratum_inputs,
)
from reasoner.executors.aggregate import update_aggregate
from reasoner.kernel.run import StratumUpdate
from reasoner.storage import TupleSet
from reasoner.storage.overlay import INF, Overlay
from reasoner.storage.state import Tuple
from reasoner.support.deadline import (
    Deadline,
    DeadlineExceeded,
    MemoryBudgetExceeded,
    unchecked,
)

ALONE_SHARE = 0.7
"""Past the switch, the rest of an Update is bootstrapped stratum by stratum only when it is
below this share of a whole Bootstrap: each stratum alone pays for its scratch state, its
frames and its comparison, 1.2-1.4x its share of a whole Bootstrap (lubm1's one stratum,
lubm1-owl2rl's twelve after a 10 % change)."""

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import numpy as np

    from reasoner.analysis.model import AnalyzedProgram
    from reasoner.materialization import Materialization


def update_strata(
    m: Materialization,
    overlay: Overlay,
    prepared: PreparedDelta,
    deadline: Deadline,
    predicted: Forecast | None,
    reports: list[StratumReport],
) -> tuple[StratumReport, ...]:
    """Bring every stratum up to date in the overlay, in topological order, a report for each
    in `reports` as it ends (and for the one under way when the epoch falls back)."""
    new = prepared.analyzed or m.analyzed
    changed: set[int] = set()
    # Added text holds no facts, but a rule change can make an inline relation substituted or
    # materialized (`reasoner.analysis.inline`), which takes its facts out of the program's or
    # puts them back: the pinned facts are those of the new program.
    pinned = m.program_facts if prepared.analyzed is None else m.program_facts_of(new)
    if prepared.analyzed is not None:
        changed = changed_strata(m.analyzed, new)
        arities = m._arities(new)
        m.arities.update(arities)
        with m._lock.exclusive():
            for name, arity in arities.items():
                overlay.create_relation(name, arity)
    stratum_of = new.stratum_of
    # Without a rule change, a relation without rules keeps a batch's columns: its facts are
    # recorded by row (`Overlay.record_facts`).
    by_row = prepared.analyzed is None
    inserts = {
        n: _flipped_facts(r, pinned.get(n, set()), by_row and n not in stratum_of)
        for n, r in prepared.inserts.items()
    }
    retracts = {
        n: _flipped_facts(r, pinned.get(n, set()), by_row and n not in stratum_of)
        for n, r in prepared.retracts.items()
    }
    if pinned is not m.program_facts:
        _program_facts_changed(m, new, pinned, inserts, retracts)
    for name in new.relations:
        if name in stratum_of:
            continue
        if name in m.analyzed.stratum_of:  # its rules were all removed: facts remain
            rows = set(m.facts[name]) - as_set(retracts.get(name, set()))
            rows |= as_set(inserts.get(name, set()))
            replace_contents(overlay, name, rows | pinned.get(name, set()))
            continue
        gone, came = retracts.get(name), inserts.get(name)
        if isinstance(gone, TupleSet) or isinstance(came, TupleSet):
            arity = new.relations[name].arity
            overlay.record_facts(name, _columns(gone, arity), _columns(came, arity))
            continue
        for t in gone or ():
            overlay.set(name, t, INF, 0)
        for t in came or ():
            overlay.set(name, t, 0, 1)
    epoch = _EpochInputs(new, changed, pinned, inserts, retracts)
    return _walk(m, overlay, epoch, deadline, predicted, reports)


def _walk(
    m: Materialization,
    overlay: Overlay,
    epoch: _EpochInputs,
    deadline: Deadline,
    predicted: Forecast | None,
    reports: list[StratumReport],
) -> tuple[StratumReport, ...]:
    """`update_strata`'s walk through the strata, their inputs' changes in the overlay."""
    abandoned: DeadlineExceeded | None = None
    """How the switch gave the Update up: from that stratum on, each is bootstrapped alone."""
    for stratum in epoch.analyzed.strata:
        started = time.perf_counter()
        names = tuple(sorted(stratum.relations))
        walking = abandoned is None  # the Update, not yet given up, comes to this stratum
        if predicted is not None and walking:
            predicted.begin(stratum.index)
        try:
            if walking:
                abandoned = _given_up(m, overlay, epoch, stratum, deadline, predicted)
            done = _update_stratum(m, overlay, stratum, epoch, deadline, predicted, abandoned)
        except DeadlineExceeded:
            rest = None if predicted is None else predicted.remaining(predicted.now())
            seconds = time.perf_counter() - started
            reports.append(StratumReport(stratum.index, names, ABANDONED, seconds, rest))
            raise
        abandoned = abandoned or done.given_up
        rest = None
        if predicted is not None and walking:  # the projection this stratum ended with
            rest = predicted.end() if abandoned is None else predicted.remaining(predicted.now())
        seconds = 0.0 if done.kind == UNCHANGED else time.perf_counter() - started
        alone = done.kind == "bootstrap" and done.bulk_from is not None
        reports.append(
            StratumReport(
                stratum.index,
                names,
                done.kind,
                seconds,
                rest,
                done.bulk_from,
                abandoned.reason if alone and abandoned is not None else None,
            )
        )
    return tuple(reports)


def _given_up(
    m: Materialization,
    overlay: Overlay,
    epoch: _EpochInputs,
    stratum: Stratum,
    deadline: Deadline,
    predicted: Forecast | None,
) -> DeadlineExceeded | None:
    """How the switch gives the Update up before `stratum` (None: it goes on). The exception
    propagates, for the whole epoch to fall back, past the memory budget or where
    bootstrapping the rest alone would not pay (`_alone_pays`)."""
    try:
        deadline.check()
    except MemoryBudgetExceeded:
        raise
    except DeadlineExceeded as exceeded:
        if not _alone_pays(m, overlay, epoch, stratum, deadline, predicted):
            raise
        return exceeded
    return None


def _alone_pays(
    m: Materialization,
    overlay: Overlay,
    epoch: _EpochInputs,
    stratum: Stratum,
    deadline: Deadline,
    predicted: Forecast | None,
    k: int = 1,
) -> bool:
    """Whether what is left of the Update, bootstrapped stratum by stratum from `stratum`
    (that one from its iteration `k`), is expected to cost less than a whole Bootstrap:
    below `ALONE_SHARE` of it by the last Bootstrap's seconds of each stratum, and every
    stratum from `stratum` on one that can be (not made afresh after a rule change nor
    stepwise, which would make the whole epoch fall back after the work, and each within the
    Update's memory budget in bulk, its inputs from `stratum` on counted as changed). Without
    a forecast (no Bootstrap timed each stratum) it is not known to."""
    if predicted is None or predicted.bootstrap_left() >= ALONE_SHARE:
        return False
    stratum_of = epoch.analyzed.stratum_of

    def may_change(name: str) -> bool:
        return overlay.has_changes(name) or stratum_of.get(name, -1) >= stratum.index

    for ahead in epoch.analyzed.strata:
        if ahead.index < stratum.index or ahead.aggregate is not None:
            continue  # done, or updated whatever the switch says
        if ahead.index in epoch.changed or ahead.stepwise:
            return False
        if not _bulk_fits(m, ahead, deadline, may_change, k if ahead is stratum else 1):
            return False
    return True


def _bulk_fits(
    m: Materialization,
    stratum: Stratum,
    deadline: Deadline,
    changed: Callable[[str], bool],
    k: int = 1,
) -> bool:
    """Whether `stratum` may be evaluated in bulk from iteration `k` within the Update's
    memory budget (0: none), the relations it reads that `changed` copied
    (`reasoner.elastic.bulk.bulk_bytes`)."""
    return not deadline.memory or bulk_bytes(stratum, m.state, changed, k) <= deadline.memory


def _flipped_facts(rows: FactRows, pinned: set[Tuple], by_row: bool) -> FactRows:
    """The facts of a relation the epoch flips, less those the program text pins: columns
    still for a relation recorded by row (`by_row`) when none is pinned, else a set."""
    if by_row and isinstance(rows, TupleSet) and rows.arity and not pinned:
        return rows
    return as_set(rows) - pinned


def _columns(rows: FactRows | None, arity: int) -> list[np.ndarray] | None:
    """Flipped facts as int64 columns for `Overlay.record_facts` (None: none)."""
    if not rows:
        return None
    return (rows if isinstance(rows, TupleSet) else TupleSet(arity, rows)).columns()


@dataclass(frozen=True, slots=True)
class _EpochInputs:
    """What every stratum's Update reads of the epoch: the program after it, the strata a
    rule change made anew, the facts the program text pins, and the facts the delta flips
    (pinned ones taken out)."""

    analyzed: AnalyzedProgram
    changed: set[int]
    pinned: Mapping[str, set[Tuple]]
    inserts: dict[str, FactRows]
    retracts: dict[str, FactRows]


@dataclass(frozen=True, slots=True)
class _Done:
    """What one stratum's turn in an Update took: "update", "bootstrap" (made afresh, or
    alone past the switch) or "unchanged" (no input changed); the iteration from which it
    went in bulk (None: it did not); and why the switch gave the Update up in it (None: it
    did not)."""

    kind: str
    bulk_from: int | None = None
    given_up: DeadlineExceeded | None = None


def _update_stratum(
    m: Materialization,
    overlay: Overlay,
    stratum: Stratum,
    epoch: _EpochInputs,
    deadline: Deadline,
    predicted: Forecast | None,
    abandoned: DeadlineExceeded | None,
) -> _Done:
    """One stratum's Update into the overlay. Once the switch has given the epoch's Update up
    (`abandoned`), the stratum is bootstrapped alone, under the caller's cancellation only: a
    Bootstrap's share of the epoch, which the fallback to a whole one would spend too, and
    the strata below, Updated already, are kept (an aggregate is still updated: its cost is
    its changes'; a stratum to be made afresh raises `abandoned` again, for the whole
    fallback). The switch may give the Update up in this stratum's compiled Update: then its
    iterations settled so far are kept too, and the rest goes in bulk
    (`reasoner.elastic.bulk`)."""
    retracts, inserts = epoch.retracts, epoch.inserts
    check = deadline.check if abandoned is None else deadline.epoch_check or unchecked
    own_retracts = {n: as_set(retracts[n]) for n in stratum.relations if retracts.get(n)}
    own_inserts = {n: as_set(inserts[n]) for n in stratum.relations if inserts.get(n)}
    if stratum.index in epoch.changed or (  # a choice is made afresh (`executors.choice`)
        stratum.stepwise
        and (
            own_retracts
            or own_inserts
            or any(overlay.has_changes(name) for name in stratum_inputs(stratum))
        )
    ):
        if abandoned is not None:  # made afresh tuple by tuple: a whole Bootstrap is faster
            raise abandoned
        facts = {
            name: (set(m.facts.get(name, ())) - as_set(retracts.get(name, set())))
            | as_set(inserts.get(name, set()))
            | epoch.pinned.get(name, set())
            for name in stratum.relations
        }
        bootstrap_into_overlay(stratum, overlay, facts, m.symbols, m.arities, check)
        return _Done("bootstrap")
    if stratum.stepwise:
        return _Done(UNCHANGED)
    if stratum.aggregate is not None:
        if not overlay.has_changes(stratum.aggregate.source):
            return _Done(UNCHANGED)
        update_aggregate(stratum.aggregate, m.state, overlay, check)
        return _Done("update")
    plans = _stratum_plans(m, stratum, epoch.analyzed)
    touched = own_retracts or own_inserts or any(overlay.has_changes(name) for name in plans.inputs)
    if not touched:
        return _Done(UNCHANGED)
    if abandoned is not None:
        if not _bulk_fits(m, stratum, deadline, overlay.has_changes):
            raise abandoned
        plans.update(overlay, deadline, own_retracts, own_inserts, bulk_rows=0)
        _finish_in_bulk(m, overlay, stratum, 1, deadline)
        return _Done("bootstrap", 1)
    return _update_compiled(m, overlay, epoch, stratum, plans, deadline, predicted)


def _update_compiled(
    m: Materialization,
    overlay: Overlay,
    epoch: _EpochInputs,
    stratum: Stratum,
    plans: StratumUpdate,
    deadline: Deadline,
    predicted: Forecast | None,
) -> _Done:
    """`_update_stratum` by the compiled Update, which may go on in bulk: past the
    threshold (`Materialization.bulk_update_rows`) or where the switch gives it up."""
    retracts, inserts = epoch.retracts, epoch.inserts
    own_retracts = {n: as_set(retracts[n]) for n in stratum.relations if retracts.get(n)}
    own_inserts = {n: as_set(inserts[n]) for n in stratum.relations if inserts.get(n)}
    if predicted is not None:
        predicted.measure(plans.progress())
    threshold = -1 if m.bulk_update_rows is None else m.bulk_update_rows
    if threshold >= 0 and not _bulk_fits(m, stratum, deadline, overlay.has_changes):
        threshold = -1  # not within the memory budget: the Update goes on per tuple
    try:
        plans.update(overlay, deadline, own_retracts, own_inserts, threshold)
    except MemoryBudgetExceeded:
        raise
    except DeadlineExceeded as exceeded:
        k = max(1, plans.iteration)
        if not _alone_pays(m, overlay, epoch, stratum, deadline, predicted, k):
            raise
        _finish_in_bulk(m, overlay, stratum, k, deadline)
        return _Done("bootstrap", k, exceeded)
    k = plans.stopped_at
    if not k:
        return _Done("update")
    # Chosen by the threshold, not the switch: a Bootstrap's share of the stratum, which a
    # fallback would spend again, so the Update's deadline moves by what it took.
    started = time.perf_counter()
    _finish_in_bulk(m, overlay, stratum, k, deadline)
    seconds = time.perf_counter() - started
    deadline.extend(seconds)
    if predicted is not None:
        predicted.extend(seconds)
    return _Done("update", k)


def _finish_in_bulk(
    m: Materialization, overlay: Overlay, stratum: Stratum, k: int, deadline: Deadline
) -> None:
    check = deadline.epoch_check
    finish_in_bulk(stratum, overlay, k, m.symbols, m.arities, check, deadline.memory)


def _program_facts_changed(
    m: Materialization,
    new: AnalyzedProgram,
    pinned: Mapping[str, set[Tuple]],
    inserts: dict[str, FactRows],
    retracts: dict[str, FactRows],
) -> None:
    """Add to the epoch's changes the facts the new program took out (that no data asserts)
    or put back."""
    for name in new.relations:
        old, now = m.program_facts.get(name, set()), pinned.get(name, set())
        if gone := old - now - set(m.facts.get(name, ())):
            retracts[name] = as_set(retracts.get(name, set())) | gone
        if came := now - old:
            inserts[name] = as_set(inserts.get(name, set())) | came


def _stratum_plans(
    m: Materialization, stratum: Stratum, analyzed: AnalyzedProgram
) -> StratumUpdate:
    key = m._stratum_keys.of(stratum, analyzed)
    plans = m._plans.get(key)
    if plans is None:
        plans = m._plans[key] = StratumUpdate(stratum, m.state, m.symbols, m.arities)
    return plans
