"""`reasoner.io.export`: a relation's snapshot in batches of user values equals what the
row decoder gives, value for value, whatever the batch size; an answer's rows likewise."""

from __future__ import annotations

import math

import polars as pl

from reasoner.io.export import answer_frames, frames, snapshot
from reasoner.materialization import Materialization

PROGRAM = """.type P = [a: number, b: symbol]
.decl item(n: number, s: symbol, u: unsigned, f: float, p: P)
.decl flag()
"""
ROWS = [
    (i, f"s{i % 5}", 2**64 - 1 - i, -0.0 if i == 3 else i / 3, f"[{i}, w{i % 2}]")
    for i in range(23)
]


def _built() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"item": ROWS, "flag": [()]})
    m.bootstrap()
    return m


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)  # -0.0 is not 0.0
    return a == b


def test_batches_hold_the_decoded_rows() -> None:
    m = _built()
    info = m.analyzed.relations["item"]
    taken = snapshot(m.state["item"])
    assert taken.rows == len(ROWS)
    batches = list(frames(taken, info.column_names, info.value_types, m.symbols, batch_rows=5))
    assert [batch.height for batch in batches] == [5, 5, 5, 5, 3]
    exported = [row for batch in batches for row in batch.iter_rows()]
    assert [b.dtype for b in batches[0]] == [pl.Int64, pl.String, pl.UInt64, pl.Float64, pl.String]
    expected = sorted(m.rows("item"))
    assert len(exported) == len(expected)
    for got, want in zip(sorted(exported), expected, strict=True):
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (got, want)


def test_an_empty_relation_is_one_empty_batch_and_a_nullary_one_a_count() -> None:
    m = _built()
    empty = Materialization.from_text(PROGRAM)
    empty.bootstrap()
    info = empty.analyzed.relations["item"]
    [batch] = frames(
        snapshot(empty.state["item"]), info.column_names, info.value_types, empty.symbols
    )
    assert batch.height == 0 and batch.width == 5
    assert snapshot(m.state["flag"]).rows == 1


def test_answer_rows_become_typed_batches() -> None:
    rows = [(1, "a", 2.5), (2, "b", -1.0), (3, "c", 0.0)]
    batches = list(answer_frames(rows, ["x", "s", "f"], ["number", "symbol", "float"], 2))
    assert [list(batch.iter_rows()) for batch in batches] == [rows[:2], rows[2:]]
    [empty] = answer_frames([], ["x"], ["unsigned"])
    assert empty.schema == {"x": pl.UInt64}
