"""`/v1/deltas` and `/v1/facts`: writes of facts and rules, each one epoch."""

from __future__ import annotations

from fastapi import Depends, Request

from reasoner import Delta
from service.api.bodies import require_json
from service.api.common import (
    epoch_out,
)
from service.api.deps import (
    Changes,
    RuntimeDep,
    apply_delta,
    delta_of,
    insertion_of,
    retraction_of,
    write_router,
)
from service.schemas import (
    DeltaIn,
    EpochOut,
    FactsIn,
)

writes = write_router()


@writes.post(
    "/deltas",
    response_model=EpochOut,
    summary="Apply a delta (facts and rules)",
    dependencies=[Depends(require_json)],
)
async def post_delta(
    body: DeltaIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await apply_delta(runtime, request, delta_of(body), changes))


@writes.post(
    "/facts", response_model=EpochOut, summary="Insert facts", dependencies=[Depends(require_json)]
)
async def post_facts(
    body: FactsIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await apply_delta(runtime, request, insertion_of(body), changes))


@writes.delete(
    "/facts", response_model=EpochOut, summary="Retract facts", dependencies=[Depends(require_json)]
)
async def delete_facts(
    body: FactsIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await apply_delta(runtime, request, retraction_of(body), changes))


@writes.delete(
    "/facts/all",
    response_model=EpochOut,
    summary="Retract every fact, as one epoch",
    description=(
        "Every fact given as data is retracted; the program stays, with the facts its text "
        "asserts. Nothing to retract makes no epoch (`changed: false`)."
    ),
)
async def delete_all_facts(
    request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await apply_delta(runtime, request, Delta(clear_facts=True), changes))
