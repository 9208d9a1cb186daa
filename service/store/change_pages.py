"""A page of the change feed as the store reads it: where a page starts (`ChangePosition`), its
pieces (`ChangeItem`), and the cutting of the stored chunks and reset marks into pages
(`page_items`), apart from the queries that fetch them (`service.store.repository`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reasoner import pl
from service.store import segments

Row = Sequence[Any]


class ChangesNotKept(Exception):
    """Change sets asked for are past the retention: `horizon` is the newest epoch whose
    change set is not kept."""

    def __init__(self, horizon: int) -> None:
        super().__init__(horizon)
        self.horizon = horizon


@dataclass(frozen=True, slots=True, order=True)
class ChangePosition:
    """Where a page of the feed starts: row `offset` of chunk `seq` of epoch `epoch` (seq -1:
    the epoch's reset mark, which comes before its chunks)."""

    epoch: int
    seq: int = -1
    offset: int = 0


@dataclass(frozen=True, slots=True)
class ChangeItem:
    """One piece of a page of the feed: rows a relation lost (`present` False) or gained in
    an epoch, or (`relation` None) the mark of a reset epoch."""

    epoch: int
    relation: str | None
    present: bool = True
    rows: Sequence[Row] = ()


@dataclass(frozen=True, slots=True)
class ChangePage:
    items: list[ChangeItem]
    next: ChangePosition | None
    """Where the next page starts; None: the page reached the last epoch asked for."""
    horizon: int
    """The newest epoch whose change set is not kept (-1: none), read after the page."""


class InvalidPosition(Exception):
    """A page's start that no page gave (past its chunk's rows, or at nothing)."""


def page_items(
    found: Iterable[tuple[ChangePosition, str | None, int, bytes | None]],
    start: ChangePosition,
    limit: int,
    entries_of: Callable[[ChangePosition, bytes], pl.DataFrame],
) -> tuple[list[ChangeItem], ChangePosition | None]:
    """The items of a page from the chunks and reset marks `found` (in order: position,
    relation or None for a mark, rows, blob), and where the next page starts. The chunks
    were read `limit` + 1 at most, so the page fills up before it could pass the end of
    a list that was cut short."""
    items: list[ChangeItem] = []
    budget = limit
    first = True
    for position, relation, rows, data in found:
        offset = 0
        if first and start.offset:  # a page that starts inside a chunk: that chunk
            inside = position == ChangePosition(start.epoch, start.seq) and relation is not None
            if not inside or start.offset >= rows:
                raise InvalidPosition()
            offset = start.offset
        first = False
        if budget == 0:
            return items, ChangePosition(position.epoch, position.seq, offset)
        if relation is None:
            items.append(ChangeItem(position.epoch, None))
            budget -= 1
            continue
        assert data is not None  # a chunk has its blob
        take = min(rows - offset, budget)
        entries = entries_of(position, data)
        present = bool(entries[segments.PRESENT][0])
        part = entries.slice(offset, take)
        values = segments.user_columns(part.drop(segments.PRESENT))
        items.append(
            ChangeItem(
                position.epoch, relation, present, values.rows() if values.width else [()] * take
            )
        )
        budget -= take
        if offset + take < rows:
            return items, ChangePosition(position.epoch, position.seq, offset + take)
    if first and start.offset:
        raise InvalidPosition()
    return items, None
