"""Epochs record which executor ran a Bootstrap, and why.

Revision ID: 0002
Revises: 0001
Create Date: 2025-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("engine", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("engine_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("engine_reason")
        batch.drop_column("engine")
