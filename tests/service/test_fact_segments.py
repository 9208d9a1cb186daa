"""The store's facts as segments, on both databases: after any sequence of committed deltas
the store reads back exactly the facts a set model holds, and merging keeps every relation's
log short (O(log n) segments)."""

from __future__ import annotations

import random

import polars as pl
from sqlalchemy import func, select

from reasoner.io.batch import FactBatch
from service.settings import Settings
from service.store import models, segments
from service.store.repository import DeltaRecord, Store
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
    sizes: list[int] = []
    for _ in range(10_000):
        sizes.append(1)
        start = segments.merge_start(sizes)
        if start is not None:
            sizes[start:] = [sum(sizes[start:])]
        assert len(sizes) <= segments.SLACK + 15
    assert sum(sizes) == 10_000


def test_fold_keeps_the_last_entry_of_each_row() -> None:
    first = segments.entries(_batch({(1, "a"), (2, "b")}).frame, True)
    gone = segments.entries(_batch({(1, "a")}).frame, False)
    back = segments.entries(_batch({(1, "a"), (3, "c")}).frame, True)
    assert set(segments.fold([first, gone], complete=True).drop("present").rows()) == {(2, "b")}
    partial = segments.fold([gone, back], complete=False)
    assert sorted(partial.rows()) == [(1, "a", True), (3, "c", True)]
    for log in (partial, pl.concat([partial] * (segments.SMALL_ROWS // 2 + 1))):
        assert segments.decode(segments.encode(log)).equals(log)  # as JSON, then as Arrow
