"""`DenseIndex`: the same rows as Polars' inner join, whatever the left side holds."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.executors.local import dense_index
from reasoner.executors.local.dense_index import DenseIndex
from tests.conftest import examples

values = st.integers(-4, 4)
"""Left keys range wider than right keys, so some fall just outside the index's box."""
right_rows = st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 3), values), max_size=20)
left_rows = st.lists(st.tuples(values | st.none(), values, values), max_size=30)


def _frame(rows: list[tuple], names: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        [pl.Series(n, [r[i] for r in rows], dtype=pl.Int64) for i, n in enumerate(names)]
    )


@settings(max_examples=examples(200))
@given(right_rows, left_rows)
def test_join_matches_polars_inner_join(right: list[tuple], left: list[tuple]) -> None:
    right_frame = _frame(right, ["a", "b", "r"])
    left_frame = _frame(left, ["a", "b", "l"])
    index = DenseIndex.build(right_frame, ["a", "b"])
    keys = [(a, b) for a, b, _ in right]
    if not right or len(set(keys)) < len(keys):
        assert index is None  # no rows, or a key that repeats: Polars' join is used instead
        return
    assert index is not None
    expected = left_frame.join(right_frame, on=["a", "b"], how="inner")
    joined = index.join(left_frame)
    assert joined.columns == expected.columns
    assert sorted(joined.rows()) == sorted(expected.rows())


def test_a_key_spanning_too_large_a_box_is_not_indexed() -> None:
    wide = pl.DataFrame({"a": [0, dense_index.MAX_SLOTS], "r": [1, 2]})
    assert DenseIndex.build(wide, ["a"]) is None
    assert DenseIndex.build(pl.DataFrame({"a": [0.5], "r": [1]}), ["a"]) is None


def test_a_right_side_of_keys_only_joins_as_a_semi_join() -> None:
    index = DenseIndex.build(pl.DataFrame({"a": [1, 3]}), ["a"])
    assert index is not None
    assert index.join(pl.DataFrame({"a": [3, 2, 1, 3], "x": [1, 2, 3, 4]})).rows() == [
        (3, 1),
        (1, 3),
        (3, 4),
    ]
