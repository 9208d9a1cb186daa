"""A sequence of deltas applied by Update, each checked against a fresh Bootstrap and the
naive oracle: the invariant of DESIGN.md on hand-written cases."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from tests.oracle import evaluate, visible


def check_updates(
    m: Materialization,
    inputs: Mapping[str, Iterable[tuple]],
    steps: Iterable[Delta],
    fresh: Callable[[dict[str, list[tuple]]], Materialization],
) -> dict[str, set[tuple]]:
    """Apply each step to `m` by Update; after each, `m`'s state (tuple, iteration, count)
    is that of `fresh(the facts so far)` and its tuples the oracle's. The facts at the end."""
    current = {name: set(rows) for name, rows in inputs.items()}
    for step in steps:
        assert m.apply(step, strategy="update").strategy == "update"
        for name, rows in step.retract.items():
            current[name] -= set(rows)
        for name, rows in step.insert.items():
            current.setdefault(name, set()).update(rows)
        facts = {name: sorted(rows) for name, rows in current.items()}
        assert m.snapshot() == fresh(facts).snapshot()
        assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, current)
    return current
