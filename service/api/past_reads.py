"""Reads of a relation at a recent epoch (`?epoch=N`, and cursors of one), with no copy of
any state: the relation as published now, corrected by the change sets of the epochs after N.

Per row the change sets after N say how it first changed and how it last did: a row first
inserted after N was absent at N (and, present now, is left out), and a row first retracted
after N was present at N (and, absent now, is added back). A page merges the rows of the
current relation, less those, with the ones added back, in the order pages follow, so that it
costs its rows and the changes since N, not a pass over the relation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from reasoner import (
    Constants,
    Materialization,
    PastRelation,
    RelationInfo,
    Row,
    RowOrder,
    floats,
    frame_schema,
    pl,
    relation_page,
)
from service.api.common import cursor_epoch
from service.api.paging import page
from service.problems import EPOCH_UNAVAILABLE, INVALID_CURSOR, UNKNOWN_EPOCH, Problem
from service.store import segments
from service.store.change_pages import ChangesNotKept
from service.store.repository import Store

CURRENT_ROWS = 1000
"""Rows of the current relation read at once while a page is filled."""


def epoch_asked(at: int | None, cursor: str | None) -> int | None:
    """The epoch a read asks for: `epoch`, else its cursor's (a cursor keeps to its epoch);
    None: the published one."""
    if cursor is None:
        return at
    of_cursor = cursor_epoch(cursor)
    if at is not None and at != of_cursor:
        raise Problem(400, INVALID_CURSOR, f"the cursor reads epoch {of_cursor}, not epoch {at}")
    return of_cursor


def is_kept(history: int, wanted: int, epoch: int, asked: int | None) -> bool:
    """Whether epoch `wanted` can be read as it was, `epoch` being published: one of the last
    `history` ones. An epoch asked for by `epoch` (`asked`) that cannot is refused here; a
    cursor's is refused by `decode_cursor`, as a cursor of an epoch no longer published."""
    if wanted > epoch:
        raise Problem(
            404, UNKNOWN_EPOCH, f"epoch {wanted} is not published yet (the last is {epoch})"
        )
    if wanted >= epoch - history:
        return True
    if asked is None:
        return False
    raise Problem(
        410,
        EPOCH_UNAVAILABLE,
        f"epoch {wanted} is older than the last {history} epochs, which alone can be read as "
        "they were",
        epoch=epoch,
        history=history,
    )


@dataclass(frozen=True, slots=True)
class PastDiff:
    """How a relation at epoch N differs from the relation now."""

    gone: list[Row]
    """Rows present now that were absent at N."""
    back: list[Row]
    """Rows absent now that were present at N."""


def diff_since(store: Store, info: RelationInfo, wanted: int, epoch: int) -> PastDiff:
    """How `info`'s relation at epoch `wanted` differs from it at `epoch`, from the stored
    change sets between them: 410 when they are no longer kept, or when a reset epoch lies
    between (its change set is the whole state a rebuild came up with, not a difference)."""
    reset = next((n for n in store.reset_epochs() if wanted < n <= epoch), None)
    if reset is not None:
        raise Problem(
            410,
            EPOCH_UNAVAILABLE,
            f"epoch {reset} reset the state to what a rebuild came up with: epoch {wanted}, "
            "before it, cannot be read as it was",
            epoch=epoch,
            reset=reset,
        )
    try:
        entries = store.relation_changes(info.name, wanted, epoch)
    except ChangesNotKept as expired:
        raise Problem(
            410,
            EPOCH_UNAVAILABLE,
            f"the change sets after epoch {wanted} are no longer kept (up to epoch "
            f"{expired.horizon}): it cannot be read as it was",
            epoch=epoch,
            horizon=expired.horizon,
        ) from None
    return past_diff(info, entries, wanted)


def past_relation(
    m: Materialization, info: RelationInfo, diff: PastDiff, constants: Constants
) -> PastRelation:
    """The relation as `diff` says it was, for a query (`constants`: the query's own values,
    for a value of a row back that no table holds any more)."""
    kinds = info.value_types

    def engine(row: Row) -> tuple[int, ...]:
        return tuple(constants.engine(v, kind) for v, kind in zip(row, kinds, strict=True))

    return PastRelation(
        m.state[info.name], set(map(engine, diff.gone)), set(map(engine, diff.back))
    )


class PastRelations:
    """The relations a query reads, each as it was at epoch `wanted` (`epoch` being
    published), made the first time the query reads it: its change sets are read then."""

    def __init__(
        self, store: Store, m: Materialization, wanted: int, epoch: int, constants: Constants
    ) -> None:
        self.store = store
        self.m = m
        self.wanted = wanted
        self.epoch = epoch
        self.constants = constants
        self.made: dict[str, PastRelation] = {}

    def __getitem__(self, name: str) -> PastRelation:
        made = self.made.get(name)
        if made is None:
            info = self.m.analyzed.relations[name]
            if info.internal:  # no change set holds its rows
                raise Problem(
                    410,
                    EPOCH_UNAVAILABLE,
                    f"relation `{name}` is the engine's own: it cannot be read as it was",
                    epoch=self.epoch,
                )
            diff = diff_since(self.store, info, self.wanted, self.epoch)
            made = self.made[name] = past_relation(self.m, info, diff, self.constants)
        return made


def past_diff(info: RelationInfo, entries: Sequence[pl.DataFrame], epoch: int) -> PastDiff:
    """The difference the change-set entries (in order, stored columns and `present`) of the
    epochs after `epoch` make. A relation whose shape changed after `epoch` (a rule change
    reshaped it) cannot be read as it was: 410."""
    if not entries:
        return PastDiff([], [])
    shape = segments.stored_columns(pl.DataFrame(schema=frame_schema(info.types))).schema
    if any(entry.drop(segments.PRESENT).schema != shape for entry in entries):
        raise Problem(
            410,
            EPOCH_UNAVAILABLE,
            f"relation `{info.name}` changed shape after epoch {epoch}: it cannot be read as it "
            "was then",
            epoch=epoch,
        )
    log = pl.concat(entries, how="vertical", rechunk=False)
    values = [name for name in log.columns if name != segments.PRESENT]
    if not values:  # arity 0: the relation holds () or not
        first, last = bool(log[segments.PRESENT][0]), bool(log[segments.PRESENT][-1])
        return PastDiff([()] if first and last else [], [()] if not (first or last) else [])
    firsts = log.unique(subset=values, keep="first", maintain_order=True)
    lasts = log.unique(subset=values, keep="last", maintain_order=True)
    joined = firsts.join(lasts, on=values, suffix=":last")
    was, now = pl.col(segments.PRESENT), pl.col(segments.PRESENT + ":last")
    return PastDiff(
        gone=_rows(joined.filter(was & now).select(values)),
        back=_rows(joined.filter(~was & ~now).select(values)),
    )


def _rows(stored: pl.DataFrame) -> list[Row]:
    return segments.user_columns(stored).rows()


def past_page(
    m: Materialization,
    info: RelationInfo,
    key: dict[int, int],
    bound: dict[int, Any],
    diff: PastDiff,
    after: Row | None,
    limit: int,
) -> tuple[list[Row], Row | None]:
    """A page of the relation as it was, after `after`, in the order of the pages of the
    relation now: unfiltered, the value order of `reasoner.reads.pages`; filtered by `bound`
    (`key` its engine values), as the filtered reads of the route order theirs."""
    store = m.state[info.name]
    if key:
        decode = m.symbols.decoder(info.value_types)
        gone = set(map(floats.exact_row, diff.gone))
        kept = (row for row in map(decode, store.select(key)) if floats.exact_row(row) not in gone)
        back = [row for row in diff.back if all(row[c] == v for c, v in bound.items())]
        return page([*kept, *back], after, limit)
    order = RowOrder(info.value_types, m.symbols)

    def keyed(row: Row) -> tuple[tuple[int, ...], Row]:
        return tuple(order.cursor(row)), row

    gone_keys = {keyed(row)[0] for row in diff.gone}
    start = None if after is None else keyed(after)[0]
    returned = sorted((keyed(row) for row in diff.back), key=lambda pair: pair[0])
    later = [pair for pair in returned if start is None or pair[0] > start]
    now = (pair for pair in _current(m, info, order, after) if pair[0] not in gone_keys)
    merged = heapq.merge(now, later, key=lambda pair: pair[0])
    rows = [row for _, row in islice(merged, limit + 1)]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1]
    return rows, None


def _current(
    m: Materialization, info: RelationInfo, order: RowOrder, after: Row | None
) -> Iterator[tuple[tuple[int, ...], Row]]:
    """The relation's rows now after `after`, in value order, with their keys (`order`'s)."""
    store = m.state[info.name]
    cursor = after
    while True:
        rows, more = relation_page(store, info.value_types, m.symbols, cursor, CURRENT_ROWS)
        for row in rows:
            yield tuple(order.cursor(row)), row
        if more is None:
            return
        cursor = rows[-1]
