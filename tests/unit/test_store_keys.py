"""The store's bulk keys: `keyed` computes a column at a time what `encode_values` and
`digest` compute a row at a time, so facts written in bulk are found by every later write."""

from __future__ import annotations

import pytest

from service.store.repository import digest, encode_values, keyed

ROWS = [
    [(1, 2), (-(1 << 63), (1 << 63) - 1), (0, 0)],
    [(1, 'a "quoted" \\ back\nslash'), (2, "é ✓ {} [] ,"), (3, "\x00\x1f\t"), (4, "")],
    [("x",), ("\ud83d\ude00",), ("{0}",)],
    [()],
]


@pytest.mark.parametrize("rows", ROWS)
def test_keyed_is_encode_values_and_digest_row_by_row(rows: list[tuple]) -> None:
    values = [encode_values(row) for row in rows]
    assert keyed(rows) == ([digest(v) for v in values], values)


def test_keyed_of_no_rows_is_empty() -> None:
    assert keyed([]) == ([], [])
