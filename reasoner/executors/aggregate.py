"""The relation of an aggregate (`reasoner.analysis.aggregates`): its Bootstrap by grouping,
and its Update group by group.

Each row of the source relation is one instantiation of the aggregate's body; its `group`
columns hold the group's key. The aggregate's relation holds one row per non-empty
group: the key and the aggregate (`count`: the group's rows, `sum`/`min`/`max` over the value
column, the sum wrapping at 64 bits like all arithmetic here). Every row is at iteration 1 with
count 1, the state of a non-recursive rule's head.

Over floats (`fsum`, `fmin`, `fmax`, `mean`) each group is computed from its rows by
`reasoner.values.floats`, which refuses a result that would depend on the order Soufflé meets the
rows in.

Update recomputes only the groups whose source rows changed. `count` and `sum` follow from the
old result and the changed rows alone (the new sum is the old one plus the inserted values
minus the deleted ones, exact in wrap-around arithmetic); `min` and `max` too when the group
only gained rows, and otherwise read the group's rows through an index on its key. A float
group is always computed from its rows: float addition is not exact, so the old result
cannot be adjusted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from reasoner.analysis.model import AggregateDefinition, Stratum
from reasoner.storage.overlay import INF, Overlay
from reasoner.storage.state import RelationStore, State, Tuple
from reasoner.support.ordering import lexicographic_order
from reasoner.syntax.ast import AggregateOp
from reasoner.values import floats
from reasoner.values.arith import as_unsigned, wrap64

UNSIGNED_EXTREMES = frozenset({"umin", "umax"})
FLOAT_AGGREGATES = frozenset({"fsum", "fmin", "fmax", "mean"})
WHOLE_SOURCE = FLOAT_AGGREGATES | {"autoinc"}
"""Aggregates computed here from all of their source's rows (`group_by`), which the vectorized
and Spark executors gather for them: a float aggregate group by group, `autoinc()`'s
numbering over the whole relation."""
_REDUCE = {
    "sum": np.add,
    "min": np.minimum,
    "max": np.maximum,
    "umin": np.minimum,
    "umax": np.maximum,
}
ITERATION = 1
"""The iteration of every row of an aggregate's relation (see the module docstring)."""


def group_by(definition: AggregateDefinition, columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The aggregate's relation, as columns, of a source given as int64 columns."""
    size = len(columns[0]) if columns else 0
    if not size:
        return [np.empty(0, np.int64) for _ in range(len(definition.group) + 1)]
    if definition.op == "autoinc":
        return number(definition, columns)
    keys = [columns[c] for c in definition.group]
    if keys:
        order = lexicographic_order(keys)
        keys = [key[order] for key in keys]
        changed = np.zeros(size, bool)
        changed[0] = True
        for key in keys:
            changed[1:] |= key[1:] != key[:-1]
        starts = np.flatnonzero(changed)
    else:
        order = np.arange(size)
        starts = np.zeros(1, np.int64)
    if definition.value is None:
        result = np.diff(np.append(starts, size)).astype(np.int64)
    elif definition.op in FLOAT_AGGREGATES:
        values = np.asarray(columns[definition.value], np.int64)[order]
        groups = np.split(values, starts[1:])
        result = np.array([float_aggregate(definition, group.tolist()) for group in groups])
    else:
        values = np.asarray(columns[definition.value], np.int64)[order]
        if definition.op in UNSIGNED_EXTREMES:  # on the unsigned readings of the patterns
            values = values.view(np.uint64)
        with np.errstate(over="ignore"):
            result = _REDUCE[definition.op].reduceat(values, starts)
        result = result.view(np.int64) if result.dtype == np.uint64 else result
    return [*(key[starts] for key in keys), result.astype(np.int64)]


def number(definition: AggregateDefinition, columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`autoinc()`'s numbering (`reasoner.analysis.autoinc`) of a non-empty source, as columns:
    its rows in the order of the value column's 64-bit patterns read signed, as Soufflé's
    indexes order them, each with its position from 0. The source holds at most one row
    without a value column."""
    if definition.value is None:
        order = np.arange(len(columns[0]))
    else:  # the rows' values are distinct: one row per value the rule reads
        order = np.argsort(np.asarray(columns[definition.value], np.int64), kind="stable")
    rows = [np.asarray(columns[c], np.int64)[order] for c in definition.group]
    return [*rows, np.arange(len(order), dtype=np.int64)]


def bootstrap_aggregate(stratum: Stratum, state: State) -> int:
    """Compute an aggregate's stratum into `state` (its relation empty); the rows made."""
    definition = stratum.aggregate
    assert definition is not None
    source = state[definition.source]
    target = state.relation(definition.name, len(definition.group) + 1)
    if not len(source):
        return 0
    if source.arity:
        result = group_by(definition, source.table.columns()[0])
    else:  # a body without variables: the empty tuple is one instantiation (numbered 0)
        result = [np.array([0 if definition.op == "autoinc" else 1], np.int64)]
    target.add_columns(result, None, ITERATION)
    return len(result[0])


def aggregate_values(definition: AggregateDefinition, rows: Iterable[Tuple]) -> int | None:
    """The aggregate over a group's rows, None for no rows."""
    rows = list(rows)
    if not rows:
        return None
    if definition.value is None:
        return len(rows)
    values = [row[definition.value] for row in rows]
    if definition.op in FLOAT_AGGREGATES:
        return float_aggregate(definition, values)
    if definition.op == "sum":
        return wrap64(sum(values))
    return extreme(definition.op, values)


def float_aggregate(definition: AggregateDefinition, values: list[int]) -> int:
    """A float aggregate over a group's values (IEEE patterns), as a pattern; raises
    `FloatRefused` where Soufflé's answer would depend on the order of the rows."""
    numbers = [floats.from_bits(value) for value in values]
    what = f"at line {definition.span.line}"
    if definition.op == "fsum":
        return floats.to_bits(floats.total(numbers, what))
    if definition.op == "mean":
        return floats.to_bits(floats.mean(numbers, what))
    return floats.to_bits(floats.extreme(numbers, definition.op == "fmax", what))


def extreme(op: AggregateOp, values: list[int]) -> int:
    """`min` or `max` of values, read unsigned for `umin` and `umax`."""
    pick = min if op in ("min", "umin") else max
    return pick(values, key=as_unsigned) if op in UNSIGNED_EXTREMES else pick(values)


def update_aggregate(
    definition: AggregateDefinition,
    state: State,
    overlay: Overlay,
    check: Callable[[], None],
) -> None:
    """Record in `overlay` how the aggregate's relation changes with its source's changes,
    already recorded there."""
    deleted, inserted = overlay.presence_diff(definition.source)
    if definition.op == "autoinc":
        _renumber(definition, state, overlay, deleted, inserted)
        return
    group = definition.group
    changed: dict[Tuple, tuple[list[Tuple], list[Tuple]]] = {}
    for rows, side in ((deleted, 0), (inserted, 1)):
        for row in rows:
            changed.setdefault(tuple(row[c] for c in group), ([], []))[side].append(row)
    source = state[definition.source]
    target = state[definition.name]
    began = time.perf_counter()
    for number, (key, (gone, new)) in enumerate(changed.items()):
        if not number % 1024 and time.perf_counter() - began > 0.01:
            check()
            began = time.perf_counter()
        old = _current(target, key)
        value = _new_value(definition, source, key, old, gone, new)
        if value == old:
            continue
        if old is not None:
            overlay.set(definition.name, (*key, old), INF, 0)
        if value is not None:
            overlay.set(definition.name, (*key, value), ITERATION, 1)


def _renumber(
    definition: AggregateDefinition,
    state: State,
    overlay: Overlay,
    deleted: Iterable[Tuple],
    inserted: Iterable[Tuple],
) -> None:
    """`autoinc()`'s numbering made again from its source's rows after their changes: a row
    inserted before others moves their numbers, as it would in a fresh Bootstrap."""
    rows = (set(state[definition.source]) - set(deleted)) | set(inserted)
    fresh: set[Tuple] = set()
    if rows and definition.group:
        columns = [np.array(column, np.int64) for column in zip(*rows, strict=True)]
        fresh = set(zip(*(c.tolist() for c in number(definition, columns)), strict=True))
    elif rows:  # the empty row of a source without columns
        fresh = {(0,)}
    old = set(state[definition.name])
    for row in old - fresh:
        overlay.set(definition.name, row, INF, 0)
    for row in fresh - old:
        overlay.set(definition.name, row, ITERATION, 1)


def _current(target: RelationStore, key: Tuple) -> int | None:
    """The group's committed result, None when the group had no rows."""
    rows = _group(target, key, tuple(range(len(key))))
    return rows[0][len(key)] if rows else None


def _new_value(
    definition: AggregateDefinition,
    source: RelationStore,
    key: Tuple,
    old: int | None,
    gone: list[Tuple],
    new: list[Tuple],
) -> int | None:
    """The group's result after losing `gone` and gaining `new` (see the module docstring)."""
    if definition.op == "count":
        return ((old or 0) + len(new) - len(gone)) or None
    column = definition.value
    assert column is not None
    if not gone and old is not None and definition.op not in FLOAT_AGGREGATES:  # it only grew
        values = [old, *(t[column] for t in new)]
        if definition.op == "sum":
            return wrap64(sum(values))
        return extreme(definition.op, values)
    removed = set(gone)
    rows = [t for t in _group(source, key, definition.group) if t not in removed] + new
    if definition.op == "sum" and rows:  # wrap-around arithmetic: exact
        return wrap64((old or 0) + sum(t[column] for t in new) - sum(t[column] for t in gone))
    return aggregate_values(definition, rows)


def _group(store: RelationStore, key: Tuple, columns: tuple[int, ...]) -> list[Tuple]:
    """The committed rows whose `columns` hold `key` (all rows for the empty key)."""
    return store.select(dict(zip(columns, key, strict=True))) if columns else list(store)
