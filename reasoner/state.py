"""The sparse proof-count state of the elastic paper, with the hash indexes that rule plans probe.

Per relation, every tuple present in the materialization maps to two numbers: the fixpoint
iteration (within its stratum) in which it was first derived, and how many rule instantiations
derive it in that iteration. Input tuples and asserted facts sit at iteration 0 with count 1.
That pair is all Update needs to repair the state after a change without recomputing it.

Tuples are Python tuples of ints (symbols are interned, see `symbols.py`). Indexes map the
values of some columns to the tuples that have them; a bucket is a dict used as an ordered set,
so a tuple can be dropped in O(1) when Update retracts it. Indexes are created on demand, when
a plan first needs an access pattern, and are maintained on every insertion and removal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter

Tuple = tuple[int, ...]
Columns = tuple[int, ...]
Bucket = dict[Tuple, None]


def key_function(columns: Columns) -> Callable[[Tuple], object]:
    """The index key of a tuple: the bare value for one column, a tuple for several."""
    if not columns:
        return lambda _t: ()
    return itemgetter(*columns)


class RelationStore:
    """One relation's tuples with (iteration, count), and its secondary hash indexes."""

    __slots__ = ("arity", "counts", "extra", "indexes", "iters", "name")

    def __init__(self, name: str, arity: int) -> None:
        self.name = name
        self.arity = arity
        self.iters: dict[Tuple, int] = {}
        self.counts: dict[Tuple, int] = {}
        self.indexes: dict[Columns, dict[object, Bucket]] = {}
        self.extra: dict[Tuple, None] = {}
        """Tuples an in-flight Update derived that are not committed yet: they are in the
        indexes (so joins see the union of the old and the new epoch) but not in `iters`."""

    def __len__(self) -> int:
        return len(self.iters)

    def __contains__(self, t: Tuple) -> bool:
        return t in self.iters

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self.iters)

    def get(self, t: Tuple) -> tuple[int, int] | None:
        it = self.iters.get(t)
        return None if it is None else (it, self.counts[t])

    def index(self, columns: Columns) -> dict[object, Bucket]:
        """The index on `columns`, built from the current tuples the first time it is asked for."""
        idx = self.indexes.get(columns)
        if idx is None:
            idx = {}
            key = key_function(columns)
            for t in (*self.iters, *self.extra) if self.extra else self.iters:
                k = key(t)
                bucket = idx.get(k)
                if bucket is None:
                    idx[k] = {t: None}
                else:
                    bucket[t] = None
            self.indexes[columns] = idx
        return idx

    def add(self, t: Tuple, iteration: int, count: int) -> None:
        """Insert a tuple that is not present yet."""
        self.iters[t] = iteration
        self.counts[t] = count
        self._index_insert(t)

    def add_batch(self, batch: dict[Tuple, int], iteration: int) -> None:
        """Insert many new tuples (tuple -> count) at one iteration: Bootstrap's merge step."""
        iters = self.iters
        counts = self.counts
        for t, c in batch.items():
            iters[t] = iteration
            counts[t] = c
        for columns, idx in self.indexes.items():
            key = key_function(columns)
            for t in batch:
                k = key(t)
                bucket = idx.get(k)
                if bucket is None:
                    idx[k] = {t: None}
                else:
                    bucket[t] = None

    def _index_insert(self, t: Tuple) -> None:
        for columns, idx in self.indexes.items():
            k = t[columns[0]] if len(columns) == 1 else tuple(t[c] for c in columns)
            bucket = idx.get(k)
            if bucket is None:
                idx[k] = {t: None}
            else:
                bucket[t] = None

    def _index_delete(self, t: Tuple) -> None:
        for columns, idx in self.indexes.items():
            k = t[columns[0]] if len(columns) == 1 else tuple(t[c] for c in columns)
            bucket = idx[k]
            del bucket[t]
            if not bucket:
                del idx[k]

    def remove(self, t: Tuple) -> None:
        del self.iters[t]
        del self.counts[t]
        self._index_delete(t)

    def stage(self, t: Tuple) -> None:
        """Make an uncommitted new tuple visible to index probes (see `extra`)."""
        if t not in self.iters and t not in self.extra:
            self.extra[t] = None
            self._index_insert(t)

    def unstage(self, t: Tuple) -> None:
        """Forget a staged tuple (its Update was discarded, or it was retracted again)."""
        if t in self.extra:
            del self.extra[t]
            self._index_delete(t)

    def commit_staged(self, t: Tuple, iteration: int, count: int) -> None:
        """Turn a staged tuple into a committed one (already indexed)."""
        del self.extra[t]
        self.iters[t] = iteration
        self.counts[t] = count

    def set(self, t: Tuple, iteration: int, count: int) -> None:
        """Change the (iteration, count) of a present tuple; indexes are unaffected."""
        self.iters[t] = iteration
        self.counts[t] = count

    def clear(self) -> None:
        self.iters.clear()
        self.counts.clear()
        self.extra.clear()
        for idx in self.indexes.values():
            idx.clear()

    def snapshot(self) -> dict[Tuple, tuple[int, int]]:
        counts = self.counts
        return {t: (it, counts[t]) for t, it in self.iters.items()}


class State:
    """All relations of a materialization, keyed by name."""

    __slots__ = ("relations",)

    def __init__(self) -> None:
        self.relations: dict[str, RelationStore] = {}

    def relation(self, name: str, arity: int) -> RelationStore:
        store = self.relations.get(name)
        if store is None:
            store = self.relations[name] = RelationStore(name, arity)
        return store

    def __getitem__(self, name: str) -> RelationStore:
        return self.relations[name]

    def __contains__(self, name: str) -> bool:
        return name in self.relations

    def snapshot(self) -> dict[str, dict[Tuple, tuple[int, int]]]:
        """A plain copy of every (tuple -> (iteration, count)), for comparing two states."""
        return {name: rel.snapshot() for name, rel in self.relations.items()}

    def load_facts(self, name: str, arity: int, rows: Iterable[Tuple]) -> None:
        """Add input tuples at iteration 0 with count 1 (duplicates collapse to one)."""
        store = self.relation(name, arity)
        for t in rows:
            if t not in store.iters:
                store.add(t, 0, 1)
