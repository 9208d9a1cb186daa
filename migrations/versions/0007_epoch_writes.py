"""The writes an epoch holds: group commit applies several small writes as one epoch, and
its row lists what each flipped, in order.

Epochs committed before this revision hold one write each (or none): `writes` is NULL for them,
as it is for every later epoch of one write. Self-contained, as every migration must be.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.add_column(sa.Column("writes", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("epochs") as batch:
        batch.drop_column("writes")
