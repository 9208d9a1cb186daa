"""`ValuePool`: equal ints become one object, the values themselves never change, the pool
stays bounded, and facts and Bootstrap-derived tuples are built from it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner import values as values_module
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from reasoner.values import DENSE_LIMIT, ValuePool

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
NEAR = st.integers(-300, DENSE_LIMIT + 300) | st.sampled_from([DENSE_LIMIT - 1, DENSE_LIMIT])


def _fresh(v: int) -> int:
    """An int equal to `v` that is not the object `v` (beyond the small-int cache)."""
    return int(str(v))


def _assert_shared(pool: ValuePool, rows: list[tuple[int, ...]]) -> None:
    for row in rows:
        for v in row:
            assert pool.value(_fresh(v)) is v


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(NEAR | INT64, NEAR, NEAR), max_size=40))
def test_rows_equal_their_columns_and_share_equal_values(rows: list[tuple[int, int, int]]) -> None:
    pool = ValuePool()
    columns = [np.array([r[i] for r in rows], dtype=np.int64) for i in range(3)]
    shared = pool.rows(columns) if rows else []
    assert shared == rows
    _assert_shared(pool, shared)
    again = pool.tuples([tuple(map(_fresh, r)) for r in rows], 3)
    assert again == rows
    for a, b in zip(again, shared, strict=True):
        assert all(x is y for x, y in zip(a, b, strict=True))


def test_tuples_keeps_values_past_64_bits_and_the_empty_cases() -> None:
    pool = ValuePool()
    huge = (1 << 70, -(1 << 70))
    assert pool.tuples([huge, (1, 2)], 2) == [huge, (1, 2)]
    assert pool.tuples([], 2) == []
    assert pool.tuples([(), ()], 0) == [(), ()]
    assert pool.column(np.empty(0, dtype=np.int64)).size == 0


def test_sparse_values_stop_being_kept_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(values_module, "SPARSE_LIMIT", 3)
    pool = ValuePool()
    kept = [pool.value(_fresh(-1000 - i)) for i in range(3)]
    assert pool.value(_fresh(-1000)) is kept[0]
    beyond = _fresh(-5000)
    assert pool.value(beyond) is beyond
    assert pool.value(_fresh(-5000)) is not beyond  # not kept: the pool is full
    assert len(pool) == 3


def _one_object_per_value(relations: dict[str, list[tuple[int, ...]]]) -> int:
    by_value: dict[int, int] = {}
    for name, rows in relations.items():
        for t in rows:
            for v in t:
                assert by_value.setdefault(v, id(v)) == id(v), (name, t)
    return len(by_value)


def test_a_materialization_loads_facts_from_shared_ints() -> None:
    m = Materialization.from_text(".decl e(a: number, b: number)\n.input e\n")
    m.load({"e": [(_fresh(1000 + i), _fresh(1001 + i)) for i in range(50)]})
    m.apply(Delta(insert={"e": [(_fresh(1000), _fresh(999))]}))
    assert _one_object_per_value({"e": list(m.facts["e"])}) == 52
