"""`/v1/changes`: the change feed, every epoch's changes after a given one, paginated.

Each epoch commits its change set with it (`service.change_sets`), so the feed holds exactly
the epochs that committed, and folding it from epoch 0 gives the relations the service holds.
Reads stop at the published epoch: an epoch committed but not yet published is not shown.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Annotated

from fastapi import Query
from fastapi.responses import Response

from service.api.common import flat_json_array, json_row
from service.api.deps import RuntimeDep, answered, read_router
from service.errors import CHANGES_EXPIRED, INVALID_CURSOR, INVALID_REQUEST, UNKNOWN_EPOCH, Problem
from service.runtime import MAX_EPOCH
from service.schemas import ChangeGroup, ChangesOut
from service.store.repository import ChangeItem, ChangePosition

reads = read_router()

MAX_RELATIONS = 100
"""Relations one read may name."""


@reads.get(
    "/changes",
    response_model=ChangesOut,
    summary="The change feed: every epoch's changes after `since`, paginated",
    description=(
        "Per epoch after `since`, in order, the rows each relation lost (`retracted`) and "
        "gained (`inserted`), inputs and derived relations alike. `since=-1` (the default) "
        "starts before epoch 0, whose changes are the initial program's: folding the feed "
        "from there gives every relation as the service holds it. A group with `reset` true "
        "says to clear everything first (a restart came up without a quarantined program; "
        "the epoch's groups hold the whole state). Follow `next` while it is not null, then "
        "poll with `since` set to `through`. Change sets older than the retention "
        "(`REASONER_CHANGE_RETENTION_EPOCHS`) are refused with 410 `changes_expired`, whose "
        "`horizon` is the newest epoch no longer kept: read the relations afresh, then "
        "follow from the epoch they were read at."
    ),
)
async def get_changes(
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
    digest = _digest(names)
    page_size = min(limit or runtime.settings.page_size, runtime.settings.page_size)

    def respond() -> Response:
        epoch = runtime.published_epoch()
        if since > epoch:
            raise Problem(
                404, UNKNOWN_EPOCH, f"epoch {since} is not published yet (the last is {epoch})"
            )
        start = ChangePosition(since + 1) if cursor is None else _decode(cursor, digest)
        if start.epoch > epoch + 1:  # a next page is never past the published epoch
            raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued")
        page = runtime.store.change_page(start, epoch, names, page_size)
        if page.horizon >= start.epoch:
            raise Problem(
                410,
                CHANGES_EXPIRED,
                f"the change sets of epochs up to {page.horizon} are no longer kept: read the "
                f"relations at epoch {epoch}, then follow the feed from there",
                horizon=page.horizon,
                epoch=epoch,
            )
        body = ChangesOut(
            since=since,
            epoch=epoch,
            through=epoch if page.next is None else page.next.epoch - 1,
            next=None if page.next is None else _encode(page.next, digest),
            changes=_groups(page.items),
        )
        return Response(body.model_dump_json(), media_type="application/json")

    return await answered(runtime, respond)


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
    text = json.dumps([position.epoch, position.seq, position.offset, digest])
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def _decode(cursor: str, digest: str) -> ChangePosition:
    """A cursor comes back from the client: decoded without recursion and checked."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        fields = flat_json_array(base64.urlsafe_b64decode(padded.encode("ascii")).decode())
    except (ValueError, binascii.Error, UnicodeError):
        raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued") from None
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


def _groups(items: list[ChangeItem]) -> list[ChangeGroup]:
    """Items as groups, one per epoch and relation (a reset mark alone)."""
    groups: list[ChangeGroup] = []
    for item in items:
        if item.relation is None:
            groups.append(ChangeGroup(epoch=item.epoch, reset=True))
            continue
        last = groups[-1] if groups else None
        if last is None or (last.epoch, last.relation) != (item.epoch, item.relation):
            last = ChangeGroup(epoch=item.epoch, relation=item.relation)
            groups.append(last)
        (last.inserted if item.present else last.retracted).extend(map(json_row, item.rows))
    return groups
