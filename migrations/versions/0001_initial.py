"""The initial schema: programs, rules, facts, epochs.

Revision ID: 0001
Revises:
Create Date: 2025-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "programs",
        sa.Column("epoch", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("epoch", name="pk_programs"),
        comment="The whole program text as of `epoch` (a row per epoch that changed rules).",
    )
    op.create_table(
        "rules",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("added_epoch", sa.Integer(), nullable=False),
        sa.Column("removed_epoch", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_rules"),
        comment="Every rule the program has had; `active` ones are in the current program.",
    )
    op.create_table(
        "facts",
        sa.Column("relation", sa.String(length=255), nullable=False),
        sa.Column("digest", sa.String(length=32), nullable=False),
        sa.Column("values", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("relation", "digest", name="pk_facts"),
        comment="The data: one row per fact, `values` a canonical JSON array.",
    )
    op.create_table(
        "epochs",
        sa.Column("number", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("facts_inserted", sa.Integer(), nullable=False),
        sa.Column("facts_retracted", sa.Integer(), nullable=False),
        sa.Column("rules_added", sa.JSON(), nullable=False),
        sa.Column("rules_removed", sa.JSON(), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("strategy", sa.String(length=16), nullable=True),
        sa.Column("fallback_reason", sa.Text(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("inserted", sa.Integer(), nullable=True),
        sa.Column("retracted", sa.Integer(), nullable=True),
        sa.Column("strata", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("number", name="pk_epochs"),
        comment="One row per epoch: written with the delta, completed with its report.",
    )


def downgrade() -> None:
    op.drop_table("epochs")
    op.drop_table("facts")
    op.drop_table("rules")
    op.drop_table("programs")
