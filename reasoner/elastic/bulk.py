"""The rest of a stratum's Update in bulk: Bootstrap's iterations, resumed where the per-tuple
Update stopped.

The compiled Update (`reasoner.kernel`) costs per derivation it touches: where a change
reaches most of a stratum, more than a Bootstrap of it. It stops at an iteration k in two
ways: the switch gives it up there (its deadline or its forecast,
`reasoner.elastic.strata_update`), or the iteration's candidates reach a threshold
(`Materialization.bulk_update_rows`). Either way its statuses below k are final: the new
epoch's I_{k-1} is the committed state with the kernel's record over it. That is all a
Bootstrap needs to go on from iteration k (iteration k of Algorithm 2 reads I_{k-1} and
N_{k-1}, nothing older), so the tuples below k are loaded into a scratch state at their
iterations with their counts, over the lower relations as the epoch leaves them, and the
vectorized executor runs iterations k, k + 1, ... to the fixpoint (`VectorizedStratum.resume`;
from iteration 1, `run`). The stratum's record in the overlay becomes the difference between
the result and the committed state, row by row, as the kernel's would have been.

Exact by construction: Bootstrap's iterations from k over the new epoch's I_{k-1} are the new
epoch's (Theorem 3.5 says the Update's would be the same). What it costs is a Bootstrap's share
of the stratum from k on, plus passes over the stratum's tuples (loading, comparing) and a
copy of each relation it reads that the epoch changed, whatever the change (`bulk_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reasoner.analysis.model import Stratum
from reasoner.elastic.restratify import relation_after, stratum_inputs
from reasoner.executors.local.frames import Frames
from reasoner.executors.local.vectorized import VectorizedStratum
from reasoner.storage.overlay import Overlay, RowChanges
from reasoner.storage.state import RelationStore, State
from reasoner.storage.table import ABSENT, Table
from reasoner.support.deadline import Check
from reasoner.values.symbols import SymbolTable

BYTES_PER_VALUE = 32
BYTES_PER_TUPLE = 100
"""What a bulk evaluation holds at its peak beside the state, per value and per tuple of the
stratum's relations: the old and the new statuses as columns, their order by iteration, the
scratch tables and the comparison (graph10000-rmat1k's tc, 262 k pairs: 33 MiB measured,
41 MiB by these). Besides, a frame of each relation it reads (8 B a value) and a copy of each
of those the epoch changed (`relation_after`: its table, without indexes)."""


_Statuses = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A table's committed row ids (int64), their iterations (int32) and counts (int64), in row
order: read once per bulk evaluation, for loading and for the difference after."""


def bulk_bytes(stratum: Stratum, state: State, changed: Callable[[str], bool]) -> int:
    """About the bytes evaluating `stratum` in bulk takes beside the state (see above), the
    relations it reads that `changed` copied: what a caller weighs against its memory budget
    (crdt.dl's skipBlank, 152 M tuples, would take three times the state's 7.5 GB)."""
    own = sum(
        (BYTES_PER_VALUE * state[name].arity + BYTES_PER_TUPLE) * len(state[name])
        for name in stratum.relations
    )
    read = sum(
        8 * state[name].arity * len(state[name])
        + (state[name].table.nbytes if changed(name) else 0)
        for name in stratum_inputs(stratum)
        if name in state
    )
    return own + read


def finish_in_bulk(
    stratum: Stratum,
    overlay: Overlay,
    k: int,
    symbols: SymbolTable,
    arities: dict[str, int],
    check: Check | None,
) -> None:
    """Evaluate `stratum` from iteration `k` on in bulk, the overlay holding its Update's record
    of the iterations below k, and record the result in the overlay instead."""
    scratch = State()
    for name in stratum_inputs(stratum):
        scratch.relations[name] = relation_after(overlay.state[name], overlay)
    delta: dict[str, np.ndarray] = {}
    committed: dict[str, _Statuses] = {}
    for name in stratum.relations:
        store = scratch.relation(name, arities[name])
        committed[name], delta[name] = _load(
            overlay.state[name].table, overlay.rows.get(name), store, k
        )
    run = VectorizedStratum(stratum, scratch, symbols, arities, Frames(scratch), check=check)
    if k > 1:
        run.resume(k, delta)
    else:
        run.run()
    for name in stratum.relations:
        table = overlay.state[name].table
        overlay.replace_rows(name, _difference(table, committed[name], scratch[name].table))


def _load(
    table: Table, record: RowChanges | None, store: RelationStore, k: int
) -> tuple[_Statuses, np.ndarray]:
    """`table`'s committed statuses, read once; and the row ids of N_{k-1} in `store`, loaded
    with the new epoch's tuples below `k` (the values are let go here, before the
    evaluation)."""
    values, iterations, counts = table.columns(with_counts=True)
    committed = (table.committed_rows(), iterations, counts)
    new = _new_statuses(table, values, committed, record)
    return committed, _load_below(store, *new, k)


def _new_statuses(
    table: Table, values: list[np.ndarray], committed: _Statuses, record: RowChanges | None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The new epoch's tuples of `table` as the record leaves them, as values (int64 columns),
    iterations (int64; `ABSENT` for a tuple gone) and counts (int64): the committed rows
    (`values`, `committed`) in row order, then the staged rows the record holds."""
    ids, iterations, counts = committed
    iterations = iterations.astype(np.int64)
    if record is None or not len(record):
        return values, iterations, counts
    counts = counts.copy()
    rows = record.rows.astype(np.int64)
    was = table.committed_mask(rows)
    at = np.searchsorted(ids, rows[was])
    iterations[at] = record.news[was]
    counts[at] = record.counts[was]
    staged = ~was & (record.news < ABSENT)
    extra = table.values_of(rows[staged])
    return (
        [np.concatenate([v, e]) for v, e in zip(values, extra, strict=True)],
        np.concatenate([iterations, record.news[staged].astype(np.int64)]),
        np.concatenate([counts, record.counts[staged].astype(np.int64)]),
    )


def _load_below(
    store: RelationStore,
    values: list[np.ndarray],
    iterations: np.ndarray,
    counts: np.ndarray,
    k: int,
) -> np.ndarray:
    """Load into `store` the tuples (`values` at `iterations` with `counts`) at iterations
    below `k`, iteration by iteration (the rows of k - 1 last); the row ids of those at k - 1
    (N_{k-1})."""
    below = np.flatnonzero(iterations < k)
    order = below[np.argsort(iterations[below], kind="stable")]
    iterations = iterations[order]
    values = [v[order] for v in values]
    counts = counts[order]
    bounds = np.flatnonzero(np.diff(iterations)) + 1
    first_delta = store.table.nrows
    for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)], strict=True):
        if start == stop:
            continue
        iteration = int(iterations[start])
        first_delta = store.table.nrows
        if store.arity:
            store.add_columns([v[start:stop] for v in values], counts[start:stop], iteration)
        else:
            store.add((), iteration, int(counts[start]))
    if not len(order) or int(iterations[-1]) != k - 1:
        return np.empty(0, dtype=np.int64)
    return store.table.committed_in(first_delta, store.table.nrows)


def _difference(table: Table, committed: _Statuses, result: Table) -> RowChanges:
    """The record that takes `table`, whose committed statuses are `committed`, to `result`
    (the stratum's relation as the bulk evaluation left it): every row whose iteration or count
    differs, every committed row `result` lacks (absent), and a staged row for every tuple of
    `result` the table lacks."""
    ids, old_iterations, old_counts = committed
    values, iterations, counts = result.columns(with_counts=True)
    if table.arity:
        rows = table.rows_of_columns(values)
        missing = rows < 0
        if missing.any():
            new = [v[missing] for v in values]
            table.insert_columns(new, 0, staged=True)
            rows[missing] = table.rows_of_columns(new)
    else:  # at most one tuple, which columns cannot count
        if len(counts):
            table.stage(())
        rows = np.full(len(counts), table.row(()), dtype=np.int64)
    committed = table.committed_mask(rows)
    at = np.searchsorted(ids, rows[committed])
    same = np.zeros(len(rows), dtype=np.bool_)
    same[committed] = (old_iterations[at] == iterations[committed]) & (
        old_counts[at] == counts[committed]
    )
    kept = np.zeros(len(ids), dtype=np.bool_)
    kept[at] = True
    gone = ids[~kept]
    changed = ~same
    news = np.concatenate([iterations[changed], np.full(len(gone), ABSENT)])
    new_counts = np.concatenate([counts[changed], np.zeros(len(gone), dtype=np.int64)])
    return RowChanges.narrowed(table, np.concatenate([rows[changed], gone]), news, new_counts)
