"""The change feed: each epoch's change set, committed with the epoch.

Epochs committed before this revision have no change set (`changes` NULL): a feed starts
after them. Self-contained, as every migration must be.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "epoch_changes",
        sa.Column("epoch", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("relation", sa.Text(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("epoch", "seq", name="pk_epoch_changes"),
        comment="The change feed: per epoch, in `seq` order, chunks of the rows each relation "
        "lost or gained (a segment as in fact_segments, whose `present` column says which), "
        "committed with the epoch.",
    )
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("changes", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("reset", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("reset")
        batch.drop_column("changes")
    op.drop_table("epoch_changes")
