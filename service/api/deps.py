"""What the routes share: the app's runtime, routers with their access checks, and the
way a write is queued and a read answered."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from reasoner import Delta, groupable
from service.api.common import PROBLEM_RESPONSES, check_delta, get_runtime, program_texts
from service.api.paging import refuse_unknown_parameters
from service.api.rule_texts import check_rule_texts
from service.api.security import require_read, require_write
from service.core.runtime import Runtime
from service.core.writer import WriteAbandoned
from service.problems import CLIENT_CLOSED_REQUEST, Problem
from service.schemas import DeltaIn, FactsIn

RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
Changes = Annotated[bool, Query(description="Include the derived tuples inserted and retracted.")]


def read_router() -> APIRouter:
    """A router of reads: each route checks the read token (`service.api.security`) and
    refuses query parameters it does not take."""
    return APIRouter(
        dependencies=[Depends(require_read), Depends(refuse_unknown_parameters)],
        responses=PROBLEM_RESPONSES,
    )


def write_router() -> APIRouter:
    """A router of writes: each route checks the write token and its query parameters."""
    return APIRouter(
        dependencies=[Depends(require_write), Depends(refuse_unknown_parameters)],
        responses=PROBLEM_RESPONSES,
    )


def delta_of(body: DeltaIn) -> Delta:
    """The delta a `POST /v1/deltas` body asks for."""
    return Delta(
        insert=body.facts.insert,
        retract=body.facts.retract,
        add_rules=tuple(body.rules.add),
        remove_rules=tuple(body.rules.remove),
    )


def insertion_of(body: FactsIn) -> Delta:
    """The delta a `POST /v1/facts` body asks for."""
    return Delta(insert=body.facts)


def retraction_of(body: FactsIn) -> Delta:
    """The delta a `DELETE /v1/facts` body asks for."""
    return Delta(retract=body.facts)


async def apply_delta(runtime: Runtime, request: Request, delta: Delta, changes: bool):
    """Queue the delta; a client that disconnects before its turn takes it out again."""
    check_delta(delta)
    texts = program_texts(delta)
    if texts:  # off the event loop: a directive's parameters are found by lexing
        await run_in_threadpool(check_rule_texts, texts, runtime.settings.max_rules)
    try:
        if groupable(delta) and not changes:  # may share its epoch with its neighbours
            return await runtime.write_facts(delta, disconnected=request.is_disconnected)
        job = functools.partial(runtime.apply, delta, include_changes=changes)
        return await runtime.write(job, disconnected=request.is_disconnected)
    except WriteAbandoned:
        # Nobody is listening; the status is for the access log.
        raise Problem(499, CLIENT_CLOSED_REQUEST, "the client left: write dropped") from None


async def answered(runtime: Runtime, respond: Callable[[], Response]) -> Response:
    """`respond()` in a read slot, on a worker thread: pages are made and rendered off the
    event loop, which the writes share."""
    async with runtime.read_slot():
        return await run_in_threadpool(respond)
