"""An epoch's change set as the store writes it: chunks of (relation, present, rows).

The engine hands the changes of the epoch it is about to publish to `before_publish`
(`reasoner.elastic.changes`); the store commits them with the epoch, so that the feed holds
exactly the epochs that committed. A snapshot (every row of every relation, inserted) starts
the feed at epoch 0 and again after a reset.
"""

from __future__ import annotations

from collections.abc import Iterator

from reasoner import EpochChanges, Materialization, is_internal
from service.store.fact_log import ChangeChunk


def change_chunks(changes: EpochChanges) -> Iterator[ChangeChunk]:
    """Per relation in program order, its retracted rows, then its inserted rows."""
    for name in changes.names:
        retracted, inserted = changes.batches(name)
        if len(retracted):
            yield name, False, retracted
        if len(inserted):
            yield name, True, inserted


def snapshot_chunks(m: Materialization) -> Iterator[ChangeChunk]:
    """Every row of every relation users see, as inserted: the state as one change set."""
    for name in m.relation_names():
        if not is_internal(name) and m.size(name):
            yield name, True, m.batch(name, ordered=False)  # a store needs no order
