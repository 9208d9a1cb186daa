"""Epoch semantics of the Python API: all or nothing, the switching fallback, reports."""

from __future__ import annotations

import pytest

from reasoner.elastic import update
from reasoner.elastic.epoch import Delta
from reasoner.errors import InvalidDelta
from reasoner.materialization import Materialization

TC = """
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
.decl name(x: number, n: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def _materialization(**options: float) -> Materialization:
    m = Materialization.from_text(TC, **options)
    m.load({"edge": [(1, 2), (2, 3)]})
    m.bootstrap()
    return m


def _fresh_snapshot(edges: list[tuple[int, int]]) -> dict:
    m = Materialization.from_text(TC)
    m.load({"edge": edges})
    m.bootstrap()
    return m.snapshot()


def test_lookup_reads_iteration_and_count() -> None:
    m = _materialization()
    assert m.lookup("tc", (1, 3)) == (2, 1)
    assert m.lookup("edge", (1, 2)) == (0, 1)
    assert m.lookup("tc", (3, 1)) is None


def test_update_reports_impact_and_changes() -> None:
    m = _materialization()
    report = m.apply(Delta(insert={"edge": [(3, 4)]}), include_changes=True)
    assert (report.epoch, report.strategy) == (1, "update")
    assert report.inserted == 3 and report.retracted == 0
    assert report.changes == {"tc": {"inserted": [(1, 4), (2, 4), (3, 4)], "retracted": []}}
    assert m.snapshot() == _fresh_snapshot([(1, 2), (2, 3), (3, 4)])


@pytest.mark.parametrize(
    ("delta", "code"),
    [
        (Delta(insert={"nope": [(1,)]}), "unknown_relation"),
        (Delta(insert={"edge": [(1, 2, 3)]}), "arity_mismatch"),
        (Delta(retract={"edge": [(1, "x")]}), "type_mismatch"),
        (Delta(insert={"name": [(1, 2)]}), "type_mismatch"),
        (Delta(insert={"edge": [(1, 1 << 63)]}), "type_mismatch"),
    ],
)
def test_invalid_delta_changes_nothing(delta: Delta, code: str) -> None:
    m = _materialization()
    before = m.snapshot()
    with pytest.raises(InvalidDelta) as info:
        m.apply(delta)
    assert info.value.code == code
    assert m.snapshot() == before
    assert m.epoch == 0


def test_deadline_expiry_falls_back_to_bootstrap() -> None:
    m = _materialization(switching_parameter=0.0, min_update_seconds=0.0)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert report.strategy == "bootstrap"
    assert report.fallback_reason == "deadline"
    assert report.retracted == 2
    assert m.snapshot() == _fresh_snapshot([(1, 2)])


def test_failing_update_is_discarded(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(self, *args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(update.StratumUpdate, "run", explode)
    m = _materialization()
    before = m.snapshot()
    with pytest.raises(RuntimeError):
        m.apply(Delta(insert={"edge": [(3, 4)]}), strategy="update")
    assert m.snapshot() == before
    assert m.epoch == 0
    assert all(not store.extra for store in m.state.relations.values())
    report = m.apply(Delta(insert={"edge": [(3, 4)]}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "update failed")
    assert m.snapshot() == _fresh_snapshot([(1, 2), (2, 3), (3, 4)])


def test_inserting_and_retracting_one_row_is_a_no_op() -> None:
    m = _materialization()
    before = m.snapshot()
    report = m.apply(Delta(insert={"edge": [(5, 6)]}, retract={"edge": [(5, 6)]}))
    assert report.inserted == report.retracted == 0
    assert m.snapshot() == before


def test_rebuilt_equals_maintained_state_and_differences_detects_a_change() -> None:
    m = Materialization.from_text(
        ".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n"
        "p(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\ne(9, 9).\n"
    )
    m.load({"e": [(1, 2), (2, 3)]})
    m.bootstrap()
    m.apply(Delta(retract={"e": [(2, 3)]}, insert={"e": [(3, 1)]}), strategy="update")
    assert m.differences(m.rebuilt()) == {}
    other = m.rebuilt()
    other.state["p"].remove(other.encode("p", (1, 2)))
    assert m.differences(other) == {"p": 1}
