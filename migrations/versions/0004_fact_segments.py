"""Facts as columnar segments: one Arrow blob per relation and delta instead of a row per fact.

A row per fact, keyed by a digest of its JSON, made a load of 3 M facts spend 14 s in the
database; a segment holds them in one blob (see `service.store.segments`). The upgrade
writes each relation's facts as one segment; the downgrade writes the segments' net facts
back as rows. Both are self-contained: a migration must not change with the service's code.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from itertools import groupby
from typing import TYPE_CHECKING

import sqlalchemy as sa
from alembic import op

if TYPE_CHECKING:
    import polars as pl

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PRESENT = "present"


def _segment(rows: list[list[object]]) -> bytes:
    """Rows of one relation (user values: ints and strings) as a segment of insertions."""
    import polars as pl  # here: alembic loads every revision at each start, which needs none

    arity = len(rows[0])
    columns: dict[str, pl.Series] = {}
    for i in range(arity):
        values = [row[i] for row in rows]
        dtype = pl.Int64() if isinstance(values[0], int) else pl.String()
        columns[f"c{i}"] = pl.Series(values, dtype=dtype)
    columns[PRESENT] = pl.Series([True] * len(rows), dtype=pl.Boolean())
    buffer = io.BytesIO()
    pl.DataFrame(columns).write_ipc(buffer, compression="zstd")
    return buffer.getvalue()


def upgrade() -> None:
    segments = op.create_table(
        "fact_segments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("relation", sa.String(length=255), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_fact_segments"),
        comment="The data: per relation, a log of Arrow IPC segments in `id` order (rows "
        "inserted or retracted, a `present` column says which); see service.store.segments.",
    )
    op.create_index("ix_fact_segments_relation_id", "fact_segments", ["relation", "id"])
    connection = op.get_bind()
    epoch = connection.execute(sa.text("SELECT COALESCE(MAX(number), 0) FROM epochs")).scalar()
    result = connection.execute(sa.text('SELECT relation, "values" FROM facts ORDER BY relation'))
    for relation, group in groupby(result, key=lambda row: row[0]):
        rows = [json.loads(values) for _, values in group]
        connection.execute(
            segments.insert().values(
                relation=relation, epoch=epoch, rows=len(rows), data=_segment(rows)
            )
        )
    op.drop_table("facts")


def _read_segment(data: bytes) -> pl.DataFrame:
    """A segment's entries: Arrow IPC, or JSON (`{"schema", "rows", "present"}`)."""
    import polars as pl  # here: alembic loads every revision at each start, which needs none

    if bytes(data[:1]) != b"{":
        return pl.read_ipc(io.BytesIO(data))
    document = json.loads(data)
    dtypes = {"Int64": pl.Int64(), "String": pl.String()}
    schema = {name: dtypes[kind] for name, kind in document["schema"]}
    columns = list(zip(*document["rows"], strict=True)) or [()] * len(schema)
    frame = {name: list(column) for name, column in zip(schema, columns, strict=True)}
    frame[PRESENT] = document[PRESENT]
    return pl.DataFrame(frame, schema={**schema, PRESENT: pl.Boolean()})


def _encode_values(row: Sequence[object]) -> str:
    return json.dumps(list(row), ensure_ascii=False, separators=(",", ":"))


def downgrade() -> None:
    import polars as pl  # here: alembic loads every revision at each start, which needs none

    facts = op.create_table(
        "facts",
        sa.Column("relation", sa.String(length=255), nullable=False),
        sa.Column("digest", sa.String(length=32), nullable=False),
        sa.Column("values", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("relation", "digest", name="pk_facts"),
        comment="The data: one row per fact, `values` a canonical JSON array.",
    )
    connection = op.get_bind()
    result = connection.execute(
        sa.text("SELECT relation, data FROM fact_segments ORDER BY relation, id")
    )
    for relation, group in groupby(result, key=lambda row: row[0]):
        frames = [_read_segment(data) for _, data in group]
        while len(frames) > 1 and frames[0].schema != frames[-1].schema:
            frames.pop(0)  # an older shape: it folds to nothing (the relation was emptied)
        log = pl.concat(frames)
        values = [name for name in log.columns if name != PRESENT]
        if values:
            net = log.unique(subset=values, keep="last", maintain_order=True)
            rows = net.filter(pl.col(PRESENT)).select(values).rows()
        else:  # arity 0: the last entry says whether the relation holds ()
            rows = [()] if log[PRESENT][-1] else []
        texts = [_encode_values(row) for row in rows]
        if texts:
            connection.execute(
                facts.insert(),
                [
                    {
                        "relation": relation,
                        "digest": hashlib.blake2b(
                            text.encode("utf-8", "surrogatepass"), digest_size=16
                        ).hexdigest(),
                        "values": text,
                    }
                    for text in texts
                ],
            )
    op.drop_index("ix_fact_segments_relation_id", table_name="fact_segments")
    op.drop_table("fact_segments")
