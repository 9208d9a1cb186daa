"""Lexicographic order of rows given as key columns, as `np.lexsort` gives it, in one sort.

`np.lexsort` sorts once per key, indirectly and stably: 0.21-0.28 s for the 1.36 M rows of
two columns that an R-MAT closure of 131 k nodes writes out, more than its Bootstrap takes.
Where the keys' ranges fit one 64-bit word together with a row number (node ids, symbol
ranks, most numbers), each key is shifted to start at 0 and packed in its own bits, the row
number in the lowest: the words are distinct, so a plain (vectorized) sort of them is already
the stable order, and the row numbers read back from it are `np.lexsort`'s permutation,
ties included. Keys that do not fit, or are not integers, go to `np.lexsort`. The words are
sorted by radix (`reasoner.support.word_sort`): their width is known.

Layer: `support`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reasoner.support.word_sort import sorted_words


def lexicographic_order(keys: Sequence[np.ndarray]) -> np.ndarray:
    """The stable permutation that sorts rows by `keys[0]`, then `keys[1]`, ...: that of
    `np.lexsort(keys[::-1])`. Keys are arrays of one length, at least one."""
    rows = len(keys[0])
    if rows < 2:
        return np.arange(rows, dtype=np.intp)
    row_bits = (rows - 1).bit_length()
    packing = _packed(keys, row_bits)
    if packing is None:
        return np.lexsort(keys[::-1])
    packed, bits, _ = packing
    packed <<= np.uint64(row_bits)
    packed |= np.arange(rows, dtype=np.uint64)
    packed = sorted_words(packed, bits + row_bits)
    packed &= np.uint64((1 << row_bits) - 1)
    return packed.astype(np.intp)


def sorted_rows(keys: list[np.ndarray]) -> list[np.ndarray] | None:
    """Rows given as integer key columns, all distinct, in lexicographic order: the key
    columns as `lexicographic_order` would reorder them, but without the row numbers (21 bits
    more to sort for a million rows), the permutation, or a gather of every column by it; None
    where the keys do not fit one word or are not integers.

    `keys` is emptied once they are packed: a caller that keeps no other reference to them
    lets them go before the sorted columns are made, which are unpacked in place, so that at
    most the keys and one more word a row are held at a time (a relation being written out)."""
    packing = _packed(keys, 0)
    if packing is None:
        return None
    packed, bits, fields = packing
    dtypes = [key.dtype for key in keys]
    keys.clear()
    packed = sorted_words(packed, bits)
    columns: list[np.ndarray] = []
    for index in range(len(fields) - 1, -1, -1):  # the last key is in the lowest bits
        low, width = fields[index]
        if index:
            field = np.bitwise_and(packed, np.uint64((1 << width) - 1))
            packed >>= np.uint64(width)
        else:
            field = packed
        columns.append(_from_zero_back(field, low, dtypes[index]))
    return columns[::-1]


def _packed(
    keys: Sequence[np.ndarray], spare_bits: int
) -> tuple[np.ndarray, int, list[tuple[int, int]]] | None:
    """Each row's keys, shifted to start at 0, packed into one word, the first key highest:
    (the words, the bits they use, each key's (minimum, width)); None where the keys and
    `spare_bits` do not fit 64 bits together, or a key is not an integer."""
    if any(key.dtype.kind not in "iu" for key in keys):
        return None
    rows = len(keys[0])
    spans = [(int(key.min()), int(key.max())) if rows else (0, 0) for key in keys]
    fields = [(low, (high - low).bit_length()) for low, high in spans]
    bits = sum(width for _, width in fields)
    if bits + spare_bits > 64:
        return None
    packed = np.zeros(rows, dtype=np.uint64)
    field = np.empty(rows, dtype=np.uint64)  # one scratch array: fresh ones fault their pages in
    for key, (low, width) in zip(keys, fields, strict=True):
        if not width:  # one value throughout: it orders nothing
            continue
        packed <<= np.uint64(width)
        packed |= _from_zero(key, low, field)
    return packed, bits, fields


def _from_zero(key: np.ndarray, low: int, out: np.ndarray) -> np.ndarray:
    """`key - low` as uint64 into `out` (`low`: the key's minimum). Signed keys are subtracted
    in int64: where the difference passes 2**63 it wraps, and read as uint64 it is exact."""
    if key.dtype.kind == "u":
        return np.subtract(key, np.uint64(low), out=out, dtype=np.uint64)
    np.subtract(key, np.int64(low), out=out.view(np.int64), dtype=np.int64)
    return out


def _from_zero_back(field: np.ndarray, low: int, dtype: np.dtype) -> np.ndarray:
    """The inverse of `_from_zero`, in place: `field + low` (wrapping back where it wrapped),
    as `dtype`."""
    if dtype.kind == "u":
        np.add(field, np.uint64(low), out=field)
        return field.view(dtype) if dtype.itemsize == 8 else field.astype(dtype)
    signed = field.view(np.int64)
    np.add(signed, np.int64(low), out=signed)
    return signed if dtype == np.int64 else signed.astype(dtype)
