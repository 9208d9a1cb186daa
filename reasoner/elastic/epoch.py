"""What a client sends (a delta) and what it gets back: the one family of epoch reports.

`EpochReport` is what an epoch did, per stratum a `StratumReport`; a Bootstrap run alone
reports its executor's `StratumRun`s (iterations included) in a `BootstrapReport`, which
becomes the report of the epoch it made (`as_epoch`). Every other shape is a view of these:
`EpochReport.as_json` (`reasoner replay --stats`), the service's `EpochSummary`, validated
from the report's attributes, and the replay's `EpochRecord`, which adds the workload's
counts and the check against a fresh Bootstrap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reasoner.errors import Notice
from reasoner.executors.bootstrap import StratumRun
from reasoner.executors.registry import EngineChoice
from reasoner.values.types import Value

Rows = Mapping[str, Sequence[Sequence[Value]]]


@dataclass(frozen=True, slots=True)
class Delta:
    """Facts inserted and retracted, in user values, applied all or nothing as one epoch.

    A row both inserted and retracted in one delta is a no-op; inserting a present fact or
    retracting an absent one changes nothing.
    """

    insert: Rows = field(default_factory=dict)
    retract: Rows = field(default_factory=dict)
    add_rules: Sequence[str] = ()
    """Program text holding rules (and declarations of the relations they introduce)."""
    remove_rules: Sequence[str] = ()
    """Ids of rules to remove, as `Materialization.rules()` lists them."""
    clear_facts: bool = False
    """Retract every fact given as data (those the program text asserts stay): on its own,
    with nothing else in the delta."""
    program: str | None = None
    """Program text to replace the whole program with (its rules, declarations and
    directives; its facts are data, as those of `add_rules`), in place of `add_rules` and
    `remove_rules`: None keeps the program."""


UNCHANGED = "unchanged"
"""The strategy of a delta that changes nothing (no epoch is made and nothing is evaluated),
and of a stratum none of whose inputs an epoch changed."""
BOOTSTRAP = "bootstrap"
"""The strategy of an epoch that recomputed the state (chosen, or an Update's fallback)."""
ABANDONED = "abandoned"
"""The strategy of the stratum an Update was in when the switch abandoned it and the whole
epoch fell back (in a fallback's `update_strata`)."""


@dataclass(frozen=True, slots=True)
class StratumReport:
    index: int
    relations: tuple[str, ...]
    strategy: str
    """"update", "bootstrap" (bootstrapped alone: a rule change, a choice, or past the
    switch, see `fallback_reason`), `UNCHANGED`, or `ABANDONED`."""
    seconds: float
    forecast_seconds: float | None = None
    """Of an Update: the seconds the rest of it was projected to need when this stratum ended
    (or was abandoned), against the last Bootstrap's time (`reasoner.elastic.forecast`); None
    when there was no forecast to make."""
    bulk_from: int | None = None
    """The iteration from which the stratum was evaluated in bulk, as a Bootstrap resumed
    there over what its Update had settled below it (`reasoner.elastic.bulk`; 1: the whole
    stratum); None when it was not."""
    fallback_reason: str | None = None
    """Why the stratum was bootstrapped alone ("deadline", "forecast"): the switch gave the
    epoch's Update up in it or in a stratum below it. None when it was not."""

    def as_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "relations": list(self.relations),
            "strategy": self.strategy,
            "seconds": self.seconds,
            "forecast_seconds": self.forecast_seconds,
            "bulk_from": self.bulk_from,
            "fallback_reason": self.fallback_reason,
        }


@dataclass(frozen=True, slots=True)
class EpochReport:
    epoch: int
    strategy: str
    """"bootstrap" whenever a full Bootstrap ran (the first epoch, or a fallback), "update", or
    `UNCHANGED` for a delta that changes nothing (no epoch was made)."""
    seconds: float
    inserted: int
    """Derived tuples that appeared (input facts are not counted)."""
    retracted: int
    strata: tuple[StratumReport, ...]
    fallback_reason: str | None = None
    """Why the switch gave the Update up ("deadline", "forecast", "memory", "update failed"):
    of a "bootstrap" epoch, why it fell back; of an "update" epoch, why some of its strata were
    bootstrapped alone (their reports say which). None when it did not."""
    changes: dict[str, dict[str, list[tuple[Value, ...]]]] | None = None
    """With `include_changes`: per derived relation, {"inserted": rows, "retracted": rows}."""
    rules_added: tuple[str, ...] = ()
    """Ids of the rules the delta added (an already present rule keeps its id)."""
    rules_removed: tuple[str, ...] = ()
    engine: str | None = None
    """The executor of a full Bootstrap ("reference", "local", "spark"); None for Update."""
    engine_reason: str | None = None
    warnings: tuple[Notice, ...] = ()
    """What was accepted but may not be meant (see `PreparedDelta.warnings`)."""
    update_strata: tuple[StratumReport, ...] = ()
    """Of a Bootstrap that an Update fell back to: the strata that Update went through, with
    their forecasts, the last being where it stopped."""
    state_bytes: int | None = None
    """The state's size once the epoch is published (`State.nbytes`)."""
    peak_memory_bytes: int | None = None
    """The process's peak resident set while the epoch was evaluated and published, counted
    from what was resident when it began (`reasoner.support.process_memory.mark_peak`): the
    figure that sizes the machine, beside the state's. It is the process's, so whatever else
    the process held meanwhile counts too. None where the system cannot mark a peak, and for
    a delta that changes nothing."""

    @property
    def changed(self) -> bool:
        """Whether the delta made an epoch (it changed facts or rules)."""
        return self.strategy != UNCHANGED

    def as_json(self) -> dict[str, object]:
        """What the epoch did, as `reasoner replay --stats` writes it; the service has the
        same fields in its schema (`service.schemas.EpochSummary`)."""
        return {
            "epoch": self.epoch,
            "strategy": self.strategy,
            "fallback_reason": self.fallback_reason,
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "seconds": self.seconds,
            "inserted": self.inserted,
            "retracted": self.retracted,
            "strata": [s.as_json() for s in self.strata],
            "update_strata": [s.as_json() for s in self.update_strata],
            "state_bytes": self.state_bytes,
            "peak_memory_bytes": self.peak_memory_bytes,
        }


@dataclass(frozen=True, slots=True)
class BootstrapReport:
    strata: tuple[StratumRun, ...]
    seconds: float
    engine: EngineChoice

    def as_epoch(self, epoch: int, inserted: int) -> EpochReport:
        """The Bootstrap as the report of the epoch it made (the first one of a service or of
        a replay), where every tuple of the derived relations appeared: `inserted`, which
        `Materialization.derived_size` counts as later epochs do (facts of a relation that
        also has rules included)."""
        return EpochReport(
            epoch=epoch,
            strategy="bootstrap",
            seconds=self.seconds,
            inserted=inserted,
            retracted=0,
            strata=tuple(
                StratumReport(run.index, run.relations, "bootstrap", run.seconds)
                for run in self.strata
            ),
            engine=self.engine.engine,
            engine_reason=self.engine.reason,
        )
