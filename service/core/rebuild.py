"""Start-up: the materialization made again from the store, as the writer's first job.

The committed program and facts are loaded over the committed numbering of symbols and
records (loaded before anything interns, so that `ord` reads as before: each epoch commits the
symbols it interned, `service.store.interned`) and bootstrapped under the rebuild's deadline
and the machine's memory share. A program that cannot be evaluated (one committed by an older
version, or a defect) is quarantined and the one before it tried: the service comes up at the
last program it can evaluate, with every committed fact, instead of never. Coming up without a
program the change feed's epochs went through, or without the store's numbering, the rebuild
commits a reset epoch whose change set is the whole state. A new database is the initial
program's epoch 0.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoner import (
    BootstrapCancelled,
    BootstrapProgress,
    Materialization,
    ProgressReport,
    RecordTable,
    SymbolTable,
    charging_to,
    preprocess,
)
from reasoner.errors import ProgramError
from service.core.change_sets import snapshot_chunks
from service.core.epoch_budget import EpochTooLarge, MemoryAllowance
from service.core.metrics import Metrics
from service.problems import EPOCH_TIMEOUT, EPOCH_TOO_LARGE
from service.settings import Settings
from service.store.interned import Interned
from service.store.repository import Committed, Store, StoredProgram

log = logging.getLogger("service")

PROGRESS_LOG_SECONDS = 5.0
"""A start-up Bootstrap logs its progress this often (and not at all when it is quicker)."""

Numbered = tuple[int, int]
"""How many of the engine's symbols and records the store holds (the first ones, in the
engine's numbering): an epoch commits those after them."""


@dataclass(frozen=True, slots=True)
class Rebuilt:
    materialization: Materialization
    report: Any
    """The Bootstrap's report (`Materialization.bootstrap`)."""
    numbered: Numbered
    new: bool
    """A new database: its epoch 0's report is recorded once the service is up."""


def interned_since(m: Materialization, numbered: Numbered) -> Interned:
    """The symbols and records `m` interned beyond the `numbered` the store holds, which the
    next commit appends."""
    symbols, records = numbered
    return Interned(m.symbols.since(symbols), m.symbols.records.since(records), symbols, records)


def failure_code(exc: BaseException) -> str:
    """What went wrong, safe to show to anyone: a stable code or an exception type, never
    the message (which may quote a user's rules or facts)."""
    if isinstance(exc, ProgramError):
        return exc.code
    if isinstance(exc, EpochTooLarge):
        return EPOCH_TOO_LARGE
    if isinstance(exc, BootstrapCancelled):
        return EPOCH_TIMEOUT
    return type(exc).__name__


CROWDED_RETRIES = 10
CROWDED_WAIT_SECONDS = 1.0


class Crowded(EpochTooLarge):
    """The rebuild passed its allowance while another store's evaluation ran beside it: the
    memory may be that one's, so the program is not quarantined; the rebuild is tried again
    (`CROWDED_RETRIES` times, then the store does not start, and a restart tries again)."""

    def __init__(self) -> None:
        super().__init__("another store's evaluation held the memory")


class Rebuild:
    """One rebuild from `store`; `building` is its Bootstrap's progress while it runs (for
    the log and `/ready`)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        memory: MemoryAllowance,
        metrics: Metrics,
        engine_options: dict[str, Any],
    ) -> None:
        self.settings = settings
        self.store = store
        self.memory = memory
        self.metrics = metrics
        self.engine_options = engine_options
        self.building: BootstrapProgress | None = None
        self._numbered: Numbered = (0, 0)

    def run(self) -> Rebuilt:
        if self.store.initialized():
            m, report = self._rebuild_stored()
            return Rebuilt(m, report, self._numbered, new=False)
        m, report = self._build_new()
        return Rebuilt(m, report, self._numbered, new=True)

    def _initial_program(self) -> str:
        """The program file through the C preprocessor: its `#include`s (the operator's files,
        beside it) are read once, here, and the store keeps the program whole."""
        if self.settings.program is None:
            return ""
        path = Path(self.settings.program)
        return preprocess(path.read_text(encoding="utf-8-sig"), str(path)).text

    def _build_new(self) -> tuple[Materialization, Any]:
        """Epoch 0 of a new database: the initial program, bootstrapped, then stored with its
        change set (a program that cannot be evaluated leaves the database empty)."""
        text = self._initial_program()
        m, report = self._bootstrap_committed(Committed(StoredProgram(0, text), {}, 0))
        numbering = interned_since(m, self._numbered)
        rules = [(r.id, r.text) for r in m.rules()]
        self.store.initialize(text, rules, snapshot_chunks(m), numbering)
        self._numbered = (numbering.symbol_count, numbering.record_count)
        return m, report

    def _rebuild_stored(self) -> tuple[Materialization, Any]:
        """The committed program and facts, bootstrapped; a program that cannot be evaluated
        is quarantined and the one before it tried. Coming up without a program the feed's
        epochs went through, the rebuild commits a reset epoch whose change set is the whole
        state (`Committed.reset`)."""
        crowded = 0
        while True:
            committed = self.store.load()
            try:
                m, report = self._bootstrap_committed(committed)
                break
            except Crowded:
                crowded += 1
                if crowded > CROWDED_RETRIES:
                    raise
                log.warning("another store's evaluation held the memory: rebuilding again")
                time.sleep(CROWDED_WAIT_SECONDS)
                continue
            except Exception as exc:
                if committed.program.epoch == 0:
                    raise
                failure = failure_code(exc)
                log.exception(
                    "the program of epoch %d cannot be evaluated (%s): quarantined, "
                    "rebuilding without it",
                    committed.program.epoch,
                    failure,
                )
                self.store.quarantine(committed.program.epoch, failure)
                self.metrics.quarantined()
        if committed.program.epoch < committed.last_epoch:
            self.store.set_active_rules(r.id for r in m.rules())
        if committed.reset:
            if committed.interned is None:
                log.warning("the store keeps no numbering of the symbols: numbered anew")
            numbering = interned_since(m, self._numbered)
            self.store.commit_reset(m.epoch, snapshot_chunks(m), numbering)
            self._numbered = (numbering.symbol_count, numbering.record_count)
            log.warning("epoch %d resets the change feed to the rebuilt state", m.epoch)
        return m, report

    def _bootstrap_committed(self, committed: Committed) -> tuple[Materialization, Any]:
        """The committed program and facts, bootstrapped over the committed numbering of
        symbols and records (loaded before anything interns: `ord` reads as before)."""
        numbering = committed.interned or Interned()
        symbols = SymbolTable(numbering.symbols, RecordTable.of(numbering.records))
        self._numbered = (numbering.symbol_count, numbering.record_count)
        m = Materialization.from_text(
            committed.program.text,
            "<program>",
            # A reset epoch follows the last one.
            epoch=committed.last_epoch + int(committed.reset),
            symbols=symbols,
            **self.engine_options,
        )
        relations = m.analyzed.relations
        unknown = sorted(set(committed.facts) - set(relations))
        if unknown:
            log.warning("facts of relations not in the program are ignored: %s", unknown)
        m.load({n: rows for n, rows in committed.facts.items() if n in relations})
        logged = [0.0]

        def log_progress(report: ProgressReport) -> None:
            if report.seconds - logged[0] >= PROGRESS_LOG_SECONDS:
                logged[0] = report.seconds
                log.info("building: %s", report.line())

        self.building = BootstrapProgress(log_progress, interval=1.0)
        evaluation = self.memory.evaluation(self.settings.rebuild_timeout_seconds, rebuilding=True)
        try:
            with evaluation as budget, charging_to(budget):
                try:
                    return m, m.bootstrap(check=budget.check, progress=self.building)
                except EpochTooLarge:
                    if self.memory.others_running():
                        raise Crowded from None
                    raise
        finally:
            self.building = None
