"""`create_app(settings)`: wiring only.

The application owns its data stores (`service.core.stores`): each a `Runtime` (a
materialization, its database and its writer). Its lifespan migrates the databases and starts
their rebuilds in the background, so that `/health` answers at once and `/ready` turns 200
when the default store's first Bootstrap is done.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from service.api import lean_writes, problem_responses
from service.api.limits import BodySizeLimit
from service.api.routes import (
    changes,
    deltas,
    epochs,
    exports,
    health,
    query,
    relations,
    rules,
    stores,
)
from service.api.security import TokenGate
from service.console.routes import console_router
from service.core.stores import Stores
from service.core.write_priority import WritePriority, WritesFirst
from service.schemas import ProblemOut
from service.settings import Settings

STORE_ROUTES = "/v1/stores/{store}"
"""Where a named data store's routes are: the default store's, under its prefix."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings if settings is not None else Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stores = Stores(settings)
        app.state.stores = stores
        stores.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            stores.close()

    def priority_of(store: str | None) -> WritePriority | None:
        stores: Stores | None = getattr(app.state, "stores", None)
        runtime = None if stores is None else stores.get(store)
        return None if runtime is None else runtime.priority

    app = FastAPI(
        title="reasoner",
        summary="An elastic, incremental Datalog reasoning service.",
        description="Post fact and rule deltas; query the live materialization. Errors are "
        "`application/problem+json` documents with a stable `code`. Every route under `/v1/` "
        "is the default data store's; each store made with `PUT /v1/stores/{name}` has the "
        "same routes under `/v1/stores/{name}/` (not listed again here).",
        version="1",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.export_slots = threading.BoundedSemaphore(settings.max_concurrent_exports)
    problem_responses.install(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(WritesFirst, priority_of=priority_of)
    # Added last, so it runs first: tokens are checked before a byte of the body is read.
    app.add_middleware(TokenGate, settings=settings)
    app.include_router(health.router)
    for resource in (deltas, rules, relations, exports, query, epochs, changes):
        for name in ("writes", "reads"):
            if hasattr(resource, name):
                router = getattr(resource, name)
                app.include_router(router, prefix="/v1")
                app.include_router(router, prefix=STORE_ROUTES, include_in_schema=False)
    app.include_router(stores.reads, prefix="/v1")
    app.include_router(stores.writes, prefix="/v1")
    if settings.console:
        app.include_router(console_router())
    lean_writes.install(app, ("/v1", STORE_ROUTES))

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components["ProblemOut"] = ProblemOut.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override
    return app
