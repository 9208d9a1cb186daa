"""The store's facts as segments, on both databases: after any sequence of committed deltas
the store reads back exactly the facts a set model holds, and merging keeps every relation's
log short (O(log n) segments)."""

from __future__ import annotations

import random

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from reasoner.io.batch import FactBatch
from service.settings import Settings
from service.store import models, segments
from service.store.repository import DeltaRecord, Store
from tests.conftest import examples
from tests.service.conftest import Databases

TYPES = ("number", "symbol")
SYMBOLS = ["a", "é ✓", "\x00 nul", "", 'q"\\t', "x" * 300]


def _batch(rows: set[tuple]) -> FactBatch:
    return FactBatch.of_rows(sorted(rows), TYPES)


def _segment_counts(store: Store) -> dict[str, int]:
    table = models.fact_segments
    with store.engine.connect() as connection:
        counted = select(table.c.relation, func.count()).group_by(table.c.relation)
        return {relation: count for relation, count in connection.execute(counted)}


def test_stored_facts_follow_every_delta(backend: str, databases: Databases) -> None:
    store = Store(Settings(database_url=databases.new(backend)).sqlalchemy_url)
    try:
        store.migrate()
        store.initialize("", [])
        rng = random.Random(7)
        model: dict[str, set[tuple]] = {"r": set(), "flag": set()}
        for number in range(1, 121):
            size = rng.choice([1, 2, 5, 40, 300])
            candidates = {(rng.randrange(400), rng.choice(SYMBOLS)) for _ in range(size)}
            record = DeltaRecord(number, 0, 0)
            if rng.random() < 0.35 and model["r"]:
                gone = set(rng.sample(sorted(model["r"]), min(size, len(model["r"]))))
                record.retracts["r"] = _batch(gone)
                model["r"] -= gone
            new = candidates - model["r"]
            if new:
                record.inserts["r"] = _batch(new)
                model["r"] |= new
            if rng.random() < 0.2:  # a relation of arity 0 flips
                if model["flag"]:
                    record.retracts["flag"] = [()]
                    model["flag"] = set()
                else:
                    record.inserts["flag"] = [()]
                    model["flag"] = {()}
            store.commit_delta(record)
            if number % 20 == 0:
                loaded = store.load().facts
                got = {name: set(rows) for name, rows in loaded.items()}
                assert got.get("r", set()) == model["r"]
                assert got.get("flag", set()) == model["flag"]
        counts = _segment_counts(store)
        assert counts["r"] <= segments.SLACK + 15, counts  # log2(120 deltas * 300 rows) ~ 15
    finally:
        store.close()


def test_merges_keep_logs_logarithmic() -> None:
    sizes: list[tuple[int, int]] = []
    for _ in range(10_000):
        sizes.append((1, 10))
        start = segments.merge_start(sizes)
        if start is not None:
            merged = sizes[start:]
            sizes[start:] = [(sum(r for r, _ in merged), sum(b for _, b in merged))]
        assert len(sizes) <= segments.SLACK + 15
    assert sum(r for r, _ in sizes) == 10_000


def test_a_relation_of_a_new_shape_leaves_its_old_segments_behind(
    backend: str, databases: Databases
) -> None:
    """Once a relation's rows (numbers) are all retracted, it may take rows of another
    shape (symbols): the old segments fold to nothing, and a merge deletes them."""
    store = Store(Settings(database_url=databases.new(backend)).sqlalchemy_url)
    try:
        store.migrate()
        store.initialize("", [])
        numbers = FactBatch.of_rows([(i,) for i in range(5)], ("number",))
        store.commit_delta(DeltaRecord(1, 5, 0, inserts={"r": numbers}))
        store.commit_delta(DeltaRecord(2, 0, 5, retracts={"r": numbers}))
        for number in range(3, 3 + 2 * segments.SLACK):
            rows = FactBatch.of_rows([(f"s{number}",)], ("symbol",))
            store.commit_delta(DeltaRecord(number, 1, 0, inserts={"r": rows}))
        loaded = store.load().facts["r"]
        assert sorted(loaded) == sorted((f"s{n}",) for n in range(3, 3 + 2 * segments.SLACK))
        with store.engine.connect() as connection:
            table = models.fact_segments
            blobs = connection.execute(select(table.c.data)).scalars().all()
        shapes = {tuple(segments.decode(blob).schema.items()) for blob in blobs}
        assert shapes == {(("c0", pl.String()), ("present", pl.Boolean()))}
    finally:
        store.close()


def test_fold_keeps_the_last_entry_of_each_row() -> None:
    first = segments.entries(_batch({(1, "a"), (2, "b")}).frame, True)
    gone = segments.entries(_batch({(1, "a")}).frame, False)
    back = segments.entries(_batch({(1, "a"), (3, "c")}).frame, True)
    assert set(segments.fold([first, gone], complete=True).drop("present").rows()) == {(2, "b")}
    partial = segments.fold([gone, back], complete=False)
    assert sorted(partial.rows()) == [(1, "a", True), (3, "c", True)]
    for log in (partial, pl.concat([partial] * (segments.SMALL_ROWS // 2 + 1))):
        assert segments.decode(segments.encode(log)).equals(log)  # as JSON, then as Arrow


_SHAPES = {
    "numbers and symbols": (("c0", "Int64"), ("c1", "String")),
    "unsigned and a float's bits": (("c0", "UInt64"), ("c1:bits", "Int64")),
    "arity 0": (),
}


def _value(kind: str, draw: int) -> object:
    return {"Int64": draw - 3, "UInt64": (1 << 64) - 1 - draw, "String": "sé"[draw % 2] * draw}[
        kind
    ]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(_SHAPES)),
            st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.booleans()), max_size=6),
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_json_segments_fold_in_python_as_in_polars(
    log: list[tuple[str, list[tuple[int, int, bool]]]], complete: bool
) -> None:
    """A restart or a merge of a relation written a few facts at a time folds its JSON
    segments without Polars (`fold_small`): the same entries, in the same order (its
    symbols are interned in that order when they are numbered anew), as `fold` of frames."""
    parts = []
    for shape, entries in log:
        schema = _SHAPES[shape]
        distinct = {
            tuple(_value(k, (a, b)[c]) for c, (_, k) in enumerate(schema)): p for a, b, p in entries
        }
        parts.append(segments.SmallSegment(schema, list(distinct), list(distinct.values())))
    if not complete and segments.newest_shape(parts):
        return  # a merge meets one shape only (`newest_shape` is checked first)
    blobs = [part.encode() for part in parts]
    frames = [segments.decode(blob) for blob in blobs]
    folded = segments.fold_small([segments.read_small(blob) for blob in blobs], complete=complete)
    assert folded.frame().equals(segments.fold(frames, complete=complete))
