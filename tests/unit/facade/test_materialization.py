"""Epoch semantics of the Python API: all or nothing, the switching fallback, reports."""

from __future__ import annotations

import io

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.elastic import apply
from reasoner.elastic.epoch import Delta
from reasoner.elastic.forecast import Forecast
from reasoner.errors import InvalidDelta
from reasoner.io.facts import format_rows, write_csv
from reasoner.kernel.run import StratumUpdate
from reasoner.materialization import Materialization
from reasoner.support.deadline import MemoryBudgetExceeded
from reasoner.values.symbols import BULK_INTERN, SymbolTable
from tests.conftest import examples
from tests.unit.elastic.test_forecast import Clock

TC = """
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
.decl name(x: number, n: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def _materialization(**options: object) -> Materialization:
    m = Materialization.from_text(TC, **options)
    m.load({"edge": [(1, 2), (2, 3)]})
    m.bootstrap()
    return m


def _fresh_snapshot(edges: list[tuple[int, int]], text: str = TC) -> dict:
    m = Materialization.from_text(text)
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
        (Delta(retract={"nope": [(1,)]}), "unknown_relation"),
        (Delta(insert={"fresh": [(1, 2), (3,)]}), "arity_mismatch"),
        (Delta(insert={"fresh": [(1, 2), (3, "x")]}), "type_mismatch"),
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


def test_an_update_past_its_memory_budget_falls_back_to_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel checks its bookkeeping's bytes with the deadline; past the budget the
    Update is dropped like a late one, and the report says why. Forced Updates have no bound."""
    m = _materialization()
    monkeypatch.setattr(Materialization, "_update_memory_budget", lambda self: 1)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "memory")
    assert m.snapshot() == _fresh_snapshot([(1, 2)])
    report = m.apply(Delta(insert={"edge": [(2, 3)]}), strategy="update")
    assert report.strategy == "update"
    assert m.snapshot() == _fresh_snapshot([(1, 2), (2, 3)])


def test_deadline_expiry_falls_back_to_bootstrap() -> None:
    """The deadline has passed when the one stratum begins: what is left is the whole
    Bootstrap, which runs as a fallback."""
    m = _materialization(switching_parameter=0.0, min_update_seconds=0.0)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert report.strategy == "bootstrap"
    assert report.fallback_reason == "deadline"
    assert report.retracted == 2
    assert m.snapshot() == _fresh_snapshot([(1, 2)])


def test_failing_update_is_discarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Update that fails leaves the committed state as it was, nothing staged; the kernel
    fails here after it staged its new tuples, which the discard must unstage."""
    export = StratumUpdate._export

    def explode(self, overlay):
        export(self, overlay)
        raise RuntimeError("injected")

    monkeypatch.setattr(StratumUpdate, "_export", explode)
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


def test_a_fallback_bootstraps_without_the_abandoned_updates_buffers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When an Update is abandoned, its kernels give back every buffer they grew (the ones
    kept between Updates included) before the Bootstrap the epoch falls back to starts: the
    fallback's peak is a Bootstrap's, not a Bootstrap's on top of the Update's bookkeeping.
    The kernels' own byte counters are compared with those of kernels that never ran."""
    m = _materialization()
    fresh = {key: plans.kernel.nbytes() for key, plans in m._plans.items()}
    export = StratumUpdate._export
    grown: list[int] = []

    def late(self: StratumUpdate, overlay: object) -> None:
        grown.append(self.kernel.nbytes())  # before `reset`, which keeps buffers this small
        export(self, overlay)
        raise MemoryBudgetExceeded()

    at_build: list[dict[object, int]] = []
    build = Materialization._build

    def watched(self: Materialization, *args: object, **kwargs: object) -> object:
        at_build.append({key: plans.kernel.nbytes() for key, plans in self._plans.items()})
        return build(self, *args, **kwargs)

    monkeypatch.setattr(StratumUpdate, "_export", late)
    monkeypatch.setattr(Materialization, "_build", watched)
    report = m.apply(Delta(insert={"edge": [(3, 4), (4, 5), (5, 6)]}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "memory")
    assert grown and max(grown) > max(fresh.values())  # the Update grew buffers
    assert at_build == [fresh]
    assert m.snapshot() == _fresh_snapshot([(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)])


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


def test_facts_and_rules_need_no_declarations_in_either_order() -> None:
    """A relation first met in inserted facts is declared from them (arity, and types from
    the values); a rule may read a relation nothing defines yet (empty, with a warning)."""
    facts_first = Materialization.from_text("")
    facts_first.load({})
    facts_first.bootstrap()
    facts_first.apply(Delta(insert={"e": [(1, "a"), (2, "b")]}))
    report = facts_first.apply(Delta(add_rules=["p(x) :- e(x, _), !q(x)."]))
    assert [(w.code, w.line, w.column) for w in report.warnings] == [("unknown_relation", 1, 19)]
    assert sorted(facts_first.rows("p")) == [(1,), (2,)]
    facts_first.apply(Delta(insert={"q": [(2,)]}))
    assert facts_first.rows("p") == [(1,)]

    rules_first = Materialization.from_text("")
    rules_first.load({})
    rules_first.bootstrap()
    rules_first.apply(Delta(add_rules=["p(x) :- e(x, _), !q(x)."]))
    rules_first.apply(Delta(insert={"e": [(1, "a"), (2, "b")], "q": [(2,)]}))
    assert rules_first.rows("p") == [(1,)]
    assert rules_first.differences(rules_first.rebuilt()) == {}
    with pytest.raises(InvalidDelta) as info:  # the shape is fixed by the first use
        rules_first.apply(Delta(insert={"e": [("a", "a")]}))
    assert info.value.code == "type_mismatch"


def test_a_whole_program_text_is_accepted_as_rules_with_its_facts_as_data() -> None:
    m = Materialization.from_text("")
    m.load({})
    m.bootstrap()
    text = ".input edge\n.output tc\nedge(1, 2).\nedge(2, 3).\ntc(x, y) :- edge(x, y).\n"
    report = m.apply(Delta(add_rules=[text + "tc(x, z) :- tc(x, y), edge(y, z).\n"]))
    assert len(report.rules_added) == 2 and not report.warnings
    assert sorted(m.rows("tc")) == [(1, 2), (1, 3), (2, 3)]
    assert m.facts["edge"] and not m.program_facts.get("edge")  # data, so it can be retracted
    m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert m.rows("tc") == [(1, 2)]
    assert m.analyzed.relations["tc"].column_names == ("x", "y")
    assert m.analyzed.relations["tc"].is_output


def test_a_declaration_alone_is_a_change_and_a_repeated_rule_is_not() -> None:
    m = Materialization.from_text("")
    m.load({})
    m.bootstrap()
    declared = m.apply(Delta(add_rules=[".decl edge(x: number, y: symbol)"]))
    assert (declared.strategy, declared.epoch) != ("unchanged", 0)
    assert m.analyzed.relations["edge"].types == ("number", "symbol")
    m.apply(Delta(add_rules=["p(x) :- edge(x, _)."]))
    again = m.apply(Delta(add_rules=["p(x) :- edge(x, _)."]))
    assert (again.strategy, again.epoch) == ("unchanged", m.epoch)


@pytest.mark.parametrize("include_changes", [False, True])
def test_a_fallback_reports_relations_that_leave_or_join_the_program(
    include_changes: bool,
) -> None:
    """A rebuilt epoch compares every derived relation of the old and the new program: one
    that leaves the program (empty or not) is all retracted, one that joins it all inserted."""
    m = Materialization.from_text(".decl e(x: number)\np(x) :- e(x).\nnone(x) :- p(x), x > 100.\n")
    m.load({"e": [(1,), (2,)]})
    m.bootstrap()
    removed = [rule.id for rule in m.rules() if rule.text.startswith(("p(", "none("))]
    report = m.apply(
        Delta(remove_rules=removed, add_rules=["q(x) :- e(x), x > 1."]),
        strategy="bootstrap",
        include_changes=include_changes,
    )
    assert (report.retracted, report.inserted) == (2, 1)
    assert m.rows("q") == [(2,)]


def test_batch_is_in_value_order_and_writes_as_soufflé_sorts() -> None:
    """Sorted on integers (a symbol by its rank), the batch is the order a sort of the
    decoded rows gives, and it is written without sorting again."""
    m = Materialization.from_text(".decl p(s: symbol, n: number)\n.input p\n")
    rows = [("pear", 2), ("apple", 10), ("Zebra", -1), ("apple", -3), ("éclair", 0), ("", 5)]
    m.load({"p": rows})
    m.bootstrap()
    batch = m.batch("p")
    assert not isinstance(batch, list) and batch.ordered
    assert list(batch) == sorted(rows)
    out = io.BytesIO()
    write_csv(out, batch)
    assert out.getvalue().decode() == format_rows(rows)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["b", "a", "é", "", "Z", "a b", "ab"]),
            st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3),
            st.sampled_from(["y", "x", "ÿ", "a"]),
        ),
        max_size=40,
    )
)
def test_a_batch_of_symbols_and_numbers_is_in_the_order_of_its_decoded_rows(
    rows: list[tuple[str, int, str]],
) -> None:
    """Sorted as packed words of ranks and numbers where they fit one word, else by
    `np.lexsort` (numbers spanning 64 bits): the order a sort of the decoded rows gives."""
    m = Materialization.from_text(".decl p(s: symbol, n: number, t: symbol)\n.input p\n")
    m.load({"p": rows})
    m.bootstrap()
    batch = m.batch("p")
    assert not isinstance(batch, list) and batch.ordered
    assert list(batch) == sorted(set(rows))


def test_interning_a_long_column_gives_the_ids_row_by_row_interning_gives() -> None:
    values = [f"s{i % 997}" for i in range(BULK_INTERN * 2)][::-1]
    bulk, rows = SymbolTable(), SymbolTable()
    bulk.intern("s5")
    rows.intern("s5")
    assert bulk.intern_column(pl.Series(values)).tolist() == rows.intern_column(values).tolist()
    assert [bulk.resolve(i) for i in range(len(bulk))] == [
        rows.resolve(i) for i in range(len(rows))
    ]


TWO_STRATA = TC + "\n.decl reach(y: number)\nreach(y) :- tc(1, y).\n"


def _forecast_with(
    monkeypatch: pytest.MonkeyPatch, bootstrap: float, deadline: float, first: float = 1.0
) -> None:
    """The Update's forecast over the test's clock: `first` Bootstrap seconds for the first
    stratum and 1 for the second, and the first one done 10 s after it began (the clock
    stands at 0 until then)."""
    clock = Clock()
    end = Forecast.end

    def ended(self: Forecast) -> float | None:
        clock.t = 10.0
        return end(self)

    monkeypatch.setattr(Forecast, "end", ended)

    def forecast(m: Materialization, analyzed: object, start: float, seconds: float) -> Forecast:
        return Forecast({0: first, 1: 1.0}, bootstrap, 0.0, deadline, 0.0, clock)

    monkeypatch.setattr(apply, "_forecast", forecast)


def _two_strata() -> Materialization:
    m = Materialization.from_text(TWO_STRATA)
    m.load({"edge": [(1, 2), (2, 3)]})
    m.bootstrap()
    return m


def test_an_update_projected_to_lose_is_abandoned_before_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10 s for the first stratum, a quarter of the second's Bootstrap: 40 s more for the
    second, against a 1 s Bootstrap. What is left is 80 % of the strata's Bootstrap, not below
    `ALONE_SHARE`: the whole epoch falls back."""
    m = _two_strata()
    _forecast_with(monkeypatch, bootstrap=1.0, deadline=100.0, first=0.25)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "forecast")
    walked = [(s.relations, s.strategy, s.forecast_seconds) for s in report.update_strata]
    assert walked == [(("tc",), "update", 40.0), (("reach",), "abandoned", 40.0)]
    assert m.snapshot() == _fresh_snapshot([(1, 2)], TWO_STRATA)


def test_a_stratum_given_up_is_bootstrapped_alone_when_that_pays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10 s for the first stratum: 10 s more for the second, against a 1 s Bootstrap. What is
    left is half of the strata's Bootstrap: the first stratum's Update is kept, the second is
    bootstrapped alone, and the epoch says why."""
    m = _two_strata()
    _forecast_with(monkeypatch, bootstrap=1.0, deadline=100.0)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert (report.strategy, report.fallback_reason, report.update_strata) == (
        "update",
        "forecast",
        (),
    )
    walked = [
        (s.relations, s.strategy, s.forecast_seconds, s.bulk_from, s.fallback_reason)
        for s in report.strata
    ]
    assert walked == [
        (("tc",), "update", 10.0, None, None),
        (("reach",), "bootstrap", 10.0, 1, "forecast"),
    ]
    assert m.snapshot() == _fresh_snapshot([(1, 2)], TWO_STRATA)


def test_an_update_projected_to_win_runs_past_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10 s for the first stratum, past a 5 s deadline: 10 s more, against a 100 s Bootstrap."""
    m = _two_strata()
    _forecast_with(monkeypatch, bootstrap=100.0, deadline=5.0)
    report = m.apply(Delta(retract={"edge": [(2, 3)]}))
    assert (report.strategy, report.fallback_reason, report.update_strata) == ("update", None, ())
    assert [(s.strategy, s.forecast_seconds) for s in report.strata] == [
        ("update", 10.0),
        ("update", 0.0),
    ]
    assert m.snapshot() == _fresh_snapshot([(1, 2)], TWO_STRATA)


def _recorded_shares(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """The two shares of the stratum under way, read at each of the forecast's checks, of an
    Update that no deadline stops."""
    seen: list[tuple[float, float]] = []
    judge = Forecast.judge

    def judged(self: Forecast) -> None:
        if self._fraction is not None:
            seen.append(self._fraction())
        judge(self)

    monkeypatch.setattr(Forecast, "judge", judged)
    monkeypatch.setattr(
        apply,
        "_forecast",
        lambda m, analyzed, start, seconds: Forecast({0: 1.0}, 1e9, 0.0, 1e9, 0.0, Clock()),
    )
    return seen


def test_an_update_reports_its_share_of_the_tuples_and_of_the_iterations_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a chain, a Bootstrap's tuples crowd its first iterations (iteration k of the
    closure of n nodes makes n - k pairs). Cutting the chain in the middle, the Update walks
    the iterations in order and has passed a larger share of the tuples than of the
    iterations at every check (`reasoner.elastic.forecast` takes the lesser to keep an Update
    past its deadline)."""
    nodes = 600
    m = Materialization.from_text(TC)
    m.load({"edge": [(i, i + 1) for i in range(nodes)]})
    m.bootstrap()
    seen = _recorded_shares(monkeypatch)
    cut = nodes // 2
    report = m.apply(Delta(retract={"edge": [(cut, cut + 1)]}))
    assert report.strategy == "update"
    iterations = [i for _, i in seen]
    assert len(seen) >= 4 and iterations == sorted(iterations) and iterations[-1] > 0.9
    assert all(0.0 < i < t < 1.0 for t, i in seen[1:])
    edges = [(i, i + 1) for i in range(nodes) if i != cut]
    assert m.snapshot() == _fresh_snapshot(edges)


def test_past_the_bootstrap_s_last_iteration_the_share_of_iterations_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Joining two chains makes the closure deeper than the Bootstrap went: from its last
    iteration on, the Update reports all tuples passed and no share of the iterations, so a
    forecast keeps it past its deadline on nothing but the deadline's terms."""
    nodes = 600
    edges = [(i, i + 1) for i in range(nodes) if i != nodes // 2]
    m = Materialization.from_text(TC)
    m.load({"edge": edges})
    m.bootstrap()
    seen = _recorded_shares(monkeypatch)
    assert m.apply(Delta(insert={"edge": [(nodes // 2, nodes // 2 + 1)]})).strategy == "update"
    deeper = seen.index((1.0, 0.0))
    assert 0 < deeper < len(seen) - 1 and all(s == (1.0, 0.0) for s in seen[deeper:])
    assert all(0.0 < i < 1.0 for _, i in seen[1:deeper])
    assert m.snapshot() == _fresh_snapshot([*edges, (nodes // 2, nodes // 2 + 1)])


def test_an_epoch_reports_the_state_it_left_and_the_peak_it_took() -> None:
    """The peak is the process's from a mark at the epoch's start: an epoch that allocates
    a block larger than anything resident before reports at least that block."""
    m = _two_strata()
    report = m.apply(Delta(insert={"edge": [(3, 4)]}))
    assert report.state_bytes == m.state.nbytes > 0
    assert report.peak_memory_bytes is not None
    assert report.as_json()["state_bytes"] == report.state_bytes
    block = 256 << 20
    held: list[bytearray] = []

    def allocate(changes: object) -> None:
        held.append(bytearray(b"x" * block))  # resident: every page written

    grown = m.apply(Delta(insert={"edge": [(4, 5)]}), before_publish=allocate)
    held.clear()
    later = m.apply(Delta(insert={"edge": [(5, 6)]}))
    assert grown.peak_memory_bytes is not None and later.peak_memory_bytes is not None
    assert grown.peak_memory_bytes >= block > later.peak_memory_bytes - report.peak_memory_bytes
    unchanged = m.apply(Delta(insert={"edge": [(5, 6)]}))
    assert (unchanged.state_bytes, unchanged.peak_memory_bytes) == (m.state.nbytes, None)
