"""The sparse proof-count state of the elastic paper, with the hash indexes that rule plans probe.

Per relation, every tuple present in the materialization maps to two numbers: the fixpoint
iteration (within its stratum) in which it was first derived, and how many rule instantiations
derive it in that iteration. Input tuples and asserted facts sit at iteration 0 with count 1.
That pair is all Update needs to repair the state after a change without recomputing it.

`counts` holds only the counts other than 1; a tuple missing from it has one derivation. Most
tuples have one (every input tuple, and nearly every derived tuple of the benchmarks), so the
dict stays small: committing an Update's changes writes one large dict per tuple instead of two,
the state needs one large dict per relation less, and probes of `counts` stay in the cache.

Tuples are Python tuples of ints (symbols are interned, see `symbols.py`). Indexes map the
values of some columns to the tuples that have them. Indexes are created on demand, when a plan
first needs an access pattern, and are maintained on every insertion and removal.

A bucket (the tuples of one index key) is a tuple while it holds at most `SMALL_BUCKET` tuples,
which is the common case (most access patterns are nearly unique), and a dict used as an ordered
set beyond that, so that a tuple is still dropped in O(1). Both iterate the same way and support
`in`. A 1-tuple is 4x smaller than a one-entry dict and, unlike a dict, is untracked by Python's
cyclic garbage collector once it has been seen: the buckets an Update adds neither re-arm nor
lengthen full collections of the (large) state. Small tuples also make the most frequent bucket
change of an Update cheap: a tuple replaced by another with the same key (a new iteration's
head next to the old one, until the commit drops the old) goes from one to two tuples and back
without building a dict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter

from reasoner.values import ValuePool

Tuple = tuple[int, ...]
Columns = tuple[int, ...]
Bucket = tuple[Tuple, ...] | dict[Tuple, None]

SMALL_BUCKET = 4
"""Buckets of up to this many tuples are tuples (see the module docstring)."""


def key_function(columns: Columns) -> Callable[[Tuple], object]:
    """The index key of a tuple: the bare value for one column, a tuple for several."""
    if not columns:
        return lambda _t: ()
    return itemgetter(*columns)


class RelationStore:
    """One relation's tuples with (iteration, count), and its secondary hash indexes."""

    __slots__ = ("_keyed", "arity", "counts", "extra", "indexes", "iters", "name")

    def __init__(self, name: str, arity: int) -> None:
        self.name = name
        self.arity = arity
        self.iters: dict[Tuple, int] = {}
        self.counts: dict[Tuple, int] = {}
        """The counts other than 1 (see the module docstring)."""
        self.indexes: dict[Columns, dict[object, Bucket]] = {}
        self._keyed: list[tuple[Callable[[Tuple], object], dict[object, Bucket]]] = []
        """(key function, index) of every index, for maintaining them."""
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
        return None if it is None else (it, self.counts.get(t, 1))

    def index(self, columns: Columns) -> dict[object, Bucket]:
        """The index on `columns`, built from the current tuples the first time it is asked for."""
        idx = self.indexes.get(columns)
        if idx is None:
            idx = {}
            key = key_function(columns)
            _insert_all(idx, key, (*self.iters, *self.extra) if self.extra else self.iters)
            self.indexes[columns] = idx
            self._keyed.append((key, idx))
        return idx

    def add(self, t: Tuple, iteration: int, count: int) -> None:
        """Insert a tuple that is not present yet."""
        self.iters[t] = iteration
        if count != 1:
            self.counts[t] = count
        self._index_insert(t)

    def add_batch(self, batch: dict[Tuple, int], iteration: int) -> None:
        """Insert many new tuples (tuple -> count) at one iteration: Bootstrap's merge step."""
        self.iters.update(dict.fromkeys(batch, iteration))
        self.counts.update({t: c for t, c in batch.items() if c != 1})
        for key, idx in self._keyed:
            _insert_all(idx, key, batch)

    def _index_insert(self, t: Tuple) -> None:
        for key, idx in self._keyed:
            k = key(t)
            single = (t,)
            bucket = idx.setdefault(k, single)
            if bucket is not single:
                _grow(idx, k, bucket, t)

    def _index_delete(self, t: Tuple) -> None:
        for key, idx in self._keyed:
            _delete_all(idx, key, (t,))

    def remove(self, t: Tuple) -> None:
        del self.iters[t]
        self.counts.pop(t, None)
        self._index_delete(t)

    def stage(self, t: Tuple) -> None:
        """Make an uncommitted new tuple visible to index probes (see `extra`)."""
        if t not in self.iters and t not in self.extra:
            self.extra[t] = None
            self._index_insert(t)

    def stage_new(self, t: Tuple) -> None:
        """`stage` for a tuple known to be neither committed nor staged."""
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
        self.set(t, iteration, count)

    def set(self, t: Tuple, iteration: int, count: int) -> None:
        """Change the (iteration, count) of a present tuple; indexes are unaffected."""
        self.iters[t] = iteration
        if count != 1:
            self.counts[t] = count
        elif self.counts:
            self.counts.pop(t, None)

    def apply(self, changes: dict[Tuple, int], counts: dict[Tuple, int], absent: int) -> None:
        """Commit an Update's changes, consuming `changes` (tuple -> new iteration; one >=
        `absent` removes the tuple, a committed or a staged one) with `counts` (the new counts
        other than 1; entries of removed tuples are ignored). Staged tuples are indexed already.

        The tuples to remove are taken out of `changes` first, so that the rest, nearly all of
        an Update's changes, is written with one `dict.update`: in C, reusing the hashes
        `changes` stored, where a Python loop costs several times more per tuple.

        Every staged tuple has an entry in `changes` (whoever stages a tuple records its new
        status), so none is left staged afterwards: `extra` is emptied at once instead of
        being probed for every changed tuple."""
        iters = self.iters
        extra = self.extra
        gone = [t for t, n in changes.items() if n >= absent]
        removed: list[Tuple] = []
        for t in gone:
            del changes[t]
            if iters.pop(t, None) is not None or t in extra:
                removed.append(t)
        stored = self.counts
        if stored:
            for t in gone:
                stored.pop(t, None)
            for t in changes.keys() - counts.keys():  # a count of 1 again
                stored.pop(t, None)
        if counts:
            stored.update((t, c) for t, c in counts.items() if t in changes)
        iters.update(changes)
        extra.clear()
        for key, idx in self._keyed:
            _delete_all(idx, key, removed)

    def clear(self) -> None:
        self.iters.clear()
        self.counts.clear()
        self.extra.clear()
        for idx in self.indexes.values():
            idx.clear()

    def snapshot(self) -> dict[Tuple, tuple[int, int]]:
        count = self.counts.get
        return {t: (it, count(t, 1)) for t, it in self.iters.items()}


def _insert_all(idx: dict[object, Bucket], key: Callable[[Tuple], object], tuples) -> None:
    """Add `tuples` (none of them indexed yet) to the index `idx` on `key`."""
    setdefault = idx.setdefault
    for t in tuples:
        k = key(t)
        single = (t,)
        bucket = setdefault(k, single)
        if bucket is not single:
            _grow(idx, k, bucket, t)


def _grow(idx: dict[object, Bucket], k: object, bucket: Bucket, t: Tuple) -> None:
    """Add `t` to the non-empty `bucket` of key `k`."""
    if bucket.__class__ is not tuple:
        bucket[t] = None  # type: ignore[index]
    elif len(bucket) < SMALL_BUCKET:
        idx[k] = (*bucket, t)
    else:
        idx[k] = dict.fromkeys((*bucket, t))


def _delete_all(idx: dict[object, Bucket], key: Callable[[Tuple], object], tuples) -> None:
    """Remove `tuples` (all of them indexed) from the index `idx` on `key`; a bucket left with
    `SMALL_BUCKET` tuples goes back to the tuple form."""
    for t in tuples:
        k = key(t)
        bucket = idx[k]
        if bucket.__class__ is not tuple:
            del bucket[t]
            if len(bucket) == SMALL_BUCKET:
                idx[k] = (*bucket,)
        elif len(bucket) == 1:
            del idx[k]
        else:
            i = bucket.index(t)
            idx[k] = bucket[:i] + bucket[i + 1 :]


class State:
    """All relations of a materialization, keyed by name."""

    __slots__ = ("relations", "values")

    def __init__(self, values: ValuePool | None = None) -> None:
        self.relations: dict[str, RelationStore] = {}
        self.values = values if values is not None else ValuePool()
        """Where an executor that builds tuples from columns (not from other tuples) takes
        their ints: shared by the states of one materialization (see `reasoner.values`)."""

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
