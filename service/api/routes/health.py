"""Liveness, readiness and metrics."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from service.api.security import require_read
from service.core import metrics
from service.core.epoch_budget import resident_bytes
from service.core.runtime import Runtime
from service.core.stores import Stores
from service.problems import NOT_READY, problem_body
from service.schemas import Health, Ready

router = APIRouter()


# Liveness and readiness are `async def`: they run on the event loop itself, never queued
# behind the worker threads that reads and queries occupy, so they answer in milliseconds under
# any load (they only read attributes).


@router.get("/health", response_model=Health, summary="The process is up")
async def health() -> Health:
    return Health(status="ok")


@router.get(
    "/ready",
    response_model=Ready,
    summary="200 once the materialization is built (the first Bootstrap is done), 503 before",
    responses={503: {"description": "Not ready yet"}},
)
async def ready(request: Request):
    runtime: Runtime = request.app.state.stores.default  # not a dependency: see above
    if runtime.ready:
        return Ready(ready=True, epoch=runtime.epoch, quarantined=runtime.quarantined)
    detail = runtime.failure or "the materialization is being built"
    extra: dict = {}
    building = runtime.building
    latest = building.latest if building is not None else None
    if latest is not None and runtime.failure is None:
        detail += f": {latest.line()}"
        extra["progress"] = dataclasses.asdict(latest)
    body = problem_body(
        503, NOT_READY, detail, ready=False, quarantined=runtime.quarantined, **extra
    )
    return JSONResponse(
        body, status_code=503, media_type="application/problem+json", headers={"Retry-After": "1"}
    )


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    dependencies=[Depends(require_read)],
    summary="Prometheus metrics (text format)",
    description="Every data store's: the default store's series carry no `store` label, a "
    'named store\'s `store="name"`.',
)
def get_metrics(request: Request) -> PlainTextResponse:
    stores: Stores = request.app.state.stores
    rendered: list[tuple[dict[str, str], metrics.Metrics, metrics.Gauges]] = [
        ({}, stores.default.metrics, _gauges(stores.default))
    ]
    for named in stores.named():
        runtime = named.runtime
        rendered.append(({"store": runtime.name}, runtime.metrics, _gauges(runtime)))
    budget = stores.default.memory  # one allowance and cap for the process, every store's
    memory = metrics.Memory(resident_bytes(), budget.cap, budget.baseline, budget.allowance)
    return PlainTextResponse(metrics.render(rendered, memory), media_type=metrics.CONTENT_TYPE)


def _gauges(runtime: Runtime) -> metrics.Gauges:
    sizes: list[tuple[str, bool, int]] = []
    m = runtime.materialization
    if runtime.ready and m is not None:
        with m.reading():
            stratum_of = m.analyzed.stratum_of
            sizes = [
                (name, name in stratum_of, m.size(name))
                for name, info in m.analyzed.relations.items()
                if not info.internal
            ]
    return metrics.Gauges(sizes, runtime.queue_length, runtime.ready, runtime.epoch)
