"""The engine's numbering of symbols and records, committed with each epoch, so that a
restart numbers them as before (`ord` and every row derived from it stay as they were).

Epochs committed before this revision have no count (`symbols` NULL): the first start on
this revision rebuilds with a numbering of its own and commits a reset epoch. Self-contained,
as every migration must be.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "interned",
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("first", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "first", name="pk_interned"),
        comment="The engine's numbering of symbols (`ord`) and records: per kind, segments of "
        "the values of ids `first`, `first` + 1, ... in order, appended by the epoch that "
        "interned them (`epoch`: the newest one a merged segment holds); see "
        "service.store.interned.",
    )
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("symbols", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("records", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("records")
        batch.drop_column("symbols")
    op.drop_table("interned")
