"""The database schema: the program, its rules, the facts and the epochs.

The committed program and facts are the source of truth: the materialization is rebuilt from
them at start-up. Facts are stored as a log of columnar segments per relation
(`service.store.segments`): Arrow blobs of the rows each delta inserted or retracted.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    false,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

programs = Table(
    "programs",
    metadata,
    Column("epoch", Integer, primary_key=True, autoincrement=False),
    Column("text", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    comment="The whole program text as of `epoch` (a row per epoch that changed rules).",
)

rules = Table(
    "rules",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("text", Text, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("added_epoch", Integer, nullable=False),
    Column("removed_epoch", Integer, nullable=True),
    comment="Every rule the program has had; `active` ones are in the current program.",
)

fact_segments = Table(
    "fact_segments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("relation", String(255), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("rows", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Index(None, "relation", "id"),
    comment="The data: per relation, a log of Arrow IPC segments in `id` order (rows "
    "inserted or retracted, a `present` column says which); see service.store.segments.",
)

epochs = Table(
    "epochs",
    metadata,
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("kind", String(16), nullable=False),  # "initial" | "delta" | "rebuild" (a reset)
    # "committed" | "applied" | "recovered" | "quarantined" (a rebuild could not evaluate it)
    Column("status", String(16), nullable=False),
    Column("facts_inserted", Integer, nullable=False),
    Column("facts_retracted", Integer, nullable=False),
    Column("rules_added", JSON, nullable=False),
    Column("rules_removed", JSON, nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=True),
    Column("strategy", String(16), nullable=True),
    Column("engine", String(16), nullable=True),
    Column("engine_reason", Text, nullable=True),
    Column("fallback_reason", Text, nullable=True),
    Column("seconds", Float, nullable=True),
    Column("inserted", Integer, nullable=True),
    Column("retracted", Integer, nullable=True),
    Column("strata", JSON, nullable=True),
    # Of a Bootstrap an Update fell back to: the strata that Update went through (NULL: an
    # epoch of a version that did not keep them).
    Column("update_strata", JSON, nullable=True),
    # The state's bytes once the epoch was published, and the process's peak resident set
    # while it ran (NULL: an epoch of a version that did not record them, or no peak known).
    Column("state_bytes", BigInteger, nullable=True),
    Column("peak_memory_bytes", BigInteger, nullable=True),
    Column("failure", Text, nullable=True),
    # Rows of the epoch's change set in `epoch_changes`; NULL: not stored (an epoch from
    # before the change feed, or pruned past the retention).
    Column("changes", Integer, nullable=True),
    # The change set is a snapshot of every relation, not a diff: a rebuild left a program
    # out (quarantine), so the state does not follow from the epochs before.
    Column("reset", Boolean, nullable=False, server_default=false()),
    # The symbols and records the engine had interned once the epoch committed: the first
    # ones of `interned` (NULL: an epoch of a version that did not store them).
    Column("symbols", Integer, nullable=True),
    Column("records", Integer, nullable=True),
    # The facts each write of a group flipped, in order: [{"facts_inserted": n,
    # "facts_retracted": n}, ...] (group commit); NULL: the epoch holds one write, or none.
    Column("writes", JSON(none_as_null=True), nullable=True),
    comment="One row per epoch: written with the delta, completed with its report.",
)

interned = Table(
    "interned",
    metadata,
    Column("kind", String(8), primary_key=True),  # "symbol" | "record"
    Column("first", Integer, primary_key=True, autoincrement=False),
    Column("epoch", Integer, nullable=False),
    Column("rows", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    comment="The engine's numbering of symbols (`ord`) and records: per kind, segments of "
    "the values of ids `first`, `first` + 1, ... in order, appended by the epoch that "
    "interned them (`epoch`: the newest one a merged segment holds); see "
    "service.store.interned.",
)

epoch_changes = Table(
    "epoch_changes",
    metadata,
    Column("epoch", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    # Text, unindexed: a relation's name can be longer than an index entry may be.
    Column("relation", Text, nullable=False),
    Column("rows", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    comment="The change feed: per epoch, in `seq` order, chunks of the rows each relation "
    "lost or gained (a segment as in fact_segments, whose `present` column says which), "
    "committed with the epoch.",
)

stores = Table(
    "stores",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("settings", JSON, nullable=False),
    comment="The named data stores besides this one (`service.store.places` says where "
    "each keeps its data), with the settings each overrides. Read in the default store "
    "only.",
)
