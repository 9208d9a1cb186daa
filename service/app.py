"""`create_app(settings)`: wiring only.

The application owns one `Runtime` (the materialization, the store and the writer). Its
lifespan migrates the database and starts the rebuild in the background, so that `/health`
answers at once and `/ready` turns 200 when the first Bootstrap is done.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from service.api import problem_responses
from service.api.limits import BodySizeLimit
from service.api.routes import changes, deltas, epochs, exports, health, query, relations, rules
from service.api.security import TokenGate
from service.core.runtime import Runtime
from service.core.write_priority import WritePriority, WritesFirst
from service.schemas import ProblemOut
from service.settings import Settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings if settings is not None else Settings()
    priority = WritePriority()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime(settings, priority=priority)
        app.state.runtime = runtime
        runtime.feed.attach(asyncio.get_running_loop())
        runtime.start()
        try:
            yield
        finally:
            runtime.close()

    app = FastAPI(
        title="reasoner",
        summary="An elastic, incremental Datalog reasoning service.",
        description="Post fact and rule deltas; query the live materialization. Errors are "
        "`application/problem+json` documents with a stable `code`.",
        version="1",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.export_slots = threading.BoundedSemaphore(settings.max_concurrent_exports)
    problem_responses.install(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(WritesFirst, priority=priority)
    # Added last, so it runs first: tokens are checked before a byte of the body is read.
    app.add_middleware(TokenGate, settings=settings)
    app.include_router(health.router)
    for resource in (deltas, rules, relations, exports, query, epochs, changes):
        for name in ("writes", "reads"):
            if hasattr(resource, name):
                app.include_router(getattr(resource, name))

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
