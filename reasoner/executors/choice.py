"""Soufflé's `choice-domain` in a counting Bootstrap: each iteration keeps, of a relation's
new tuples, at most one per key.

Soufflé guards every insert into such a relation: a tuple is not inserted when a tuple of the
relation already holds its values in one of the keys. Which tuple of a key survives is the
first its evaluation meets, so the answer depends on an order Soufflé does not specify. Here
the order is fixed, and it is the same on every executor and in every epoch: in each
iteration the new tuples are taken in ascending order of their values, column by column
(numbers as stored, symbols by their text, so the order does not depend on the order symbols
were first seen in), and a tuple is kept when no tuple of an earlier iteration (a fact
included) and none kept before it in the same iteration holds its values in any key. The
others are removed before the next iteration reads the relation, so nothing is derived from
them, as in Soufflé. The program's facts are guarded as Soufflé guards them, in the order
written (`reasoner.analysis.choice.guarded_facts`); data, as Soufflé's `.input`, is not.

A choice depends on the iterations before it, so an Update cannot maintain it tuple by tuple:
a stratum with a choice-domain runs on the per-tuple kernel on every executor, and is
Bootstrapped again whenever its inputs change (`reasoner.elastic.apply`). Both keep the state
equal to a fresh Bootstrap's.

Layer: `executors`.
"""

from __future__ import annotations

import numpy as np

from reasoner.analysis.model import ChoiceKeys, Stratum
from reasoner.kernel.bootstrap import Rows
from reasoner.storage.state import RelationStore, State, Tuple
from reasoner.values.symbols import SymbolTable


def choose(stratum: Stratum, state: State, symbols: SymbolTable, new: Rows) -> Rows:
    """`new` (an iteration's committed rows) with, for each relation of the stratum that has a
    choice-domain, only the rows chosen; the rows not chosen are removed from the state."""
    for name, keys, symbolic in stratum.choice:
        rows = new.get(name)
        if rows is not None and len(rows):
            order = symbols.order_keys() if symbolic else None
            new[name] = _choose(state[name], rows, keys, symbolic, order)
    return new


def _choose(
    store: RelationStore,
    rows: np.ndarray,
    keys: ChoiceKeys,
    symbolic: tuple[int, ...],
    order: np.ndarray | None,
) -> np.ndarray:
    tuples = store.table.tuples(rows)

    def value_order(j: int) -> Tuple:
        t = tuples[j]
        if order is None:
            return t
        return tuple(int(order[v]) if c in symbolic else v for c, v in enumerate(t))

    iteration = set(tuples)
    taken: list[set[Tuple]] = [set() for _ in keys]
    kept: list[int] = []
    refused: list[Tuple] = []
    for j in sorted(range(len(tuples)), key=value_order):
        t = tuples[j]
        values = [tuple(t[c] for c in key) for key in keys]
        if any(
            value in held or _held_before(store, key, value, iteration)
            for key, value, held in zip(keys, values, taken, strict=True)
        ):
            refused.append(t)
            continue
        kept.append(j)
        for value, held in zip(values, taken, strict=True):
            held.add(value)
    for t in refused:
        store.remove(t)
    return rows[np.array(kept, dtype=np.int64)]


def _held_before(
    store: RelationStore, key: tuple[int, ...], value: Tuple, iteration: set[Tuple]
) -> bool:
    """Whether a tuple of an earlier iteration holds `value` in the `key` columns."""
    return any(t not in iteration for t in store.select(dict(zip(key, value, strict=True))))
