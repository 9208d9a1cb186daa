"""A relation as it was at an earlier epoch, for a query to read (`POST /v1/query` at
`epoch`), with no copy of the relation: the store as it is now, less the rows inserted since,
plus the rows retracted since (the service finds both in the epochs' change sets).

A query reads a relation three ways (`reasoner.reads.query.Evaluator`): its size, for the plan;
membership and a full scan through `iters`; and the rows with some columns bound through
`select`. Each is the store's answer corrected by the two small sets, so a read at an earlier
epoch costs the current read plus the changes since, never a pass to rebuild the relation.
"""

from __future__ import annotations

from collections.abc import Iterator

from reasoner.reads.evaluator import QueryRelation
from reasoner.storage.state import Tuple


class PastRelation:
    """`store`'s rows less `gone` (present now, absent then), plus `back` (absent now,
    present then): the two are disjoint from each other, `gone` within the store and `back`
    outside it."""

    __slots__ = ("back", "back_indexes", "gone", "store")

    def __init__(self, store: QueryRelation, gone: set[Tuple], back: set[Tuple]) -> None:
        self.store = store
        self.gone = gone
        self.back = back
        self.back_indexes: dict[tuple[int, ...], dict[tuple[int, ...], list[Tuple]]] = {}
        """`back` by the values of some columns, made the first time a query probes them."""

    @property
    def iters(self) -> PastRelation:
        """Membership and scans, as `RelationStore.iters` answers them."""
        return self

    def __len__(self) -> int:
        return len(self.store) - len(self.gone) + len(self.back)

    def __contains__(self, t: object) -> bool:
        if t in self.back:
            return True
        return t not in self.gone and t in self.store.iters

    def __iter__(self) -> Iterator[Tuple]:
        gone = self.gone
        for t in self.store.iters:
            if t not in gone:
                yield t
        yield from self.back

    def select(self, key: dict[int, int]) -> list[Tuple]:
        gone = self.gone
        now = [t for t in self.store.select(key) if t not in gone]
        columns = tuple(sorted(key))
        index = self.back_indexes.get(columns)
        if index is None:
            index = self.back_indexes[columns] = {}
            for t in self.back:
                index.setdefault(tuple(t[c] for c in columns), []).append(t)
        return now + index.get(tuple(key[c] for c in columns), [])
