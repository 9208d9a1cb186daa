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
(`RelationStore.counts`). Keeping n alone in `changes` lets the commit write the iterations of a
relation in one `dict.update`, and spares Update a (n, count) pair per status change: an Update
of CRDT records tens of thousands of them, nearly all with count 1.
"""

from __future__ import annotations

from reasoner.state import State, Tuple

INF = 1 << 62
"""An iteration later than any real one: 'not in this epoch'."""


class Overlay:
    __slots__ = ("_diffs", "changes", "counts", "created", "state")

    def __init__(self, state: State) -> None:
        self.state = state
        self.changes: dict[str, dict[Tuple, int]] = {}
        """Per relation, the new iteration n of every recorded tuple (INF: absent)."""
        self.counts: dict[str, dict[Tuple, int]] = {}
        """Per relation, the new counts other than 1 of recorded tuples (a stale entry of a
        tuple recorded as absent is ignored)."""
        self._diffs: dict[str, tuple[set[Tuple], set[Tuple]]] = {}
        self.created: list[str] = []
        """Relations of the epoch's new program that were added to the committed state (empty,
        so probes find them); `discard` removes them again."""

    def create_relation(self, name: str, arity: int) -> None:
        """Make sure the committed state has relation `name` (a rule change introduced it)."""
        if name not in self.state:
            self.state.relation(name, arity)
            self.created.append(name)

    def relation_changes(self, name: str) -> dict[Tuple, int]:
        """The dict of recorded iterations of `name`, to write into directly. A writer that
        does (Update) calls `changed(name)` when it is done with the relation."""
        changes = self.changes.get(name)
        if changes is None:
            changes = self.changes[name] = {}
        self._diffs.pop(name, None)
        return changes

    def relation_counts(self, name: str) -> dict[Tuple, int]:
        """The dict of recorded counts other than 1 of `name`, to write into directly: a
        writer recording a count of 1 for a tuple removes its entry."""
        counts = self.counts.get(name)
        if counts is None:
            counts = self.counts[name] = {}
        return counts

    def changed(self, name: str) -> None:
        """`name`'s recorded statuses were written directly: forget its presence diff."""
        self._diffs.pop(name, None)

    def known_diff(self, name: str, deleted: set[Tuple], inserted: set[Tuple]) -> None:
        """A writer that knows `name`'s presence diff (it wrote the relation directly and knows
        the old status of every tuple it changed) hands it over, saving `presence_diff` a pass
        over the committed state."""
        self._diffs[name] = (deleted, inserted)

    def set(self, name: str, t: Tuple, iteration: int, count: int) -> None:
        """Record the new status of `t`; a newly present tuple becomes visible to probes."""
        self.relation_changes(name)[t] = iteration
        if count != 1 and iteration < INF:
            self.relation_counts(name)[t] = count
        elif name in self.counts:
            self.counts[name].pop(t, None)
        if iteration < INF:
            self.state[name].stage(t)

    def new_iteration(self, name: str, t: Tuple) -> int:
        rec = self.changes.get(name, {}).get(t)
        if rec is not None:
            return rec
        return self.state[name].iters.get(t, INF)

    def present_after(self, name: str, t: Tuple) -> bool:
        return self.new_iteration(name, t) < INF

    def presence_diff(self, name: str) -> tuple[set[Tuple], set[Tuple]]:
        """(deleted, inserted): tuples whose presence flips; what the strata above see.
        Computed once per relation and epoch (the sets are shared: do not modify them)."""
        diff = self._diffs.get(name)
        if diff is not None:
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

    def commit(self) -> None:
        """Write every recorded status into the committed state."""
        for name, changes in self.changes.items():
            if changes:
                self.state[name].apply(changes, self.counts.get(name, {}), INF)
        self.changes.clear()
        self.counts.clear()
        self._diffs.clear()

    def discard(self) -> None:
        """Drop every recorded status; the committed state is as it was before the epoch."""
        for name, changes in self.changes.items():
            store = self.state[name]
            for t in changes:
                store.unstage(t)
        for name in self.created:
            del self.state.relations[name]
        self.changes.clear()
        self.counts.clear()
        self._diffs.clear()
        self.created.clear()
