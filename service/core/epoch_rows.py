"""The epochs' rows: each written by its epoch's commit, completed with the epoch's report once
the write is answered, and read with the reports not yet written back filled in.

A report is not written by a transaction of its own after each epoch: a write would then wait
for two commits, and under load every other transaction would be a report's. Until written it
is kept here (a read of its row shows it applied); the next epoch's commit writes it, and so
does the writer once idle (`Writer.when_idle`), several at once. Every `PRUNE_EVERY` epochs the
change sets past the retention go, after the answer too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from reasoner import EpochReport
from service.core import failpoints
from service.core.writer import Writer
from service.schemas import EpochSummary
from service.settings import Settings
from service.store.repository import Store

log = logging.getLogger("service")

MAX_EPOCH = (1 << 31) - 1
"""Epoch numbers are 32-bit integer columns: a larger number names no epoch."""

PRUNE_EVERY = 64
"""Epochs between two prunes of the change sets past the retention."""


def report_row(report: EpochReport) -> dict[str, Any]:
    """The report's columns of an epoch's row."""
    return EpochSummary.model_validate(report).model_dump()


class EpochRows:
    def __init__(self, store: Store, settings: Settings, writer: Writer) -> None:
        self._store = store
        self._retention = settings.change_retention_epochs
        self._writer = writer
        self._unrecorded: dict[int, dict[str, Any]] = {}
        """Reports of applied epochs not yet written to their rows (shown by reads)."""
        self._unwritten: set[int] = set()
        """The epochs of `_unrecorded` whose reports are still to write."""

    def applied(self, number: int, report: EpochReport) -> None:
        """Epoch `number` was published with `report`: written with the next commit, or once
        the writer is idle."""
        self._unrecorded[number] = {**report_row(report), "applied_at": datetime.now(UTC)}
        self._unwritten.add(number)
        self._writer.when_idle(self._record_reports)
        keep = self._retention
        if keep is not None and not number % min(PRUNE_EVERY, keep):
            # Queued as the next job (not when idle, which a busy writer may never be).
            self._writer.after(self._prune_changes, number - keep + 1)

    def unrecorded(self) -> dict[int, dict[str, Any]]:
        """The reports still to write, for an epoch's commit to write them too (`recorded`)."""
        return {n: self._unrecorded[n] for n in self._unwritten}

    def recorded(self, numbers: Iterable[int]) -> None:
        """The reports of epochs `numbers` are written (by a commit that held them)."""
        for number in numbers:
            self._unrecorded.pop(number, None)
            self._unwritten.discard(number)

    def unwritable(self, numbers: Iterable[int]) -> None:
        """Writing the reports of `numbers` failed: they stay shown, and are not written
        again (a report the database refuses would otherwise fail every commit after it)."""
        self._unwritten.difference_update(numbers)

    def _record_reports(self) -> None:
        failpoints.reach(failpoints.ANSWERED)
        reports = self.unrecorded()
        if reports:
            try:
                self._store.record_reports(reports)
            except Exception:  # the epochs are durable already; their reports are a nicety
                log.exception("recording the reports of epochs %s failed", sorted(reports))
                self.unwritable(reports)
            else:
                self.recorded(reports)

    def _prune_changes(self, before: int) -> None:
        """Forget the change sets of the epochs before `before`."""
        try:
            self._store.prune_changes(before)
        except Exception:  # kept a while longer: the next prune deletes them
            log.exception("pruning the change sets before epoch %d failed", before)

    def _with_report(self, row: dict[str, Any], unrecorded: dict[int, Any]) -> dict[str, Any]:
        """`row` with its report filled in if not yet written: `unrecorded` was taken before
        the row was read, so a report written meanwhile is in one or the other."""
        pending = unrecorded.get(row["number"])
        if pending is not None and row["status"] == "committed":
            row = {**row, **pending, "status": "applied"}
        return row

    def rows(self, *, limit: int, before: int | None = None) -> list[dict[str, Any]]:
        """Epoch rows, most recent first, with reports not yet written back filled in."""
        if before is not None:
            if before <= 0:
                return []
            if before > MAX_EPOCH:  # every epoch is below it (and SQLite binds 64-bit at most)
                before = None
        unrecorded = dict(self._unrecorded)
        return [
            self._with_report(r, unrecorded) for r in self._store.epochs(limit=limit, before=before)
        ]

    def row(self, number: int) -> dict[str, Any] | None:
        if not 0 <= number <= MAX_EPOCH:
            return None
        unrecorded = dict(self._unrecorded)
        row = self._store.epoch(number)
        return None if row is None else self._with_report(row, unrecorded)
