"""The repository: everything the service persists goes through `Store`.

A delta is made durable by `commit_delta` in one transaction (its facts, its rule changes, the
new program text and its epoch row) before the materialization applies it; `record_report`
completes the epoch row afterwards. Losing that second write is harmless: the epoch's effect is
in the committed facts and program, and a restart rebuilds from them.

Facts take the driver's fast path: `executemany` in large chunks on SQLite, and on PostgreSQL
`COPY` into a temporary table merged with `INSERT ... ON CONFLICT DO NOTHING` (or `DELETE ...
USING` for retractions) once a delta holds more than a few thousand rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import encode_basestring as _encode_basestring  # type: ignore[attr-defined]
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select, update

from service.store import models
from service.store.database import create_database_engine, upgrade

Row = Sequence[Any]
CHUNK = 50_000
"""Rows per executemany batch."""
COPY_THRESHOLD = 2_000
"""From this many rows on, PostgreSQL goes through COPY."""
QUARANTINED = "quarantined"
"""The status of an epoch whose program a rebuild could not evaluate."""


def encode_values(row: Row) -> str:
    """A row as canonical JSON (`[1,"a"]`): the same row always gives the same text."""
    return (
        "[" + ",".join(_encode_basestring(v) if isinstance(v, str) else str(v) for v in row) + "]"
    )


def _encoder(sample: Row):
    """`encode_values` specialised to rows shaped like `sample` (a relation's rows all have
    its column types): integer-only rows skip the per-value type test."""
    if not any(isinstance(v, str) for v in sample):
        return lambda row: "[" + ",".join(map(str, row)) + "]"
    return encode_values


def digest(values: str) -> str:
    """The unique key of a fact within its relation."""
    return hashlib.blake2b(values.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredProgram:
    epoch: int
    text: str


@dataclass(slots=True)
class Committed:
    """What a restart rebuilds from."""

    program: StoredProgram
    facts: dict[str, list[tuple[Any, ...]]]
    last_epoch: int


@dataclass(slots=True)
class DeltaRecord:
    """One delta as the store writes it (rows in user values, already effective: inserted
    rows are new, retracted rows are present)."""

    number: int
    inserts: dict[str, list[Row]] = field(default_factory=dict)
    retracts: dict[str, list[Row]] = field(default_factory=dict)
    program_text: str | None = None
    """The new program text when rules changed."""
    rules_added: list[tuple[str, str]] = field(default_factory=list)
    """(id, text) of every rule added."""
    rules_removed: list[str] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


class Store:
    def __init__(self, url: str) -> None:
        self.engine: Engine = create_database_engine(url)
        self.dialect = self.engine.dialect.name

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

    def initialize(self, program_text: str, rules: Sequence[tuple[str, str]]) -> None:
        """Epoch 0 of a new database: the initial program (its rules) and an epoch row."""
        now = _now()
        with self.engine.begin() as connection:
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
            last_epoch = connection.execute(
                select(func.coalesce(func.max(models.epochs.c.number), 0))
            ).scalar_one()
            connection.execute(
                update(models.epochs)
                .where(models.epochs.c.status == "committed", models.epochs.c.kind == "delta")
                .values(status="recovered")
            )
            facts: dict[str, list[tuple[Any, ...]]] = {}
            loads = json.loads
            result = connection.execution_options(yield_per=CHUNK).execute(
                select(models.facts.c.relation, models.facts.c["values"])
            )
            for relation, values in result:
                rows = facts.get(relation)
                if rows is None:
                    rows = facts[relation] = []
                rows.append(tuple(loads(values)))
        return Committed(StoredProgram(program_row.epoch, program_row.text), facts, last_epoch)

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

    # -- deltas ---------------------------------------------------------------------------------

    def commit_delta(self, record: DeltaRecord) -> None:
        """Make a delta durable: facts, rules, program and the epoch row, one transaction."""
        now = _now()
        with self.engine.begin() as connection:
            for relation, rows in record.retracts.items():
                if rows:
                    self._delete_facts(connection, relation, rows)
            for relation, rows in record.inserts.items():
                if rows:
                    self._insert_facts(connection, relation, rows)
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
                    facts_inserted=sum(len(r) for r in record.inserts.values()),
                    facts_retracted=sum(len(r) for r in record.retracts.values()),
                    rules_added=[i for i, _ in record.rules_added],
                    rules_removed=list(record.rules_removed),
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

    def _keyed(self, relation: str, rows: Sequence[Row]) -> Iterator[tuple[str, str, str]]:
        if not rows:
            return
        encode = _encoder(rows[0])
        for row in rows:
            values = encode(row)
            yield relation, digest(values), values

    def _insert_facts(self, connection: Connection, relation: str, rows: Sequence[Row]) -> None:
        if self.dialect == "postgresql" and len(rows) >= COPY_THRESHOLD:
            self._copy_stage(connection, relation, rows)
            connection.exec_driver_sql(
                'INSERT INTO facts (relation, digest, "values") '
                'SELECT relation, digest, "values" FROM facts_stage ON CONFLICT DO NOTHING'
            )
            return
        marker = "%s" if self.dialect == "postgresql" else "?"
        sql = (
            f'INSERT INTO facts (relation, digest, "values") VALUES ({marker}, {marker}, {marker}) '
            "ON CONFLICT DO NOTHING"
        )
        for chunk in _chunks(self._keyed(relation, rows), CHUNK):
            connection.exec_driver_sql(sql, chunk)

    def _delete_facts(self, connection: Connection, relation: str, rows: Sequence[Row]) -> None:
        if self.dialect == "postgresql" and len(rows) >= COPY_THRESHOLD:
            self._copy_stage(connection, relation, rows)
            connection.exec_driver_sql(
                "DELETE FROM facts USING facts_stage WHERE facts.relation = facts_stage.relation "
                "AND facts.digest = facts_stage.digest"
            )
            return
        marker = "%s" if self.dialect == "postgresql" else "?"
        sql = f"DELETE FROM facts WHERE relation = {marker} AND digest = {marker}"
        for chunk in _chunks(((r, d) for r, d, _ in self._keyed(relation, rows)), CHUNK):
            connection.exec_driver_sql(sql, chunk)

    def _copy_stage(self, connection: Connection, relation: str, rows: Sequence[Row]) -> None:
        """Fill a transaction-local staging table through COPY (PostgreSQL)."""
        connection.exec_driver_sql(
            "CREATE TEMPORARY TABLE IF NOT EXISTS facts_stage "
            '(relation text, digest text, "values" text) ON COMMIT DELETE ROWS'
        )
        connection.exec_driver_sql("TRUNCATE facts_stage")
        raw = connection.connection.driver_connection
        with (
            raw.cursor() as cursor,  # type: ignore[union-attr]
            cursor.copy('COPY facts_stage (relation, digest, "values") FROM STDIN') as copy,
        ):
            for keyed in self._keyed(relation, rows):
                copy.write_row(keyed)

    def record_report(self, number: int, report: dict[str, Any]) -> None:
        """Complete an epoch row with what applying it did."""
        with self.engine.begin() as connection:
            connection.execute(
                update(models.epochs)
                .where(models.epochs.c.number == number)
                .values(**{"status": "applied", "applied_at": _now(), **report})
            )

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

    def epoch_count(self) -> int:
        with self.engine.connect() as connection:
            return connection.execute(select(func.count()).select_from(models.epochs)).scalar_one()

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


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
