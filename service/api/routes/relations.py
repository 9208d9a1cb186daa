"""`/v1/relations`: the relations, their tuples (filtered, paginated), and bulk loads of
facts as `.facts` or CSV bodies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from reasoner import (
    SYMBOL,
    AdtType,
    Constants,
    Delta,
    Materialization,
    RecordError,
    RecordType,
    RelationInfo,
    ValueType,
    relation_page,
    relation_reads,
    storage_type,
)
from reasoner.errors import TYPE_MISMATCH, UNKNOWN_RELATION
from service.api.bodies import (
    CSV_MEDIA_TYPE,
    FACTS_MEDIA_TYPES,
    facts_body,
    media_type,
    parse_rows,
    parse_untyped_rows,
    unsupported,
)
from service.api.common import (
    decode_cursor,
    encode_cursor,
    epoch_out,
)
from service.api.deps import (
    Changes,
    RuntimeDep,
    answered,
    apply_delta,
    read_router,
    write_router,
)
from service.api.paging import (
    NDJSON,
    CsvGuard,
    Cursor,
    Format,
    Limit,
    bound_arguments,
    page,
    page_response,
    response_format,
    takes_column_filters,
)
from service.api.past_reads import diff_since, epoch_asked, is_kept, past_page
from service.core.runtime import Runtime
from service.problems import (
    INVALID_CURSOR,
    Problem,
    clip,
    goal_directed,
    no_past_of_goal_directed,
)
from service.schemas import (
    ColumnOut,
    EpochOut,
    ReadOut,
    RelationOut,
    RelationRows,
    RelationsOut,
)

reads = read_router()
writes = write_router()


@reads.get("/relations", response_model=RelationsOut, summary="Every relation of the program")
def get_relations(runtime: RuntimeDep) -> RelationsOut:
    with runtime.reading() as (m, epoch):
        analyzed = m.analyzed
        dependencies = relation_reads(analyzed)
        relations = [
            RelationOut(
                name=name,
                arity=info.arity,
                columns=[
                    ColumnOut(
                        name=c, type=storage_type(t), record=None if isinstance(t, str) else t.name
                    )
                    for c, t in zip(info.column_names, info.value_types, strict=True)
                ],
                size=m.size(name),
                stratum=analyzed.stratum_of.get(name),
                derived=name in analyzed.stratum_of,
                input=info.is_input,
                output=info.is_output,
                goal_directed=name in analyzed.goal_directed,
                reads=[ReadOut(relation=r, kind=k) for r, k in dependencies.get(name, ())],
            )
            for name, info in analyzed.relations.items()
            if not info.internal
        ]
    return RelationsOut(epoch=epoch, relations=relations)


@reads.get(
    "/relations/{name}",
    response_model=RelationRows,
    summary="A relation's tuples, filtered by bound arguments (`?column=value`), paginated",
    description=(
        "Column filters: any query parameter other than `limit`, `cursor`, `format`, `epoch` "
        "and `csv_guard` names a column and the value it must have: `?x=1` (a column's name, "
        "as `GET /v1/relations` lists it: its `.decl` name, the variable of the first rule "
        "deriving it, or `c0`, `c1`, ...) or `?@0=1` (its position). Several filters must all "
        "hold. Numbers are 64-bit decimal integers, floats as C's `strtod` reads them (`1.5`, "
        "`-0`, `inf`); "
        "symbols and records are matched exactly. Pages follow `next`."
    ),
    responses={200: {"content": {NDJSON: {}, "text/csv": {}}}},
)
@takes_column_filters
async def get_relation(
    name: Annotated[str, Path()],
    request: Request,
    runtime: RuntimeDep,
    format: Format = None,
    csv_guard: CsvGuard = False,
    limit: Limit = None,
    cursor: Cursor = None,
    at: Annotated[
        int | None,
        Query(
            alias="epoch",
            ge=0,
            description="Read the relation as it was at this recent epoch (one of the last "
            "`REASONER_EPOCH_HISTORY`); default: the published one.",
        ),
    ] = None,
) -> Response:
    fmt = response_format(request, format)
    page_size = min(limit or runtime.settings.page_size, runtime.settings.page_size)
    wanted = epoch_asked(at, cursor)

    def read(m: Materialization, epoch: int) -> tuple[RelationInfo, list[tuple], Any, int]:
        info = m.analyzed.relations.get(name)
        if info is None or info.internal:
            raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
        if name in m.analyzed.goal_directed:
            raise goal_directed(name)
        history = runtime.settings.epoch_history
        if wanted is not None and wanted != epoch and name in m.analyzed.magic:
            raise no_past_of_goal_directed(epoch)
        if wanted is not None and wanted != epoch and is_kept(history, wanted, epoch, at):
            return _read_past(runtime, m, info, request, cursor, wanted, epoch, page_size)
        after = None if cursor is None else decode_cursor(cursor, info.types, epoch)
        if after is not None and m.encode(name, after) is None:
            raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued")
        bound = bound_arguments(request, info.column_names, info.types)
        key = _engine_key(m, info.value_types, bound)
        if key is None:
            return info, [], None, epoch
        store = m.state[name]
        if not key:
            rows, last = relation_page(store, info.value_types, m.symbols, after, page_size)
            return info, rows, last, epoch
        decode = m.symbols.decoder(info.value_types)
        rows, last = page(map(decode, store.select(key)), after, page_size)
        return info, rows, last, epoch

    def respond() -> Response:
        info, rows, last, epoch = runtime.read(read)
        return page_response(
            fmt,
            {"relation": name, "epoch": epoch},
            list(info.column_names),
            rows,
            None if last is None else encode_cursor(epoch, last),
            RelationRows,
            csv_guard=csv_guard,
        )

    return await answered(runtime, respond)


def _read_past(
    runtime: Runtime,
    m: Materialization,
    info: RelationInfo,
    request: Request,
    cursor: str | None,
    wanted: int,
    epoch: int,
    page_size: int,
) -> tuple[RelationInfo, list[tuple], Any, int]:
    """A page of `info`'s relation as it was at epoch `wanted` (`service.api.past_reads`)."""
    after = None if cursor is None else decode_cursor(cursor, info.types, wanted)
    bound = bound_arguments(request, info.column_names, info.types)
    key = _engine_key(m, info.value_types, bound)
    if key is None:
        return info, [], None, wanted
    diff = diff_since(runtime.store, info, wanted, epoch)
    rows, last = past_page(m, info, key, bound, diff, after, page_size)
    return info, rows, last, wanted


def _engine_key(
    m: Materialization, types: tuple[ValueType, ...], bound: dict[int, Any]
) -> dict[int, int] | None:
    """Bound values as engine values; None when nothing can match (a symbol or a record
    never seen, or two different values for one column)."""
    constants = Constants(m.symbols)
    key: dict[int, int] = {}
    for column, value in bound.items():
        if value is None:
            return None
        kind = types[column]
        try:
            key[column] = constants.engine(value, kind)
        except RecordError as error:
            assert isinstance(kind, RecordType | AdtType)  # only a record's text is parsed
            raise Problem(
                400,
                TYPE_MISMATCH,
                f"column {column + 1} is of type `{kind.name}`: {error} at character "
                f"{error.offset + 1} of {clip(value)!r}",
            ) from None
        if key[column] < 0 and (kind == SYMBOL or isinstance(kind, RecordType | AdtType)):
            return None  # a private id: a value no row holds
    return key


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
    if info is not None and info.internal:
        raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
    kind, params = media_type(request)
    if kind != CSV_MEDIA_TYPE and kind not in FACTS_MEDIA_TYPES:
        raise unsupported(kind, (*FACTS_MEDIA_TYPES, CSV_MEDIA_TYPE))
    body = await facts_body(request)
    if info is None:  # a new relation, as a JSON insert makes one (a retraction: an error)
        return await run_in_threadpool(
            parse_untyped_rows, body, name, kind, params, delimiter=delimiter, header=header
        )
    return await run_in_threadpool(
        parse_rows, body, info, name, kind, params, delimiter=delimiter, header=header
    )


Delimiter = Annotated[
    str | None, Query(description="Field separator of a `.facts` body (default: tab).")
]


Header = Annotated[bool | None, Query(description="Whether a CSV body starts with a header line.")]


@writes.post(
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
    return epoch_out(await apply_delta(runtime, request, Delta(insert={name: rows}), changes))


@writes.delete(
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
    return epoch_out(await apply_delta(runtime, request, Delta(retract={name: rows}), changes))
