"""The database schema: the program, its rules, the facts and the epochs.

The committed program and facts are the source of truth: the materialization is rebuilt from
them at start-up. Facts are stored one row per (relation, row), the row as canonical JSON
(`[1,"a"]`), unique per relation through a 128-bit digest of that JSON (a unique index on the
JSON itself would break PostgreSQL's B-tree row limit for long symbols).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
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

facts = Table(
    "facts",
    metadata,
    Column("relation", String(255), primary_key=True),
    Column("digest", String(32), primary_key=True),
    Column("values", Text, nullable=False),
    comment="The data: one row per fact, `values` a canonical JSON array.",
)

epochs = Table(
    "epochs",
    metadata,
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("kind", String(16), nullable=False),  # "initial" | "delta"
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
    Column("failure", Text, nullable=True),
    comment="One row per epoch: written with the delta, completed with its report.",
)
