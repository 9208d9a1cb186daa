"""`/v1/rules` and `/v1/program`: the program's rules, added and removed by id, and the
program as a whole, read and replaced."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Request
from pydantic import ValidationError

from reasoner import Delta
from service.api.bodies import (
    media_type,
    text_body,
    unsupported,
)
from service.api.common import (
    epoch_out,
)
from service.api.deps import (
    Changes,
    RuntimeDep,
    apply_delta,
    read_router,
    write_router,
)
from service.problems import (
    INVALID_JSON,
    INVALID_REQUEST,
    Problem,
    clip,
)
from service.schemas import (
    EpochOut,
    ProgramIn,
    ProgramOut,
    RuleOut,
    RulesAdded,
    RulesIn,
    RulesOut,
)

reads = read_router()
writes = write_router()


@reads.get("/rules", response_model=RulesOut, summary="The program's rules with their ids")
def get_rules(runtime: RuntimeDep) -> RulesOut:
    with runtime.reading() as (m, epoch):
        rules = m.rules()
    return RulesOut(epoch=epoch, rules=[RuleOut(id=r.id, text=r.text) for r in rules])


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


@writes.post(
    "/rules",
    response_model=RulesAdded,
    summary="Add rules (JSON or a text/plain Datalog body)",
    openapi_extra=_RULES_BODY,
)
async def post_rules(request: Request, runtime: RuntimeDep, changes: Changes = False) -> RulesAdded:
    texts = await _texts(request, RulesIn)
    applied = await apply_delta(runtime, request, Delta(add_rules=tuple(texts)), changes)
    return RulesAdded(**epoch_out(applied).model_dump(), ids=list(applied.rules_given))


async def _texts(request: Request, model: type[RulesIn] | type[ProgramIn]) -> list[str]:
    """The texts of a rules or program body: JSON (`model`) or one text/plain text."""
    kind, _ = media_type(request)
    if kind == "text/plain":
        return [await text_body(request)]
    if kind != "application/json":
        raise unsupported(kind, ("application/json", "text/plain"))
    try:
        document = model.model_validate_json(await request.body())
    except ValidationError as exc:
        malformed = any(e["type"] == "json_invalid" for e in exc.errors())
        raise Problem(
            400,
            INVALID_JSON if malformed else INVALID_REQUEST,
            clip(f"invalid {model.__name__.removesuffix('In').lower()} document: {exc}", 2000),
        ) from None
    return document.rules if isinstance(document, RulesIn) else [document.program]


@reads.get("/program", response_model=ProgramOut, summary="The program's text")
def get_program(runtime: RuntimeDep) -> ProgramOut:
    with runtime.reading() as (m, epoch):
        return ProgramOut(epoch=epoch, program=m.program_text())


_PROGRAM_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": ProgramIn.model_json_schema()},
            "text/plain": {
                "schema": {"type": "string"},
                "example": ".decl edge(x: number, y: number)\ntc(x, y) :- edge(x, y).",
            },
        },
    }
}


@writes.put(
    "/program",
    response_model=RulesAdded,
    summary="Replace the whole program (JSON or a text/plain Datalog body), as one epoch",
    description=(
        "The rules, declarations and directives given become the program; its facts are data, "
        "as those of added rules. A relation the new program drops must hold no facts "
        "(`unknown_relation` otherwise: retract them, or `DELETE /v1/facts/all`). The same "
        "program again, however spaced, makes no epoch (`changed: false`). `ids`: the "
        "program's rules."
    ),
    openapi_extra=_PROGRAM_BODY,
)
async def put_program(
    request: Request, runtime: RuntimeDep, changes: Changes = False
) -> RulesAdded:
    [text] = await _texts(request, ProgramIn)
    applied = await apply_delta(runtime, request, Delta(program=text), changes)
    return RulesAdded(**epoch_out(applied).model_dump(), ids=list(applied.rules_given))


@writes.delete("/rules/{rule_id}", response_model=EpochOut, summary="Remove a rule")
async def delete_rule(
    rule_id: Annotated[str, Path(description="The id `GET /v1/rules` lists.")],
    request: Request,
    runtime: RuntimeDep,
    changes: Changes = False,
) -> EpochOut:
    return epoch_out(await apply_delta(runtime, request, Delta(remove_rules=(rule_id,)), changes))
