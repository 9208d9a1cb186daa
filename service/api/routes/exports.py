"""`GET /v1/relations/{name}/export` and `POST /v1/query/export`: a whole relation or query
answer in one streamed response, as CSV, NDJSON, an Arrow IPC stream or Parquet.

A page holds at most `REASONER_PAGE_SIZE` rows, so reading a million rows took a thousand
requests. An export takes the relation's rows at the published epoch as int64 columns inside
one read (a copy of about 8 bytes a value, the epoch named in `X-Epoch`), then writes them a
batch at a time (`service.api.export`), holding no lock: writes go on meanwhile. A query's
export streams the answer its pages read (`service.core.query_answers`). Exports run
`REASONER_MAX_CONCURRENT_EXPORTS` at a time, beside the reads' own admission (one more is 503
`too_busy`), so that long streams never take the reads' places.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Generator, Iterator
from typing import Annotated, Literal

from fastapi import Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse
from starlette.background import BackgroundTask

from reasoner import Materialization, RelationInfo, SymbolTable, export, pl
from reasoner.errors import UNKNOWN_RELATION
from service.api.bodies import require_json
from service.api.deps import RuntimeDep, read_router
from service.api.export import MEDIA_TYPES, encoded
from service.api.paging import CsvGuard
from service.api.routes.query import answer_query
from service.core.runtime import Runtime
from service.problems import INVALID_REQUEST, Problem, goal_directed
from service.schemas import QueryIn

reads = read_router()

BatchesMaker = Callable[[], Iterator["pl.DataFrame"]]
"""What makes an export's batches, once its stream starts."""

ExportFormat = Annotated[
    Literal["csv", "ndjson", "arrow", "parquet"],
    Query(description="`csv` (with a header), `ndjson`, `arrow` (an IPC stream) or `parquet`."),
]


class _Slot:
    """One export's place, given back once: when its stream ends, when the response is over
    (the client may have left mid-stream: the server then stops sending), or when a stream
    that never started is collected."""

    def __init__(self, slots: threading.BoundedSemaphore) -> None:
        self._slots = slots
        self._held = True
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._held:
                self._held = False
                self._slots.release()


def _take_slot(request: Request, runtime: Runtime) -> _Slot:
    slots: threading.BoundedSemaphore = request.app.state.export_slots
    if not slots.acquire(blocking=False):
        raise runtime.too_busy(
            f"{runtime.settings.max_concurrent_exports} exports are streaming; retry shortly"
        )
    return _Slot(slots)


def _streamed(
    slot: _Slot,
    fmt: str,
    csv_guard: bool,
    epoch: int,
    filename: str,
    rows: int,
    batches: BatchesMaker | None,
) -> StreamingResponse:
    """The response streaming `batches()` in `fmt`, holding `slot` until it ends; `batches`
    None: no columns (a nullary relation, a query without variables), `rows` rows of none."""

    def chunks() -> Generator[bytes]:
        try:
            if batches is None:  # a header of no columns, then an empty row per row
                yield (b"\n" + b"\n" * rows) if fmt == "csv" else b"[]\n" * rows
                return
            yield from encoded(batches(), fmt, csv_guard)
        finally:
            slot.release()

    stream = chunks()
    weakref.finalize(stream, slot.release)

    def ended() -> None:
        """After the response, sent or cut short by the client: the place, and the rows the
        stream holds, go at once (not when a collection finds the stream)."""
        slot.release()
        with contextlib.suppress(ValueError):  # still running on a worker: it ends by itself
            stream.close()

    extension = {"arrow": "arrows"}.get(fmt, fmt)
    headers = {
        "X-Epoch": str(epoch),
        "Content-Disposition": f'attachment; filename="{filename}.{extension}"',
    }
    return StreamingResponse(
        stream, media_type=MEDIA_TYPES[fmt], headers=headers, background=BackgroundTask(ended)
    )


def _no_columns_in(fmt: str, what: str) -> None:
    if fmt in ("arrow", "parquet"):
        raise Problem(400, INVALID_REQUEST, f"{what} has no columns: export it as csv or ndjson")


@reads.get(
    "/relations/{name}/export",
    summary="A whole relation, streamed (CSV, NDJSON, Arrow, Parquet)",
    description=(
        "Every row of the relation at the published epoch (`X-Epoch`), in storage order, in "
        "one response with no page cap. Values as a page gives them; Arrow and Parquet keep "
        "the columns' types (int64, uint64, float64, UTF-8 for symbols and records). A nullary "
        "relation is exported as CSV or NDJSON only."
    ),
    response_class=StreamingResponse,
    responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}},
)
async def export_relation(
    name: Annotated[str, Path()],
    request: Request,
    runtime: RuntimeDep,
    format: ExportFormat = "csv",
    csv_guard: CsvGuard = False,
) -> Response:
    slot = _take_slot(request, runtime)

    def read(
        m: Materialization, epoch: int
    ) -> tuple[RelationInfo, export.Snapshot, SymbolTable, int]:
        info = m.analyzed.relations.get(name)
        if info is None or info.internal:
            raise Problem(404, UNKNOWN_RELATION, f"relation `{name}` is not in the program")
        if name in m.analyzed.goal_directed:
            raise goal_directed(name)
        if info.arity == 0:
            _no_columns_in(format, f"`{name}`")
        return info, export.snapshot(m.state[name]), m.symbols, epoch

    try:
        async with runtime.read_slot():
            info, taken, symbols, epoch = await run_in_threadpool(runtime.read, read)
    except BaseException:
        slot.release()
        raise
    batches = None
    if info.arity:
        batches = functools.partial(
            export.frames, taken, info.column_names, info.value_types, symbols
        )
    return _streamed(slot, format, csv_guard, epoch, name, taken.rows, batches)


@reads.post(
    "/query/export",
    dependencies=[Depends(require_json)],
    summary="A query's whole answer, streamed (CSV, NDJSON, Arrow, Parquet)",
    description=(
        "The answer `POST /v1/query` pages, sorted, in one response with no page cap (`limit` "
        "and `cursor` have no place here); the answer is evaluated once per (query, epoch) "
        "for both. A query without variables is exported as CSV or NDJSON only."
    ),
    response_class=StreamingResponse,
    responses={200: {"content": {media: {} for media in MEDIA_TYPES.values()}}},
)
async def export_query(
    body: QueryIn,
    request: Request,
    runtime: RuntimeDep,
    format: ExportFormat = "csv",
    csv_guard: CsvGuard = False,
) -> Response:
    if body.limit is not None or body.cursor is not None:
        raise Problem(400, INVALID_REQUEST, "an export is the whole answer: no limit or cursor")
    slot = _take_slot(request, runtime)
    try:
        async with runtime.read_slot():
            result, _, epoch = await run_in_threadpool(answer_query, runtime, body)
        if not result.columns:
            _no_columns_in(format, "a query without variables")
    except BaseException:
        slot.release()
        raise
    batches = None
    if result.columns:
        batches = functools.partial(export.answer_frames, result.rows, result.columns, result.types)
    return _streamed(slot, format, csv_guard, epoch, "query", len(result.rows), batches)
