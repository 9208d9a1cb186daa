"""A live materialization: a checked program, its input facts and the derived proof-count state.

This is the engine's front door for the CLI and the service. It owns the symbol table (so that
values cross its boundary as the user's ints and strings), the facts (the EDB: inputs and facts
asserted on derived relations) and the state. Each `apply` is one epoch: it first tries Update
under the switching deadline and falls back to a full Bootstrap past it, and either way the
state afterwards equals a fresh Bootstrap of the facts (Theorem 3.5 of the elastic paper).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram, Value
from reasoner.elastic.bootstrap import StratumBootstrap, StratumRun
from reasoner.elastic.epoch import Delta, EpochReport, StratumReport
from reasoner.elastic.overlay import INF, Overlay
from reasoner.elastic.update import (
    Deadline,
    DeadlineExceeded,
    StratumUpdate,
    StratumUpdatePlans,
)
from reasoner.errors import ARITY_MISMATCH, TYPE_MISMATCH, UNKNOWN_RELATION, InvalidDelta
from reasoner.executors.local.codegen import PlanCompiler
from reasoner.state import State, Tuple
from reasoner.symbols import SymbolTable

DEFAULT_SWITCHING_PARAMETER = 0.2
DEFAULT_MIN_UPDATE_SECONDS = 0.5
"""The deadline floor: below it, an Update is never abandoned (tiny programs would thrash)."""


@dataclass(frozen=True, slots=True)
class BootstrapReport:
    strata: tuple[StratumRun, ...]
    seconds: float


class Materialization:
    """The program, the facts given to it, and everything they derive."""

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        *,
        switching_parameter: float = DEFAULT_SWITCHING_PARAMETER,
        min_update_seconds: float = DEFAULT_MIN_UPDATE_SECONDS,
        symbols: SymbolTable | None = None,
    ) -> None:
        self.analyzed = analyzed
        self.switching_parameter = switching_parameter
        self.min_update_seconds = min_update_seconds
        self.symbols = symbols if symbols is not None else SymbolTable()
        self.state = State()
        arities = {name: info.arity for name, info in analyzed.relations.items()}
        for name, arity in arities.items():
            self.state.relation(name, arity)
        self.compiler = PlanCompiler(self.state, self.symbols, arities)
        self.facts: dict[str, set[Tuple]] = {name: set() for name in analyzed.relations}
        """The data: facts loaded or inserted by deltas (on input or derived relations)."""
        self.program_facts: dict[str, set[Tuple]] = {name: set() for name in analyzed.relations}
        """Facts written in the program text: part of the program, so a delta cannot retract
        them (retracting the same row as data leaves it present, as a fresh run would)."""
        self.epoch = 0
        self.last_bootstrap_seconds = 0.0
        self._update_plans: dict[int, StratumUpdatePlans] = {}
        for name, rows in analyzed.facts.items():
            encode = self.symbols.encoder(analyzed.relations[name].types)
            encoded = [encode(r) for r in rows]
            self.program_facts[name].update(encoded)
            self.state.load_facts(name, arities[name], encoded)

    @classmethod
    def from_text(cls, text: str, filename: str = "<input>", **options: float) -> Materialization:
        return cls(check_program(text, filename), **options)

    def _load(self, name: str, rows: Iterable[Sequence[Value]]) -> None:
        info = self.analyzed.relations[name]
        encode = self.symbols.encoder(info.types)
        encoded = [encode(r) for r in rows]
        self.facts[name].update(encoded)
        self.state.load_facts(name, info.arity, encoded)

    def load(self, inputs: Mapping[str, Iterable[Sequence[Value]]]) -> None:
        """Add input facts (iteration 0, count 1) before the first Bootstrap."""
        for name, rows in inputs.items():
            self._load(name, rows)

    def bootstrap(self) -> BootstrapReport:
        """Recompute every stratum from the facts, in topological order (Algorithm 2)."""
        start = time.perf_counter()
        for name, store in self.state.relations.items():
            store.clear()
            for t in self.facts[name] | self.program_facts[name]:
                store.add(t, 0, 1)
        runs = tuple(
            StratumBootstrap(stratum, self.state, self.compiler).run()
            for stratum in self.analyzed.strata
        )
        seconds = time.perf_counter() - start
        self.last_bootstrap_seconds = seconds
        return BootstrapReport(runs, seconds)

    # -- epochs ---------------------------------------------------------------------------------

    def _encode_delta(self, rows_by_relation, verb: str) -> dict[str, set[Tuple]]:
        encoded: dict[str, set[Tuple]] = {}
        for name, rows in rows_by_relation.items():
            info = self.analyzed.relations.get(name)
            if info is None:
                raise InvalidDelta(
                    UNKNOWN_RELATION, f"cannot {verb} facts of unknown relation `{name}`"
                )
            out: set[Tuple] = set()
            for row in rows:
                if len(row) != info.arity:
                    raise InvalidDelta(
                        ARITY_MISMATCH,
                        f"`{name}` has {info.arity} columns, a row to {verb} has {len(row)}",
                    )
                values = []
                for value, kind, column in zip(row, info.types, info.column_names, strict=True):
                    if kind == "symbol":
                        if not isinstance(value, str):
                            raise InvalidDelta(
                                TYPE_MISMATCH, f"`{name}.{column}` is a symbol, got {value!r}"
                            )
                        values.append(value)
                    else:
                        if (
                            isinstance(value, bool)
                            or not isinstance(value, int)
                            or not (-(1 << 63) <= value < (1 << 63))
                        ):
                            raise InvalidDelta(
                                TYPE_MISMATCH,
                                f"`{name}.{column}` is a 64-bit number, got {value!r}",
                            )
                        values.append(value)
                out.add(tuple(values))  # type: ignore[arg-type]
            encoded[name] = out
        return {
            name: set(self.symbols.encoder(self.analyzed.relations[name].types)(t) for t in rows)
            for name, rows in encoded.items()
        }

    def apply(
        self,
        delta: Delta,
        *,
        strategy: str = "auto",
        include_changes: bool = False,
    ) -> EpochReport:
        """Apply one delta as one epoch.

        strategy "auto": Update under the switching deadline, Bootstrap past it (or if Update
        fails); "update": Update with no deadline, errors propagate; "bootstrap": recompute.
        Invalid deltas raise `InvalidDelta` before anything changes.
        """
        start = time.perf_counter()
        inserts = self._encode_delta(delta.insert, "insert")
        retracts = self._encode_delta(delta.retract, "retract")
        for name in set(inserts) & set(retracts):
            both = inserts[name] & retracts[name]
            inserts[name] -= both
            retracts[name] -= both
        inserts = {n: {t for t in rows if t not in self.facts[n]} for n, rows in inserts.items()}
        retracts = {n: {t for t in rows if t in self.facts[n]} for n, rows in retracts.items()}
        self.epoch += 1
        reason = None
        derived = [name for name in self.analyzed.relations if name in self.analyzed.stratum_of]
        if strategy != "bootstrap":
            overlay = Overlay(self.state)
            deadline = Deadline(
                None
                if strategy == "update"
                else start
                + max(
                    self.min_update_seconds, self.switching_parameter * self.last_bootstrap_seconds
                )
            )
            pinned = self.program_facts
            try:
                strata = self._update(
                    overlay,
                    {n: rows - pinned[n] for n, rows in inserts.items()},
                    {n: rows - pinned[n] for n, rows in retracts.items()},
                    deadline,
                )
                changes = {name: overlay.presence_diff(name) for name in derived}
                overlay.commit()
            except DeadlineExceeded:
                overlay.discard()
                reason = "deadline"
            except Exception:
                overlay.discard()
                if strategy == "update":
                    self.epoch -= 1
                    raise
                reason = "update failed"
            else:
                self._commit_facts(inserts, retracts)
                return self._report(start, "update", strata, changes, include_changes)
        before = {name: set(self.state[name].iters) for name in derived}
        self._commit_facts(inserts, retracts)
        report = self.bootstrap()
        changes = {}
        for name in derived:
            after = self.state[name].iters
            changes[name] = (
                before[name] - after.keys(),
                {t for t in after if t not in before[name]},
            )
        strata = tuple(
            StratumReport(run.index, run.relations, "bootstrap", run.seconds)
            for run in report.strata
        )
        return self._report(start, "bootstrap", strata, changes, include_changes, reason)

    def _commit_facts(
        self, inserts: dict[str, set[Tuple]], retracts: dict[str, set[Tuple]]
    ) -> None:
        for name, rows in retracts.items():
            self.facts[name] -= rows
        for name, rows in inserts.items():
            self.facts[name] |= rows

    def _update(
        self,
        overlay: Overlay,
        inserts: dict[str, set[Tuple]],
        retracts: dict[str, set[Tuple]],
        deadline: Deadline,
    ) -> tuple[StratumReport, ...]:
        stratum_of = self.analyzed.stratum_of
        for name, rows in retracts.items():
            if name not in stratum_of:
                for t in rows:
                    overlay.set(name, t, INF, 0)
        for name, rows in inserts.items():
            if name not in stratum_of:
                for t in rows:
                    overlay.set(name, t, 0, 1)
        reports = []
        for stratum in self.analyzed.strata:
            start = time.perf_counter()
            own_retracts = {n: retracts[n] for n in stratum.relations if retracts.get(n)}
            own_inserts = {n: inserts[n] for n in stratum.relations if inserts.get(n)}
            plans = self._plans(stratum)
            touched = (
                own_retracts
                or own_inserts
                or any(overlay.changes.get(name) for name in plans.inputs)
            )
            if not touched:
                reports.append(
                    StratumReport(stratum.index, tuple(sorted(stratum.relations)), "unchanged", 0.0)
                )
                continue
            deadline.check()
            StratumUpdate(plans, overlay, deadline).run(own_retracts, own_inserts)
            reports.append(
                StratumReport(
                    stratum.index,
                    tuple(sorted(stratum.relations)),
                    "update",
                    time.perf_counter() - start,
                )
            )
        return tuple(reports)

    def _plans(self, stratum) -> StratumUpdatePlans:
        plans = self._update_plans.get(stratum.index)
        if plans is None:
            plans = self._update_plans[stratum.index] = StratumUpdatePlans(
                stratum, self.state, self.compiler
            )
        return plans

    def _report(
        self,
        start: float,
        strategy: str,
        strata: tuple[StratumReport, ...],
        changes: dict[str, tuple[set[Tuple], set[Tuple]]],
        include_changes: bool,
        reason: str | None = None,
    ) -> EpochReport:
        detail = None
        if include_changes:
            detail = {}
            for name, (gone, new) in changes.items():
                if gone or new:
                    decode = self.symbols.decoder(self.analyzed.relations[name].types)
                    detail[name] = {
                        "inserted": sorted(decode(t) for t in new),
                        "retracted": sorted(decode(t) for t in gone),
                    }
        return EpochReport(
            epoch=self.epoch,
            strategy=strategy,
            seconds=time.perf_counter() - start,
            inserted=sum(len(new) for _gone, new in changes.values()),
            retracted=sum(len(gone) for gone, _new in changes.values()),
            strata=strata,
            fallback_reason=reason,
            changes=detail,
        )

    # -- reading --------------------------------------------------------------------------------

    def relation_names(self) -> list[str]:
        return list(self.analyzed.relations)

    def rows(self, name: str) -> list[tuple[Value, ...]]:
        """Every tuple of a relation, as user values."""
        decode = self.symbols.decoder(self.analyzed.relations[name].types)
        return [decode(t) for t in self.state[name]]

    def size(self, name: str) -> int:
        return len(self.state[name])

    def encode(self, name: str, row: Sequence[Value]) -> tuple[int, ...] | None:
        """The engine tuple for a row, or None if it names a symbol never seen (so is absent)."""
        info = self.analyzed.relations[name]
        out = []
        for value, kind in zip(row, info.types, strict=True):
            if kind == "symbol":
                ident = self.symbols.lookup(value)  # type: ignore[arg-type]
                if ident is None:
                    return None
                out.append(ident)
            else:
                out.append(value)
        return tuple(out)  # type: ignore[arg-type]

    def lookup(self, name: str, row: Sequence[Value]) -> tuple[int, int] | None:
        """(iteration, count) of a tuple, or None when it is not in the materialization."""
        t = self.encode(name, row)
        return None if t is None else self.state[name].get(t)

    def rebuilt(self) -> Materialization:
        """A fresh materialization of the same program and facts, bootstrapped from scratch:
        the reference the maintained state must equal after every epoch (`replay --check`)."""
        fresh = Materialization(
            self.analyzed,
            switching_parameter=self.switching_parameter,
            min_update_seconds=self.min_update_seconds,
            symbols=self.symbols,
        )
        for name, rows in self.facts.items():
            fresh.facts[name] = set(rows)
        fresh.bootstrap()
        return fresh

    def differences(self, other: Materialization) -> dict[str, int]:
        """Per relation, how many tuples differ in presence, iteration or count (empty: equal)."""
        out = {}
        for name in self.analyzed.relations:
            mine = self.state[name].snapshot()
            theirs = other.state[name].snapshot()
            differing = len(mine.keys() ^ theirs.keys()) + sum(
                1 for t, v in mine.items() if t in theirs and theirs[t] != v
            )
            if differing:
                out[name] = differing
        return out

    def snapshot(self) -> dict[str, dict[tuple[Value, ...], tuple[int, int]]]:
        """Every relation as {row: (iteration, count)} in user values, for comparing states."""
        result = {}
        for name, info in self.analyzed.relations.items():
            decode = self.symbols.decoder(info.types)
            result[name] = {decode(t): v for t, v in self.state[name].snapshot().items()}
        return result
