"""The join order `plan_rule` picks where it matters for Update's cost.

A deleted tuple is re-discovered from the rule's head; when two body atoms have as many
columns bound by it, the one over a lower stratum goes first: probing the stratum's own
relation (a closure) walks a large group, the lower one (its steps) a small one. On crdt.dl a
10-fact retraction deletes 34 million `skipBlank` tuples, and the other order walked every
tuple ending where each of them ends.
"""

from __future__ import annotations

from reasoner.analysis import check_program
from reasoner.plan.joins import AtomStep, Driver, plan_rule


def _order(text: str, head: str, driver: Driver, recursive: set[str]) -> list[tuple]:
    analyzed = check_program(text)
    (rule,) = [r for r in analyzed.program.rules if r.head.relation == head and len(r.body) > 1]
    plan = plan_rule(rule, driver, None, recursive)
    return [(s.relation, s.key_columns) for s in plan.steps if isinstance(s, AtomStep)]


SKIP_BLANK = """
.decl nextElem(a: number, b: number, c: number, d: number)
.decl hasValue(a: number, b: number)
skipBlank(fc, fn, tc, tn) :- nextElem(fc, fn, tc, tn).
skipBlank(fc, fn, tc, tn) :- skipBlank(vc, vn, tc, tn), nextElem(fc, fn, vc, vn), !hasValue(vc, vn).
"""

TC = """
.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def test_a_deleted_closure_tuple_is_rediscovered_through_its_step_first() -> None:
    assert _order(SKIP_BLANK, "skipBlank", Driver("head"), {"skipBlank"}) == [
        ("nextElem", (0, 1)),
        ("hasValue", (0, 1)),
        ("skipBlank", (0, 1, 2, 3)),
    ]
    assert _order(TC, "tc", Driver("head"), {"tc"}) == [("edge", (1,)), ("tc", (0, 1))]


def test_without_strata_ties_keep_the_written_order() -> None:
    assert _order(TC, "tc", Driver("head"), set()) == [("tc", (0,)), ("edge", (0, 1))]
