"""`RowSet`: exact membership whatever the hash does, through growth and wrap-around."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.executors.local.polars_plan import WEIGHT
from reasoner.executors.local.row_set import RowSet


def _real(frame: pl.DataFrame) -> pl.Series:
    return frame.hash_rows()


def _one_value(frame: pl.DataFrame) -> pl.Series:
    """Every row collides, in the table's last slot: probing wraps around to slot 0."""
    return pl.Series([2**64 - 1] * frame.height, dtype=pl.UInt64)


def _three_values(frame: pl.DataFrame) -> pl.Series:
    """Rows collide in three groups, with equal tags within a group."""
    spread = pl.lit((1 << 40) + 1, dtype=pl.UInt64)
    return frame.select((pl.col("c0") % 3).cast(pl.UInt64) * spread).to_series()


def _first_slots(frame: pl.DataFrame) -> pl.Series:
    """Home slots 0..6 with equal tags: long clusters that cross the refill's slices."""
    return frame.select((pl.col("c0") + 3).cast(pl.UInt64)).to_series()


HASHES = {
    "real": _real,
    "one value": _one_value,
    "three values": _three_values,
    "first slots": _first_slots,
}

rows = st.tuples(st.integers(-3, 3), st.integers(-3, 3))
batches = st.lists(st.lists(rows, max_size=12), min_size=1, max_size=8)


@settings(max_examples=150)
@given(batches, st.sampled_from(sorted(HASHES)), st.sampled_from((1, 2, 8, 1024)))
def test_membership_iterations_and_counts_match_a_python_set(
    batches: list[list[tuple[int, int]]], hash_name: str, slots: int
) -> None:
    """Batches of candidates as semi-naive evaluation sends them: `add_new` keeps exactly the
    rows not added before, with their iteration and count."""
    row_set = RowSet(2, HASHES[hash_name], slots)
    model: dict[tuple[int, int], tuple[int, int]] = {}
    for iteration, batch in enumerate(batches, start=1):
        distinct = sorted(set(batch))
        frame = pl.DataFrame(
            {
                "c0": [r[0] for r in distinct],
                "c1": [r[1] for r in distinct],
                WEIGHT: [1 + (r[0] + r[1]) % 2 for r in distinct],
            },
            schema={"c0": pl.Int64, "c1": pl.Int64, WEIGHT: pl.Int64},
        )
        new = row_set.add_new(frame, iteration)
        assert sorted(new.select("c0", "c1").rows()) == [r for r in distinct if r not in model]
        for c0, c1, count in new.iter_rows():
            model[(c0, c1)] = (iteration, count)
    assert len(row_set) == len(model)
    stored = {(c0, c1): (it, w) for c0, c1, w, it in row_set.rows().iter_rows()}
    assert stored == model


def test_a_grown_table_still_finds_every_row() -> None:
    """Past 60 % full the table doubles and is refilled without probing (running maximum of
    home slots); rows filled that way and rows placed by probing must both be found."""
    row_set = RowSet(1, slots=4)
    first = pl.DataFrame({"c0": list(range(0, 3000, 3))})
    assert row_set.add_new(first, 1).equals(first)
    second = pl.DataFrame({"c0": list(range(1, 3000, 3))})
    assert row_set.add_new(second, 2).equals(second)
    everything = pl.DataFrame({"c0": list(range(3000))})
    assert sorted(row_set.add_new(everything, 3).get_column("c0")) == list(range(2, 3000, 3))
    assert row_set.rows().get_column("_it").to_list() == [1] * 1000 + [2] * 1000 + [3] * 1000


def test_new_rows_settled_in_different_probe_rounds_are_found_again() -> None:
    """A batch of new rows only, some ending their probe on the first round and some on a
    later one: each row's entry must land on its own slot (the probe lists the rows round by
    round, not in the batch's order)."""
    row_set = RowSet(1, lambda frame: frame.get_column("c0").cast(pl.UInt64), slots=1024)
    cluster = pl.DataFrame({"c0": list(range(100))})  # slots 0..99, all with the same tag
    assert row_set.add_new(cluster, 1).height == 100
    # 1024 has home 0, so its probe crosses the cluster; 500's home is empty.
    late_and_early = pl.DataFrame({"c0": [1024, 500]})
    assert row_set.add_new(late_and_early, 2).equals(late_and_early)
    assert row_set.add_new(late_and_early, 3).height == 0
    assert row_set.add_new(pl.DataFrame({"c0": [101, 2048]}), 4).height == 2


def test_rows_carrying_their_iterations_and_a_table_size_that_is_no_power_of_two() -> None:
    row_set = RowSet(1)
    row_set.add_new(pl.DataFrame({"c0": [5, 6], "_it": [0, 3]}), None)
    assert row_set.rows().rows() == [(5, 1, 0), (6, 1, 3)]
    with pytest.raises(ValueError, match="power of two"):
        RowSet(1, slots=12)


@pytest.mark.parametrize("hash_name", sorted(HASHES))
def test_derived_heads_are_grouped_into_counts_unless_already_distinct(hash_name: str) -> None:
    """`add_derived` takes an iteration's head rows as the plans produce them: repeated rows
    (or weights) are one tuple whose count is their total, whether the rows' hashes show them
    distinct (no grouping) or not (grouped); rows already in the set are left out."""
    row_set = RowSet(2, HASHES[hash_name], slots=8)
    row_set.add_new(pl.DataFrame({"c0": [0], "c1": [0]}), 1)
    distinct = pl.DataFrame({"c0": [1, 2, 0], "c1": [1, 1, 0], WEIGHT: [3, 1, 2]})
    new = row_set.add_derived(distinct, 2)
    assert sorted(new.select("c0", "c1", WEIGHT).rows()) == [(1, 1, 3), (2, 1, 1)]
    repeated = pl.DataFrame({"c0": [3, 3, 1, 4], "c1": [0, 0, 1, 0]})
    new = row_set.add_derived(repeated, 3)
    assert sorted(new.select("c0", "c1", WEIGHT).rows()) == [(3, 0, 2), (4, 0, 1)]
    stored = sorted(row_set.rows().select("c0", "c1", WEIGHT, "_it").rows())
    assert stored == [(0, 0, 1, 1), (1, 1, 3, 2), (2, 1, 1, 2), (3, 0, 2, 3), (4, 0, 1, 3)]
