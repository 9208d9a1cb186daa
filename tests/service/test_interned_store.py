"""The store's numbering of symbols and records, on both databases: after any sequence of
commits it loads back exactly the values in id order, whatever their size (JSON and Arrow
segments) and text, and merging keeps the log short (O(log n) segments)."""

from __future__ import annotations

import random

from sqlalchemy import func, select

from service.settings import Settings
from service.store import interned, models, segments
from service.store.interned import Interned
from service.store.repository import DeltaRecord, Store
from tests.service.conftest import Databases

TEXTS = ["a", "é ✓", "\x00 nul", "", 'q"\\t', "x" * 300, "\U0001f600"]


def _segments(store: Store) -> dict[str, int]:
    table = models.interned
    with store.engine.connect() as connection:
        counted = select(table.c.kind, func.count()).group_by(table.c.kind)
        return {kind: count for kind, count in connection.execute(counted)}


def test_the_numbering_loads_back_in_order(backend: str, databases: Databases) -> None:
    store = Store(Settings(database_url=databases.new(backend)).sqlalchemy_url)
    rng = random.Random(11)
    symbols: list[str] = [f"initial {i}" for i in range(3)]
    records: list[tuple[int, ...]] = [(0, 1)]
    try:
        store.migrate()
        store.initialize("", [], numbering=Interned(symbols, records))
        for number in range(1, 201):
            size = rng.choice([0, 1, 2, 5, 40, segments.SMALL_ROWS + 50])
            new = [f"{rng.choice(TEXTS)} {number}.{i}" for i in range(size)]
            packed = [(rng.randrange(len(symbols) + size), -(1 << 63)) for _ in range(size)]
            record = DeltaRecord(number, 0, 0)
            record.interned = Interned(new, packed, len(symbols), len(records))
            store.commit_delta(record)
            symbols += new
            records += packed
        loaded = store.load().interned
        assert loaded is not None
        assert (list(loaded.symbols), list(loaded.records)) == (symbols, records)
        for kind, count in _segments(store).items():  # 200 commits, 165 or so appends
            assert count <= interned.MERGE_EVERY + segments.SLACK + 16, (kind, count)
        # The counts an epoch row holds bound what loads: values past them are none of its.
        with store.engine.connect() as connection:
            first = interned.read(connection, 3, 1)
            assert first == Interned(symbols[:3], records[:1])
            assert interned.read(connection, len(symbols) + 1, 0) is None
    finally:
        store.close()
