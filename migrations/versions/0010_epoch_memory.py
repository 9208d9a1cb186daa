"""Epochs keep the state's size once published and the process's peak resident set while
they ran: what a user sizes the machine by, per epoch.

Epochs committed before this revision have NULL there. Self-contained, as every migration must
be.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("state_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("peak_memory_bytes")
        batch.drop_column("state_bytes")
