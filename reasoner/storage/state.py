"""The sparse proof-count state of the elastic paper, with the hash indexes that rule plans probe.

Per relation, every tuple present in the materialization maps to two numbers: the fixpoint
iteration (within its stratum) in which it was first derived, and how many rule instantiations
derive it in that iteration. Input tuples and asserted facts sit at iteration 0 with count 1.
That pair is all Update needs to repair the state after a change without recomputing it.

The tuples and their iterations live in a compiled table (`reasoner.storage.Table`): rows of
integer words with open-addressing hash tables of row ids, no Python object per tuple. The
kernels (`reasoner.kernel`) read its arrays directly; Python code reads it through a dict
protocol (`t in R`, `R.get(t, INF)`, iteration), which builds a Python tuple only for a row
that is read. Its key indexes are created on demand, when a plan first needs an access
pattern, and are maintained on every insertion and removal; a probe from Python returns the
rows of one key as a tuple of tuples.

The counts sit in the table beside the iterations (`counts`, read as `get(t, 1)`).

Symbols are interned to ints (see `symbols.py`), so every value is a 64-bit int.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from reasoner.storage import (
    Counts,
    Index,
    Staged,
    Table,
    TupleSet,
    compact,
    matching,
    release_slots,
)

if TYPE_CHECKING:
    from reasoner.reads.pages import SortedRows

Tuple = tuple[int, ...]
Columns = tuple[int, ...]


class RelationStore:
    """One relation's tuples with (iteration, count), and its secondary hash indexes."""

    __slots__ = ("arity", "extra", "name", "sorted_building", "sorted_rows", "table")

    def __init__(self, name: str, arity: int) -> None:
        self.name = name
        self.arity = arity
        self.table = Table(arity)
        self.extra: Staged = self.table.staged_view
        """Tuples an in-flight Update derived that are not committed yet: staged in the table
        (so joins see the union of the old and the new epoch through the indexes) but not
        committed. A view of the table's staged rows, whoever staged them (the compiled
        Update stages by row id)."""
        self.sorted_rows: SortedRows | None = None
        """The rows in value order, for reads a page at a time (`reasoner.reads.pages`)."""
        self.sorted_building = False

    def replace_table(self, table: Table) -> None:
        """Hold `table`'s rows instead (a relation loaded whole, see `State.load_facts`)."""
        self.table = table
        self.extra = table.staged_view

    @property
    def iters(self) -> Table:
        """Committed tuple -> iteration (the table, read through its dict protocol)."""
        return self.table

    @property
    def counts(self) -> Counts:
        """Committed tuple -> count (`get(t, 1)`)."""
        return self.table.counts_view

    @property
    def indexes(self) -> dict[Columns, Index]:
        return self.table.indexes

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, t: Tuple) -> bool:
        return t in self.table

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self.table)

    def get(self, t: Tuple) -> tuple[int, int] | None:
        it = self.table.get(t)
        return None if it is None else (it, self.table.count(t))

    def index(self, columns: Columns) -> Index:
        """The index on `columns`, built from the current tuples the first time it is asked for."""
        return self.table.index(columns)

    def select(self, key: dict[int, int]) -> list[Tuple]:
        """Committed tuples with the `key` values (column -> value, at least one column),
        through the index on exactly these columns if there is one, else the index on the
        first of them, made now if need be and maintained from then on, as the plans' indexes
        are: a reader adds at most one single-column index per filtered column."""
        columns = tuple(sorted(key))
        if self.table.chains_released:  # a scan, rather than an index built on a retiring state
            values = tuple(key[c] for c in columns)  # (whose tuple table may be released too)
            return matching(self.table, columns, values, committed=True)
        index = self.index(columns if self.table.has_index(columns) else columns[:1])
        probe = tuple(key[c] for c in index.columns)
        rest = [(c, v) for c, v in key.items() if c not in index.columns]
        table = self.table
        return [
            t
            for t in index.get(probe[0] if len(probe) == 1 else probe, ())
            if t in table and all(t[c] == v for c, v in rest)
        ]

    def add(self, t: Tuple, iteration: int, count: int) -> None:
        """Insert a tuple that is not present yet."""
        self.table.add(t, iteration, count)

    def add_batch(self, batch: dict[Tuple, int], iteration: int) -> None:
        """Insert many new tuples (tuple -> count) at one iteration: Bootstrap's merge step."""
        self.table.add_many(batch, iteration)

    def add_columns(
        self, columns: Sequence[np.ndarray], counts: np.ndarray | None, iteration: int
    ) -> None:
        """Insert new tuples given as int64 columns (with their counts, None for all 1) at one
        iteration: a frame's rows enter the table without a Python tuple each. Not for
        arity 0 (columns cannot say how many rows): use `add_batch`."""
        self.table.add_columns(columns, iteration, counts)

    def remove(self, t: Tuple) -> None:
        self.table.remove(t)

    def stage(self, t: Tuple) -> None:
        """Make an uncommitted new tuple visible to index probes (see `extra`)."""
        self.table.stage(t)

    def unstage(self, t: Tuple) -> None:
        """Forget a staged tuple (its Update was discarded, or it was retracted again)."""
        self.table.unstage(t)

    def set(self, t: Tuple, iteration: int, count: int) -> None:
        """Change the (iteration, count) of a present tuple; indexes are unaffected."""
        self.table.set(t, iteration, count)

    def apply(self, changes: dict[Tuple, int], counts: dict[Tuple, int], absent: int) -> None:
        """Commit an Update's changes, consuming `changes` (tuple -> new iteration; one >=
        `absent` removes the tuple, a committed or a staged one) with `counts` (the new counts
        other than 1; entries of removed tuples are ignored).

        The tuples to remove are taken out of `changes` first, so that the rest, nearly all of
        an Update's changes, is written by one compiled loop (`Table.update`).

        Every staged tuple has an entry in `changes` (whoever stages a tuple records its new
        status), so none is left staged afterwards. The table is compacted when removals left an
        eighth of its rows dead (and at least 1,024)."""
        table = self.table
        gone = [t for t, n in changes.items() if n >= absent]
        for t in gone:
            del changes[t]
            table.remove(t)
        table.update(changes, counts)
        compact(table)

    def clear(self) -> None:
        self.table.clear()

    def snapshot(self) -> dict[Tuple, tuple[int, int]]:
        return self.table.items_with_counts()

    def copy(self) -> RelationStore:
        """An independent copy of the committed tuples and counts (no indexes, nothing staged)."""
        other = RelationStore(self.name, self.arity)
        if self.arity:
            columns, iterations, counts = self.table.columns(with_counts=True)
            for iteration in np.unique(iterations).tolist():
                at = iterations == iteration
                other.table.add_columns([c[at] for c in columns], iteration, counts[at])
        else:
            for t, (iteration, count) in self.snapshot().items():
                other.add(t, iteration, count)
        return other


class State:
    """All relations of a materialization, keyed by name."""

    __slots__ = ("building", "relations")

    def __init__(self, building: bool = False) -> None:
        """`building`: a state no reader can reach until `built` (a Bootstrap's), whose
        tables may change their slots in place on the lanes (`Table.building`)."""
        self.relations: dict[str, RelationStore] = {}
        self.building = building

    def relation(self, name: str, arity: int) -> RelationStore:
        store = self.relations.get(name)
        if store is None:
            store = self.relations[name] = RelationStore(name, arity)
            store.table.building = self.building
        return store

    def built(self) -> None:
        """The state may be read from now on: its tables change in place on one thread."""
        self.building = False
        for store in self.relations.values():
            store.table.building = False

    def __getitem__(self, name: str) -> RelationStore:
        return self.relations[name]

    def __contains__(self, name: str) -> bool:
        return name in self.relations

    @property
    def nbytes(self) -> int:
        """Bytes the relations' tables have allocated (rows, statuses and counts, hash tables,
        indexes): the state's size, which reports set beside the peaks that evaluating it took."""
        return sum(store.table.nbytes for store in self.relations.values())

    def release_lookups(self, least: int) -> int:
        """Free the key indexes, and the tuple table, of every relation whose indexes (or
        tuple table) hold `least` bytes or more; the bytes freed. For a state that is only read
        until a new one replaces it: its probes and lookups then scan, and a write (or
        `restore_lookups`) rebuilds them."""
        freed = 0
        for store in self.relations.values():
            layout = store.table.layout
            if layout["chains"] + layout["index_slots"] >= least:
                freed += store.table.release_chains()
            if layout["tuple_slots"] >= least:
                freed += release_slots(store.table)
        return freed

    def restore_lookups(self) -> None:
        """Rebuild every key index and tuple table `release_lookups` freed."""
        for store in self.relations.values():
            store.table.restore_chains()

    def snapshot(self) -> dict[str, dict[Tuple, tuple[int, int]]]:
        """A plain copy of every (tuple -> (iteration, count)), for comparing two states."""
        return {name: rel.snapshot() for name, rel in self.relations.items()}

    def load_facts(self, name: str, arity: int, rows: Iterable[Tuple] | TupleSet) -> None:
        """Add input tuples at iteration 0 with count 1 (duplicates collapse to one). A
        `TupleSet` goes into an empty relation as a copy of its table (memory blocks, not a
        hash per row)."""
        store = self.relation(name, arity)
        if (
            isinstance(rows, TupleSet)
            and rows.arity == arity
            and not len(store)
            and not store.extra
        ):
            store.replace_table(rows.table.copy())
            store.table.building = self.building
            return
        store.table.insert(rows, 0)
