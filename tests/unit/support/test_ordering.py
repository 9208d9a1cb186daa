"""Rows in lexicographic order in one sort (`reasoner.support.ordering`): the permutation is
`np.lexsort`'s, ties in row order included, whether the keys pack into one word or not; the
words are sorted by radix (`reasoner.support.word_sort`) as NumPy sorts them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.support import lanes, word_sort
from reasoner.support.ordering import lexicographic_order, sorted_rows
from reasoner.support.word_sort import sorted_words
from tests.conftest import examples

INT64 = np.iinfo(np.int64)


@st.composite
def key_columns(draw: st.DrawFn) -> list[np.ndarray]:
    """1-4 keys of one length, of several integer types, narrow (they pack, with repeated
    rows) or spanning their whole type (they do not)."""
    rows = draw(st.integers(1, 60) | st.integers(200, 1500))  # the radix sort from 256 words
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    keys = []
    for _ in range(draw(st.integers(1, 4))):
        dtype = draw(st.sampled_from([np.int64, np.uint64, np.int32]))
        info = np.iinfo(dtype)
        low, high = draw(
            st.sampled_from([(-3, 3), (0, 2), (5, 5), (info.min, info.max), (-(2**40), 2**40)])
        )
        low, high = max(low, info.min), min(high, info.max)
        keys.append(rng.integers(low, high, rows, dtype=dtype, endpoint=True))
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


@settings(max_examples=examples(300))
@given(
    bits=st.integers(0, 64),
    rows=st.integers(0, 40) | st.integers(250, 5000),
    fixed=st.integers(0, 64),
    seed=st.integers(0, 2**32),
)
def test_words_sort_as_numpy_sorts_them(bits: int, rows: int, fixed: int, seed: int) -> None:
    """Words below 2**bits, their bits from `fixed` up the same in every word (a pass the sort
    skips)."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**64, rows, dtype=np.uint64, endpoint=False)
    words &= np.uint64((1 << bits) - 1)
    if fixed < bits:
        words &= np.uint64((1 << fixed) - 1)
        words |= np.uint64(((1 << bits) - 1) & ~((1 << fixed) - 1) & 0x5555555555555555)
    assert sorted_words(words.copy(), bits).tolist() == np.sort(words).tolist()


@settings(max_examples=examples(100))
@given(
    count=st.integers(2, 4),
    bits=st.integers(1, 64),
    rows=st.integers(256, 3000),
    seed=st.integers(0, 2**32),
)
def test_words_split_among_lanes_sort_as_on_one(
    count: int, bits: int, rows: int, seed: int
) -> None:
    """Each lane counts and scatters its share, from offsets taken digit by digit and lane by
    lane: a lane's share placed out of turn, or counted against another's offsets, is out
    of order."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**64, rows, dtype=np.uint64, endpoint=False)
    words &= np.uint64((1 << bits) - 1)
    words[rng.integers(0, rows, rows // 3)] = words[0]  # many of one digit in every pass
    saved = lanes.LANES, word_sort.LANE_WORDS
    lanes.LANES, word_sort.LANE_WORDS = count, 1
    try:
        on_lanes = sorted_words(words.copy(), bits)
    finally:
        lanes.LANES, word_sort.LANE_WORDS = saved
    assert on_lanes.tolist() == np.sort(words).tolist()


@settings(max_examples=examples(300))
@given(key_columns())
def test_distinct_rows_sort_as_the_order_puts_them(keys: list[np.ndarray]) -> None:
    distinct = list(dict.fromkeys(zip(*(key.tolist() for key in keys), strict=True)))
    keys = [np.array([row[c] for row in distinct], dtype=key.dtype) for c, key in enumerate(keys)]
    given = list(keys)
    result = sorted_rows(given)
    if result is None:  # they do not pack
        assert sum((int(k.max()) - int(k.min())).bit_length() for k in keys) > 64
        return
    assert given == []  # let go once packed
    order = lexicographic_order(keys)
    assert [c.tolist() for c in result] == [key[order].tolist() for key in keys]
    assert [c.dtype for c in result] == [key.dtype for key in keys]
