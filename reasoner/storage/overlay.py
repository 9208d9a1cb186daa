"""The uncommitted changes of one epoch, kept beside the committed state until they all hold.

Update never writes the committed (iteration, count) of a tuple while it runs: it records the
tuple's new status here. Readers of the committed state therefore never see half an epoch, and
discarding an Update (deadline, exception) is dropping this object and unstaging the tuples it
made visible to index probes.

For every tuple of the union of both epochs:
- o = its committed iteration (INF when absent before);
- n = its iteration in the new epoch: the recorded one if the tuple is in `changes`, else o.
A tuple whose new status is "absent" (so far) is recorded with n = INF.

The new count of a recorded tuple is in `counts` when it is not 1, as in the committed state
(`RelationStore.counts`).

Two writers record statuses. The kernel's Update records a relation by row id (`RowChanges`,
in `rows`): arrays the commit writes into the table directly and the kernels of the strata
above read their inputs' flips from, with no Python tuple per change. The epoch's other
writers record tuples (`set`, into `changes`): a stratum Bootstrapped by a rule change, the
facts of a relation without rules. Tuples are made from a row record only for a reader that
wants tuples (an epoch report's listed changes, a rule change's Bootstrap of a stratum above).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reasoner.storage.renumber import commit_rows, compact
from reasoner.storage.state import State, Tuple
from reasoner.storage.table import ABSENT, Table  # ABSENT: INF in a row record's int32

INF = 1 << 62
"""An iteration later than any real one: 'not in this epoch'."""

_NO_ROWS = np.empty(0, dtype=np.int64)
_INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True, slots=True)
class RowChanges:
    """One relation's recorded statuses by row id: row `rows[j]` of `table` is at iteration
    `news[j]` (ABSENT: absent) with count `counts[j]`. Where it was is the table's status,
    which no one writes before the commit: read there, not copied. Row ids and iterations are
    int32 and counts int32 unless one is larger (`reasoner/kernel/hand_over.pxd`): 12 B a row,
    held through the strata above (68 M rows in a crdt.dl epoch)."""

    table: Table
    rows: np.ndarray
    news: np.ndarray
    counts: np.ndarray

    @classmethod
    def narrowed(
        cls, table: Table, rows: np.ndarray, news: np.ndarray, counts: np.ndarray
    ) -> RowChanges:
        """The record of `rows` at `news` with `counts`, in the narrow form the kernel hands
        over (`reasoner/kernel/hand_over.pxd`): int32 row ids and iterations, int32 counts
        unless one does not fit."""
        wide = len(counts) and int(counts.max()) > _INT32_MAX
        return cls(
            table,
            rows.astype(np.int32, copy=False),
            news.astype(np.int32, copy=False),
            counts.astype(np.int64 if wide else np.int32, copy=False),
        )

    def __len__(self) -> int:
        return len(self.rows)

    def flips(self) -> tuple[np.ndarray, np.ndarray]:
        """(deleted, inserted): the rows whose presence flips, as int32 row ids, as recorded
        (widened, crdt.dl's 34-68 M flips were a copy twice their size, in fresh pages)."""
        deleted, inserted = self._flipping()
        return self.rows[deleted], self.rows[inserted]

    def flip_sizes(self) -> tuple[int, int]:
        """(deleted, inserted): how many rows `flips` gives, counted without making them (on
        crdt.dl, arrays of 34-68 M rows made only to be measured)."""
        deleted, inserted = self._flipping()
        return int(np.count_nonzero(deleted)), int(np.count_nonzero(inserted))

    def _flipping(self) -> tuple[np.ndarray, np.ndarray]:
        """(deleted, inserted) as masks over the record."""
        was, now = self.table.committed_mask(self.rows), self.news < ABSENT
        return was & ~now, now & ~was


class Overlay:
    __slots__ = ("_diffs", "_nrows", "changes", "counts", "created", "rows", "state")

    def __init__(self, state: State) -> None:
        self.state = state
        self.changes: dict[str, dict[Tuple, int]] = {}
        """Per relation, the new iteration n of every recorded tuple (INF: absent)."""
        self.counts: dict[str, dict[Tuple, int]] = {}
        """Per relation, the new counts other than 1 of recorded tuples (a stale entry of a
        tuple recorded as absent is ignored)."""
        self.rows: dict[str, RowChanges] = {}
        """Per relation the compiled Update wrote, its record by row id (and nothing of it in
        `changes`)."""
        self._diffs: dict[str, tuple[set[Tuple], set[Tuple]]] = {}
        self.created: list[str] = []
        """Relations of the epoch's new program that were added to the committed state (empty,
        so probes find them); `discard` removes them again."""
        self._nrows = {name: store.table.nrows for name, store in state.relations.items()}
        """Each relation's rows when the epoch began: the rows after them are the epoch's, staged
        until the commit (no table is compacted before it)."""

    def create_relation(self, name: str, arity: int) -> None:
        """Make sure the committed state has relation `name` (a rule change introduced it)."""
        if name not in self.state:
            self.state.relation(name, arity)
            self.created.append(name)

    def record_rows(self, name: str, changes: RowChanges) -> None:
        """The compiled Update's record of `name` (which no one else writes this epoch)."""
        if self.changes.get(name):
            raise AssertionError(f"{name} is recorded twice in one epoch")
        self.rows[name] = changes
        self._diffs.pop(name, None)

    def replace_rows(self, name: str, changes: RowChanges) -> None:
        """`name`'s record made anew (the rest of its stratum evaluated in bulk,
        `reasoner.elastic.bulk`): the rows the epoch staged that this one does not hold are
        removed, the last record's and any its Update staged before it was stopped."""
        self.rows.pop(name, None)
        epoch_rows = self._epoch_rows(name)
        self.state[name].table.unstage_rows(np.setdiff1d(epoch_rows, changes.rows))
        self.record_rows(name, changes)

    def _epoch_rows(self, name: str) -> np.ndarray:
        """The row ids `name`'s table took in this epoch (int64)."""
        return np.arange(self._nrows.get(name, 0), self.state[name].table.nrows, dtype=np.int64)

    def record_facts(
        self,
        name: str,
        retracted: Sequence[np.ndarray] | None,
        asserted: Sequence[np.ndarray] | None,
    ) -> None:
        """Record, by row, the facts an epoch retracts from and asserts on `name`, a relation
        without rules (its tuples are facts: iteration 0, count 1), given as int64 columns.
        An asserted row no row holds is staged; one held already is recorded at 0 again (no
        flip); a retracted row no row holds is no change; a row both retracted and asserted
        stays. A large batch of facts costs no Python tuple, set or dict entry a fact, which
        held about 300 bytes each through the whole epoch."""
        table = self.state[name].table
        gone = table.rows_of_columns(retracted) if retracted is not None else _NO_ROWS
        came = _NO_ROWS
        if asserted is not None:
            table.insert_columns(asserted, 0, staged=True)
            came = table.rows_of_columns(asserted)
        gone = gone[(gone >= 0) & ~np.isin(gone, came)]
        rows = np.concatenate([gone, came]).astype(np.int32)
        news = np.concatenate(
            [np.full(len(gone), ABSENT, dtype=np.int32), np.zeros(len(came), dtype=np.int32)]
        )
        counts = np.concatenate(
            [np.zeros(len(gone), dtype=np.int32), np.ones(len(came), dtype=np.int32)]
        )
        self.record_rows(name, RowChanges(table, rows, news, counts))

    def has_changes(self, name: str) -> bool:
        """Whether any status of `name` is recorded."""
        record = self.rows.get(name)
        return bool(self.changes.get(name)) or (record is not None and len(record) > 0)

    def recorded(self, name: str) -> tuple[dict[Tuple, int], dict[Tuple, int]]:
        """(tuple -> n, tuple -> count other than 1) of `name`'s recorded statuses, whoever
        recorded them (tuples made here for a row record: a reader that is not a kernel)."""
        record = self.rows.get(name)
        if record is None:
            return self.changes.get(name, {}), self.counts.get(name, {})
        tuples = self.state[name].table.tuples(record.rows)
        news = np.where(record.news == ABSENT, INF, record.news.astype(np.int64))
        changes = dict(zip(tuples, news.tolist(), strict=True))
        several = record.counts != 1
        counts = dict(
            zip(
                (t for t, many in zip(tuples, several.tolist(), strict=True) if many),
                record.counts[several].tolist(),
                strict=True,
            )
        )
        return changes, counts

    def presence_sizes(self, name: str) -> tuple[int, int]:
        """(deleted, inserted): how many tuples of `name` flip, without making them."""
        record = self.rows.get(name)
        if record is not None and name not in self._diffs:
            return record.flip_sizes()
        deleted_set, inserted_set = self.presence_diff(name)
        return len(deleted_set), len(inserted_set)

    def set(self, name: str, t: Tuple, iteration: int, count: int) -> None:
        """Record the new status of `t`; a newly present tuple becomes visible to probes."""
        self.changes.setdefault(name, {})[t] = iteration
        self._diffs.pop(name, None)
        if count != 1 and iteration < INF:
            self.counts.setdefault(name, {})[t] = count
        elif name in self.counts:
            self.counts[name].pop(t, None)
        if iteration < INF:
            self.state[name].stage(t)

    def presence_diff(self, name: str) -> tuple[builtins.set[Tuple], builtins.set[Tuple]]:
        """(deleted, inserted): tuples whose presence flips; what the strata above see.
        Computed once per relation and epoch (the sets are shared: do not modify them)."""
        diff = self._diffs.get(name)
        if diff is not None:
            return diff
        record = self.rows.get(name)
        if record is not None:
            table = self.state[name].table
            gone, new = record.flips()
            diff = self._diffs[name] = (set(table.tuples(gone)), set(table.tuples(new)))
            return diff
        iters = self.state[name].iters
        deleted: set[Tuple] = set()
        inserted: set[Tuple] = set()
        for t, n in self.changes.get(name, {}).items():
            if n < INF:
                if t not in iters:
                    inserted.add(t)
            elif t in iters:
                deleted.add(t)
        diff = self._diffs[name] = (deleted, inserted)
        return diff

    def presence_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(deleted, inserted): the row ids of `presence_diff`'s tuples (staged tuples have
        rows too) as int32, with no tuple made for a relation the compiled Update recorded."""
        record = self.rows.get(name)
        if record is not None:
            return record.flips()
        table = self.state[name].table
        deleted, inserted = self.presence_diff(name)
        gone, new = table.rows_of(deleted), table.rows_of(inserted)
        assert (gone >= 0).all() and (new >= 0).all(), "a flipped tuple has a row"
        return gone.astype(np.int32), new.astype(np.int32)

    def commit(self) -> None:
        """Write every recorded status into the committed state."""
        for name, changes in self.changes.items():
            if changes:
                self.state[name].apply(changes, self.counts.get(name, {}), INF)
        for name in list(self.rows):  # each record freed before its table's compaction
            table = self.state[name].table
            record = self.rows.pop(name)
            commit_rows(table, record.rows, record.news, record.counts)
            del record
            compact(table)
        self.changes.clear()
        self.counts.clear()
        self.rows.clear()
        self._diffs.clear()

    def discard(self) -> None:
        """Drop every recorded status; the committed state is as it was before the epoch. Every
        row staged in the epoch goes, recorded or not (an Update stopped between staging a new
        head and recording it leaves one)."""
        for name in self._nrows:
            if name in self.state.relations:
                self.state[name].table.unstage_rows(self._epoch_rows(name))
        for name in self.created:
            del self.state.relations[name]
        self.changes.clear()
        self.counts.clear()
        self.rows.clear()
        self._diffs.clear()
        self.created.clear()
