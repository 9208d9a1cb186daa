"""`/v1/query` and `/v1/explain`: queries over the published epoch, and why a tuple holds
or not."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from reasoner import (
    Constants,
    Explainer,
    ExplainError,
    Materialization,
    QueryRelations,
    QueryResult,
    QueryTimeout,
    compile_query,
    evaluate_query,
    floats,
)
from reasoner.errors import UNKNOWN_RELATION
from service.api.bodies import (
    require_json,
)
from service.api.common import (
    decode_cursor,
    encode_cursor,
    unpaired_surrogate,
)
from service.api.deps import (
    RuntimeDep,
    answered,
    read_router,
)
from service.api.paging import (
    NDJSON,
    CsvGuard,
    Format,
    bound_arguments,
    page_of_sorted,
    page_response,
    response_format,
    takes_column_filters,
)
from service.api.past_reads import PastRelations, epoch_asked, is_kept
from service.core.runtime import Runtime
from service.problems import (
    EPOCH_UNAVAILABLE,
    INTERNAL_ERROR,
    INVALID_TEXT,
    UNKNOWN_COLUMN,
    UNKNOWN_EPOCH,
    Problem,
    goal_directed,
    no_past_of_goal_directed,
)
from service.schemas import (
    ExplainOut,
    QueryIn,
    QueryOut,
)

reads = read_router()


def answer_query(runtime: Runtime, body: QueryIn) -> tuple[QueryResult, bool, int]:
    """The whole answer of `body`'s query at the epoch it asks (its cursor's, its `epoch`,
    else the published one), whether it was kept from an earlier request, and that epoch
    (`service.core.query_answers`); call it on a worker thread."""
    settings = runtime.settings
    timeout = min(body.timeout or settings.query_timeout_seconds, settings.query_timeout_seconds)
    deadline = time.monotonic() + timeout
    wanted = epoch_asked(body.epoch, body.cursor)

    def read(m: Materialization, epoch: int) -> tuple[QueryResult, bool, int]:
        query = compile_query(body.query, m.analyzed)
        constants = Constants(m.symbols)
        relations: QueryRelations = m.state
        history = settings.epoch_history
        if wanted is not None and wanted != epoch and query.relations() & m.analyzed.magic:
            raise no_past_of_goal_directed(epoch)
        if wanted is not None and wanted != epoch and is_kept(history, wanted, epoch, body.epoch):
            relations = PastRelations(runtime.store, m, wanted, epoch, constants)
            epoch = wanted

        def evaluate() -> QueryResult:
            return evaluate_query(
                query,
                m.analyzed,
                relations,
                m.symbols,
                # One deadline for the request, however often a publication restarts it.
                timeout=max(deadline - time.monotonic(), 0.001),
                max_rows=settings.query_max_rows,
                constants=constants,
            )

        try:
            result, kept = runtime.query_answers.answer((body.query, epoch), evaluate, deadline)
        except QueryTimeout:
            raise QueryTimeout(timeout) from None
        return result, kept, epoch

    return runtime.read(read)


@reads.post(
    "/query",
    dependencies=[Depends(require_json)],
    response_model=QueryOut,
    summary='Answer a conjunctive query (`tc("a", x), !edge("a", x)`)',
    responses={200: {"content": {NDJSON: {}, "text/csv": {}}}},
)
async def post_query(
    body: QueryIn,
    request: Request,
    runtime: RuntimeDep,
    format: Format = None,
    csv_guard: CsvGuard = False,
) -> Response:
    fmt = response_format(request, format)
    if unpaired_surrogate(body.query) is not None:
        # The answer echoes the query, and UTF-8 cannot encode the surrogate.
        raise Problem(
            400, INVALID_TEXT, "the query holds an unpaired surrogate: it is not Unicode text"
        )
    page_size = min(body.limit or runtime.settings.page_size, runtime.settings.page_size)

    def respond() -> Response:
        result, kept, epoch = answer_query(runtime, body)
        after = None if body.cursor is None else decode_cursor(body.cursor, result.types, epoch)
        rows, last = page_of_sorted(result.rows, after, page_size)
        return page_response(
            fmt,
            {"query": body.query, "epoch": epoch, "seconds": result.seconds, "kept": kept},
            list(result.columns),
            rows,
            None if last is None else encode_cursor(epoch, last),
            QueryOut,
            csv_guard=csv_guard,
        )

    return await answered(runtime, respond)


@reads.get(
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
@takes_column_filters
async def get_explain(
    name: Annotated[str, Path()],
    request: Request,
    runtime: RuntimeDep,
    at: Annotated[
        int | None,
        Query(
            alias="epoch",
            ge=0,
            description="The epoch the answer must be of. A proof needs the derivations, "
            "which only the published epoch has: another is refused (410 "
            "`epoch_unavailable`; 404 `unknown_epoch` if not yet published), never answered "
            "at the published one instead.",
        ),
    ] = None,
) -> Response:
    settings = runtime.settings
    timeout = settings.query_timeout_seconds
    deadline = time.monotonic() + timeout

    def read(m: Materialization, epoch: int) -> dict[str, Any]:
        started = time.monotonic()
        if at is not None and at > epoch:
            raise Problem(
                404, UNKNOWN_EPOCH, f"epoch {at} is not published yet (the last is {epoch})"
            )
        if at is not None and at != epoch:
            raise Problem(
                410,
                EPOCH_UNAVAILABLE,
                f"explain answers at the published epoch only ({epoch}), not at epoch {at}",
                epoch=epoch,
            )
        info = m.analyzed.relations.get(name)
        if info is None or info.internal:
            raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
        if name in m.analyzed.goal_directed:
            raise goal_directed(name)
        bound = bound_arguments(request, info.column_names, info.types)
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
            "row": list(explainer.decode(name, encoded)),  # a record's text made canonical
            "holds": holds,
            "proof": None if proof is None else proof.as_json(),
            "why_not": None if failures is None else [f.as_json() for f in failures],
            "epoch": epoch,
            "seconds": time.monotonic() - started,
        }

    def respond() -> Response:
        return JSONResponse(floats.json_safe(runtime.read(read)))

    return await answered(runtime, respond)
