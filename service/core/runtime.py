"""The service's live state: one materialization, one store, one writer.

Writes (deltas, rules, facts) are jobs on a single writer thread (`service.core.writer`), so
they are validated, evaluated, committed and published one at a time in arrival order; the HTTP
handlers await their job. Each job: `prepare` the delta against the current epoch (every error
surfaces here, nothing changed) → evaluate it under a deadline and a memory allowance
(`service.core.epoch_budget`) → commit facts, rules, program and the epoch row in one transaction,
between computing the epoch and publishing it. A write that fails, never terminates or
explodes is therefore refused and leaves nothing in the store.

Readers run on the request threads. Relation reads and queries (`read`) hold no lock: a
publication that lands during one makes it start again on the new epoch, so they see a whole
epoch and never hold a writer back; short reads (`reading`) take the shared side, which the
engine's exclusive side excludes only while it publishes an epoch.

Start-up (`start`): migrate, then, as the writer's first job, rebuild from the store
(`service.core.rebuild`); `ready` turns true only then. If publishing a committed epoch ever
fails, the service rebuilds from the store (which already holds the delta) before taking more
writes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
    Sized,
)
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from sqlalchemy.exc import SQLAlchemyError

from reasoner import (
    BootstrapCancelled,
    BootstrapProgress,
    Delta,
    EngineSettings,
    EpochChanges,
    EpochReport,
    GroupWrite,
    Materialization,
    PreparedGroup,
    bulk_load,
    charging_to,
)
from reasoner.errors import InvalidDelta
from service.core import failpoints
from service.core.applied import Applied, answers, outcome, retried_alone
from service.core.change_sets import change_chunks
from service.core.epoch_budget import (
    Baseline,
    EpochBudget,
    EpochTooLarge,
    MemoryAllowance,
    default_memory_allowance,
)
from service.core.epoch_rows import EpochRows, report_row
from service.core.metrics import Metrics
from service.core.other_stores import ReadCount, ReadsElsewhere
from service.core.query_answers import QueryAnswers
from service.core.rebuild import Rebuild, failure_code, interned_since
from service.core.write_priority import WritePriority
from service.core.writer import Writer, WriterClosed
from service.feed.stream import Feed, KeptChanges
from service.problems import (
    DATABASE_UNAVAILABLE,
    EPOCH_TIMEOUT,
    EPOCH_TOO_LARGE,
    EVALUATION_FAILED,
    NOT_READY,
    TOO_BUSY,
    TOO_MANY_RULES,
    UNKNOWN_STORE,
    Refusal,
)
from service.settings import Settings
from service.store.places import DEFAULT_STORE
from service.store.repository import DeltaRecord, Store

log = logging.getLogger("service")
T = TypeVar("T")


class StoreLog(logging.LoggerAdapter):
    """A log whose lines start with the name of the data store they are about."""

    def __init__(self, logger: logging.Logger, store: str) -> None:
        super().__init__(logger)
        self.store = store

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        return f"store {self.store}: {msg}", kwargs


class Runtime:
    def __init__(
        self,
        settings: Settings,
        store: Store | None = None,
        priority: WritePriority | None = None,
        baseline: Baseline | None = None,
        reads_everywhere: ReadCount | None = None,
        rebuilds: threading.Lock | None = None,
        name: str = DEFAULT_STORE,
    ) -> None:
        self.name = name
        """The data store's name (`service.core.stores`)."""
        self.dropped = False
        """The store was dropped: its requests are refused as those of a store that is not."""
        self._users = 0
        self._unused = threading.Condition()
        self.log = log if name == DEFAULT_STORE else StoreLog(log, name)
        """The service's log, its lines naming this store unless it is the default one."""
        self.settings = settings
        self.store = store if store is not None else Store(settings.sqlalchemy_url)
        self.metrics = Metrics()
        self.materialization: Materialization | None = None
        self.ready = False
        self.failure: str | None = None
        """Why the service is not ready, for `/ready`: an error code, never a user's text."""
        self.quarantined: list[int] = []
        """Epochs whose program the last rebuild could not evaluate and left out."""
        self.startup_seconds: float | None = None
        self._rebuilding: Rebuild | None = None
        """The rebuild running, while it runs (its progress is `building`)."""
        self.writer = Writer(settings.write_group_max)
        """The one thread every write runs on, in arrival order (`service.core.writer`)."""
        self._read_slots = threading.BoundedSemaphore(settings.max_concurrent_reads)
        self._rebuilds = rebuilds if rebuilds is not None else threading.Lock()
        """Held while a rebuild evaluates: one at a time in the process (`service.core.stores`),
        so that no store's rebuild is charged another's memory."""
        self.reads = ReadsElsewhere(reads_everywhere)
        """The reads being evaluated here and in every store (`reads_everywhere`), which a
        write's evaluation lets go first (`service.core.other_stores`)."""
        self.query_answers = QueryAnswers(settings.query_cache_rows)
        self.priority = priority if priority is not None else WritePriority()
        """The writes in progress, which a read lets finish first
        (`service.core.write_priority`)."""
        mb = settings.epoch_memory_mb
        self._memory_allowance = default_memory_allowance() if mb is None else mb << 20
        """Bytes one evaluation (a write's, or the start-up rebuild) may grow the process."""
        self._user_functors = settings.user_functors()
        """The only functors a program may call (`REASONER_FUNCTORS`): loaded once, here."""
        self.feed = Feed(settings, self.priority)
        """The live change feed's view of the epochs published (`service.feed.stream`)."""
        self.epoch_rows = EpochRows(self.store, settings, self.writer)
        """The epochs' rows, completed with their reports after the answers."""
        self._numbered = (0, 0)
        """How many of the engine's symbols and records the store holds (the first ones, in
        the engine's numbering): an epoch commits those after them (`rebuild.interned_since`)."""
        cap_mb = settings.memory_cap_mb
        self.memory = MemoryAllowance(
            self._memory_allowance, None if cap_mb is None else cap_mb << 20, baseline
        )
        """Every evaluation's memory limit: the allowance past the committed state (of every
        store of the process: `baseline`, shared by their runtimes)."""

    @property
    def epoch(self) -> int:
        """The number of the published epoch: the engine's, which resumed at the store's."""
        m = self.materialization
        return 0 if m is None else m.epoch

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> Future[None]:
        """Migrate now; rebuild on the writer thread (the first job: writes queue behind)."""
        self.store.migrate()
        return self.writer.submit(self._rebuild)

    def close(self) -> None:
        """Finish the queued jobs (uvicorn has drained the requests: only the writing back
        of reports can remain) and release the database."""
        self.writer.shutdown()
        self.store.close()

    @contextmanager
    def in_use(self) -> Iterator[None]:
        """A request using the store, which dropping it waits for (`wait_unused`)."""
        with self._unused:
            self._users += 1
        try:
            yield
        finally:
            with self._unused:
                self._users -= 1
                self._unused.notify_all()

    def wait_unused(self, timeout: float) -> bool:
        with self._unused:
            return self._unused.wait_for(lambda: not self._users, timeout)

    def _gone(self) -> Refusal:
        return Refusal(UNKNOWN_STORE, f"the store {self.name!r} was dropped")

    @property
    def queue_length(self) -> int:
        return self.writer.queue_length

    async def write(
        self,
        job: Callable[..., T],
        *args: Any,
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> T:
        """`job(*args)` on the writer thread (`Writer.write`: a client that leaves while it
        waits takes it out of the queue)."""
        try:
            return await self.writer.write(job, *args, disconnected=disconnected)
        except WriterClosed:
            raise self._gone() from None

    async def write_facts(
        self, delta: Delta, *, disconnected: Callable[[], Awaitable[bool]] | None = None
    ) -> Applied:
        """A delta of a few facts (`reasoner.groupable`): applied with those queued right
        behind it as one epoch (`apply_group`), answered alone."""
        try:
            future = self.writer.submit_member(self.apply_group, delta)
        except WriterClosed:
            raise self._gone() from None
        return await self.writer.await_job(future, disconnected)

    def _engine_options(self) -> dict[str, Any]:
        return {
            "user_functors": self._user_functors,
            "switching_parameter": self.settings.switching_parameter,
            "min_update_seconds": self.settings.min_update_seconds,
            "engines": EngineSettings(
                engine=self.settings.bootstrap_engine,
                spark_master=self.settings.spark_master,
                spark_threshold=self.settings.spark_threshold,
                spark_iteration=self.settings.spark_iteration,
                spark_cores=self.settings.spark_cores,
            ),
        }

    @property
    def building(self) -> BootstrapProgress | None:
        """The start-up Bootstrap's progress while it runs, for the log and `/ready`."""
        return None if self._rebuilding is None else self._rebuilding.building

    def _rebuild(self) -> None:
        """Build the materialization from the store (`service.core.rebuild`: a program that
        cannot be evaluated is quarantined, and the service comes up at the one before)."""
        start = time.perf_counter()
        self.ready = False
        self.log.info("rebuilding the materialization from the committed program and facts")
        self._rebuilding = Rebuild(
            self.settings, self.store, self.memory, self.metrics, self._engine_options()
        )
        try:
            with self._rebuilds:
                rebuilt = self._rebuilding.run()
            self.quarantined = self.store.quarantined()
        except Exception as exc:
            self.failure = f"start-up failed: {failure_code(exc)} (see the service log)"
            self.log.exception("rebuilding the materialization failed")
            raise
        finally:
            self._rebuilding = None
        m, report = rebuilt.materialization, rebuilt.report
        self._numbered = rebuilt.numbered
        self.metrics.startup_bootstrap(report.seconds)
        self.materialization = m
        self.failure = None
        self.ready = True
        self.feed.publish(m.epoch, None)  # clients waiting through a rebuild go on
        self.memory.settle()
        self.startup_seconds = time.perf_counter() - start
        if rebuilt.new:
            first = replace(report.as_epoch(0, m.derived_size()), state_bytes=m.state.nbytes)
            self.store.record_reports({0: report_row(first)})
        self.log.info(
            "ready at epoch %d: bootstrap %.3fs (%s: %s), start-up %.3fs%s",
            self.epoch,
            report.seconds,
            report.engine.engine,
            report.engine.reason,
            self.startup_seconds,
            f"; quarantined epochs {self.quarantined}" if self.quarantined else "",
        )

    # -- writing --------------------------------------------------------------------------------

    def apply(self, delta: Delta, *, include_changes: bool = False) -> Applied:
        """Validate, commit and apply one delta (runs on the writer thread). What it interns
        stays only if its epoch is published (`Materialization.evaluating`)."""
        m = self._require_ready()
        try:
            with m.evaluating():
                return self._apply(m, delta, include_changes)
        except Refusal as problem:
            if problem.code in (EPOCH_TOO_LARGE, EPOCH_TIMEOUT):
                # Only now are the symbols and records it interned rolled back: hand the heap
                # they held back with the rest of the refused evaluation's.
                self.memory.release()
            raise

    def _apply(self, m: Materialization, delta: Delta, include_changes: bool) -> Applied:
        prepared = m.prepare(delta)
        if prepared.analyzed is not None and prepared.rules_added:
            # Rules as evaluated: a clause with disjunctions counts once per alternative (one
            # short clause can expand to thousands of rules).
            count = len(prepared.analyzed.program.rules)
            if count > self.settings.max_rules:
                raise Refusal(
                    TOO_MANY_RULES,
                    f"the program would hold {count} rules, more than the limit of "
                    f"{self.settings.max_rules}: nothing changed",
                    limit=self.settings.max_rules,
                )
        if prepared.changes_nothing:  # no epoch, nothing to store: say so
            return Applied(m.apply(prepared), 0, 0, prepared.rules_given)
        record = _record(m, prepared)
        if prepared.analyzed is not None:
            record.program_text = prepared.program_text
            assert prepared.program is not None  # a rule change has its program text
            texts = {entry.id: entry.text for entry in prepared.program.rules()}
            record.rules_added = [(i, texts[i]) for i in prepared.rules_added]
            record.rules_removed = list(prepared.rules_removed)
        report = self._make_epoch(m, prepared, record, include_changes)
        return Applied(
            report, record.facts_inserted, record.facts_retracted, prepared.rules_given, 0
        )

    def _make_epoch(
        self, m: Materialization, prepared: Any, record: DeltaRecord, include_changes: bool
    ) -> EpochReport:
        """Evaluate, commit and publish the epoch of `prepared`, numbered `record.number`."""
        number = record.number
        flipped = record.facts_inserted + record.facts_retracted
        held = sum(map(len, m.facts.values()))
        strategy = "bootstrap" if bulk_load(flipped, held) else "auto"
        report = self._evaluate_then_commit(m, prepared, record, strategy, include_changes)
        failpoints.reach(failpoints.PUBLISHED)
        self.log.debug("epoch %d: applied by %s in %.3fs", number, report.strategy, report.seconds)
        self.metrics.epoch(report.strategy, report.seconds)
        self.epoch_rows.applied(number, report)
        return report

    def apply_group(self, deltas: Sequence[Delta]) -> list[Applied | Exception]:
        """Apply deltas of facts (`reasoner.groupable`), in order, as few epochs as they
        allow (group commit): those `Materialization.prepare_group` takes from the front
        share one; the next starts another. Each delta is answered alone, with its own
        counts or its own refusal (runs on the writer thread)."""
        outcomes: list[Applied | Exception] = []
        while len(outcomes) < len(deltas):
            rest = deltas[len(outcomes) :]
            if len(rest) == 1:
                outcomes.append(outcome(self.apply, rest[0]))
            else:
                outcomes.extend(self._apply_together(rest))
        return outcomes

    def _apply_together(self, deltas: Sequence[Delta]) -> list[Applied | Exception]:
        """One epoch of the deltas taken from the front of `deltas` (at least the first: alone
        if its facts declare a relation), each one's answer. If evaluating it is refused, each
        of them is applied alone, so that only the one at fault is refused; any other failure
        is the answer of this epoch's deltas only."""
        try:
            m = self._require_ready()
        except Refusal as refused:
            return [refused]
        group: PreparedGroup | None = None
        try:
            with m.evaluating():
                group = m.prepare_group(deltas)
                if group.outcomes:
                    return self._group_epoch(m, group)
        except Exception as failed:
            if group is None:
                return [failed]
            if not retried_alone(failed):
                return [failed if isinstance(o, GroupWrite) else o for o in group.outcomes]
            if isinstance(failed, Refusal) and failed.code in (EPOCH_TOO_LARGE, EPOCH_TIMEOUT):
                self.memory.release()
        else:  # its facts declare a relation: an epoch of its own
            return [outcome(self.apply, deltas[0])]
        # Out of the handler: the refused evaluation's frames, and their memory, are gone.
        self.log.warning("a group of %d writes was refused: applying each alone", len(group.writes))
        return [
            outcome(self.apply, delta) if isinstance(o, GroupWrite) else o
            for delta, o in zip(deltas, group.outcomes, strict=False)
        ]

    def _group_epoch(self, m: Materialization, group: PreparedGroup) -> list[Applied | Exception]:
        """The epoch of a group's net change, and each delta's answer."""
        prepared = group.prepared
        if prepared.changes_nothing:
            report = m.apply(prepared)
        else:
            record = _record(m, prepared)
            record.writes = [
                {"facts_inserted": w.facts_inserted, "facts_retracted": w.facts_retracted}
                for w in group.writes
                if w.facts_inserted or w.facts_retracted
            ]
            report = self._make_epoch(m, prepared, record, include_changes=False)
        self.metrics.group(len(group.writes))
        return answers(report, group.outcomes)

    def _commit(self, record: DeltaRecord) -> None:
        """Make the epoch durable (one transaction); 503 with nothing changed if it fails."""
        self.log.debug(
            "epoch %d: committing (%d facts inserted, %d retracted, %d rules added, %d removed)",
            record.number,
            record.facts_inserted,
            record.facts_retracted,
            len(record.rules_added),
            len(record.rules_removed),
        )
        try:
            self.store.commit_delta(record)
        except SQLAlchemyError as exc:
            # Nothing was applied: the materialization is unchanged and the client may retry.
            self.log.exception("committing epoch %d failed", record.number)
            raise Refusal(
                DATABASE_UNAVAILABLE,
                f"the delta could not be committed, nothing changed: {type(exc).__name__}",
                retry_after=1,
            ) from None
        self.log.debug("epoch %d: committed", record.number)

    def _too_large(self, number: int, budget: EpochBudget, reason: str) -> Refusal:
        """The refusal of an evaluation that outgrew its memory."""
        self.log.warning("epoch %d refused, nothing changed: %s", number, reason)
        self.metrics.refused(EPOCH_TOO_LARGE)
        return Refusal(
            EPOCH_TOO_LARGE,
            f"{reason} while evaluating the write, which was cancelled; nothing changed",
            limit_mb=budget.memory_bytes >> 20 if budget.memory_bytes else None,
        )

    def _evaluate_then_commit(
        self,
        m: Materialization,
        prepared: Any,
        record: DeltaRecord,
        strategy: str,
        include_changes: bool,
    ) -> EpochReport:
        """Evaluate first, under the epoch's budget, and commit only what will be published:
        the engine calls `before_publish` (the commit) between computing the epoch and
        publishing it. A write that fails, never ends or explodes is therefore refused with
        nothing stored, and no restart can meet it again."""
        number = record.number
        timeout = self.settings.epoch_timeout_seconds
        if self.memory.over_cap():
            self.memory.release()
            if self.memory.over_cap():
                raise self.too_busy(
                    f"the process holds {self.memory.cap >> 20} MiB or more, its memory cap: "
                    "no write is evaluated until it holds less; nothing changed"
                )
        committed = False
        kept: KeptChanges | None = None

        def commit(changes: EpochChanges) -> None:
            nonlocal committed, kept
            failpoints.reach(failpoints.EVALUATED)
            record.changes = kept = KeptChanges(number, change_chunks(changes))
            record.interned = interned_since(m, self._numbered)
            record.reports = self.epoch_rows.unrecorded()
            try:
                self._commit(record)
            except Refusal:
                # Should a report be what the database refuses, the next write goes without.
                self.epoch_rows.unwritable(record.reports)
                raise
            self.epoch_rows.recorded(record.reports)
            self._numbered = (record.interned.symbol_count, record.interned.record_count)
            committed = True
            failpoints.reach(failpoints.COMMITTED)

        self.log.debug("epoch %d: evaluating (%s, deadline %gs)", number, strategy, timeout)
        # A refusal is raised once the evaluation's frames (its traceback) are gone, so that
        # the memory they held is freed before it is handed back.
        refused: Refusal | None = None
        evaluation = self.memory.evaluation(timeout, pause=self.reads.pause())
        try:
            with evaluation as budget, charging_to(budget):
                report = m.apply(
                    prepared,
                    strategy=strategy,
                    include_changes=include_changes,
                    check=budget.check,
                    before_publish=commit,
                )
        except EpochTooLarge as exc:
            refused = self._too_large(number, budget, exc.reason)
        except BootstrapCancelled as exc:
            self.log.warning("epoch %d cancelled, nothing changed: %s", number, exc.reason)
            self.metrics.refused(EPOCH_TIMEOUT)
            refused = Refusal(
                EPOCH_TIMEOUT,
                f"the write needed more than {timeout:g} s to evaluate and was cancelled "
                f"({exc.reason}); nothing changed",
                timeout=timeout,
            )
        except Refusal:
            raise
        except InvalidDelta as exc:  # a float sum whose rounding is Soufflé's order of rows
            self.log.warning("epoch %d refused, nothing changed: %s", number, exc.message)
            raise
        except Exception as exc:
            if committed:
                self.log.exception("publishing committed epoch %d failed: rebuilding", number)
                self._rebuild()
                raise
            if not isinstance(exc, MemoryError):
                self.log.exception("evaluating epoch %d failed, nothing changed", number)
                self.metrics.refused(EVALUATION_FAILED)
                raise Refusal(
                    EVALUATION_FAILED,
                    f"the engine failed to evaluate the write ({type(exc).__name__}); nothing "
                    "changed. This is a defect of the service: please report it with the write.",
                ) from None
            refused = self._too_large(number, budget, "the process ran out of memory")
        if refused is not None:
            raise refused
        self.feed.publish(number, None if kept is None else kept.items)
        self.memory.settle()
        return report

    # -- reading --------------------------------------------------------------------------------

    def _require_ready(self) -> Materialization:
        m = self.materialization
        if self.dropped:
            raise self._gone()
        if m is None or not self.ready:
            detail = self.failure or "the materialization is being built"
            raise Refusal(NOT_READY, detail, retry_after=1)
        return m

    def published_epoch(self) -> int:
        """The number of the published epoch, once ready: the feed's bound (every epoch up to
        it committed its change set before it was published)."""
        return self._require_ready().epoch

    def read(self, read: Callable[[Materialization, int], T]) -> T:
        """`read(materialization, epoch)` on one published epoch, holding no lock while it
        runs, so that neither writers nor other readers wait for it (a slow query)."""
        self.priority.yield_to_writes()
        m = self._require_ready()
        return m.read(lambda: read(m, m.epoch))

    def too_busy(self, detail: str) -> Refusal:
        """A request turned away for want of capacity (`too_busy`, 503), counted."""
        self.metrics.refused(TOO_BUSY)
        return Refusal(TOO_BUSY, detail, retry_after=1)

    @asynccontextmanager
    async def read_slot(self) -> AsyncIterator[None]:
        """Admission of one relation read or query: at most `max_concurrent_reads` at once;
        past it the request is refused (503, `too_busy`) before it takes a worker thread."""
        if not self._read_slots.acquire(blocking=False):
            raise self.too_busy(
                f"{self.settings.max_concurrent_reads} reads are being evaluated; retry shortly"
            )
        try:
            with self.reads.reading():
                yield
        finally:
            self._read_slots.release()

    @contextmanager
    def reading(self) -> Iterator[tuple[Materialization, int]]:
        """A consistent view: the materialization and the number of the epoch it shows (the
        engine counts its epochs inside the publication lock, so the number read under the
        shared lock is the published state's, never the one being computed)."""
        m = self._require_ready()
        with m.reading():
            yield m, m.epoch


def _record(m: Materialization, prepared: Any) -> DeltaRecord:
    """The store's record of the next epoch, with the facts `prepared` flips."""
    return DeltaRecord(
        m.epoch + 1,
        _row_count(prepared.inserts),
        _row_count(prepared.retracts),
        inserts=prepared.given_inserts,
        retracts=prepared.given_retracts,
    )


def _row_count(rows_by_relation: Mapping[str, Sized]) -> int:
    return sum(map(len, rows_by_relation.values()))
