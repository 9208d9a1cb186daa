"""A relation kept only as frames, with an exact hash set over its rows: the semi-naive
duplicate check of a Bootstrap whose relation is too big to hold as Python tuples.

The vectorized Bootstrap drops every candidate head already in I_{k-1}. Against a `State` that
is a dict probe per candidate; against a frame it is an anti-join, which hashes the whole
relation on every call. crdt.dl's skipBlank grows to 151,669,663 tuples over 14,149 iterations
of about 10,000 new tuples each, so an anti-join per iteration would hash the relation 14,149
times, and the State would need about 27 GiB of Python objects.

`RowSet` keeps the rows in frames (one chunk per iteration, compacted in groups) and an
open-addressing hash table over them: one UInt64 array, updated in place (`Series.scatter`),
whose entry is 0 for an empty slot, else 32 bits of the row's hash (the tag, top bit set) above
the row's position + 1. A probe compares rows only where the tags agree, so the set is exact
whatever the hash function does (collisions cost time, never correctness). Lookup and insertion
are one vectorized linear probe (`add_new`): each round gathers a window of `_WINDOW` slots for
every pending row at once; a row is new when its window has an empty slot before any verified
match, and then takes the first empty slot. The table doubles before it is 60 % full.

Iterations of skipBlank add a few thousand rows to tens of millions, thousands of times, so the
fixed cost of a call is what counts: the probe uses Series operations (a few microseconds
each) rather than frame queries (each a lazy plan of about 50-80 microseconds).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from reasoner.executors.local.polars_plan import INT, WEIGHT, columns, empty_frame, group_count

ITERATION = "_it"
"""The column of a stored row's iteration (Int32)."""

HashRows = Callable[[pl.DataFrame], pl.Series]
"""Rows -> one UInt64 hash per row (`DataFrame.hash_rows`; tests pass a colliding one)."""

_INITIAL_SLOTS = 1 << 16
_MAX_LOAD = 0.6
_WINDOW = 8
"""Slots each pending row looks at per probing round..."""
_WIDE_WINDOW = 64
_WIDE_ROWS = 512
"""... or, when this many rows or fewer are left, `_WIDE_WINDOW` slots."""
_REFILL_SLICES = 8
_ROOMY_SLOTS = 1 << 27
_ROOMY_GROWTH = 32
"""Up to `_ROOMY_SLOTS` slots (1 GiB), a table grows to hold `_ROOMY_GROWTH` times the rows that
made it grow (see `_grow`)."""
_TAIL_CHUNKS = 32
"""Chunks appended since the last compaction: reading the rows concatenates every chunk, so
past this many the tail is copied into one segment (each row is copied once)."""
_TAG = 0xFFFF_FFFF_0000_0000
_TOP = 1 << 63
"""Set in every tag, so that no entry is 0 and an empty slot never matches a tag."""
_LOW = 1 << 32


def _hash_rows(frame: pl.DataFrame) -> pl.Series:
    return frame.hash_rows()


class RowSet:
    """The distinct rows of one relation with their iteration and count, and exact membership.

    Semi-naive evaluation adds N_k = the candidate heads of iteration k minus I_{k-1}:
    `add_new` keeps the candidates not yet in the set and says which they were.
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
        self._keys: list[pl.DataFrame] = []
        """The segments' columns c0, c1, ... only."""
        self._rows: pl.DataFrame | None = None
        self.height = 0
        self._span = pl.Series(dtype=pl.UInt32)
        self._narrow = _Windows(_WINDOW)
        self._wide = _Windows(_WIDE_WINDOW)
        if slots < 1 or slots & (slots - 1):
            raise ValueError(f"the table size must be a power of two, not {slots}")
        self._new_table(slots)

    def __len__(self) -> int:
        return self.height

    # -- the table ------------------------------------------------------------------------------

    def _new_table(self, size: int) -> None:
        self._mask = size - 1
        self._table = pl.zeros(size, dtype=pl.UInt64, eager=True)

    def _hashes(self, frame: pl.DataFrame) -> pl.Series:
        return self._hash(frame[self.cols] if frame.width != self.arity else frame)

    def _home_and_tag(
        self, frame: pl.DataFrame, hashes: pl.Series | None = None
    ) -> tuple[pl.Series, pl.Series]:
        """Each row's home slot (UInt32, as every index here: Polars' own index type, which
        gathers and scatters take as it is) and its tag (UInt64, in the entry's high half)."""
        if hashes is None:
            hashes = self._hashes(frame)
        return (hashes & self._mask).cast(pl.UInt32), (hashes | _TOP) & _TAG

    def _windows(self, rows: int) -> _Windows:
        """Windows for a round of `rows` probes: narrow for many rows, wide for the few that
        are left after a round (one more round instead of several)."""
        return self._wide if rows <= _WIDE_ROWS else self._narrow

    def _true(self, mask: pl.Series) -> pl.Series:
        """The indexes where `mask` is true (`arg_true` would run a query)."""
        if self._span.len() < mask.len():
            self._span = pl.int_range(0, 2 * mask.len(), dtype=pl.UInt32, eager=True)
        return self._span.slice(0, mask.len()).filter(mask)

    def _place(self, start: pl.Series, entry: pl.Series) -> None:
        """Put entries (of rows absent from the table, distinct) into the first free slot at or
        after `start`. Rows that chose the same slot are all written; the one whose entry the
        slot holds afterwards has it, the others look again."""
        table, mask = self._table, self._mask
        while start.len():
            windows = self._windows(start.len())
            window, _ = windows.slots(start, mask)
            first = windows.first_empty(table[window], start.len())
            free = first < windows.width
            target = (start + first) & mask
            full = ~free
            chosen, written = target.filter(free), entry.filter(free)
            table.scatter(chosen, written)
            placed = free.scatter(self._true(free), table[chosen] == written)
            start = ((start + full.cast(pl.UInt32) * windows.width) & mask).filter(~placed)
            entry = entry.filter(~placed)

    def _grow(self, rows: int) -> bool:
        """Enlarge the table if `rows` do not fit under the load limit, and refill it with
        every stored row (True), or leave it (False).

        A refill of a large table costs 100-250 ns a row (it sorts the rows by home slot and
        gathers their tags at random), so the table grows to hold `_ROOMY_GROWTH` times `rows`,
        up to `_ROOMY_SLOTS` slots; past that size it only doubles, for memory. The rows a
        relation will reach are unknown, and a large table probes no slower than a small one
        (each probe misses the cache either way): on the 20,000-operation prefix of crdt.dl,
        skipBlank's table, made when the relation leaves the state at 2 M rows, then holds its
        42.6 M rows without a refill, where growing to twice the rows refilled 27 M, 20 M of
        them at 265 ns (5.3 s of a 37 s run)."""
        size = self._mask + 1
        if rows <= size * _MAX_LOAD:
            return False
        roomy = min(_fitting(_ROOMY_GROWTH * rows, size), _ROOMY_SLOTS)
        self._new_table(max(roomy, _fitting(rows, size)))
        size = self._mask + 1
        # Per row, its home slot and position + 1 in one UInt64 (home in the high half) and
        # its tag's 32 bits: 12 bytes a row, and sorting the keys orders the rows by home.
        keys, tags = [], []
        done = 0
        for part in self._segments + self._tail:
            home, tag = self._home_and_tag(part)
            position = pl.int_range(done + 1, done + part.height + 1, dtype=pl.UInt64, eager=True)
            keys.append(home.cast(pl.UInt64) * _LOW | position)
            tags.append((tag // _LOW).cast(pl.UInt32))
            done += part.height
        key, tag32 = pl.concat(keys), pl.concat(tags)
        del keys, tags
        # Filling an empty table needs no probing: in order of home slot, each row takes the
        # first slot at or after its home and after the previous row's, a running maximum,
        # computed one slice of home slots after another with the last slot taken carried.
        last = -1
        wrapped = []
        step = max(1, size // _REFILL_SLICES)
        for low in range(0, size, step):
            chosen = key.filter((key >= low * _LOW) & (key < (low + step) * _LOW)).sort()
            if chosen.len() == 0:
                continue
            position = chosen & (_LOW - 1)
            rank = pl.int_range(0, chosen.len(), dtype=pl.Int64, eager=True)
            at = ((chosen // _LOW).cast(pl.Int64) - rank).cum_max() + rank
            at = at.zip_with(at > last + rank, rank + (last + 1))
            last = at[-1]
            entry = tag32[(position - 1).cast(pl.UInt32)].cast(pl.UInt64) * _LOW | position
            inside = at < size
            self._table.scatter(at.filter(inside).cast(pl.UInt32), entry.filter(inside))
            wrapped.append(entry.filter(~inside))
        past = pl.concat(wrapped)  # past the end: probing wraps around to slot 0
        if past.len():
            self._place(pl.Series([0] * past.len(), dtype=pl.UInt32), past)
        return True

    def _probe(self, candidates: pl.DataFrame, home: pl.Series, tag: pl.Series) -> tuple:
        """Which distinct `candidates` are absent from the table, and for each the first empty
        slot its probe met: (candidate indices, slots), the slots in the candidates' order
        when every candidate is absent."""
        table, mask = self._table, self._mask
        row = pl.int_range(0, candidates.height, dtype=pl.UInt32, eager=True)
        slot = home
        absent, targets = [], []
        stored: pl.DataFrame | None = None
        while row.len():
            n = row.len()
            windows = self._windows(n)
            window, owner = windows.slots(slot, mask)
            entries = table[window]
            first = windows.first_empty(entries, n)
            other = entries ^ tag[row][owner]
            match = other < _LOW
            if match.any():
                # A tag match is a stored row with 32 more bits of the same hash: compare rows.
                # (A true match lies before the window's first empty slot: nothing is deleted.)
                if stored is None:
                    stored = self.stored()
                flat = self._true(match)
                mine = owner[flat]
                theirs = other[flat].cast(pl.UInt32) - 1
                ours = row[mine]
                equal = None
                for c in self.cols:
                    same = candidates.get_column(c)[ours] == stored.get_column(c)[theirs]
                    equal = same if equal is None else equal & same
                assert equal is not None
                if equal.any():
                    first.scatter(mine.filter(equal), 2 * windows.width)  # found: known
            new = first < windows.width
            absent.append(row.filter(new))
            targets.append(((slot + first) & mask).filter(new))
            further = first == windows.width
            row = row.filter(further)
            slot = ((slot + windows.width) & mask).filter(further)
        rows, slots = pl.concat(absent), pl.concat(targets)
        if len(absent) > 1 and rows.len() == candidates.height:
            # All new, but listed round by round: the slots go back into the rows' order,
            # which is the order `add_new` then writes the rows' entries in.
            slots = pl.zeros(rows.len(), dtype=pl.UInt32, eager=True).scatter(rows, slots)
        return rows, slots

    # -- rows -----------------------------------------------------------------------------------

    def add_derived(self, heads: pl.DataFrame, iteration: int) -> pl.DataFrame:
        """N_k from the head rows of iteration k: group them (columns c0, c1, ... and the
        weight `_w` when some row stands for several derivations) into distinct rows with
        their counts, add the rows not yet in the set, and return those.

        Distinct hashes are distinct rows, so heads without duplicates, as most of
        skipBlank's iterations are, skip the grouping (a hash aggregation)."""
        hashes = self._hashes(heads)
        if hashes.n_unique() < heads.height:
            return self.add_new(group_count(heads, self.cols), iteration)
        return self.add_new(heads, iteration, hashes)

    def add_new(
        self, candidates: pl.DataFrame, iteration: int | None, hashes: pl.Series | None = None
    ) -> pl.DataFrame:
        """Add the `candidates` rows not yet in the set, and return them, as the tuples first
        derived in `iteration` (None: each row's `_it` column says). `candidates` are distinct
        rows: columns c0, c1, ... and optionally the count `_w`; `hashes`, if given, theirs."""
        if candidates.height == 0:
            return candidates
        home, tag = self._home_and_tag(candidates, hashes)
        if self.height:
            absent, target = self._probe(candidates, home, tag)
            if absent.len() == 0:
                return candidates.clear()
            if absent.len() < candidates.height:
                candidates = candidates[absent]
                tag = tag[absent]
        else:
            target = home  # an empty table: every row is new, and its home is empty
        if self.height + candidates.height >= _LOW - 1:
            raise OverflowError("a RowSet holds fewer than 2**32 - 1 rows")
        start = self.height
        self._append(candidates, iteration)
        if not self._grow(self.height):  # a refilled table holds the new rows already
            entry = tag | pl.int_range(start + 1, self.height + 1, dtype=pl.UInt64, eager=True)
            # Each row takes the empty slot its probe ended on, unless another new row took it.
            self._table.scatter(target, entry)
            lost = self._table[target] != entry
            if lost.any():
                self._place(target.filter(lost), entry.filter(lost))
        return candidates

    def _append(self, rows: pl.DataFrame, iteration: int | None) -> None:
        keep = [rows.get_column(c) for c in self.cols]
        # Counts of 1 are implicit, as in the State.
        if WEIGHT in rows.columns and not (rows.get_column(WEIGHT) == 1).all():
            keep.append(rows.get_column(WEIGHT))
        if iteration is None:
            keep.append(rows.get_column(ITERATION).cast(pl.Int32))
        else:
            keep.append(
                pl.Series(ITERATION, [iteration], dtype=pl.Int32).new_from_index(0, rows.height)
            )
        chunk = pl.DataFrame(keep)
        self._tail.append(chunk)
        self.height += rows.height
        if len(self._tail) >= _TAIL_CHUNKS:
            self._segments.append(_concat(self._tail).rechunk())
            self._keys.append(self._segments[-1][self.cols])
            self._tail = []
            self._rows = None
        elif self._rows is not None:
            self._rows = self._rows.vstack(chunk[self.cols])

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
            parts = self._keys + [p[self.cols] for p in self._tail]
            self._rows = _concat(parts) if parts else empty_frame(self.arity)
        return self._rows

    def drop_table(self) -> None:
        """Free the hash table once no more rows will be added or looked up."""
        self._new_table(1)


def _fitting(rows: int, size: int) -> int:
    """The least power-of-two multiple of `size` that holds `rows` under the load limit."""
    while rows > size * _MAX_LOAD:
        size *= 2
    return size


class _Windows:
    """Probing windows of one width: the flat slot numbers of a window per pending row, and the
    first empty slot of each, from index arrays kept across calls (sliced, never rebuilt)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._rows = 0
        self._size(1)

    def _size(self, rows: int) -> None:
        if rows <= self._rows:
            return
        self._rows = max(rows, 2 * self._rows)
        span = pl.int_range(0, self._rows * self.width, dtype=pl.UInt32, eager=True)
        self._owner = span // self.width
        self._offset = span % self.width
        self._offset8 = self._offset.cast(pl.UInt8)
        self._evens = span * 2
        self._odds = self._evens + 1

    def slots(self, start: pl.Series, mask: int) -> tuple[pl.Series, pl.Series]:
        """The `width` slots from each start (wrapping around), flat, and for each flat entry
        the index of its start."""
        self._size(start.len())
        flat = start.len() * self.width
        owner = self._owner.slice(0, flat)
        return (start[owner] + self._offset.slice(0, flat)) & mask, owner

    def first_empty(self, entries: pl.Series, rows: int) -> pl.Series:
        """Per window of `entries` (flat, `rows` windows), the offset of its first empty slot,
        or `width` when it is full: the least of offset + `width` * taken, by halving
        (`arr.min` would run a query)."""
        least = (entries != 0).cast(pl.UInt8) * self.width + self._offset8.slice(
            0, rows * self.width
        )
        half = self.width // 2
        while half:
            left = least[self._evens.slice(0, rows * half)]
            right = least[self._odds.slice(0, rows * half)]
            least = left.zip_with(left < right, right)
            half //= 2
        return least.cast(pl.UInt32)


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Chunks as one frame; where some have a count column, the others get counts of 1."""
    if any(WEIGHT in p.columns for p in parts):
        one = pl.lit(1, dtype=INT).alias(WEIGHT)
        parts = [p if WEIGHT in p.columns else p.with_columns(one) for p in parts]
        names = [c for c in parts[0].columns if c not in (WEIGHT, ITERATION)]
        parts = [p.select(*names, WEIGHT, ITERATION) for p in parts]
    return pl.concat(parts, rechunk=False)
