"""A step of an Update plan whose key the driver alone gives has its slot loaded as the plan
begins (`reasoner.kernel.deferred._start_early`), so that its cache miss overlaps those of the
steps before it. Which step that is must be read right off the plan's words: a step whose key
needs a register bound later would be started on a stale value, and a misread offset would
load from anywhere. So: which step each plan of a rule starts early, and none for a Bootstrap's
plans. (That the states stay a fresh Bootstrap's is the Update invariant's property test.)"""

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
"""


def _early(relation: str, bootstrap: bool = False) -> dict[tuple[str, str, int], int]:
    """(driver's relation, role, rule) -> the step its plan starts early (-1: none), for the
    plans of the stratum of `relation`."""
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
        found[(plan.relation, plan.role, plan.rule_number)] = e.early
    return found


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
