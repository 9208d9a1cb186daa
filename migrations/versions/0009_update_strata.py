"""Epochs keep, beside a fallback Bootstrap's strata, the strata the abandoned Update went
through with the switch's forecasts (`reasoner.elastic.forecast`).

Epochs committed before this revision have NULL there. Self-contained, as every migration must
be.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("update_strata", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("update_strata")
