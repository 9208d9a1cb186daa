"""A relation kept only as frames, with an exact hash set over its rows: the semi-naive
duplicate check of a Bootstrap whose relation is too big to hold as Python tuples.

The vectorized Bootstrap drops every candidate head already in I_{k-1}. Against a `State` that
is a dict probe per candidate; against a frame it is an anti-join, which hashes the whole
relation on every call. crdt.dl's skipBlank grows to 151,669,663 tuples over 14,149 iterations
of about 10,000 new tuples each, so an anti-join per iteration would hash the relation 14,149
times, and the State would need about 27 GiB of Python objects.

`RowSet` keeps the rows in frames (one chunk per iteration, compacted in groups) and an
open-addressing hash table over them, held in two Polars arrays that are updated in place
(`Series.scatter`): `_slots` holds row position + 1 (0 is an empty slot) and `_tags` 32 further
bits of the row's hash, so a probe compares rows only when the tags agree. Lookup and insertion
are vectorized linear probing: each round gathers the slots of every pending row at once, and
the rows still pending move to the next slot. A tag match is verified by comparing the stored
row with the candidate, so the set is exact whatever the hash function does (collisions cost
time, never correctness). The table doubles before it is 60 % full.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from reasoner.executors.local.polars_plan import INT, WEIGHT, columns, empty_frame

ITERATION = "_it"
"""The column of a stored row's iteration (Int32)."""

HashRows = Callable[[pl.DataFrame], pl.Series]
"""Rows -> one UInt64 hash per row (`DataFrame.hash_rows`; tests pass a colliding one)."""

_INITIAL_SLOTS = 1 << 16
_MAX_LOAD = 0.6
_WINDOW = 8
_REFILL_SLICES = 8
"""Slots each pending row looks at per probing round."""
_TAIL_CHUNKS = 32
"""Chunks appended since the last compaction: reading the rows concatenates every chunk, so
past this many the tail is copied into one segment (each row is copied once)."""


def _hash_rows(frame: pl.DataFrame) -> pl.Series:
    return frame.hash_rows()


class RowSet:
    """The distinct rows of one relation with their iteration and count, and exact membership.

    `add` takes rows known to be absent (checked with `known`), as semi-naive evaluation does:
    N_k is the candidate heads of iteration k minus I_{k-1}.
    """

    def __init__(
        self, arity: int, hash_rows: HashRows = _hash_rows, slots: int = _INITIAL_SLOTS
    ) -> None:
        if arity == 0:
            raise ValueError("a zero-arity relation holds at most one row: keep it in the state")
        self.arity = arity
        self.cols = columns(arity)
        self._hash = hash_rows
        self._segments: list[pl.DataFrame] = []
        self._tail: list[pl.DataFrame] = []
        self._rows: pl.DataFrame | None = None
        self.height = 0
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"the table size must be a power of two, not {slots}")
        self._new_table(slots)

    def __len__(self) -> int:
        return self.height

    # -- the table ------------------------------------------------------------------------------

    def _new_table(self, size: int) -> None:
        self._mask = size - 1
        self._slots = pl.zeros(size, dtype=pl.UInt32, eager=True)
        self._tags = pl.zeros(size, dtype=pl.UInt32, eager=True)
        self._owner = self._offset = pl.Series(dtype=pl.Int64)
        self._offset8 = pl.Series(dtype=pl.UInt8)

    def _slot_and_tag(self, frame: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
        hashes = self._hash(frame.select(self.cols)).to_frame("h")
        split = hashes.select(
            (pl.col("h") & self._mask).cast(pl.Int64).alias("s"),
            (pl.col("h") // pl.lit(1 << 32, dtype=pl.UInt64)).cast(pl.UInt32).alias("t"),
        )
        return split.get_column("s"), split.get_column("t")

    def _window(self, start: pl.Series) -> tuple[pl.Series, pl.Series]:
        """The `_WINDOW` slots from each start (wrapping around), flat, and for each flat
        entry the index of its start."""
        flat = start.len() * _WINDOW
        if self._owner.len() < flat:
            span = pl.int_range(0, max(flat, 2 * self._owner.len()), eager=True)
            self._owner = span // _WINDOW
            self._offset = span % _WINDOW
            self._offset8 = self._offset.cast(pl.UInt8)
        owner = self._owner.slice(0, flat)
        return (start.gather(owner) + self._offset.slice(0, flat)) & self._mask, owner

    def _offset_u8(self, rows: int) -> pl.Series:
        return self._offset8.slice(0, rows * _WINDOW)

    def _place(self, slot: pl.Series, tag: pl.Series, position: pl.Series) -> None:
        """Put rows (absent from the table, distinct) into free slots, probing linearly."""
        stored = position + 1
        slots, tags, mask = self._slots, self._tags, self._mask
        while slot.len():
            n = slot.len()
            window, _ = self._window(slot)
            # The first free slot of each window (the least of offset + WINDOW * taken); of the
            # rows that chose the same one, the first takes it and the rest look again; rows
            # whose window is full move on a window.
            first = (
                ((slots.gather(window) != 0).cast(pl.UInt8) * _WINDOW + self._offset_u8(n))
                .reshape((n, _WINDOW))
                .arr.min()
            )
            free = first < _WINDOW
            target = (slot + first.cast(pl.Int64)) & mask
            takes = free & target.is_first_distinct()
            slots.scatter(target.filter(takes), stored.filter(takes))
            tags.scatter(target.filter(takes), tag.filter(takes))
            rest = ~takes
            slot = ((slot + (~free).cast(pl.Int64) * _WINDOW) & mask).filter(rest)
            tag = tag.filter(rest)
            stored = stored.filter(rest)

    def _grow(self, rows: int) -> bool:
        """Double the table until `rows` fit under the load limit, and refill it (True), or
        leave it (False)."""
        size = self._mask + 1
        if rows <= size * _MAX_LOAD:
            return False
        while rows > size * _MAX_LOAD:
            size *= 2
        self._new_table(size)
        # Hashes part by part, kept as two UInt32 columns: the refill's memory is about 8
        # bytes a row plus one slice, not the 30 of a sort over everything at once.
        homes, tags = [], []
        for part in self._segments + self._tail:
            slot, tag = self._slot_and_tag(part)
            homes.append(slot.cast(pl.UInt32))
            tags.append(tag)
        home, tag = pl.concat(homes), pl.concat(tags)
        # Filling an empty table needs no probing: in order of home slot, each row takes the
        # first slot at or after its home and after the previous row's, a running maximum,
        # computed one slice of home slots after another with the last slot taken carried.
        last = -1
        wrapped = []
        step = max(1, size // _REFILL_SLICES)
        for low in range(0, size, step):
            chosen = (home >= low) & (home < low + step)
            order = pl.DataFrame(
                {"s": home.filter(chosen).cast(pl.Int64), "t": tag.filter(chosen)}
            ).with_columns(p=(chosen.arg_true() + 1).cast(pl.UInt32))
            order = order.sort("s")
            rank = pl.int_range(0, pl.len())
            at = pl.max_horizontal((pl.col("s") - rank).cum_max() + rank, last + 1 + rank)
            order = order.with_columns(at=at)
            if order.height:
                last = order.get_column("at").max()  # type: ignore[assignment]
            inside = order.filter(pl.col("at") < size)
            self._slots.scatter(inside.get_column("at"), inside.get_column("p"))
            self._tags.scatter(inside.get_column("at"), inside.get_column("t"))
            wrapped.append(order.filter(pl.col("at") >= size))
        past = pl.concat(wrapped)  # past the end: probing wraps around to slot 0
        if past.height:
            self._place(
                pl.zeros(past.height, dtype=pl.Int64, eager=True),
                past.get_column("t"),
                past.get_column("p").cast(pl.Int64) - 1,
            )
        return True

    # -- membership -----------------------------------------------------------------------------

    def known(self, candidates: pl.DataFrame) -> pl.Series:
        """Which of the distinct `candidates` rows (columns c0, c1, ...) are in the set."""
        out = pl.Series("known", [False] * candidates.height, dtype=pl.Boolean)
        if candidates.height == 0 or self.height == 0:
            return out
        slot, tag = self._slot_and_tag(candidates)
        row = pl.int_range(0, candidates.height, eager=True)
        stored: pl.DataFrame | None = None
        slots, tags, mask = self._slots, self._tags, self._mask
        found: list[pl.Series] = []
        while row.len():
            n = row.len()
            window, owner = self._window(slot)
            position = slots.gather(window)
            same = (tags.gather(window) == tag.gather(owner)) & (position != 0)
            if same.any():
                # A tag match is a stored row with 32 more bits of the same hash: compare rows.
                if stored is None:
                    stored = self.stored()
                mine = row.gather(owner.filter(same))
                theirs = stored[position.filter(same).cast(pl.Int64) - 1]
                equal = pl.Series([True] * mine.len(), dtype=pl.Boolean)
                ours = candidates.select(self.cols)[mine]
                for c in self.cols:
                    equal = equal & (ours.get_column(c) == theirs.get_column(c))
                hit = owner.filter(same).filter(equal)
                if hit.len():
                    found.append(row.gather(hit))
                    # A found row is done: an empty slot in its window ends its probe.
                    position.scatter(hit * _WINDOW, 0)
            # A row absent from the table has an empty slot where its probe would end; a row
            # whose window is full may lie further on.
            full = position.reshape((n, _WINDOW)).arr.min() != 0
            row = row.filter(full)
            slot = ((slot + _WINDOW) & mask).filter(full)
            tag = tag.filter(full)
        if found:
            out = out.scatter(pl.concat(found), True)
        return out

    # -- rows -----------------------------------------------------------------------------------

    def add(self, rows: pl.DataFrame, iteration: int | None) -> None:
        """Rows absent from the set (columns c0, c1, ... and optionally the count `_w`) as
        the tuples first derived in `iteration` (None: each row's `_it` column says)."""
        if rows.height == 0:
            return
        if self.height + rows.height >= 1 << 32:
            raise OverflowError("a RowSet holds fewer than 2**32 rows")
        keep = self.cols + ([WEIGHT] if WEIGHT in rows.columns else [])
        if iteration is None:
            chunk = rows.select(*keep, pl.col(ITERATION).cast(pl.Int32))
        else:
            chunk = rows.select(keep).with_columns(
                pl.lit(iteration, dtype=pl.Int32).alias(ITERATION)
            )
        if WEIGHT in chunk.columns and (chunk.get_column(WEIGHT) == 1).all():
            chunk = chunk.drop(WEIGHT)  # counts of 1 are implicit, as in the State
        start = self.height
        self._tail.append(chunk)
        self._rows = None
        self.height += rows.height
        if len(self._tail) >= _TAIL_CHUNKS:
            self._segments.append(_concat(self._tail).rechunk())
            self._tail = []
        if not self._grow(self.height):  # a refilled table holds the new rows already
            slot, tag = self._slot_and_tag(rows)
            self._place(slot, tag, pl.int_range(start, self.height, dtype=pl.UInt32, eager=True))

    def rows(self) -> pl.DataFrame:
        """Every row, in insertion order: c0, c1, ..., the count `_w` and the iteration `_it`."""
        parts = self._segments + self._tail
        if not parts:
            return pl.DataFrame(
                schema=dict.fromkeys(self.cols, INT) | {WEIGHT: INT, ITERATION: pl.Int32}
            )
        one = pl.lit(1, dtype=INT).alias(WEIGHT)
        return _concat([p if WEIGHT in p.columns else p.with_columns(one) for p in parts])

    def stored(self) -> pl.DataFrame:
        """The rows' columns c0, c1, ... only (no count column to fill in), by position."""
        if self._rows is None:
            parts = [p.select(self.cols) for p in self._segments + self._tail]
            self._rows = _concat(parts) if parts else empty_frame(self.arity)
        return self._rows

    def drop_table(self) -> None:
        """Free the hash table once no more rows will be added or looked up."""
        self._new_table(1)


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Chunks as one frame; where some have a count column, the others get counts of 1."""
    if any(WEIGHT in p.columns for p in parts):
        one = pl.lit(1, dtype=INT).alias(WEIGHT)
        parts = [p if WEIGHT in p.columns else p.with_columns(one) for p in parts]
        names = [c for c in parts[0].columns if c not in (WEIGHT, ITERATION)]
        parts = [p.select(*names, WEIGHT, ITERATION) for p in parts]
    return pl.concat(parts, rechunk=False)
