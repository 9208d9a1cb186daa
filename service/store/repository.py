"""The repository: everything the service persists goes through `Store`.

A delta is made durable by `commit_delta` in one transaction (its facts, its rule changes, the
new program text and its epoch row) before the materialization applies it; `record_report`
completes the epoch row afterwards. Losing that second write is harmless: the epoch's effect is
in the committed facts and program, and a restart rebuilds from them.

Facts take the driver's fast path: `executemany` in large chunks on SQLite, and on PostgreSQL
`COPY` into a temporary table merged with `INSERT ... ON CONFLICT DO NOTHING` (or `DELETE ...
USING` for retractions) once a delta holds more than a few thousand rows. Their keys and JSON
texts are computed a column at a time (`keyed`), and a large fact delta is written by
`stage_facts` on a thread of its own while the engine evaluates it (`StagedFacts`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from itertools import repeat
from json.encoder import encode_basestring as _encode_basestring  # type: ignore[attr-defined]
from operator import methodcaller
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from service.store import models
from service.store.database import create_database_engine, upgrade

Row = Sequence[Any]
Rows = Mapping[str, Sequence[Row]]
CHUNK = 50_000
"""Rows per batch read from the store, or written through COPY."""
SQLITE_CHUNK = 500_000
"""Rows per SQLite statement: each statement sorts its rows and walks the index once, so
fewer and larger ones keep a multi-million-row load linear (in chunks of 50,000, 3 million
rows took 55 s instead of 15)."""
COPY_THRESHOLD = 2_000
"""From this many rows on, PostgreSQL goes through COPY."""
_SQLITE_INSERT = (
    'INSERT INTO facts (relation, digest, "values") '
    "SELECT ?, value ->> 0, value ->> 1 FROM json_each(?) WHERE true ORDER BY 2 "
    "ON CONFLICT DO NOTHING"
)
_SQLITE_DELETE = (
    "DELETE FROM facts WHERE relation = ? AND digest IN (SELECT value FROM json_each(?))"
)
"""SQLite writes a chunk of facts in one statement, a JSON array of (digest, values) pairs
(or of digests) unpacked by `json_each`: the work per row is SQLite's, outside the GIL, so a
staged write runs beside the engine instead of taking turns with it (`executemany` hands
the GIL back and forth for every row), and the rows reach the index in key order."""
QUARANTINED = "quarantined"
"""The status of an epoch whose program a rebuild could not evaluate."""


def encode_values(row: Row) -> str:
    """A row as canonical JSON (`[1,"a"]`): the same row always gives the same text."""
    return (
        "[" + ",".join(_encode_basestring(v) if isinstance(v, str) else str(v) for v in row) + "]"
    )


def digest(values: str) -> str:
    """The unique key of a fact within its relation."""
    return hashlib.blake2b(values.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


_utf8 = methodcaller("encode", "utf-8", "surrogatepass")
_blake2b = partial(hashlib.blake2b, digest_size=16)
_hexdigest = methodcaller("hexdigest")
_copy_escaped = methodcaller("replace", "\\", "\\\\")


def keyed(rows: Sequence[Row]) -> tuple[list[str], list[str]]:
    """The digests and canonical JSON texts (`encode_values`, `digest`) of rows of one relation.

    Computed a column at a time with C-level `map`s, no Python code per row: per row, encoding
    and hashing cost more than the database's insert. The rows all have the relation's column
    types, so the first row tells which columns hold symbols."""
    if not rows:
        return [], []
    columns = list(zip(*rows, strict=True))
    if columns:
        texts = [map(_encode_basestring if isinstance(c[0], str) else str, c) for c in columns]
        template = "[" + ",".join(["{}"] * len(columns)) + "]"
        values = list(map(template.format, *texts))
    else:
        values = ["[]"] * len(rows)
    return list(map(_hexdigest, map(_blake2b, map(_utf8, values)))), values


def _copy_text(relation: str, digests: list[str], values: list[str] | None) -> str:
    """Rows of `facts_stage` in COPY's text format. Only a backslash needs escaping: the JSON
    texts hold no raw tab, newline or carriage return, the digests are hexadecimal and a
    relation's name is an identifier."""
    name = _copy_escaped(relation)
    if values is None:
        return "".join(map("{}\t{}\n".format, repeat(name, len(digests)), digests))
    return "".join(map("{}\t{}\t{}\n".format, repeat(name), digests, map(_copy_escaped, values)))


class _Cancelled(Exception):
    """A staged write was discarded while it ran."""


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
    """One delta as the store writes it. Its facts are rows in user values, already effective
    (inserted rows are new, retracted rows are present), or `staged`: written already, in the
    transaction that committing this record completes. `facts_inserted` and
    `facts_retracted` count the effective rows either way."""

    number: int
    facts_inserted: int
    facts_retracted: int
    inserts: dict[str, list[Row]] = field(default_factory=dict)
    retracts: dict[str, list[Row]] = field(default_factory=dict)
    staged: StagedFacts | None = None
    program_text: str | None = None
    """The new program text when rules changed."""
    rules_added: list[tuple[str, str]] = field(default_factory=list)
    """(id, text) of every rule added."""
    rules_removed: list[str] = field(default_factory=list)


class StagedFacts:
    """A fact delta being written on the store's thread, in a transaction left open.

    A bulk load spends seconds in the database; staged, that time overlaps the engine's check
    and evaluation of the same delta (SQLite and PostgreSQL work outside the GIL), and the
    transaction discipline stays: `Store.commit_delta` adds the epoch row and commits once the
    epoch is computed, `discard` rolls everything back. The rows are the delta's as sent:
    inserting a present fact and deleting an absent one change nothing in the store, as in the
    engine, so a delta whose relations are each only inserted or only retracted stores the
    same facts as its effective rows would."""

    def __init__(self, store: Store, inserts: Rows, retracts: Rows) -> None:
        self._connection = store.engine.connect()
        self._transaction = self._connection.begin()
        self._stop = threading.Event()
        self._written = store._stager.submit(self._write, store, inserts, retracts)

    def _write(self, store: Store, inserts: Rows, retracts: Rows) -> None:
        for relation, rows in retracts.items():
            store._delete_facts(self._connection, relation, rows, self._stop)
        for relation, rows in inserts.items():
            store._insert_facts(self._connection, relation, rows, self._stop)

    def commit(self, complete: Callable[[Connection], None]) -> None:
        """Wait for the facts, `complete` the transaction on the same connection, commit.
        Raises what the write raised, with everything rolled back."""
        try:
            self._written.result()
            complete(self._connection)
            self._transaction.commit()
        finally:
            self.discard()

    def discard(self) -> None:
        """Stop the write and roll it back (nothing, once committed); idempotent."""
        self._stop.set()
        with contextlib.suppress(Exception):  # its error is the commit's to raise
            self._written.result()
        # A connection the database dropped has lost the transaction with it.
        with contextlib.suppress(SQLAlchemyError):
            if self._transaction.is_active:
                self._transaction.rollback()
            self._connection.close()


def _now() -> datetime:
    return datetime.now(UTC)


class Store:
    def __init__(self, url: str) -> None:
        self.engine: Engine = create_database_engine(url)
        self.dialect = self.engine.dialect.name
        self._stager = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reasoner-store")
        """Runs the writes of `StagedFacts`."""

    def close(self) -> None:
        self._stager.shutdown(wait=True)
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

    def stage_facts(self, inserts: Rows, retracts: Rows) -> StagedFacts:
        """Start writing a fact delta in a transaction of its own (see `StagedFacts`)."""
        return StagedFacts(self, inserts, retracts)

    def commit_delta(self, record: DeltaRecord) -> None:
        """Make a delta durable: facts, rules, program and the epoch row, one transaction."""
        if record.staged is not None:
            record.staged.commit(lambda connection: self._write_epoch(connection, record))
            return
        with self.engine.begin() as connection:
            for relation, rows in record.retracts.items():
                self._delete_facts(connection, relation, rows)
            for relation, rows in record.inserts.items():
                self._insert_facts(connection, relation, rows)
            self._write_epoch(connection, record)

    def _write_epoch(self, connection: Connection, record: DeltaRecord) -> None:
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

    def _insert_facts(
        self,
        connection: Connection,
        relation: str,
        rows: Sequence[Row],
        stop: threading.Event | None = None,
    ) -> None:
        if self.dialect != "postgresql":
            for digests, values in _keyed_chunks(rows, stop, SQLITE_CHUNK):
                pairs = json.dumps(list(zip(digests, values, strict=True)), ensure_ascii=False)
                connection.exec_driver_sql(_SQLITE_INSERT, (relation, pairs))
        elif len(rows) >= COPY_THRESHOLD:
            self._copy_stage(connection, relation, rows, stop, with_values=True)
            connection.exec_driver_sql(
                'INSERT INTO facts (relation, digest, "values") '
                'SELECT relation, digest, "values" FROM facts_stage ORDER BY digest COLLATE "C" '
                "ON CONFLICT DO NOTHING"  # in key order: twice as fast as in arrival order
            )
        else:
            connection.exec_driver_sql(
                'INSERT INTO facts (relation, digest, "values") VALUES (%s, %s, %s) '
                "ON CONFLICT DO NOTHING",
                list(zip(repeat(relation), *keyed(rows))),
            )

    def _delete_facts(
        self,
        connection: Connection,
        relation: str,
        rows: Sequence[Row],
        stop: threading.Event | None = None,
    ) -> None:
        if self.dialect != "postgresql":
            for digests, _ in _keyed_chunks(rows, stop, SQLITE_CHUNK):
                connection.exec_driver_sql(_SQLITE_DELETE, (relation, json.dumps(digests)))
        elif len(rows) >= COPY_THRESHOLD:
            self._copy_stage(connection, relation, rows, stop, with_values=False)
            connection.exec_driver_sql(
                "DELETE FROM facts USING facts_stage WHERE facts.relation = facts_stage.relation "
                "AND facts.digest = facts_stage.digest"
            )
        else:
            connection.exec_driver_sql(
                "DELETE FROM facts WHERE relation = %s AND digest = %s",
                list(zip(repeat(relation), keyed(rows)[0])),
            )

    def _copy_stage(
        self,
        connection: Connection,
        relation: str,
        rows: Sequence[Row],
        stop: threading.Event | None,
        *,
        with_values: bool,
    ) -> None:
        """Fill a transaction-local staging table through COPY (PostgreSQL), a chunk of rows
        per write. Retractions send no values: they are matched by digest, and a value the
        database cannot hold (an unpaired surrogate) must not fail a retraction."""
        connection.exec_driver_sql(
            "CREATE TEMPORARY TABLE IF NOT EXISTS facts_stage "
            '(relation text, digest text, "values" text) ON COMMIT DELETE ROWS'
        )
        connection.exec_driver_sql("TRUNCATE facts_stage")
        columns = 'relation, digest, "values"' if with_values else "relation, digest"
        raw = connection.connection.driver_connection
        with (
            raw.cursor() as cursor,  # type: ignore[union-attr]
            cursor.copy(f"COPY facts_stage ({columns}) FROM STDIN") as copy,
        ):
            for digests, values in _keyed_chunks(rows, stop, CHUNK):
                copy.write(_copy_text(relation, digests, values if with_values else None))

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


def _keyed_chunks(
    rows: Sequence[Row], stop: threading.Event | None, size: int
) -> Iterator[tuple[list[str], list[str]]]:
    """`keyed` a chunk of `size` rows at a time (the texts of a whole bulk load at once
    would double its memory); a set `stop` ends a staged write between two chunks."""
    for start in range(0, len(rows), size):
        if stop is not None and stop.is_set():
            raise _Cancelled()
        yield keyed(rows[start : start + size])
