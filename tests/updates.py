"""A sequence of deltas applied by Update, each checked against a fresh Bootstrap and the
naive oracle: the invariant of DESIGN.md on hand-written cases."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from reasoner.analysis.model import AnalyzedProgram
from reasoner.elastic.changes import EpochChanges, RelationChanges
from reasoner.elastic.epoch import Delta, EpochReport
from reasoner.materialization import Materialization
from reasoner.values import floats
from reasoner.values.types import Value
from tests.oracle.evaluation import comparable, evaluate


def fresh_from(analyzed: AnalyzedProgram) -> Callable[[dict[str, list[tuple]]], Materialization]:
    """Fresh Bootstraps of `analyzed` over given facts: what `check_updates` holds each
    Update to."""

    def fresh(facts: dict[str, list[tuple]]) -> Materialization:
        m = Materialization(analyzed)
        m.load(facts)
        m.bootstrap()
        return m

    return fresh


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
        expected = comparable(evaluate(m.analyzed, current), m.analyzed)
        assert comparable(m.snapshot(), m.analyzed) == expected
    return current


def apply_recording_changes(
    m: Materialization, delta: Delta, strategy: str
) -> tuple[EpochReport, dict[str, RelationChanges] | None]:
    """Apply `delta`: its report, and the changes `before_publish` was handed (None: it was
    not called, the delta changing nothing)."""
    recorded: list[dict[str, RelationChanges]] = []

    def record(changes: EpochChanges) -> None:
        recorded.append(changes.changed())
        assert_columns_agree(changes)

    report = m.apply(delta, strategy=strategy, before_publish=record)
    return report, recorded[0] if recorded else None


def assert_columns_agree(changes: EpochChanges) -> None:
    """The change set as columns (what a store writes) holds the rows of the change set as
    tuples, relation by relation."""
    for name in changes.names:
        rows = changes.rows(name)
        retracted, inserted = changes.batches(name)
        assert _bag(retracted) == _bag(rows.retracted), name
        assert _bag(inserted) == _bag(rows.inserted), name


def _bag(rows: Iterable[Sequence[Value]]) -> Counter[tuple[object, ...]]:
    """Rows counted, a float by its bits (a column of floats reads back as Python floats,
    a tuple's as `FloatValue`s, which hash by their bits)."""
    return Counter(
        tuple(("float", floats.to_bits(v)) if isinstance(v, float) else v for v in row)
        for row in rows
    )


def assert_changes_lead_from(
    before: Mapping[str, Iterable[tuple]],
    after: Mapping[str, Iterable[tuple]],
    changes: Mapping[str, RelationChanges] | None,
) -> None:
    """The epoch's change set takes each relation users see from `before` to `after`: its
    retracted rows are exactly those that went, its inserted rows exactly those that came."""
    for name in set(before) | set(after):
        old, new = set(before.get(name, ())), set(after.get(name, ()))
        found = (changes or {}).get(name)
        assert set(found.retracted if found else ()) == old - new, name
        assert set(found.inserted if found else ()) == new - old, name
        if found is not None:
            assert len(found.retracted) == len(old - new) and len(found.inserted) == len(new - old)
