"""Writes: deltas, rules and facts. Each is one epoch, applied all or nothing, in order."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from reasoner import Delta
from reasoner.errors import UNKNOWN_RELATION
from reasoner.program_text import rule_id
from reasoner.syntax.parser import parse_program
from service.api.bodies import (
    CSV_MEDIA_TYPE,
    FACTS_MEDIA_TYPES,
    facts_body,
    media_type,
    parse_rows,
    require_json,
    text_body,
    unsupported,
)
from service.api.common import PROBLEM_RESPONSES, check_delta, epoch_out, get_runtime
from service.errors import CLIENT_CLOSED_REQUEST, INVALID_JSON, INVALID_REQUEST, Problem, clip
from service.runtime import Runtime, WriteAbandoned
from service.schemas import DeltaIn, EpochOut, FactsIn, RulesAdded, RulesIn
from service.security import require_write

router = APIRouter(prefix="/v1", dependencies=[Depends(require_write)], responses=PROBLEM_RESPONSES)

RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
Changes = Annotated[bool, Query(description="Include the derived tuples inserted and retracted.")]


async def _apply(runtime: Runtime, request: Request, delta: Delta, changes: bool):
    """Queue the delta; a client that disconnects before its turn takes it out again."""
    check_delta(delta)
    job = functools.partial(runtime.apply, delta, include_changes=changes)
    try:
        return await runtime.write(job, disconnected=request.is_disconnected)
    except WriteAbandoned:
        # Nobody is listening; the status is for the access log.
        raise Problem(499, CLIENT_CLOSED_REQUEST, "the client left: write dropped") from None


@router.post(
    "/deltas",
    response_model=EpochOut,
    summary="Apply a delta (facts and rules)",
    dependencies=[Depends(require_json)],
)
async def post_delta(
    body: DeltaIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    delta = Delta(
        insert=body.facts.insert,
        retract=body.facts.retract,
        add_rules=tuple(body.rules.add),
        remove_rules=tuple(body.rules.remove),
    )
    return epoch_out(await _apply(runtime, request, delta, changes))


_RULES_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": RulesIn.model_json_schema()},
            "text/plain": {
                "schema": {"type": "string"},
                "example": "tc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).",
            },
        },
    }
}


@router.post(
    "/rules",
    response_model=RulesAdded,
    summary="Add rules (JSON or a text/plain Datalog body)",
    openapi_extra=_RULES_BODY,
)
async def post_rules(request: Request, runtime: RuntimeDep, changes: Changes = False) -> RulesAdded:
    kind, _ = media_type(request)
    if kind == "application/json":
        try:
            texts = RulesIn.model_validate_json(await request.body()).rules
        except ValidationError as exc:
            malformed = any(e["type"] == "json_invalid" for e in exc.errors())
            raise Problem(
                400 if malformed else 422,
                INVALID_JSON if malformed else INVALID_REQUEST,
                clip(f"invalid rules document: {exc}", 2000),
            ) from None
    elif kind == "text/plain":
        texts = [await text_body(request)]
    else:
        raise unsupported(kind, ("application/json", "text/plain"))
    applied = await _apply(runtime, request, Delta(add_rules=tuple(texts)), changes)
    ids: dict[str, None] = {}
    for text in texts:
        for rule in parse_program(text, expand_components=False).rules:
            ids.setdefault(rule_id(rule.text), None)
    return RulesAdded(**epoch_out(applied).model_dump(), ids=list(ids))


@router.delete("/rules/{rule_id}", response_model=EpochOut, summary="Remove a rule")
async def delete_rule(
    rule_id: Annotated[str, Path(description="The id `GET /v1/rules` lists.")],
    request: Request,
    runtime: RuntimeDep,
    changes: Changes = False,
) -> EpochOut:
    return epoch_out(await _apply(runtime, request, Delta(remove_rules=(rule_id,)), changes))


@router.post(
    "/facts", response_model=EpochOut, summary="Insert facts", dependencies=[Depends(require_json)]
)
async def post_facts(
    body: FactsIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await _apply(runtime, request, Delta(insert=body.facts), changes))


@router.delete(
    "/facts", response_model=EpochOut, summary="Retract facts", dependencies=[Depends(require_json)]
)
async def delete_facts(
    body: FactsIn, request: Request, runtime: RuntimeDep, changes: Changes = False
) -> EpochOut:
    return epoch_out(await _apply(runtime, request, Delta(retract=body.facts), changes))


_FACTS_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            **{
                kind: {"schema": {"type": "string"}, "example": "1\t2\n2\t3\n"}
                for kind in FACTS_MEDIA_TYPES
            },
            CSV_MEDIA_TYPE: {"schema": {"type": "string"}, "example": "1,2\n2,3\n"},
        },
    }
}


async def _rows_of_body(
    request: Request, runtime: Runtime, name: str, delimiter: str | None, header: bool | None
) -> Sequence[tuple]:
    with runtime.reading() as (m, _epoch):
        info = m.analyzed.relations.get(name)
    if info is None or info.internal:
        raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
    kind, params = media_type(request)
    if kind != CSV_MEDIA_TYPE and kind not in FACTS_MEDIA_TYPES:
        raise unsupported(kind, (*FACTS_MEDIA_TYPES, CSV_MEDIA_TYPE))
    body = await facts_body(request)
    return await run_in_threadpool(
        parse_rows, body, info, name, kind, params, delimiter=delimiter, header=header
    )


Delimiter = Annotated[
    str | None, Query(description="Field separator of a `.facts` body (default: tab).")
]
Header = Annotated[bool | None, Query(description="Whether a CSV body starts with a header line.")]


@router.post(
    "/relations/{name}/facts",
    response_model=EpochOut,
    summary="Insert facts from a Soufflé .facts or CSV body (bulk load)",
    openapi_extra=_FACTS_BODY,
)
async def post_relation_facts(
    name: str,
    request: Request,
    runtime: RuntimeDep,
    delimiter: Delimiter = None,
    header: Header = None,
    changes: Changes = False,
) -> EpochOut:
    rows = await _rows_of_body(request, runtime, name, delimiter, header)
    return epoch_out(await _apply(runtime, request, Delta(insert={name: rows}), changes))


@router.delete(
    "/relations/{name}/facts",
    response_model=EpochOut,
    summary="Retract facts given as a Soufflé .facts or CSV body",
    openapi_extra=_FACTS_BODY,
)
async def delete_relation_facts(
    name: str,
    request: Request,
    runtime: RuntimeDep,
    delimiter: Delimiter = None,
    header: Header = None,
    changes: Changes = False,
) -> EpochOut:
    rows = await _rows_of_body(request, runtime, name, delimiter, header)
    return epoch_out(await _apply(runtime, request, Delta(retract={name: rows}), changes))
