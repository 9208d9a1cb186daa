"""Joins and group counts of frames on packed keys: the bulk operations under the vectorized
Bootstrap's plans (`reasoner.executors.local.polars_plan`), for every Int64 frame.

Several key columns are packed into one Int64 key where their ranges allow (`Packing`):
Polars hashes and compares one such column about twice as fast as a multi-column key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from reasoner.support.polars_on_demand import pl

WEIGHT = "_w"
"""A frame's weight column: the number of rule instantiations (derivations) a row stands for."""

KEY = "_key"


@dataclass(frozen=True, slots=True)
class Packing:
    """Several Int64 key columns packed into one: `sum((c_i - low_i) << shift_i)`.

    Polars hashes and compares a multi-column key through a row encoding; one Int64 column is
    about twice as fast to join or group on. Possible when the value ranges, taken over every
    frame that takes part, need at most 62 bits together (interned symbols and the numbers of
    real data usually do); a constant column takes no bits at all.
    """

    lows: tuple[int, ...]
    bits: tuple[int, ...]

    def key(self, cols: list[str]) -> pl.Expr:
        """The packed key as an expression, for queries."""
        return self._packed([pl.col(c) for c in cols], lambda v: pl.lit(v, dtype=pl.Int64))

    def series(self, frame: pl.DataFrame, cols: list[str]) -> pl.Series:
        """The packed key of `frame` by Series arithmetic: no query to plan (see `without`)."""
        return self._packed([frame.get_column(c) for c in cols], int)

    def _packed(self, parts: list, constant: Callable[[int], object]):
        """`sum((part_i - low_i) << shift_i)` over Exprs or Series (`constant` makes an
        operand of an int for them)."""
        total = None
        shift = 0
        for part, low, bits in zip(parts, self.lows, self.bits, strict=True):
            if bits == 0:
                continue
            if low:
                part = part - constant(low)
            if shift:
                part = part * constant(1 << shift)
            total = part if total is None else total + part
            shift += bits
        if total is None:  # every column is constant: still a column, so an Expr broadcasts
            total = parts[0] - constant(self.lows[0])
        return total.alias(KEY)

    def unpack(self, cols: list[str]) -> list[pl.Expr]:
        out = []
        shift = 0
        for col, low, bits in zip(cols, self.lows, self.bits, strict=True):
            if bits == 0:
                out.append(pl.lit(low, dtype=pl.Int64).alias(col))
                continue
            part = pl.col(KEY)
            if shift:
                part = part // pl.lit(1 << shift, dtype=pl.Int64)
            part = part % pl.lit(1 << bits, dtype=pl.Int64)
            out.append((part + pl.lit(low, dtype=pl.Int64) if low else part).alias(col))
            shift += bits
        return out


_PACK_ROWS = 20_000
"""Below this many rows (all sides together) packing costs more than it saves."""


def key_packing(sides: list[tuple[pl.DataFrame, list[str]]]) -> Packing | None:
    """A packing of the key columns of every (frame, columns) side, or None if there is one
    column only, the frames are small or the ranges do not fit."""
    width = len(sides[0][1])
    if width < 2 or sum(frame.height for frame, _ in sides) < _PACK_ROWS:
        return None
    lows: list[int | None] = [None] * width
    highs: list[int | None] = [None] * width
    for frame, cols in sides:
        if frame.height == 0:
            continue
        for i, c in enumerate(cols):
            column = frame.get_column(c)
            extremes = column.min(), column.max()
            if extremes[0] is None or extremes[1] is None:
                return None
            lo, hi = int(cast(int, extremes[0])), int(cast(int, extremes[1]))  # Int64 columns
            low, high = lows[i], highs[i]
            lows[i] = lo if low is None else min(low, lo)
            highs[i] = hi if high is None else max(high, hi)
    if any(lo is None for lo in lows):
        return None
    known = [cast(int, lo) for lo in lows]  # no None left: checked above
    bits = tuple((cast(int, hi) - lo).bit_length() for lo, hi in zip(known, highs, strict=True))
    if sum(bits) > 62:
        return None
    return Packing(tuple(known), bits)


def join(left: pl.DataFrame, right: pl.DataFrame, on: list[str], how: str) -> pl.DataFrame:
    """`left.join(right, on=on, how=how)` ("inner", "semi" or "anti"), on a packed key when
    there are several key columns (see `Packing`)."""
    packing = key_packing([(left, on), (right, on)]) if len(on) > 1 else None
    if packing is None:
        return left.join(right, on=on, how=how)  # type: ignore[arg-type]  # a Polars join kind
    right_key = packing.series(right, on)
    if how == "inner" and (rest := without(right, on)).width:
        right = rest.hstack([right_key])  # the right side's other columns, then the key
    else:
        right = right_key.to_frame()
    joined = left.hstack([packing.series(left, on)]).join(right, on=KEY, how=how)  # type: ignore[arg-type]  # a Polars join kind
    return without(joined, [KEY])


def without(frame: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """`frame.drop(names)` by column selection. In Polars 2.1 `drop`, `select`,
    `with_columns` and `rename` each plan and run a query (50-90 us); picking columns or
    building a frame from Series is direct (2-10 us). CRDT's frame iterations run thousands
    of times with a few thousand rows each, where that fixed cost adds up."""
    kept = [c for c in frame.columns if c not in names]
    return frame[kept] if kept else pl.DataFrame()  # `frame[[]]` would select no rows instead


def anti_join(left: pl.DataFrame, right: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Rows of `left` with no match in `right` (whose `on` rows are distinct).

    Polars builds an anti-join's hash table on the right side; against a much bigger relation
    that is a full hash build per call. Then first find the matching keys with an inner join
    (which builds on the smaller side), and anti-join on those.
    """
    if left.height == 0 or right.height == 0:
        return left
    if right.height <= 4 * left.height:
        return join(left, right, on, "anti")
    matched = join(left.select(on), right.select(on), on, "inner")
    if matched.height == 0:
        return left
    return join(left, matched.unique(), on, "anti")


_LAZY_GROUP = 20_000
"""Rows from which `group_count` goes through the lazy engine: its hash aggregation is about
twice as fast as the eager `group_by` on big frames, its planning costs more on small ones."""


def group_count(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """Distinct `cols` rows with their total weight `_w` (the row count when unweighted)."""
    weighted = WEIGHT in frame.columns
    total = pl.col(WEIGHT).sum() if weighted else pl.len().cast(pl.Int64).alias(WEIGHT)
    packing = key_packing([(frame, cols)])
    lazy = frame.lazy() if frame.height >= _LAZY_GROUP else None
    if packing is None:
        if lazy is not None:
            return lazy.group_by(cols).agg(total).collect()
        return frame.group_by(cols).agg(total)
    keys = [packing.key(cols), *([WEIGHT] if weighted else [])]
    if lazy is not None:
        grouped = lazy.select(keys).group_by(KEY).agg(total).collect()
    else:
        grouped = frame.select(keys).group_by(KEY).agg(total)
    return grouped.select(*packing.unpack(cols), WEIGHT)
