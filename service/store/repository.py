"""The repository: everything the service persists goes through `Store`.

A delta is made durable by `commit_delta` in one transaction (its facts, its rule changes, the
new program text and its epoch row) before the materialization applies it; `record_report`
completes the epoch row afterwards. Losing that second write is harmless: the epoch's effect is
in the committed facts and program, and a restart rebuilds from them.

Facts are written as each relation's log of columnar segments (`service.store.fact_log`): a
delta appends its rows of each relation it changes, in the same transaction, and merges the
relation's newest segments as `segments.merge_start` says.
"""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, tuple_, update

from reasoner import pl
from service.store import interned, models, segments
from service.store.change_pages import (
    ChangePage,
    ChangePosition,
    ChangesNotKept,
    InvalidPosition,
    page_items,
)
from service.store.database import create_database_engine, upgrade
from service.store.fact_log import (
    ChangeChunk,
    Facts,
    append_segments,
    merge_newest,
    read_facts,
    write_changes,
)
from service.store.interned import Interned

QUARANTINED = "quarantined"
"""The status of an epoch whose program a rebuild could not evaluate."""
DECODED_CHUNKS = 4
"""Decoded chunks of change sets kept for the pages that read through them."""


@dataclass(frozen=True, slots=True)
class StoredProgram:
    epoch: int
    text: str


@dataclass(slots=True)
class Committed:
    """What a restart rebuilds from."""

    program: StoredProgram
    facts: dict[str, Facts]
    last_epoch: int
    reset: bool = False
    """A program was quarantined since the last reset epoch, or the numbering of symbols is
    unknown (`interned` None): the state rebuilt from this does not follow from the change
    sets of the epochs before, so a reset epoch must say so."""
    interned: Interned | None = None
    """The symbols and records in the engine's numbering as of the last epoch, which the
    rebuild must number alike before it interns anything; None for a store written by a
    version that did not keep it."""


@dataclass(slots=True)
class DeltaRecord:
    """One delta as the store writes it. Its facts are effective (inserted ones were absent,
    retracted ones present), in user values: a `FactBatch` per relation, or rows `()` for a
    relation of arity 0."""

    number: int
    facts_inserted: int
    facts_retracted: int
    inserts: Mapping[str, Facts] = field(default_factory=dict)
    retracts: Mapping[str, Facts] = field(default_factory=dict)
    program_text: str | None = None
    """The new program text when rules changed."""
    rules_added: list[tuple[str, str]] = field(default_factory=list)
    """(id, text) of every rule added."""
    rules_removed: list[str] = field(default_factory=list)
    changes: Iterable[ChangeChunk] = ()
    """The epoch's change set, consumed (once) inside the transaction that commits it."""
    interned: Interned = field(default_factory=Interned)
    """The symbols and records the epoch interned, numbered after those the store holds."""
    writes: list[dict[str, int]] | None = None
    """The facts each write of a group flipped, in order (group commit); None: one write."""
    reports: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    """Reports of epochs before it not yet written to their rows (`Store.record_reports`)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _write_reports(connection: Connection, reports: Mapping[int, dict[str, Any]]) -> None:
    """Complete epoch rows with their reports (`Store.record_reports`)."""
    now = _now()
    for number, report in reports.items():
        connection.execute(
            update(models.epochs)
            .where(models.epochs.c.number == number)
            .values(**{"status": "applied", "applied_at": now, **report})
        )


class Store:
    def __init__(self, url: str, schema: str | None = None) -> None:
        self.engine: Engine = create_database_engine(url, schema)
        self._horizon: int | None = None
        """The newest epoch whose change set is not kept, once read (only pruning and a
        migration, before it is read, change it)."""
        self._resets: list[int] | None = None
        """The reset epochs, once read (a rebuild alone adds one)."""
        self._chunks: OrderedDict[tuple[int, int], pl.DataFrame] = OrderedDict()
        self._chunks_lock = threading.Lock()
        self._interned_appends = 0
        """Appends to the numbering's log by this process: every `interned.MERGE_EVERY`-th
        one merges (`interned.append`), and the first, after a start."""

    def close(self) -> None:
        self.engine.dispose()

    def migrate(self) -> None:
        upgrade(self.engine)

    # -- start-up -------------------------------------------------------------------------------

    def initialized(self) -> bool:
        with self.engine.connect() as connection:
            return (
                connection.execute(select(func.count()).select_from(models.programs)).scalar_one()
                > 0
            )

    def initialize(
        self,
        program_text: str,
        rules: Sequence[tuple[str, str]],
        changes: Iterable[ChangeChunk] = (),
        numbering: Interned | None = None,
    ) -> None:
        """Epoch 0 of a new database: the initial program (its rules), its change set (what
        the program's own facts derive), the symbols and records it interned and an epoch
        row."""
        now = _now()
        numbering = numbering or Interned()
        with self.engine.begin() as connection:
            stored = write_changes(connection, 0, changes)
            self._append_interned(connection, 0, numbering)
            connection.execute(
                insert(models.programs).values(epoch=0, text=program_text, created_at=now)
            )
            rule_rows = [
                {"id": i, "text": t, "active": True, "added_epoch": 0, "removed_epoch": None}
                for i, t in rules
            ]
            if rule_rows:
                connection.execute(insert(models.rules), rule_rows)
            connection.execute(
                insert(models.epochs).values(
                    number=0,
                    created_at=now,
                    kind="initial",
                    status="committed",
                    facts_inserted=0,
                    facts_retracted=0,
                    rules_added=[i for i, _ in rules],
                    rules_removed=[],
                    changes=stored,
                    symbols=numbering.symbol_count,
                    records=numbering.record_count,
                )
            )

    def load(self) -> Committed:
        """The committed program and facts; epochs a crash left unreported become
        `recovered` (the rebuild applies them). The program is the newest one that no
        quarantined epoch introduced."""
        epochs = models.epochs
        quarantined = select(epochs.c.number).where(epochs.c.status == QUARANTINED)
        with self.engine.begin() as connection:
            program_row = connection.execute(
                select(models.programs.c.epoch, models.programs.c.text)
                .where(models.programs.c.epoch.not_in(quarantined))
                .order_by(models.programs.c.epoch.desc())
                .limit(1)
            ).one()
            last = connection.execute(
                select(epochs.c.number, epochs.c.symbols, epochs.c.records)
                .order_by(epochs.c.number.desc())
                .limit(1)
            ).first()
            last_epoch = 0 if last is None else last.number
            numbering = None
            if last is not None and last.symbols is not None and last.records is not None:
                numbering = interned.read(connection, last.symbols, last.records)
            last_quarantined, last_reset = connection.execute(
                select(
                    func.max(epochs.c.number).filter(epochs.c.status == QUARANTINED),
                    func.max(epochs.c.number).filter(epochs.c.reset),
                )
            ).one()
            connection.execute(
                update(models.epochs)
                .where(models.epochs.c.status == "committed", models.epochs.c.kind == "delta")
                .values(status="recovered")
            )
            facts = read_facts(connection)
        reset = last_quarantined is not None and (last_reset or -1) < last_quarantined
        return Committed(
            StoredProgram(program_row.epoch, program_row.text),
            facts,
            last_epoch,
            reset or numbering is None,
            numbering,
        )

    def quarantine(self, number: int, failure: str) -> None:
        """Leave epoch `number`'s program out of every later rebuild (`load`), saying why."""
        with self.engine.begin() as connection:
            connection.execute(
                update(models.epochs)
                .where(models.epochs.c.number == number)
                .values(status=QUARANTINED, failure=failure)
            )

    def quarantined(self) -> list[int]:
        epochs = models.epochs
        with self.engine.connect() as connection:
            return list(
                connection.execute(
                    select(epochs.c.number)
                    .where(epochs.c.status == QUARANTINED)
                    .order_by(epochs.c.number)
                ).scalars()
            )

    def set_active_rules(self, ids: Iterable[str]) -> None:
        """Make the rules table agree with the program a rebuild came up with."""
        table = models.rules
        active = list(ids)
        with self.engine.begin() as connection:
            connection.execute(update(table).where(table.c.id.in_(active)).values(active=True))
            connection.execute(update(table).where(table.c.id.not_in(active)).values(active=False))

    def commit_reset(
        self, number: int, changes: Iterable[ChangeChunk], numbering: Interned
    ) -> None:
        """A reset epoch: a rebuild came up without a quarantined program, or numbered the
        symbols anew, and `changes` (a snapshot of every relation) is the state a feed's
        reader starts again from. `numbering`: the symbols and records the rebuild interned
        beyond those the store holds."""
        with self.engine.begin() as connection:
            if numbering.first_symbol == numbering.first_record == 0:  # numbered anew
                connection.execute(delete(models.interned))
            stored = write_changes(connection, number, changes)
            self._append_interned(connection, number, numbering)
            if self._resets is not None:
                self._resets.append(number)
            connection.execute(
                insert(models.epochs).values(
                    number=number,
                    created_at=_now(),
                    kind="rebuild",
                    status="applied",
                    facts_inserted=0,
                    facts_retracted=0,
                    rules_added=[],
                    rules_removed=[],
                    changes=stored,
                    reset=True,
                    symbols=numbering.symbol_count,
                    records=numbering.record_count,
                )
            )

    def _append_interned(self, connection: Connection, epoch: int, numbering: Interned) -> None:
        merge = self._interned_appends % interned.MERGE_EVERY == 0
        if interned.append(connection, epoch, numbering, merge=merge):
            self._interned_appends += 1

    # -- deltas ---------------------------------------------------------------------------------

    def commit_delta(self, record: DeltaRecord) -> None:
        """Make a delta durable: facts, rules, program, change set and the epoch row, one
        transaction."""
        with self.engine.begin() as connection:
            for relation in dict.fromkeys([*record.retracts, *record.inserts]):
                retracted = record.retracts.get(relation, ())
                inserted = record.inserts.get(relation, ())
                append_segments(connection, relation, record.number, retracted, present=False)
                append_segments(connection, relation, record.number, inserted, present=True)
                merge_newest(connection, relation)
            stored = write_changes(connection, record.number, record.changes)
            self._append_interned(connection, record.number, record.interned)
            self._write_epoch(connection, record, stored)
            _write_reports(connection, record.reports)

    def _write_epoch(self, connection: Connection, record: DeltaRecord, changes: int) -> None:
        """Everything of a delta but its facts: program, rules and the epoch row."""
        now = _now()
        if record.program_text is not None:
            connection.execute(
                insert(models.programs).values(
                    epoch=record.number, text=record.program_text, created_at=now
                )
            )
        self._change_rules(connection, record)
        connection.execute(
            insert(models.epochs).values(
                number=record.number,
                created_at=now,
                kind="delta",
                status="committed",
                facts_inserted=record.facts_inserted,
                facts_retracted=record.facts_retracted,
                rules_added=[i for i, _ in record.rules_added],
                rules_removed=list(record.rules_removed),
                changes=changes,
                symbols=record.interned.symbol_count,
                records=record.interned.record_count,
                writes=record.writes,
            )
        )

    def _change_rules(self, connection: Connection, record: DeltaRecord) -> None:
        table = models.rules
        if record.rules_removed:
            connection.execute(
                update(table)
                .where(table.c.id.in_(record.rules_removed))
                .values(active=False, removed_epoch=record.number)
            )
        if not record.rules_added:
            return
        ids = [i for i, _ in record.rules_added]
        known = set(connection.execute(select(table.c.id).where(table.c.id.in_(ids))).scalars())
        for rule_id, text in record.rules_added:
            values = {
                "text": text,
                "active": True,
                "added_epoch": record.number,
                "removed_epoch": None,
            }
            if rule_id in known:
                connection.execute(update(table).where(table.c.id == rule_id).values(**values))
            else:
                connection.execute(insert(table).values(id=rule_id, **values))

    def record_reports(self, reports: Mapping[int, dict[str, Any]]) -> None:
        """Complete epoch rows with what applying them did, in one transaction."""
        with self.engine.begin() as connection:
            _write_reports(connection, reports)

    # -- reading epochs -------------------------------------------------------------------------

    def epochs(self, *, limit: int, before: int | None = None) -> list[dict[str, Any]]:
        """The most recent epochs first."""
        query = select(models.epochs).order_by(models.epochs.c.number.desc()).limit(limit)
        if before is not None:
            query = query.where(models.epochs.c.number < before)
        with self.engine.connect() as connection:
            return [_aware(dict(row._mapping)) for row in connection.execute(query)]

    def epoch(self, number: int) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = connection.execute(
                select(models.epochs).where(models.epochs.c.number == number)
            ).first()
        return None if row is None else _aware(dict(row._mapping))

    def change_page(
        self,
        start: ChangePosition,
        through: int,
        relations: Sequence[str] | None,
        limit: int,
    ) -> ChangePage:
        """At most `limit` rows (a reset mark counts as one) of the feed from `start` to the
        end of epoch `through`, of `relations` only (None: all), and where the next page
        starts. The horizon is read after the rows: a prune raises it before it deletes, so
        a page read while a prune deleted part of it shows a horizon that says so. Raises
        `InvalidPosition` for a `start` no page gave."""
        table = models.epoch_changes
        # A row value, which both databases read off the primary key (an OR of the two
        # cases made SQLite sort every chunk after the start: 20 ms a page at 100 K epochs).
        after_start = tuple_(table.c.epoch, table.c.seq) >= tuple_(start.epoch, start.seq)
        chunks = (
            select(table.c.epoch, table.c.seq, table.c.relation, table.c.rows, table.c.data)
            .where(after_start, table.c.epoch <= through)
            .order_by(table.c.epoch, table.c.seq)
            .limit(limit + 1)
        )
        if relations is not None:
            chunks = chunks.where(table.c.relation.in_(relations))
        first_mark = start.epoch if start.seq < 0 else start.epoch + 1
        marks = [n for n in self.reset_epochs() if first_mark <= n <= through]
        with self.engine.connect() as connection:
            # Streamed: a page reads the blobs of the chunks it takes, not all it could.
            result = connection.execution_options(stream_results=True, yield_per=4).execute(chunks)
            found = heapq.merge(
                (
                    (ChangePosition(epoch, seq), relation, rows, data)
                    for epoch, seq, relation, rows, data in result
                ),
                ((ChangePosition(n), None, 1, None) for n in marks),
                key=lambda entry: entry[0],
            )
            try:
                items, following = page_items(found, start, limit, self._entries)
            except InvalidPosition:
                horizon = self.horizon()
                if horizon >= start.epoch:  # pruned under the cursor: the horizon says so
                    return ChangePage([], None, horizon)
                raise
        return ChangePage(items, following, self.horizon())

    def _entries(self, position: ChangePosition, data: bytes) -> pl.DataFrame:
        """A chunk's entries, decoded once for the pages that read through it (a few
        chunks are kept: a reader pages through one at a time)."""
        key = (position.epoch, position.seq)
        with self._chunks_lock:
            entries = self._chunks.get(key)
            if entries is not None:
                self._chunks.move_to_end(key)
                return entries
        entries = segments.decode(data)
        with self._chunks_lock:
            self._chunks[key] = entries
            while len(self._chunks) > DECODED_CHUNKS:
                self._chunks.popitem(last=False)
        return entries

    def reset_epochs(self) -> list[int]:
        """The numbers of the reset epochs, in order."""
        if self._resets is None:
            epochs = models.epochs
            with self.engine.connect() as connection:
                self._resets = list(
                    connection.execute(
                        select(epochs.c.number).where(epochs.c.reset).order_by(epochs.c.number)
                    ).scalars()
                )
        return self._resets

    def relation_changes(self, relation: str, after: int, through: int) -> list[pl.DataFrame]:
        """The change-set entries of `relation` in the epochs `after` < epoch <= `through`, in
        order, as stored (`segments.stored_columns` and `present`); 410 when some of those
        epochs' change sets are no longer kept."""
        table = models.epoch_changes
        with self.engine.connect() as connection:
            entries = [
                segments.decode(data)
                for (data,) in connection.execute(
                    select(table.c.data)
                    .where(
                        table.c.relation == relation,
                        table.c.epoch > after,
                        table.c.epoch <= through,
                    )
                    .order_by(table.c.epoch, table.c.seq)
                )
            ]
        horizon = self.horizon()
        if horizon > after:
            raise ChangesNotKept(horizon)
        return entries

    def horizon(self) -> int:
        """The newest epoch whose change set is not kept (-1: none)."""
        if self._horizon is None:
            epochs = models.epochs
            with self.engine.connect() as connection:
                self._horizon = connection.execute(
                    select(func.coalesce(func.max(epochs.c.number), -1)).where(
                        epochs.c.changes.is_(None)
                    )
                ).scalar_one()
        return self._horizon

    def prune_changes(self, before: int) -> None:
        """Forget the change sets of the epochs before `before` (the feed's retention). The
        horizon is raised first, so that no reader takes a page it deletes for whole."""
        self._horizon = max(self.horizon(), before - 1)
        with self.engine.begin() as connection:
            connection.execute(
                delete(models.epoch_changes).where(models.epoch_changes.c.epoch < before)
            )
            connection.execute(
                update(models.epochs)
                .where(models.epochs.c.number < before, models.epochs.c.changes.is_not(None))
                .values(changes=None)
            )

    def rules(self) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            return [
                dict(row._mapping)
                for row in connection.execute(select(models.rules).order_by(models.rules.c.id))
            ]


def _aware(row: dict[str, Any]) -> dict[str, Any]:
    """SQLite hands back naive datetimes; every time stored is UTC."""
    for key in ("created_at", "applied_at"):
        value = row.get(key)
        if isinstance(value, datetime) and value.tzinfo is None:
            row[key] = value.replace(tzinfo=UTC)
    return row
