"""Rows in lexicographic order in one sort (`reasoner.support.ordering`): the permutation is
`np.lexsort`'s, ties in row order included, whether the keys pack into one word or not."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.support.ordering import lexicographic_order
from tests.conftest import examples

INT64 = np.iinfo(np.int64)


@st.composite
def key_columns(draw: st.DrawFn) -> list[np.ndarray]:
    """1-4 keys of one length, of several integer types, narrow (they pack, with repeated
    rows) or spanning their whole type (they do not)."""
    rows = draw(st.integers(1, 60))
    keys = []
    for _ in range(draw(st.integers(1, 4))):
        dtype = draw(st.sampled_from([np.int64, np.uint64, np.int32]))
        info = np.iinfo(dtype)
        low, high = draw(
            st.sampled_from([(-3, 3), (0, 2), (5, 5), (info.min, info.max), (-(2**40), 2**40)])
        )
        low, high = max(low, info.min), min(high, info.max)
        values = draw(st.lists(st.integers(low, high), min_size=rows, max_size=rows))
        keys.append(np.array(values, dtype=dtype))
    return keys


@settings(max_examples=examples(500))
@given(key_columns())
def test_the_order_is_lexsorts_ties_included(keys: list[np.ndarray]) -> None:
    assert lexicographic_order(keys).tolist() == np.lexsort(keys[::-1]).tolist()


def test_wide_keys_that_pack_keep_their_order_across_the_sign() -> None:
    """Two keys of 31 bits and a row number: one word. The signed one spans its minimum."""
    rng = np.random.default_rng(0)
    first = rng.integers(-(2**30), 2**30, 1000)
    second = rng.integers(0, 2**31, 1000).astype(np.uint64)
    first[::7] = first[0]  # ties on the first key, broken by the second
    keys = [first, second]
    assert lexicographic_order(keys).tolist() == np.lexsort(keys[::-1]).tolist()
    assert lexicographic_order([np.array([INT64.max, INT64.min])]).tolist() == [1, 0]


def test_keys_that_are_not_integers_are_ordered_as_lexsort_orders_them() -> None:
    keys = [np.array([1.5, -0.5, 1.5, 0.25]), np.array([2, 1, 0, 3])]
    assert lexicographic_order(keys).tolist() == [1, 3, 2, 0]
