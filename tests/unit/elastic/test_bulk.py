"""The rest of a stratum's Update in bulk (`reasoner.elastic.bulk`): from the iteration a
threshold stopped the compiled Update before, or from the one the switch gave it up in, the
state equals a fresh Bootstrap's, tuple by tuple with iterations and counts."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from reasoner.elastic import strata_update, switch
from reasoner.elastic.bulk import bulk_bytes
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from reasoner.support.deadline import BootstrapCancelled, Deadline, DeadlineExceeded

CHAIN = """
.decl e(x: number, y: number)
.decl tc(x: number, y: number)
.decl far(x: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
far(x) :- tc(x, y), y > 50, !e(x, y).
"""


def _built(edges: set[tuple[int, int]], **options: int) -> Materialization:
    m = Materialization.from_text(CHAIN, **options)
    m.load({"e": sorted(edges)})
    m.bootstrap()
    return m


def _fresh(edges: set[tuple[int, int]]) -> dict:
    return _built(edges, maintained=False).snapshot()


def _chain(seed: int) -> set[tuple[int, int]]:
    rnd = random.Random(seed)
    return {(i, i + 1) for i in range(70)} | {
        (rnd.randrange(80), rnd.randrange(80)) for _ in range(20)
    }


def _step(edges: set[tuple[int, int]], rnd: random.Random) -> tuple[set, set]:
    gone = set(rnd.sample(sorted(edges), 5))
    return gone, {(rnd.randrange(80), rnd.randrange(80)) for _ in range(5)}


@pytest.mark.parametrize("threshold", [0, 5, 20, 40, 80])
def test_a_threshold_stops_the_update_and_the_rest_goes_in_bulk(threshold: int) -> None:
    """Stopped before the first iteration of `threshold` candidates or more (0: all of the
    stratum in bulk), at whatever depth that is."""
    stops: set[int | None] = set()
    for seed in range(4):
        edges = _chain(seed)
        m = _built(edges, bulk_update_rows=threshold)
        rnd = random.Random(seed)
        for _ in range(5):
            gone, new = _step(edges, rnd)
            report = m.apply(Delta(insert={"e": sorted(new)}, retract={"e": sorted(gone)}))
            edges = (edges - gone) | new
            assert m.snapshot() == _fresh(edges)
            assert report.strategy == "update" and report.fallback_reason is None
            stops |= {s.bulk_from for s in report.strata if s.strategy == "update"}
    assert stops - {None}
    if threshold == 0:
        assert stops == {1}
    if threshold >= 20:
        assert max(k for k in stops if k is not None) > 1


def _deadline_giving_up_at(checks: int) -> Callable[..., Deadline]:
    """`switch.update_deadline` for a switch that gives the Update up at its `checks`-th
    look."""
    seen = [0]

    def judge() -> None:
        seen[0] += 1
        if seen[0] >= checks:
            raise DeadlineExceeded

    return lambda *_, **__: Deadline(judge=judge)


def test_an_update_given_up_in_an_iteration_keeps_what_it_settled_below(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The switch gives the Update up at its n-th look (n of 1, 2, 3, 5, 8): at a stratum's
    start or within one of its iterations (a check every 16,384 steps of the kernel). The
    stratum goes on in bulk from the iteration under way, the one above is bootstrapped
    alone, and nothing the Update staged is left over (bootstrapping alone always pays
    here)."""
    monkeypatch.setattr(strata_update, "ALONE_SHARE", 2.0)
    given_up_at: set[int] = set()
    for checks in (1, 2, 3, 5, 8):
        rnd = random.Random(7)
        edges = {(rnd.randrange(300), rnd.randrange(300)) for _ in range(1200)}
        m = _built(edges)
        monkeypatch.setattr(switch, "update_deadline", _deadline_giving_up_at(checks))
        gone = set(rnd.sample(sorted(edges), 60))
        report = m.apply(Delta(retract={"e": sorted(gone)}))
        assert m.snapshot() == _fresh(edges - gone)
        assert all(not list(store.table.staged_rows()) for store in m.state.relations.values())
        assert (report.strategy, report.fallback_reason) == ("update", "deadline")
        tc, far = report.strata
        assert (far.strategy, far.bulk_from, far.fallback_reason) == ("bootstrap", 1, "deadline")
        assert (tc.strategy, tc.fallback_reason) == ("bootstrap", "deadline")
        given_up_at.add(tc.bulk_from)
    assert max(given_up_at) > 2  # deep in tc's recursion too


def test_an_update_given_up_where_alone_does_not_pay_falls_back_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given up within tc, whose Bootstrap is most of the program's: the epoch falls back."""
    monkeypatch.setattr(switch, "update_deadline", _deadline_giving_up_at(3))
    rnd = random.Random(7)
    edges = {(rnd.randrange(300), rnd.randrange(300)) for _ in range(1200)}
    m = _built(edges)
    gone = set(rnd.sample(sorted(edges), 60))
    report = m.apply(Delta(retract={"e": sorted(gone)}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "deadline")
    assert [s.strategy for s in report.update_strata] == ["abandoned"]
    assert m.snapshot() == _fresh(edges - gone)


def test_a_stratum_above_that_cannot_go_alone_sends_the_epoch_back_whole_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A choice above tc is made afresh stepwise, which bootstrapping alone cannot do: given
    up in tc, the epoch falls back whole before any bulk work is spent."""
    monkeypatch.setattr(switch, "update_deadline", _deadline_giving_up_at(4))
    monkeypatch.setattr(strata_update, "ALONE_SHARE", 2.0)
    spent: list[object] = []
    monkeypatch.setattr(strata_update, "finish_in_bulk", lambda *args: spent.append(args))
    rnd = random.Random(7)
    edges = {(rnd.randrange(300), rnd.randrange(300)) for _ in range(1200)}
    text = CHAIN + ".decl pick(x: number, y: number) choice-domain x\npick(x, y) :- tc(x, y).\n"
    m = Materialization.from_text(text)
    m.load({"e": sorted(edges)})
    m.bootstrap()
    gone = set(rnd.sample(sorted(edges), 60))
    report = m.apply(Delta(retract={"e": sorted(gone)}))
    assert (report.strategy, report.fallback_reason, spent) == ("bootstrap", "deadline", [])
    assert [s.strategy for s in report.update_strata] == ["abandoned"]


@pytest.mark.parametrize("checks", [3, 5, 7])
def test_an_epoch_cancelled_in_bulk_leaves_nothing_staged(
    monkeypatch: pytest.MonkeyPatch, checks: int
) -> None:
    """Cancelled while the stratum goes on in bulk: the state is as it was, and no row the
    stopped Update staged is left (one staged between a new head and its record was)."""
    in_bulk = [False]

    def cancel() -> None:
        if in_bulk[0]:
            raise BootstrapCancelled("cancelled")

    judge = _deadline_giving_up_at(checks)().judge
    deadline = Deadline(epoch_check=cancel, judge=judge)
    monkeypatch.setattr(switch, "update_deadline", lambda *_, **__: deadline)
    monkeypatch.setattr(strata_update, "ALONE_SHARE", 2.0)
    finish = strata_update.finish_in_bulk

    def bulk(*args: object) -> None:
        in_bulk[0] = True
        finish(*args)

    monkeypatch.setattr(strata_update, "finish_in_bulk", bulk)
    rnd = random.Random(7)
    edges = {(rnd.randrange(300), rnd.randrange(300)) for _ in range(1200)}
    m = _built(edges)
    before = m.snapshot()
    with pytest.raises(BootstrapCancelled):
        m.apply(Delta(retract={"e": sorted(rnd.sample(sorted(edges), 60))}))
    assert m.snapshot() == before
    assert all(not list(store.table.staged_rows()) for store in m.state.relations.values())


def test_the_memory_a_bulk_evaluation_takes_counts_the_inputs_it_copies() -> None:
    m = _built(_chain(0))
    far = next(s for s in m.analyzed.strata if s.relations == {"far"})
    unchanged = bulk_bytes(far, m.state, lambda name: False)
    copied = bulk_bytes(far, m.state, lambda name: name == "tc")
    assert copied - unchanged == m.state["tc"].table.nbytes > 0


def test_the_memory_a_bulk_evaluation_takes_counts_the_rows_it_derives_again() -> None:
    """From a later iteration, fewer rows are removed from the copy and derived again; past
    the last one, none: the copy of the table alone, and the frames of its inputs."""
    m = _built(_chain(0))
    tc = next(s for s in m.analyzed.strata if s.relations == {"tc"})
    last = len(m.state["tc"].table.iteration_counts())
    sizes = [bulk_bytes(tc, m.state, lambda name: False, k) for k in (1, last // 2, last)]
    assert sizes[0] > sizes[1] > sizes[2]
    assert sizes[2] == m.state["tc"].table.nbytes + 16 * len(m.state["e"])


def test_a_bulk_evaluation_that_outgrows_the_memory_budget_falls_back_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change that grows tc many times over (a chain closed over a few edges): the
    estimate made before the bulk evaluation fits the budget, the evaluation outgrows it on
    its way, and the epoch falls back whole, as an Update past its budget does (crdt.dl's
    25,978 facts back after all were out ran the machine out of memory this way)."""
    edges = {(i, i + 1) for i in range(0, 300, 30)}
    m = _built(edges)
    budget = 1 << 16  # tc and far take 2 KiB each in bulk before, tc 1.6 MiB after
    assert sum(bulk_bytes(s, m.state, lambda name: True) for s in m.analyzed.strata) < budget
    judge = _deadline_giving_up_at(1)().judge
    monkeypatch.setattr(
        switch, "update_deadline", lambda *_, **__: Deadline(memory=budget, judge=judge)
    )
    monkeypatch.setattr(strata_update, "ALONE_SHARE", 2.0)
    chain = {(i, i + 1) for i in range(300)}
    report = m.apply(Delta(insert={"e": sorted(chain)}))
    assert (report.strategy, report.fallback_reason) == ("bootstrap", "memory")
    assert m.snapshot() == _fresh(edges | chain)
    assert budget < m.state["tc"].table.nbytes


def test_a_bulk_evaluation_the_estimate_admits_is_not_stopped_by_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The estimate before and the bound as it goes count the same bytes: a change that
    does not grow the relation, with the budget at the estimate, finishes in bulk."""
    rnd = random.Random(1)
    edges = {(rnd.randrange(400), rnd.randrange(400)) for _ in range(500)}
    m = _built(edges, bulk_update_rows=0)
    tc = next(s for s in m.analyzed.strata if s.relations == {"tc"})
    budget = bulk_bytes(tc, m.state, lambda name: name == "e")
    monkeypatch.setattr(switch, "update_deadline", lambda *_, **__: Deadline(memory=budget))
    gone = sorted(edges)[:1]
    report = m.apply(Delta(retract={"e": gone}))
    assert (report.strategy, report.fallback_reason) == ("update", None)
    assert [s.bulk_from for s in report.strata if s.relations == ("tc",)] == [1]
    assert m.snapshot() == _fresh(edges - set(gone))
