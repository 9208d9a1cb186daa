"""The relations of a stratum the vectorized executor is running: I_{k-2} and N_{k-1} of each,
as frames, while its iterations go back and forth between Polars and the kernel.

Layer: part of `executors.local`. Used by `executors.local.vectorized`.
"""

from __future__ import annotations

import numpy as np

from reasoner.executors.local.polars_plan import (
    AtomPattern,
    columns,
    frame_of_rows,
    frame_of_store,
)
from reasoner.storage.state import RelationStore, Tuple
from reasoner.support.polars_on_demand import pl

MAX_CHUNKS = 32
"""Chunks of an old frame past which a join's read gathers them into one."""
SAMPLE_ROWS = 1024
"""Rows of N_{k-1} that estimate how many of them pass a driving atom's constants."""


class KernelRows:
    """Tuples the kernel committed, as row ids of their relation's table: a frame is made of
    them only when Polars reads them. Where the kernel runs a stratum to its end and no later
    stratum reads it in Polars, none is (crdt_linear made frames of 1.2 M rows that nothing
    read, beside the tables)."""

    __slots__ = ("ids", "renumbered", "store")

    def __init__(self, store: RelationStore, ids: np.ndarray) -> None:
        self.store = store
        self.ids = ids
        self.renumbered = store.table.renumbered

    @classmethod
    def of(cls, store: RelationStore, ids: np.ndarray) -> KernelRows | pl.DataFrame:
        """The rows `ids` of `store`; a nullary relation's as its frame (it has no values)."""
        return cls(store, ids) if store.arity else frame_of_store(store, ids)

    def frame(self) -> pl.DataFrame:
        # A Bootstrap only appends: the ids keep their rows until the frames are dropped.
        assert self.store.table.renumbered == self.renumbered, "the table was renumbered"
        return frame_of_store(self.store, self.ids)


New = tuple["list[Tuple] | None", "pl.DataFrame | KernelRows | None"]
"""N_k of one relation: its tuples, its frame or its rows in the state, whichever the
iteration that made it had."""


class Growing:
    """A relation of the running stratum: I_{k-2} and N_{k-1}, as frames (engine tuples for a
    nullary relation, whose frames hold no values)."""

    __slots__ = (
        "_delta_kernel",
        "_delta_rows",
        "_old_kernel",
        "arity",
        "delta_frame",
        "keeps_old",
        "old_frame",
        "old_rows",
    )

    def __init__(self, arity: int, facts: pl.DataFrame | KernelRows) -> None:
        self.arity = arity
        self.old_frame: pl.DataFrame | None = None if isinstance(facts, KernelRows) else facts
        self.old_rows: list[Tuple] = []
        self._old_kernel: list[KernelRows] = [facts] if isinstance(facts, KernelRows) else []
        self.delta_frame: pl.DataFrame | None = None
        self._delta_rows: list[Tuple] | None = []
        self._delta_kernel: KernelRows | None = None
        self.keeps_old = True
        """False once no join of the stratum reads the old tuples (`forget_old`)."""

    def forget_old(self) -> None:
        """Keep N_{k-1} only from now on: in a stratum whose every rule has one atom over the
        stratum's relations (a linear recursion), the joins read the delta alone, and frames of
        the whole relation beside its tables would double its memory (crdt.dl's skipBlank:
        4.5 GB). A later stratum reads such a relation's frame from the state."""
        self.keeps_old = False
        self.old_frame = None
        self.old_rows = []
        self._old_kernel = []

    def old(self) -> pl.DataFrame:
        """I_{k-2}, as one frame of few chunks (what a join reads)."""
        old = self._old()
        if old.n_chunks() > MAX_CHUNKS:
            old = self.old_frame = old.rechunk()
        return old

    def _old(self) -> pl.DataFrame:
        """I_{k-2} in as many chunks as it grew by: gathering them into one chunk every few
        iterations, joined or not, copied the whole relation again and again (quadratic in a
        deep recursion over a large one)."""
        if not self.keeps_old:
            raise RuntimeError("the old tuples of this relation were not kept")
        for rows in self._old_kernel:
            frame = rows.frame()
            self.old_frame = frame if self.old_frame is None else concat(self.old_frame, frame)
        self._old_kernel = []
        if self.old_frame is None or self.old_rows:
            new = frame_of_rows(self.old_rows, self.arity)
            self.old_rows = []
            self.old_frame = new if self.old_frame is None else concat(self.old_frame, new)
        return self.old_frame

    def _delta_made(self) -> None:
        """N_{k-1}'s frame, made now if the kernel left its rows."""
        if self._delta_kernel is not None:
            self.delta_frame = self._delta_kernel.frame()
            self._delta_kernel = None

    def delta(self) -> pl.DataFrame:
        self._delta_made()
        if self.delta_frame is None:
            self.delta_frame = frame_of_rows(self.delta_rows(), self.arity)
        return self.delta_frame

    def delta_rows(self) -> list[Tuple]:
        if self._delta_rows is None:
            self._delta_rows = self.delta().rows()
        return self._delta_rows

    def delta_ids(self, store: RelationStore) -> np.ndarray:
        """N_{k-1}'s row ids in the state's table, for the kernel's next iteration: the
        kernel's own, or a frame's by probes over its columns (a Python tuple a row cost
        more than Polars' iteration)."""
        if self._delta_kernel is not None:
            return self._delta_kernel.ids
        if self.delta_frame is None or not self.arity:
            return store.table.rows_of(self.delta_rows())
        frame = self.delta_frame
        return store.table.rows_of_columns(
            [frame.get_column(c).to_numpy() for c in columns(self.arity)]
        )

    def matching(self, store: RelationStore, pattern: AtomPattern | None) -> int:
        """About how many rows of N_{k-1} pass `pattern`'s constants and repeated variables,
        from an even sample: the kernel drops the others at once, where a Polars join of
        N_{k-1} pays for every row (lubm1's rules read `t(a, "rdfs:domain", x)` and the like:
        1.2 M driving rows, of which 0.3 M pass, went to Polars at twice the kernel's time)."""
        size = self.delta_size()
        if pattern is None or not (pattern.constants or pattern.equal) or not size:
            return size
        step = max(1, size // SAMPLE_ROWS)
        if self._delta_kernel is not None:
            sample = np.asarray(store.table.values_of(self._delta_kernel.ids[::step]))
        elif self._delta_rows is None:
            assert self.delta_frame is not None
            sample = self.delta_frame.gather_every(step).to_numpy().T
        else:
            sample = np.array(self._delta_rows[::step], dtype=np.int64).reshape(-1, self.arity).T
        passing = np.ones(sample.shape[1], dtype=np.bool_)
        for column, value in pattern.constants:
            passing &= sample[column] == value
        for column, first in pattern.equal:
            passing &= sample[column] == sample[first]
        return -(-int(passing.sum()) * size // sample.shape[1])

    def delta_size(self) -> int:
        if self._delta_kernel is not None:
            return len(self._delta_kernel.ids)
        if self._delta_rows is None:
            assert self.delta_frame is not None
            return self.delta_frame.height
        return len(self._delta_rows)

    def full(self) -> pl.DataFrame:
        return concat(self.old(), self.delta())

    @classmethod
    def of_nullary(cls, store: RelationStore, last: int) -> Growing:
        """A nullary relation (at most one tuple) after the kernel ran iterations up to
        `last`: I_{last-1} as the old tuples and N_last as the delta, read from the state."""
        items = list(store.iters.items())
        growing = cls(0, frame_of_rows([t for t, it in items if it < last], 0))
        growing._delta_rows = [t for t, it in items if it == last]
        return growing

    def extend(self, store: RelationStore, since: int, last: int) -> None:
        """The kernel ran iterations k, ..., `last` and appended their tuples to the state
        from row id `since` on (`CompiledStratumBootstrap.fixpoint`): N_{k-1} and those of
        the iterations before `last` join the old tuples, N_last is the delta. Only the rows
        the kernel added are read back: a deep recursion that goes back and forth between
        the kernel and Polars stays linear in its tuples (reading the whole relation back
        each time was most of crdt.dl's Bootstrap)."""
        values, iterations = store.table.columns_from(since)
        names = columns(self.arity)
        schema = dict.fromkeys(names, pl.Int64)

        def frame(mask: np.ndarray) -> pl.DataFrame:
            return pl.DataFrame({n: v[mask] for n, v in zip(names, values, strict=True)}, schema)

        self.advance(None, frame(iterations < last))
        self.advance(None, frame(iterations == last))

    def advance(self, rows: list[Tuple] | None, frame: pl.DataFrame | KernelRows | None) -> None:
        """N_k becomes the delta; N_{k-1} joins the old tuples (if they are kept)."""
        if self.keeps_old:
            if self._delta_kernel is not None:
                self._old_kernel.append(self._delta_kernel)
            elif self.delta_frame is not None:
                self.old_frame = concat(self._old(), self.delta_frame)
            else:
                self.old_rows.extend(self.delta_rows())
        self._delta_rows = rows
        self._delta_kernel = frame if isinstance(frame, KernelRows) else None
        self.delta_frame = None if isinstance(frame, KernelRows) else frame


class Stale:
    """A relation whose last iterations ran in the kernel: the state holds it all, and no
    frame of it is kept."""


def live(rel: Growing | Stale) -> Growing:
    """The frames of a relation Polars is about to read: a stale one is reloaded from the
    state (`VectorizedStratum._polars`) before any plan reads it."""
    assert isinstance(rel, Growing), "Polars reads a relation the kernel left stale"
    return rel


def concat(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """`a` then `b`, their chunks kept (see `Growing._old`)."""
    if b.height == 0:
        return a
    if a.height == 0:
        return b
    return pl.concat([a, b], rechunk=False)
