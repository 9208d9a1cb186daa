"""`/v1/epochs`: what each epoch did."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from service.api.deps import (
    RuntimeDep,
    read_router,
)
from service.problems import (
    UNKNOWN_EPOCH,
    Problem,
)
from service.schemas import (
    EpochRecord,
    EpochsOut,
)

reads = read_router()


@reads.get("/epochs", response_model=EpochsOut, summary="Epochs, most recent first")
def get_epochs(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(gt=0, le=1000)] = 100,
    before: Annotated[int | None, Query(description="Only epochs numbered below this.")] = None,
) -> EpochsOut:
    rows = runtime.epoch_rows.rows(limit=limit + 1, before=before)
    more = len(rows) > limit
    rows = rows[:limit]
    return EpochsOut(
        epochs=[EpochRecord.model_validate(r) for r in rows],
        next=rows[-1]["number"] if more and rows else None,
    )


@reads.get("/epochs/{number}", response_model=EpochRecord, summary="One epoch")
def get_epoch(number: int, runtime: RuntimeDep) -> EpochRecord:
    row = runtime.epoch_rows.row(number)
    if row is None:
        raise Problem(404, UNKNOWN_EPOCH, f"there is no epoch {number}")
    return EpochRecord.model_validate(row)
