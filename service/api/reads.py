"""Reads: rules, relations, queries and epochs, served from the published epoch."""

from __future__ import annotations

import csv
import heapq
import io
import json
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from reasoner import Materialization
from reasoner.analysis.model import RelationInfo
from reasoner.arith import wrap64
from reasoner.errors import TYPE_MISMATCH, UNKNOWN_RELATION
from reasoner.pages import relation_page
from reasoner.proofs import Explainer, ExplainError
from reasoner.query import QueryResult, QueryTimeout, compile_query, evaluate_query
from service.api.bodies import require_json
from service.api.common import (
    PROBLEM_RESPONSES,
    decode_cursor,
    encode_cursor,
    get_runtime,
    parse_int64,
    unpaired_surrogate,
)
from service.errors import (
    INTERNAL_ERROR,
    INVALID_TEXT,
    UNKNOWN_COLUMN,
    UNKNOWN_EPOCH,
    Problem,
    clip,
)
from service.runtime import Runtime
from service.schemas import (
    ColumnOut,
    EpochRecord,
    EpochsOut,
    ExplainOut,
    QueryIn,
    QueryOut,
    RelationOut,
    RelationRows,
    RelationsOut,
    RuleOut,
    RulesOut,
)
from service.security import require_read

router = APIRouter(prefix="/v1", dependencies=[Depends(require_read)], responses=PROBLEM_RESPONSES)

RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
_RESERVED = frozenset({"limit", "cursor", "format"})
NDJSON = "application/x-ndjson"


@router.get("/rules", response_model=RulesOut, summary="The program's rules with their ids")
def get_rules(runtime: RuntimeDep) -> RulesOut:
    with runtime.reading() as (m, epoch):
        rules = m.rules()
    return RulesOut(epoch=epoch, rules=[RuleOut(id=r.id, text=r.text) for r in rules])


@router.get("/relations", response_model=RelationsOut, summary="Every relation of the program")
def get_relations(runtime: RuntimeDep) -> RelationsOut:
    with runtime.reading() as (m, epoch):
        analyzed = m.analyzed
        relations = [
            RelationOut(
                name=name,
                arity=info.arity,
                columns=[
                    ColumnOut(name=c, type=t)
                    for c, t in zip(info.column_names, info.types, strict=True)
                ],
                size=m.size(name),
                stratum=analyzed.stratum_of.get(name),
                derived=name in analyzed.stratum_of,
                input=info.is_input,
                output=info.is_output,
            )
            for name, info in analyzed.relations.items()
            if not info.internal
        ]
    return RelationsOut(epoch=epoch, relations=relations)


def _format(request: Request, requested: str | None) -> str:
    if requested:
        return requested
    accept = request.headers.get("accept", "")
    if NDJSON in accept or "application/jsonl" in accept:
        return "ndjson"
    if "text/csv" in accept:
        return "csv"
    return "json"


def _position(key: str) -> int | None:
    """The column index of a `@index` filter name, or None.

    Only ASCII digits: `str.isdigit` is also true of `²`, on which `int` raises (a 500), and
    `int` reads `١` as 1. At most 9 of them, so that `int` is never asked for a number it
    refuses (over 4,300 digits) and no relation has that many columns."""
    digits = key[1:]
    if key.startswith("@") and 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def _filters(request: Request, names: tuple[str, ...], types: tuple[str, ...]) -> dict[int, Any]:
    """Bound arguments: `?column=value` (or `?@index=value`), typed by the column; a number
    is read as in a `.facts` file (`parse_int64`: ASCII decimals in the 64-bit range)."""
    bound: dict[int, Any] = {}
    for key, raw in request.query_params.multi_items():
        if key in _RESERVED:
            continue
        position = _position(key)
        if position is not None and position < len(names):
            column = position
        elif key in names:
            column = names.index(key)
        else:
            raise Problem(
                400,
                UNKNOWN_COLUMN,
                f"`{clip(key)}` is not a column (columns: {', '.join(names) or 'none'})",
            )
        if types[column] != "symbol":
            value: Any = parse_int64(raw, types[column])
            if value is None:
                kind = "unsigned " if types[column] == "unsigned" else ""
                raise Problem(
                    400,
                    TYPE_MISMATCH,
                    f"column `{names[column]}` is a 64-bit {kind}integer, got {clip(raw)!r}",
                )
        else:
            value = raw
        if column in bound and bound[column] != value:
            bound[column] = None  # two different values: nothing matches
            continue
        bound[column] = value
    return bound


def _page_response(
    fmt: str,
    relation_or_query: dict[str, Any],
    columns: list[str],
    rows: list[tuple],
    next_cursor: str | None,
    model: type[BaseModel],
) -> Response:
    # Every format says which epoch it reflects (CSV and NDJSON have no field for it).
    headers = {"X-Epoch": str(relation_or_query["epoch"])}
    if next_cursor is not None:
        headers["X-Next-Cursor"] = next_cursor
    if fmt == "ndjson":
        body = "".join(json.dumps(list(r), ensure_ascii=False) + "\n" for r in rows)
        return Response(body, media_type=NDJSON, headers=headers)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return Response(out.getvalue(), media_type="text/csv; header=present", headers=headers)
    # The model's fields in its order, without validating a page of rows the engine made
    # (that took longer than reading them).
    values = {**relation_or_query, "columns": columns, "rows": rows, "next": next_cursor}
    return JSONResponse({name: values[name] for name in model.model_fields}, headers=headers)


async def _answered(runtime: Runtime, respond: Callable[[], Response]) -> Response:
    """`respond()` in a read slot, on a worker thread: pages are made and rendered off the
    event loop, which the writes share."""
    async with runtime.read_slot():
        return await run_in_threadpool(respond)


def _page(rows, after: tuple | None, limit: int) -> tuple[list[tuple], tuple | None]:
    if after is not None:
        rows = (r for r in rows if r > after)
    page = heapq.nsmallest(limit + 1, rows)
    if len(page) > limit:
        return page[:limit], page[limit - 1]
    return page, None


Format = Annotated[
    Literal["json", "ndjson", "csv"] | None,
    Query(description="Response format; default from the Accept header, else JSON."),
]
Limit = Annotated[int | None, Query(gt=0, description="Rows per page (at most the page size).")]
Cursor = Annotated[str | None, Query(description="`next` of the previous page.")]


@router.get(
    "/relations/{name}",
    response_model=RelationRows,
    summary="A relation's tuples, filtered by bound arguments (`?column=value`), paginated",
    description=(
        "Column filters: any query parameter other than `limit`, `cursor` and `format` names a "
        "column and the value it must have: `?x=1` (a column's name, as `GET /v1/relations` "
        "lists it: its `.decl` name, the variable of the first rule deriving it, or `c0`, "
        "`c1`, ...) or `?@0=1` (its position). Several filters must all hold. Numbers are "
        "64-bit decimal integers; symbols are matched exactly. Pages follow `next`."
    ),
    responses={200: {"content": {NDJSON: {}, "text/csv": {}}}},
)
async def get_relation(
    name: Annotated[str, Path()],
    request: Request,
    runtime: RuntimeDep,
    format: Format = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> Response:
    fmt = _format(request, format)
    page_size = min(limit or runtime.settings.page_size, runtime.settings.page_size)

    def read(m: Materialization, epoch: int) -> tuple[RelationInfo, list[tuple], Any, int]:
        info = m.analyzed.relations.get(name)
        if info is None or info.internal:
            raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
        after = None if cursor is None else decode_cursor(cursor, info.types, epoch)
        bound = _filters(request, info.column_names, info.types)
        key = _engine_key(m, info.types, bound)
        if key is None:
            return info, [], None, epoch
        store = m.state[name]
        if not key:
            rows, last = relation_page(store, info.types, m.symbols, after, page_size)
            return info, rows, last, epoch
        decode = m.symbols.decoder(info.types)
        rows, last = _page(map(decode, store.select(key)), after, page_size)
        return info, rows, last, epoch

    def respond() -> Response:
        info, rows, last, epoch = runtime.read(read)
        return _page_response(
            fmt,
            {"relation": name, "epoch": epoch},
            list(info.column_names),
            rows,
            None if last is None else encode_cursor(epoch, last),
            RelationRows,
        )

    return await _answered(runtime, respond)


def _engine_key(m, types: tuple[str, ...], bound: dict[int, Any]) -> dict[int, int] | None:
    """Bound values as engine values; None when nothing can match (a symbol never seen, or
    two different values for one column)."""
    key: dict[int, int] = {}
    for column, value in bound.items():
        if value is None:
            return None
        if types[column] == "symbol":
            value = m.symbols.lookup(value)
            if value is None:
                return None
        elif types[column] == "unsigned":
            value = wrap64(value)
        key[column] = value
    return key


@router.post(
    "/query",
    dependencies=[Depends(require_json)],
    response_model=QueryOut,
    summary='Answer a conjunctive query (`tc("a", x), !edge("a", x)`)',
    responses={200: {"content": {NDJSON: {}, "text/csv": {}}}},
)
async def post_query(
    body: QueryIn, request: Request, runtime: RuntimeDep, format: Format = None
) -> Response:
    fmt = _format(request, format)
    if unpaired_surrogate(body.query) is not None:
        # The answer echoes the query, and UTF-8 cannot encode the surrogate.
        raise Problem(
            400, INVALID_TEXT, "the query holds an unpaired surrogate: it is not Unicode text"
        )
    settings = runtime.settings
    page_size = min(body.limit or settings.page_size, settings.page_size)
    timeout = min(body.timeout or settings.query_timeout_seconds, settings.query_timeout_seconds)
    deadline = time.monotonic() + timeout

    def read(m: Materialization, epoch: int) -> tuple[QueryResult, int]:
        query = compile_query(body.query, m.analyzed)
        try:
            result = evaluate_query(
                query,
                m.analyzed,
                m.state,
                m.symbols,
                # One deadline for the request, however often a publication restarts it.
                timeout=max(deadline - time.monotonic(), 0.001),
                max_rows=settings.query_max_rows,
            )
        except QueryTimeout:
            raise QueryTimeout(timeout) from None
        return result, epoch

    def respond() -> Response:
        result, epoch = runtime.read(read)
        after = None if body.cursor is None else decode_cursor(body.cursor, result.types, epoch)
        rows, last = _page(iter(result.rows), after, page_size)
        return _page_response(
            fmt,
            {"query": body.query, "epoch": epoch, "seconds": result.seconds},
            list(result.columns),
            rows,
            None if last is None else encode_cursor(epoch, last),
            QueryOut,
        )

    return await _answered(runtime, respond)


@router.get(
    "/explain/{name}",
    response_model=ExplainOut,
    summary="Why a tuple holds (a proof) or why it does not (each rule's first failing literal)",
    description=(
        "The tuple is given as for `GET /v1/relations/{name}`, one filter per column "
        "(`?x=1&y=2` or `?@0=1&@1=2`), every column bound. A proof is a graph: `nodes[0]` "
        "is the tuple, each node's `premises` index the tuples of its rule instance's positive "
        "atoms, strictly older within a stratum, down to facts. Errors: `explain_too_deep`, "
        "`explain_too_large`, `query_timeout`."
    ),
)
async def get_explain(
    name: Annotated[str, Path()], request: Request, runtime: RuntimeDep
) -> Response:
    settings = runtime.settings
    timeout = settings.query_timeout_seconds
    deadline = time.monotonic() + timeout

    def read(m: Materialization, epoch: int) -> dict[str, Any]:
        started = time.monotonic()
        info = m.analyzed.relations.get(name)
        if info is None or info.internal:
            raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
        bound = _filters(request, info.column_names, info.types)
        missing = [info.column_names[c] for c in range(info.arity) if c not in bound]
        if missing or any(value is None for value in bound.values()):
            raise Problem(
                400,
                UNKNOWN_COLUMN,
                f"give one value for each column of `{name}` (missing: {', '.join(missing)})",
            )
        row = tuple(bound[c] for c in range(info.arity))
        explainer = Explainer(m.analyzed, m.state, m.symbols, deadline)
        try:
            encoded = explainer.encode(name, row)
            holds = explainer.holds(name, encoded)
            proof = explainer.explain(name, encoded) if holds else None
            failures = None if holds else explainer.why_not(name, encoded)
        except QueryTimeout:
            raise QueryTimeout(timeout) from None
        except ExplainError as error:
            status = 500 if error.code == INTERNAL_ERROR else 422
            raise Problem(status, error.code, error.message) from None
        return {
            "relation": name,
            "row": list(row),
            "holds": holds,
            "proof": None if proof is None else proof.as_json(),
            "why_not": None if failures is None else [f.as_json() for f in failures],
            "epoch": epoch,
            "seconds": time.monotonic() - started,
        }

    def respond() -> Response:
        return JSONResponse(runtime.read(read))

    return await _answered(runtime, respond)


@router.get("/epochs", response_model=EpochsOut, summary="Epochs, most recent first")
def get_epochs(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(gt=0, le=1000)] = 100,
    before: Annotated[int | None, Query(description="Only epochs numbered below this.")] = None,
) -> EpochsOut:
    rows = runtime.epochs(limit=limit + 1, before=before)
    more = len(rows) > limit
    rows = rows[:limit]
    return EpochsOut(
        epochs=[EpochRecord.model_validate(r) for r in rows],
        next=rows[-1]["number"] if more and rows else None,
    )


@router.get("/epochs/{number}", response_model=EpochRecord, summary="One epoch")
def get_epoch(number: int, runtime: RuntimeDep) -> EpochRecord:
    row = runtime.epoch_row(number)
    if row is None:
        raise Problem(404, UNKNOWN_EPOCH, f"there is no epoch {number}")
    return EpochRecord.model_validate(row)
