"""Aggregates (`count`, `sum`, `min`, `max`) give Soufflé's documented results, on every
in-process executor, under Bootstrap and Update.

The expected rows are written out by hand from Soufflé's documentation of aggregates: a count
counts the instantiations of the body, a sum adds the target over them (two tuples with the
same value both count), `count` and `sum` of an empty body are 0, `min` and `max` of one give
no value, and the group is the variables the rule binds outside the aggregate. The naive
oracle (`tests.oracle`) must agree, and after every delta the maintained state equals a fresh
Bootstrap.
"""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.oracle.evaluation import evaluate, visible
from tests.updates import check_updates

INT64_MAX = (1 << 63) - 1

PROGRAM = """
.decl A(x: number, y: number)
.decl N(name: symbol, x: number)
.input A
.input N
.decl Count(x: number, c: number)
.decl Total(s: number)
.decl Least(x: number, m: number)
.decl Most(x: number, m: number)
.decl None(c: number)
.decl NoSum(s: number)
.decl NoMin(m: number)
.decl Above(x: number, c: number)
.decl Both(x: number, c: number, s: number)
.decl InHead(x: number, c: number)
.decl Named(name: symbol, c: number)
.decl Nested(x: number, c: number)
.decl Filtered(x: number, c: number)
.decl Wide(x: number, c: number)
Count(x, c) :- A(x, _), c = count : { A(x, _) }.
Total(s) :- s = sum y : { A(_, y) }.
Least(x, m) :- A(x, _), m = min y : { A(x, y) }.
Most(x, m) :- A(x, _), m = max y * 10 : A(x, y).
None(c) :- c = count : { A(_, 99) }.
NoSum(s) :- s = sum y : { A(99, y) }.
NoMin(m) :- m = min y : { A(99, y) }.
Above(x, c) :- A(x, _), c = count : { A(_, y), y > x }.
Both(x, c, s) :- A(x, _), c = count : { A(x, _) }, s = sum y : { A(x, y) }.
InHead(x, count : { A(x, _), !N(_, x) }) :- A(x, _).
Named(n, c) :- N(n, _), c = count : { N(n, x), A(x, _) }.
Nested(x, c) :- A(x, _), c = count : { A(x, y), y = max z : { A(_, z) } }.
Filtered(x, c) :- A(x, _), c = count : { A(x, y) }, c >= 2.
Wide(x, c) :- A(x, _), c = sum y : { A(x, y), A(y, _) }.
"""

INPUTS = {
    "A": [(1, 2), (1, 3), (2, 5), (3, 2)],
    "N": [("a", 1), ("a", 2), ("b", 9)],
}

EXPECTED = {
    "Count": {(1, 2), (2, 1), (3, 1)},
    "Total": {(12,)},  # 2 + 3 + 5 + 2: the two tuples with y = 2 both count
    "Least": {(1, 2), (2, 5), (3, 2)},
    "Most": {(1, 30), (2, 50), (3, 20)},
    "None": {(0,)},
    "NoSum": {(0,)},
    "NoMin": set(),
    "Above": {(1, 4), (2, 2), (3, 1)},
    "Both": {(1, 2, 5), (2, 1, 5), (3, 1, 2)},
    "InHead": {(1, 0), (2, 0), (3, 1)},
    "Named": {("a", 3), ("b", 0)},  # (a, 1) joins two tuples of A, (a, 2) one
    "Nested": {(1, 0), (2, 1), (3, 0)},
    "Filtered": {(1, 2)},
    "Wide": {(1, 5), (2, 0), (3, 2)},
}


def built(engine: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    return m


def relations(m: Materialization) -> dict[str, set]:
    return {name: set(m.rows(name)) for name in EXPECTED}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_results_follow_souffles_documentation(engine: str) -> None:
    m = built(engine, INPUTS)
    assert relations(m) == EXPECTED
    oracle = evaluate(m.analyzed, INPUTS)
    assert visible(m.snapshot(), m.analyzed) == oracle


def test_a_result_is_read_as_one_tuple() -> None:
    """An aggregate's result is read as one tuple: the rows of `Count` are at iteration 1 of
    their stratum, with one derivation per tuple of `A(x, _)`, as the rule says."""
    m = built("reference", INPUTS)
    assert m.snapshot()["Count"] == {(1, 2): (1, 2), (2, 1): (1, 1), (3, 1): (1, 1)}


def test_the_sum_wraps_at_64_bits() -> None:
    text = """
    .decl v(x: number)
    .input v
    s(t) :- t = sum x : { v(x) }.
    """
    for engine in ("reference", "local"):
        m = Materialization.from_text(text, engines=EngineSettings(engine))
        m.load({"v": [(INT64_MAX,), (1,)]})
        m.bootstrap()
        assert m.rows("s") == [(-(1 << 63),)]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_changes_only_what_the_groups_give(engine: str) -> None:
    """Deltas that grow a group, shrink one (its minimum and maximum too), empty one (count
    0, no minimum) and bring it back; after each the state is a fresh Bootstrap's and the
    rows the oracle's."""
    m = built(engine, INPUTS)
    steps = [
        Delta(insert={"A": [(2, 1), (4, 4)]}),
        Delta(retract={"A": [(1, 2)]}),
        Delta(retract={"A": [(2, 1), (2, 5)]}, insert={"N": [("b", 4)]}),
        Delta(insert={"A": [(2, 5), (99, 7), (1, 99)]}),
        Delta(retract={"A": [(99, 7), (1, 99), (4, 4)], "N": [("a", 1)]}),
    ]
    check_updates(m, INPUTS, steps, lambda facts: built(engine, facts))
    assert relations(m)["None"] == {(0,)}  # A(1, 99) came and went
    assert relations(m)["NoMin"] == set()


def test_rules_with_aggregates_are_added_and_removed() -> None:
    m = built("reference", INPUTS)
    report = m.apply(Delta(add_rules=["Fresh(x, m) :- A(x, _), m = max y : { A(x, y) }."]))
    assert set(m.rows("Fresh")) == {(1, 3), (2, 5), (3, 2)}
    m.apply(Delta(remove_rules=list(report.rules_added)))
    assert "Fresh" not in m.relation_names()
    assert m.differences(m.rebuilt()) == {}


def test_the_relations_an_aggregate_needs_are_internal() -> None:
    analyzed = check_program(PROGRAM)
    internal = [name for name, info in analyzed.relations.items() if info.internal]
    assert internal and all("!" in name for name in internal)
    assert {name for name, info in analyzed.relations.items() if not info.internal} == {
        "A",
        "N",
        *EXPECTED,
    }


def test_one_aggregate_text_in_two_rules_groups_each_rules_bindings() -> None:
    """`count : { p(y), y > x }` where only the rule binds x reads the rule's atoms: two rules
    that write the same aggregate with other atoms are two aggregates (a review found the
    second rule reading the first one's groups)."""
    text = """
    .decl a(x: number)
    .decl b(x: number)
    .decl p(y: number)
    .input a
    .input b
    .input p
    r1(x, c) :- a(x), c = count : { p(y), y > x }.
    r2(x, c) :- b(x), c = count : { p(y), y > x }.
    """
    inputs = {"a": [(1,)], "b": [(0,), (1,)], "p": [(5,)]}
    m = Materialization.from_text(text)
    m.load(inputs)
    m.bootstrap()
    assert (set(m.rows("r1")), set(m.rows("r2"))) == ({(1, 1)}, {(0, 1), (1, 1)})
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, inputs)
