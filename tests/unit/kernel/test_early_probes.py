"""A step of an Update plan whose key the driver alone gives has its slot loaded as the plan
begins (`reasoner.kernel.deferred._start_early`), so that its cache miss overlaps those of the
steps before it; a first step so keyed has it loaded when the tuple that drives it is
scheduled (`deferred._look_ahead`, `Enumerator.ahead`). Which steps those are must be read
right off the plan's words: a step whose key needs a register bound later would be started on
a stale value, and a misread offset would load from anywhere. Ahead of a drive the key is read
from the driving tuple's columns, so a plan whose driver is not the head's relation (a full
re-discovery's) must load nothing ahead. So: which steps each plan of a rule starts, and none
for a Bootstrap's plans. (That the states stay a fresh Bootstrap's is the Update invariant's
property test.)"""

from __future__ import annotations

from reasoner.analysis import check_program
from reasoner.kernel.interpreter import Enumerator
from reasoner.kernel.plans import kernel_rule
from reasoner.kernel.run import StratumUpdate
from reasoner.materialization import Materialization

# crdt_linear's nextVis: from a changed `nv(v, t)` the plan checks `!hv(v)`, then probes
# `ne(f, v)` by `v`, both keyed by the driver. `p`'s second probe needs `z` from its first.
PROGRAM = """
.decl ne(f: number, v: number)
.decl hv(v: number)
.decl nv(f: number, t: number)
nv(f, t) :- ne(f, t), hv(t).
nv(f, t) :- ne(f, v), !hv(v), nv(v, t).
.decl a(x: number, y: number)
.decl b(y: number, z: number)
.decl c(z: number)
.decl p(x: number, z: number)
p(x, z) :- a(x, y), b(y, z), c(z).
.decl r(x: number)
.decl s(z: number)
.decl q(x: number, z: number)
q(x, z) :- r(x), s(z).
.decl g(x: number)
.decl k(x: number)
.decl h(y: number)
h(x + 1) :- g(x), k(x).
"""


def _plans(relation: str, bootstrap: bool = False) -> dict[tuple[str, str, int], Enumerator]:
    """(driver's relation, role, rule) -> its plan's enumerator, for the plans of the stratum
    of `relation`."""
    analyzed = check_program(PROGRAM)
    m = Materialization(analyzed)
    m.load({"ne": [(1, 2)], "hv": [(2,)], "a": [(1, 2)], "b": [(2, 3)], "c": [(3,)]})
    m.bootstrap()
    stratum = next(s for s in analyzed.strata if relation in s.relations)
    update = StratumUpdate(stratum, m.state, m.symbols, m.arities)
    number = update.relations.number
    found = {}
    for plan in update.plans:
        rule = kernel_rule(
            plan.rule_number, stratum.rules[plan.rule_number], number.__getitem__, stratum.relations
        )
        e = Enumerator(
            rule, plan.words, plan.registers, "", bootstrap, plan.full, list(plan.ranges)
        )
        found[(plan.relation, plan.role, plan.rule_number)] = e
    return found


def _early(relation: str, bootstrap: bool = False) -> dict[tuple[str, str, int], int]:
    """(driver's relation, role, rule) -> the step its plan starts early (-1: none)."""
    return {key: e.early for key, e in _plans(relation, bootstrap).items()}


def test_a_step_keyed_by_the_driver_alone_is_started_early() -> None:
    early = _early("nv")
    assert early[("nv", "atom", 1)] == 1  # `!hv(v)`, then `ne(f, v)` by `v`: the second
    assert early[("ne", "atom", 1)] == 1  # `!hv(v)`, then `nv(v, t)` by `v`
    assert early[("ne", "atom", 0)] == -1  # `hv(t)`, the only step
    assert early[("hv", "negation", 1)] == 1  # its own status, then `ne(f, v)` by `v`


def test_a_step_keyed_by_a_later_binding_is_not() -> None:
    early = _early("p")
    assert early[("a", "atom", 0)] == -1  # `b(y, z)` by `y`, then `c(z)`: `z` is b's


def test_a_bootstrap_plan_starts_nothing_early() -> None:
    assert set(_early("nv", bootstrap=True).values()) == {-1}


def test_a_first_step_keyed_by_the_driver_alone_is_loaded_ahead() -> None:
    plans = _plans("nv")
    assert plans[("nv", "atom", 1)].ahead  # `!hv(v)`, by the driver's `v`
    assert plans[("ne", "atom", 0)].ahead  # `hv(t)`: a lookup of the driver's `t`
    assert plans[("nv", "head", 1)].ahead  # re-discovery: `ne(f, v)` by the head's `f`
    assert not _plans("q")[("r", "atom", 0)].ahead  # `s(z)`: a scan, no key


def test_a_full_rediscovery_or_a_bootstrap_loads_nothing_ahead() -> None:
    # h's head is not invertible: its re-discovery evaluates the whole rule from an atom,
    # whose columns are not the head's, though its first step is keyed by that atom alone.
    plans = _plans("h")
    (full,) = [e for (_, role, _), e in plans.items() if role == "head"]
    assert not full.ahead
    assert not any(e.ahead for e in _plans("nv", bootstrap=True).values())
