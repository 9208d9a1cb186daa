"""A fallback frees the old state's key indexes and tuple tables before its Bootstrap (crdt.dl:
2.7 and 1 of the old state's 7 GB, the difference between its peak and the 10 GB goal).
Readers of the published epoch meanwhile get the same rows and lookups by scans; a fallback
that fails leaves the old state to the next epoch, whose Update rebuilds them before it
probes them."""

from __future__ import annotations

import pytest

from reasoner import materialization
from reasoner.elastic import apply, changes
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from reasoner.storage import Table, missing_rows
from reasoner.support.deadline import BootstrapCancelled

PROGRAM = """
.decl e(x: number, y: number)
.input e
.decl t(x: number, y: number)
t(x, y) :- e(x, y).
t(x, z) :- t(x, y), e(y, z).
"""
EDGES = [(i, i + 1) for i in range(40)] + [(i, i + 2) for i in range(0, 40, 3)]


@pytest.fixture(autouse=True)
def _release_every_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apply, "RELEASED_INDEX_BYTES", 0)


def _materialization() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"e": EDGES})
    m.bootstrap()
    m.apply(Delta(insert={"e": [(50, 51)]}), strategy="update")  # the plans' indexes exist
    assert any(store.indexes for store in m.state.relations.values())
    return m


def _reads(m: Materialization) -> list[object]:
    """Selections and lookups as a query reads the published state."""
    return [
        sorted(m.state[name].select(key))
        for name in ("e", "t")
        for key in ({0: 3}, {1: 9}, {0: 3, 1: 9}, {0: 60})
    ] + [
        (t in m.state[name].table, m.state[name].table.get(t))
        for name in ("e", "t")
        for t in ((3, 4), (5, 6), (3, 9), (0, 40), (60, 61))
    ]


def _released(m: Materialization) -> bool:
    stores = m.state.relations.values()
    return all(store.table.chains_released for store in stores if store.indexes) and all(
        store.table.layout["tuple_slots"] == 0 for store in stores
    )


def test_readers_of_the_old_state_see_its_rows_while_the_fallback_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """... and the fallback's report lists the changes without probing the old state's tables
    (`changes.missing_rows` probes its second table)."""
    m = _materialization()
    before, seen = _reads(m), []
    old = m.state
    probed: list[Table] = []

    def recorded(table: Table, other: Table, *args: object, **kwargs: object) -> object:
        probed.append(other)
        return missing_rows(table, other, *args, **kwargs)

    monkeypatch.setattr(changes, "missing_rows", recorded)

    def check() -> None:
        if m.state is old and not seen:
            seen.append((_released(m), _reads(m)))

    old_t = set(old["t"].table.tuples(old["t"].table.committed_rows()))
    delta = Delta(retract={"e": [(5, 6)]}, insert={"e": [(5, 70)]})
    report = m.apply(delta, strategy="bootstrap", check=check, include_changes=True)
    assert seen == [(True, before)]
    assert m.state is not old
    assert not m.differences(m.rebuilt())
    new_t = set(m.state["t"].table.tuples(m.state["t"].table.committed_rows()))
    assert report.changes is not None  # compared one way, the other way from its marks
    assert sorted(report.changes["t"]["retracted"]) == sorted(old_t - new_t) != []
    assert sorted(report.changes["t"]["inserted"]) == sorted(new_t - old_t) != []
    old_tables = {id(store.table) for store in old.relations.values()}
    assert probed and not any(id(table) in old_tables for table in probed)


def test_a_bootstrap_replacing_a_state_frees_its_tables_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Materialization.bootstrap` on a state that is published: readers of it meanwhile
    read its released tables, and the new state's are whole."""
    monkeypatch.setattr(materialization, "RELEASED_INDEX_BYTES", 0)
    m = _materialization()
    before, seen = _reads(m), []
    old = m.state

    def check() -> None:
        if m.state is old and not seen:
            seen.append((_released(m), _reads(m)))

    m.bootstrap(check=check)
    assert seen == [(True, before)]
    assert m.state is not old
    assert all(store.table.layout["tuple_slots"] for store in m.state.relations.values())
    assert _reads(m) == before


def test_a_failed_fallback_leaves_the_next_update_whole_indexes() -> None:
    m = _materialization()
    before = _reads(m)

    def cancel() -> None:
        raise BootstrapCancelled("cancelled")

    with pytest.raises(BootstrapCancelled):
        m.apply(Delta(retract={"e": [(5, 6)]}), strategy="bootstrap", check=cancel)
    assert _released(m)
    assert _reads(m) == before
    report = m.apply(Delta(retract={"e": [(5, 6)]}, insert={"e": [(3, 30)]}), strategy="update")
    assert report.strategy == "update"
    assert not any(store.table.chains_released for store in m.state.relations.values())
    assert all(store.table.layout["tuple_slots"] for store in m.state.relations.values())
    assert not m.differences(m.rebuilt())
