"""`/v1/stores`: the data stores, made and dropped at run time (`service.core.stores`).

Every route of the default store (`/v1/...`) is also each named store's, under
`/v1/stores/{store}/...`; those copies are left out of the API description, which would
otherwise list every route twice.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request, Response
from fastapi.concurrency import run_in_threadpool

from service.api.deps import read_router, write_router
from service.core.runtime import Runtime
from service.core.stores import Stores
from service.problems import (
    INVALID_STORE,
    STORE_EXISTS,
    STORES_UNAVAILABLE,
    UNKNOWN_STORE,
    Problem,
    Refusal,
    clip,
)
from service.schemas import StoreIn, StoreOut, StoresOut
from service.store.places import DEFAULT_STORE, StoreEntry, is_store_name

reads = read_router()
writes = write_router()

StoreName = Annotated[
    str,
    Path(
        description="A lower-case identifier of at most 40 characters (`default` is the "
        "default store's)."
    ),
]


def _stores(request: Request) -> Stores:
    return request.app.state.stores


def _out(runtime: Runtime, entry: StoreEntry | None) -> StoreOut:
    return StoreOut(
        name=runtime.name,
        ready=runtime.ready,
        epoch=runtime.epoch,
        queued_writes=runtime.queue_length,
        failure=runtime.failure,
        created_at=None if entry is None else entry.created_at,
        settings={} if entry is None else entry.settings,
    )


def _named(stores: Stores, name: str) -> StoreOut:
    if name == DEFAULT_STORE:
        return _out(stores.default, None)
    named = stores.find(name)
    if named is not None:
        return _out(named.runtime, named.entry)
    raise Problem(404, UNKNOWN_STORE, f"there is no store {clip(name)!r}")


@reads.get("/stores", response_model=StoresOut, summary="The data stores")
async def list_stores(request: Request) -> StoresOut:
    stores = _stores(request)
    named = [_out(n.runtime, n.entry) for n in stores.named()]
    return StoresOut(stores=[_out(stores.default, None), *named])


@reads.get("/stores/{name}", response_model=StoreOut, summary="A data store")
async def get_store(request: Request, name: StoreName) -> StoreOut:
    return _named(_stores(request), name)


@writes.put(
    "/stores/{name}",
    response_model=StoreOut,
    status_code=201,
    summary="Make a data store",
    description=(
        "An empty store with its own program, facts, epochs, change feed, deadline and memory "
        "allowance, served under `/v1/stores/{name}/` as the default store is under `/v1/` "
        "(`/v1/stores/{name}/facts`, `/v1/stores/{name}/query`, ...). 201 once it is ready "
        "and durable; 200 if it exists with the same settings (a retry), 409 "
        "`store_exists` with others."
    ),
    responses={200: {"description": "The store exists with these settings", "model": StoreOut}},
)
async def put_store(
    request: Request, response: Response, name: StoreName, body: StoreIn | None = None
) -> StoreOut:
    if not is_store_name(name):
        raise Problem(
            400,
            INVALID_STORE,
            f"a store's name is a lower-case identifier of at most 40 characters, other "
            f"than {DEFAULT_STORE!r}: {clip(name)!r}",
        )
    settings: dict[str, Any] = {} if body is None else body.settings.model_dump(exclude_unset=True)
    stores = _stores(request)
    try:
        named = await run_in_threadpool(stores.create, name, settings)
    except Refusal as refused:
        existing = stores.find(name)
        if refused.code != STORE_EXISTS or existing is None or existing.entry.settings != settings:
            raise
        response.status_code = 200
        return _out(existing.runtime, existing.entry)
    return _out(named.runtime, named.entry)


@writes.delete(
    "/stores/{name}",
    status_code=204,
    summary="Drop a data store and delete its data",
    description=(
        "Its requests are refused from then on (404 `unknown_store`, the writes queued in it "
        "included; the one being evaluated finishes), its change feed's streams end, and its "
        "program, facts and epochs are deleted. The default store cannot be dropped (409 "
        "`stores_unavailable`)."
    ),
)
async def delete_store(request: Request, name: StoreName) -> Response:
    if name == DEFAULT_STORE:
        raise Problem(
            409, STORES_UNAVAILABLE, "the default store cannot be dropped: wipe its facts"
        )
    await run_in_threadpool(_stores(request).drop, name)
    return Response(status_code=204)
