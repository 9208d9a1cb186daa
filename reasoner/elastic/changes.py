"""What one epoch changes, relation by relation: the change set a feed publishes.

An epoch's exact diff is known while it is computed and gone once it is published: Update's
overlay says which rows flip presence, and a Bootstrap's old and new states differ by the
rows `missing_on_lanes` finds. `EpochChanges` hands that diff to the caller of
`Materialization.apply` in `before_publish`, where both are still there, so that a store can
commit the change set in the transaction that commits the epoch (a change set is never seen
for an epoch that did not commit). It is lazy and holds row ids, not tuples: a caller that
reads no relation's changes costs nothing, and one that reads them as columns (`batches`, a
store) makes no Python object per row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reasoner.analysis.model import RelationInfo
from reasoner.io.batch import FactBatch
from reasoner.kernel.lanes import LANE_ROWS
from reasoner.storage import Table, missing_rows, unmarked_rows
from reasoner.storage.state import State, Tuple
from reasoner.support import lanes
from reasoner.values.records import ValueType
from reasoner.values.types import Value

Facts = FactBatch | list[tuple[()]]
"""One relation's rows in user values: columns, or rows `()` for a relation of arity 0."""
Decoder = Callable[[Sequence[ValueType]], Callable[[Tuple], tuple[Value, ...]]]
BatchOf = Callable[[RelationInfo, Sequence[np.ndarray]], FactBatch]
"""User values of engine columns of a relation, row for row."""


@dataclass(frozen=True, slots=True)
class ChangedRows:
    """Rows of one table by id: a relation's retracted rows (of the table before the epoch)
    or inserted ones (of the table after it). No table: no rows."""

    table: Table | None
    rows: np.ndarray

    @classmethod
    def none(cls) -> ChangedRows:
        return cls(None, np.empty(0, np.int64))

    @classmethod
    def all_of(cls, table: Table) -> ChangedRows:
        return cls(table, table.committed_rows())

    def __len__(self) -> int:
        return len(self.rows)

    def tuples(self) -> list[Tuple]:
        return [] if self.table is None else self.table.tuples(self.rows)

    def columns(self, arity: int) -> list[np.ndarray]:
        if self.table is None or not len(self.rows):
            return [np.empty(0, np.int64) for _ in range(arity)]
        return self.table.values_of(self.rows)


Diff = tuple[ChangedRows, ChangedRows]
"""(retracted, inserted) rows of one relation."""


def rebuilt_diff(before: State, after: State, name: str, *, reshaped: bool) -> Diff:
    """(retracted, inserted) rows of relation `name` from one state to a rebuilt one; all of
    them when the relation was `reshaped` (its old rows are of another shape)."""
    old = before.relations.get(name)
    new = after.relations.get(name)
    if reshaped and old is not None and new is not None:
        return ChangedRows.all_of(old.table), ChangedRows.all_of(new.table)
    if old is None or new is None:
        present = (old if old is not None else new).table  # type: ignore[union-attr]  # one exists
        rows = ChangedRows.all_of(present)
        return (rows, ChangedRows.none()) if new is None else (ChangedRows.none(), rows)
    # One way only: the new rows the old ones find are marked, the others are inserted, so
    # the old state's tuple table is never probed (a fallback frees it, `scans.release_slots`).
    marks = np.zeros(new.table.nrows, dtype=np.uint8)
    return (
        ChangedRows(old.table, missing_on_lanes(old.table, new.table, marks)),
        ChangedRows(new.table, unmarked_rows(new.table, marks)),
    )


def missing_on_lanes(table: Table, other: Table, marks: np.ndarray | None = None) -> np.ndarray:
    """`missing_rows(table, other, marks=marks)`, the rows split among the kernel's lanes: a
    fallback on crdt.dl compares 150 million rows, which took 22 s on one thread. (Lanes
    mark distinct rows of `other`: a table's tuples are distinct.)"""
    count = min(lanes.lane_count(), table.nrows // LANE_ROWS)  # LANE_ROWS a lane or more
    if count <= 1:
        return missing_rows(table, other, marks=marks)
    parts = [np.empty(0, np.int64)] * count

    def lane(j: int, start: int, stop: int, _meter: object) -> None:
        parts[j] = missing_rows(table, other, start, stop, marks)

    lanes.fan_out(lane, count, 0, table.nrows)
    return np.concatenate(parts)


@dataclass(frozen=True)
class RelationChanges:
    """One relation's changes in user values, each side sorted."""

    retracted: list[tuple[Value, ...]]
    inserted: list[tuple[Value, ...]]


class EpochChanges:
    """The changes of an epoch being published, for every relation users see (inputs
    included, internal ones left out): valid only inside `before_publish`, which is called
    while the epoch's overlay or old state still exists."""

    def __init__(
        self,
        names: Sequence[str],
        diff: Callable[[str], Diff],
        relations: tuple[Mapping[str, RelationInfo], Mapping[str, RelationInfo]],
        decoder: Decoder,
        batch_of: BatchOf,
    ) -> None:
        self.names = tuple(names)
        """The relations of the program before or after the epoch, in program order."""
        self._diff = diff
        self._relations = relations
        self._decoder = decoder
        self._batch_of = batch_of
        self._open = True

    def close(self) -> None:
        """The epoch is published: the states the diff reads are gone."""
        self._open = False

    def diff(self, name: str) -> Diff:
        """(retracted, inserted) rows of `name`."""
        if not self._open:
            raise RuntimeError("an epoch's changes are read inside before_publish only")
        return self._diff(name)

    def _infos(self, name: str) -> tuple[RelationInfo, RelationInfo]:
        """`name`'s relation before and after the epoch (a relation reshaped by a rule change
        retracts in its old types and inserts in its new ones)."""
        old, new = self._relations
        before = old.get(name) or new[name]
        return before, new.get(name) or before

    def rows(self, name: str) -> RelationChanges:
        """`name`'s changes in user values, as tuples."""
        gone, new = self.diff(name)
        before, after = self._infos(name)
        decode_gone = self._decoder(before.value_types)
        decode_new = self._decoder(after.value_types)
        return RelationChanges(
            retracted=sorted(decode_gone(t) for t in gone.tuples()),
            inserted=sorted(decode_new(t) for t in new.tuples()),
        )

    def batches(self, name: str) -> tuple[Facts, Facts]:
        """`name`'s (retracted, inserted) rows in user values as columns, in no particular
        order (putting 3 M rows in value order took longer than all else a store does with
        them): what a store writes, with no Python object per row. A side without rows is
        `[]`, as is a relation of arity 0's: no batch is made (a float relation's would
        import Polars, in a server that never needs it for a write of other relations)."""
        gone, new = self.diff(name)
        return tuple(  # type: ignore[return-value]  # two sides
            self._batch_of(info, side.columns(info.arity))
            if info.arity and len(side)
            else [()] * len(side)
            for info, side in zip(self._infos(name), (gone, new), strict=True)
        )

    def hand_to(self, before_publish: Callable[[EpochChanges], None]) -> None:
        """Call `before_publish` with these changes, which are closed once it returns or
        raises."""
        try:
            before_publish(self)
        finally:
            self.close()

    def changed(self) -> dict[str, RelationChanges]:
        """Every relation that changed, with its changes."""
        found = {name: self.rows(name) for name in self.names}
        return {name: rows for name, rows in found.items() if rows.retracted or rows.inserted}
