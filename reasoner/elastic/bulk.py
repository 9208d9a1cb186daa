"""The rest of a stratum's Update in bulk: Bootstrap's iterations, resumed where the per-tuple
Update stopped.

The compiled Update (`reasoner.kernel`) costs per derivation it touches: where a change
reaches most of a stratum, more than a Bootstrap of it. It stops at an iteration k in two
ways: the switch gives it up there (its deadline or its forecast,
`reasoner.elastic.strata_update`), or the iteration's candidates reach a threshold
(`Materialization.bulk_update_rows`). Either way its statuses below k are final: the new
epoch's I_{k-1} is the committed state with the kernel's record over it. That is all a
Bootstrap needs to go on from iteration k (iteration k of Algorithm 2 reads I_{k-1} and
N_{k-1}, nothing older), so each of the stratum's relations is copied with its row ids, the
record applied and the rows at k or later removed (`reasoner.storage.rewind`), over the lower
relations as the epoch leaves them, and the vectorized executor runs iterations k, k + 1, ...
to the fixpoint (`VectorizedStratum.resume`; from iteration 1, `run`). The stratum's record in
the overlay becomes the difference between the copy and the committed table: by row id up to
the copy's appended rows, by a probe after (`reasoner.storage.difference`), as the kernel's
record would have been.

Exact by construction: Bootstrap's iterations from k over the new epoch's I_{k-1} are the new
epoch's (Theorem 3.5 says the Update's would be the same). What it costs is a Bootstrap's share
of the stratum from k on, plus a pass over the stratum's rows (copying, comparing) and a copy
of each relation it reads that the epoch changed, whatever the change (`bulk_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reasoner.analysis.model import Stratum
from reasoner.elastic.restratify import relation_after, stratum_inputs
from reasoner.executors.local.frames import Frames
from reasoner.executors.local.vectorized import VectorizedStratum
from reasoner.storage.difference import aligned_difference
from reasoner.storage.overlay import Overlay, RowChanges
from reasoner.storage.renumber import apply_rows
from reasoner.storage.rewind import rewind, rows_between
from reasoner.storage.state import RelationStore, State
from reasoner.support.deadline import Check, MemoryBudgetExceeded
from reasoner.values.symbols import SymbolTable

GROWTH = 1.25
"""How much a table's arrays grow past what it holds (`Table._reserve`)."""
BYTES_PER_APPENDED = 33
"""Per row a bulk evaluation appends to its copy (a tuple derived again or new), besides the
row itself: its record as the comparison makes it a slice at a time and as it joins the
slices (16 B each, both held at the join; the overlay keeps 12 B of it), and its mark (1 B,
`difference.aligned_difference`). The estimate before (`bulk_bytes`) and the bound as it goes
(`_bounded`) count the same."""


def bulk_bytes(stratum: Stratum, state: State, changed: Callable[[str], bool], k: int = 1) -> int:
    """About the bytes evaluating `stratum` in bulk from iteration `k` takes beside the state:
    what a caller weighs against its memory budget. Each of the stratum's tables is copied,
    and the copy grows by the rows at k or later, which the evaluation removes and derives
    again (as many as the committed state holds there); besides, a frame of each relation it
    reads (8 B a value) and a copy of each of those that `changed` (`relation_after`: its
    table, without indexes)."""
    own = 0
    for name in stratum.relations:
        table = state[name].table
        # From iteration 1, every derived row (a bound, without a pass over the statuses).
        later = len(table) if k <= 1 else int(table.iteration_counts()[k:].sum())
        own += table.nbytes + int(later * (GROWTH * _row_bytes(state, name) + BYTES_PER_APPENDED))
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
    memory: int = 0,
) -> None:
    """Evaluate `stratum` from iteration `k` on in bulk, the overlay holding its Update's record
    of the iterations below k, and record the result in the overlay instead. Past `memory`
    bytes (0: no bound) held by the copies and the record they will make, it raises
    `MemoryBudgetExceeded`, as the Update would."""
    scratch = State()
    for name in stratum_inputs(stratum):
        scratch.relations[name] = relation_after(overlay.state[name], overlay)
    below: dict[str, np.ndarray] = {}
    delta: dict[str, np.ndarray] = {}
    for name in stratum.relations:
        store = scratch.relations[name] = _rewound(overlay.state[name], overlay.rows.get(name), k)
        below[name] = rows_between(store.table, 0, k - 1)
        delta[name] = rows_between(store.table, k - 1, k)
    if memory:
        check = _bounded(check, memory, stratum, overlay.state, scratch)
    run = VectorizedStratum(stratum, scratch, symbols, arities, Frames(scratch), check=check)
    if k > 1:
        run.resume(k, below, delta)
    else:
        run.run()
    for name in stratum.relations:
        table = overlay.state[name].table
        overlay.replace_rows(name, aligned_difference(table, scratch[name].table))


def _bounded(
    check: Check | None, memory: int, stratum: Stratum, state: State, scratch: State
) -> Check:
    """`check`, then a bound on the bytes a bulk evaluation holds as it goes: its copies of
    the stratum's tables, grown by the rows they appended, and the record those rows will
    make (`BYTES_PER_APPENDED`). The estimate made before (`bulk_bytes`) counts the rows
    derived again from the committed state's; where the change grows the relation many times
    over (crdt.dl's 25,978 facts back after all were out: 152 M tuples from 0.3 M), the
    evaluation would make an Update's record of all of them, which ran the machine out of
    memory."""
    copies = [(scratch[name].table, state[name].table.nrows) for name in stratum.relations]

    def bounded() -> None:
        if check is not None:
            check()
        held = sum(copy.nbytes + (copy.nrows - stop) * BYTES_PER_APPENDED for copy, stop in copies)
        if held > memory:
            raise MemoryBudgetExceeded(f"a bulk evaluation holds {held} bytes, past {memory}")

    return bounded


def _row_bytes(state: State, name: str) -> int:
    """What a row of `name`'s table takes: its words, status and count."""
    table = state[name].table
    return table.arity * (8 if table.wide else 4) + 6


def _rewound(store: RelationStore, record: RowChanges | None, k: int) -> RelationStore:
    """A copy of `store` (same row ids) as the Update leaves it below iteration `k`: its
    table copied, the record applied, then the rows at k or later and those staged removed."""
    table = store.table.copy()
    if record is not None:
        apply_rows(table, record.rows, record.news, record.counts)
    rewind(table, k)
    copy = RelationStore(store.name, store.arity)
    copy.replace_table(table)
    return copy
