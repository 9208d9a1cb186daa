"""`/v1/changes`: the change feed, every epoch's changes after a given one, paginated.

Each epoch commits its change set with it (`service.core.change_sets`), so the feed holds exactly
the epochs that committed, and folding it from epoch 0 gives the relations the service holds.
Reads stop at the published epoch: an epoch committed but not yet published is not shown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterable, Callable
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from service.api.common import cursor_fields, cursor_text
from service.api.deps import RuntimeDep, answered, read_router
from service.api.security import bearer_token
from service.core.epoch_rows import MAX_EPOCH
from service.core.runtime import Runtime
from service.feed.admission import retry_after
from service.feed.events import change_groups
from service.feed.stream import expired_problem
from service.problems import (
    INVALID_CURSOR,
    INVALID_REQUEST,
    RATE_LIMITED,
    UNKNOWN_EPOCH,
    Problem,
)
from service.schemas import ChangeGroup, ChangesOut
from service.store.change_pages import ChangePosition, InvalidPosition

reads = read_router()

MAX_RELATIONS = 100
"""Relations one read may name."""
EVENT_STREAM = "text/event-stream"


@reads.get(
    "/changes",
    response_model=ChangesOut,
    responses={200: {"content": {EVENT_STREAM: {"schema": {"type": "string"}}}}},
    summary="The change feed: every epoch's changes after `since`, paginated or live",
    description=(
        "Per epoch after `since`, in order, the rows each relation lost (`retracted`) and "
        "gained (`inserted`), inputs and derived relations alike. `since=-1` (the default) "
        "starts before epoch 0, whose changes are the initial program's: folding the feed "
        "from there gives every relation as the service holds it. A group with `reset` true "
        "says to clear everything first (a restart came up without a quarantined program; "
        "the epoch's groups hold the whole state). Follow `next` while it is not null, then "
        "poll with `since` set to `through`. Change sets older than the retention "
        "(`REASONER_CHANGE_RETENTION_EPOCHS`) are refused with 410 `changes_expired`, whose "
        "`horizon` is the newest epoch no longer kept: read the relations at the epoch the "
        "problem names (`?epoch=`, so that every relation is read at that one epoch), then "
        "follow from there. "
        "With `Accept: text/event-stream` the feed is live (Server-Sent Events): it replays "
        "the epochs after `since` (or after `Last-Event-ID`, when a client reconnects), then "
        "sends each epoch as it is published: one `epoch` event per epoch, even an empty one, "
        "whose id is the epoch's number and whose data is `{epoch, reset, changes}`; an epoch "
        "of more than 10,000 rows first sends id-less `part` events (a client cut off in the "
        "middle of an epoch drops them: it resumes before that epoch). `: ping` comments keep "
        "an idle stream open; `expired` (a problem document) ends a stream that fell behind "
        "the retention, `shutdown` one whose server stops. At most "
        "`REASONER_FEED_MAX_CLIENTS` streams are served at once (503 `too_busy` past it), "
        "and a token (or, without one, a client address) that opens streams faster than "
        "`REASONER_FEED_CONNECTS_PER_SECOND` past a burst of "
        "`REASONER_FEED_CONNECT_BURST` is refused (429 `rate_limited`); both say when to "
        "retry (`Retry-After`)."
    ),
)
async def get_changes(
    request: Request,
    runtime: RuntimeDep,
    since: Annotated[int, Query(ge=-1, description="The last epoch already seen (-1: none).")] = -1,
    relations: Annotated[
        str | None,
        Query(description=f"Comma-separated relation names (at most {MAX_RELATIONS})."),
    ] = None,
    limit: Annotated[int | None, Query(gt=0, description="Rows per page at most.")] = None,
    cursor: Annotated[str | None, Query(description="`next` of the previous page.")] = None,
) -> Response:
    names = _relation_names(relations)
    if EVENT_STREAM in request.headers.get("accept", ""):
        if cursor is not None or limit is not None:
            raise Problem(
                400,
                INVALID_REQUEST,
                "a live feed takes no `cursor` or `limit`: it sends every epoch",
            )
        _admit_connect(request, runtime)
        return await _live(request, runtime, since, names)
    digest = _digest(names)
    page_size = min(limit or runtime.settings.page_size, runtime.settings.page_size)

    def respond() -> Response:
        epoch = runtime.published_epoch()
        if cursor is None and since > epoch:
            raise Problem(
                404, UNKNOWN_EPOCH, f"epoch {since} is not published yet (the last is {epoch})"
            )
        start = ChangePosition(since + 1) if cursor is None else _decode(cursor, digest)
        if cursor is not None and start.epoch > epoch:  # never past the published epoch
            raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued")
        try:
            page = runtime.store.change_page(start, epoch, names, page_size)
        except InvalidPosition:
            raise Problem(
                400, INVALID_CURSOR, "the cursor is not one this service issued"
            ) from None
        if page.horizon >= start.epoch:
            raise expired_problem(page.horizon, epoch)
        body = ChangesOut(
            since=start.epoch - 1,
            epoch=epoch,
            through=epoch if page.next is None else page.next.epoch - 1,
            next=None if page.next is None else _encode(page.next, digest),
            changes=[ChangeGroup(**group) for group in change_groups(page.items)],
        )
        return Response(body.model_dump_json(), media_type="application/json")

    return await answered(runtime, respond)


async def _live(
    request: Request, runtime: Runtime, since: int, names: list[str] | None
) -> Response:
    """The live feed from `since` (or the client's `Last-Event-ID`, when it reconnects). Its
    client slot is taken before anything is awaited, so a burst cannot pass the limit."""
    after = since
    resumed = request.headers.get("last-event-id")
    if resumed is not None:
        after = _last_event_id(resumed)
    epoch = runtime.published_epoch()
    if after > epoch:
        raise Problem(
            404, UNKNOWN_EPOCH, f"epoch {after} is not published yet (the last is {epoch})"
        )
    feed = runtime.feed
    release = feed.clients.reserve()
    try:
        horizon = await run_in_threadpool(runtime.store.horizon)
        if horizon > after:  # first: a client told to wait would come back for nothing
            raise expired_problem(horizon, epoch)
        if release is None:
            raise runtime.too_busy(f"{feed.clients.limit} clients follow the feed; retry shortly")
        return _Admitted(
            feed.stream(runtime.store, after, names, request),
            release,
            media_type=EVENT_STREAM,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    except BaseException:
        if release is not None:
            release()
        raise


class _Admitted(StreamingResponse):
    """A stream that holds a client slot until it ends, however it ends (a stream never
    started still ends here)."""

    def __init__(
        self, content: AsyncIterable[bytes], release: Callable[[], None], **options: Any
    ) -> None:
        super().__init__(content, **options)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _admit_connect(request: Request, runtime: Runtime) -> None:
    """429 for a caller (its token, else its address) that opens streams too fast."""
    token = bearer_token(request.headers.get("authorization"))
    if token is not None:
        caller = "token:" + hashlib.blake2b(token.encode("utf-8", "surrogatepass")).hexdigest()
    else:
        caller = "address:" + (request.client.host if request.client else "")
    wait = runtime.feed.connects.admit(caller)
    if wait is not None:
        runtime.metrics.refused(RATE_LIMITED)
        raise Problem(
            429,
            RATE_LIMITED,
            "this client opens live feeds faster than "
            f"{runtime.settings.feed_connects_per_second:g} a second: reconnect later",
            headers={"Retry-After": retry_after(wait)},
        )


def _last_event_id(text: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"-?[0-9]{1,10}", text) or not -1 <= int(text) <= MAX_EPOCH:
        raise Problem(400, INVALID_REQUEST, "`Last-Event-ID` is an epoch number this feed sent")
    return int(text)


def _relation_names(relations: str | None) -> list[str] | None:
    if relations is None:
        return None
    names = sorted({name.strip() for name in relations.split(",")})
    if len(names) > MAX_RELATIONS or "" in names:
        raise Problem(
            400,
            INVALID_REQUEST,
            f"`relations` names 1 to {MAX_RELATIONS} relations, separated by commas",
        )
    return names


def _digest(names: list[str] | None) -> str:
    """What a cursor remembers of the relations it filters: a page of other relations from
    its position would skip changes."""
    text = "*" if names is None else "\n".join(names)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _encode(position: ChangePosition, digest: str) -> str:
    return cursor_text([position.epoch, position.seq, position.offset, digest])


def _decode(cursor: str, digest: str) -> ChangePosition:
    fields = cursor_fields(cursor)
    if (
        len(fields) != 4
        or not all(type(v) is int for v in fields[:3])
        or not 0 <= fields[0] <= MAX_EPOCH
        or not -1 <= fields[1] <= MAX_EPOCH
        or not 0 <= fields[2] <= MAX_EPOCH
    ):
        raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued")
    if fields[3] != digest:
        raise Problem(
            400, INVALID_CURSOR, "the cursor was issued for other `relations`: pass the same"
        )
    return ChangePosition(fields[0], fields[1], fields[2])
