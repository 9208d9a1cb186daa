"""Several data stores: the default store's database lists the named ones.

A named store keeps its data in a database of the same layout (a SQLite file beside this one,
or a PostgreSQL schema of this database), migrated on its own; this table only names them and
the settings each overrides. An existing database becomes the default store unchanged. Self-
contained, as every migration must be.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stores",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_stores"),
        comment="The named data stores besides this one (`service.store.places` says where "
        "each keeps its data), with the settings each overrides. Read in the default store "
        "only.",
    )


def downgrade() -> None:
    op.drop_table("stores")
