"""The oracle against states computed by hand.

Each expected state below was worked out on paper from the definition in tests/oracle/;
the comments show the derivations, so a reader can re-check them without running anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from reasoner.analysis import check_program
from tests.oracle.arithmetic import c_div, c_mod, wrap
from tests.oracle.evaluation import evaluate
from tests.oracle.strata import stratify
from tests.oracle.values import State

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def run(text: str, inputs: Mapping[str, Iterable[tuple]] | None = None) -> State:
    return evaluate(check_program(text), inputs or {})


def test_paper_points_to_example() -> None:
    """Zhao et al., §2.2 and §3.1: vpt(b, L1) is derived twice in iteration 2, once by r2
    and once by r3 (where alias(c, c) is written out as vpt(c, L3), vpt(c, L3))."""
    program = """
    .decl new(v: symbol, o: symbol)
    .decl assign(to: symbol, from: symbol)
    .decl load(to: symbol, base: symbol, field: symbol)
    .decl store(base: symbol, field: symbol, from: symbol)
    .decl vpt(v: symbol, o: symbol)
    .decl alias(a: symbol, b: symbol)
    .input new
    .input assign
    .input load
    .input store
    .output alias
    vpt(v, o) :- new(v, o).
    vpt(v, o) :- assign(v, w), vpt(w, o).
    vpt(y, o) :- load(y, x, f), store(p, f, q), vpt(q, o), vpt(x, o2), vpt(p, o2).
    alias(x, y) :- vpt(x, o), vpt(y, o).
    """
    inputs = {
        "new": {("a", "L1"), ("c", "L3"), ("d", "L4")},
        "assign": {("a", "b"), ("b", "a")},
        "store": {("c", "f", "a")},
        "load": {("e", "d", "f"), ("b", "c", "f")},
    }
    state = run(program, inputs)
    assert state["vpt"] == {
        ("a", "L1"): (1, 1),
        ("c", "L3"): (1, 1),
        ("d", "L4"): (1, 1),
        ("b", "L1"): (2, 2),
    }
    # alias is a stratum of its own: every vpt tuple is iteration 0 there.
    assert state["alias"] == {
        pair: (1, 1)
        for pair in [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b"), ("c", "c"), ("d", "d")]
    }
    assert state["new"] == {row: (0, 1) for row in inputs["new"]}
    assert state["load"] == {row: (0, 1) for row in inputs["load"]}


TC_LEFT_LINEAR = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.input edge
.output tc
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def test_transitive_closure_on_a_diamond() -> None:
    # 1 -> 2 -> 4 -> 5 and 1 -> 3 -> 4.
    # k=1: the five edges. k=2: (1,4) twice (via 2 and via 3), (2,5), (3,5).
    # k=3: (1,5) once: both paths to 4 end in the same tuple tc(1,4).
    state = run(TC_LEFT_LINEAR, {"edge": {(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)}})
    assert state["tc"] == {
        (1, 2): (1, 1),
        (1, 3): (1, 1),
        (2, 4): (1, 1),
        (3, 4): (1, 1),
        (4, 5): (1, 1),
        (1, 4): (2, 2),
        (2, 5): (2, 1),
        (3, 5): (2, 1),
        (1, 5): (3, 1),
    }


def test_non_linear_transitive_closure_on_a_chain() -> None:
    # Chain 1 -> 2 -> 3 -> 4 -> 5. k=2: the paths of length 2, once each.
    # k=3: (1,4) = (1,2)(2,4) = (1,3)(3,4) and (2,5) likewise: count 2; (1,5) = (1,3)(3,5)
    # only, since (1,2)(2,5) and (1,4)(4,5) need tuples not yet in I_2.
    program = """
    .decl edge(x: number, y: number)
    .input edge
    tc(x, y) :- edge(x, y).
    tc(x, z) :- tc(x, y), tc(y, z).
    """
    state = run(program, {"edge": {(1, 2), (2, 3), (3, 4), (4, 5)}})
    assert state["tc"] == {
        (1, 2): (1, 1),
        (2, 3): (1, 1),
        (3, 4): (1, 1),
        (4, 5): (1, 1),
        (1, 3): (2, 1),
        (2, 4): (2, 1),
        (3, 5): (2, 1),
        (1, 4): (3, 2),
        (2, 5): (3, 2),
        (1, 5): (3, 1),
    }


def test_cycle_terminates_and_rederivations_do_not_count() -> None:
    # 1 -> 2 -> 1: k=2 derives (1,1) and (2,2); k=3 would re-derive (1,2), (2,1): old tuples.
    state = run(TC_LEFT_LINEAR, {"edge": {(1, 2), (2, 1)}})
    assert state["tc"] == {(1, 2): (1, 1), (2, 1): (1, 1), (1, 1): (2, 1), (2, 2): (2, 1)}


def test_mutual_recursion() -> None:
    program = """
    .decl succ(x: number, y: number)
    .input succ
    .decl even(x: number)
    .decl odd(x: number)
    even(0).
    even(y) :- odd(x), succ(x, y).
    odd(y) :- even(x), succ(x, y).
    """
    state = run(program, {"succ": {(0, 1), (1, 2), (2, 3)}})
    assert state["even"] == {(0,): (0, 1), (2,): (2, 1)}
    assert state["odd"] == {(1,): (1, 1), (3,): (3, 1)}


def test_negation_reads_the_finished_lower_stratum() -> None:
    program = """
    .decl node(x: number)
    .decl edge(x: number, y: number)
    .input node
    .input edge
    reach(x) :- edge(1, x).
    reach(y) :- reach(x), edge(x, y).
    unreached(x) :- node(x), !reach(x).
    sink(x) :- node(x), !edge(x, _).
    """
    state = run(program, {"node": {(1,), (2,), (3,), (4,)}, "edge": {(1, 2), (2, 3)}})
    assert state["reach"] == {(2,): (1, 1), (3,): (2, 1)}
    # reach(3) was derived at iteration 2, but for `unreached` all of reach is iteration 0.
    assert state["unreached"] == {(1,): (1, 1), (4,): (1, 1)}
    # The wildcard under negation is existential: no edge(x, anything).
    assert state["sink"] == {(3,): (1, 1), (4,): (1, 1)}


def test_facts_asserted_on_a_derived_relation_are_iteration_zero() -> None:
    # tc(1,2) is asserted and also derivable; it stays (0, 1). Being in N_0 it joins at k=1:
    # tc(1,3) comes from tc(1,2), edge(2,3) in iteration 1, not 2.
    program = TC_LEFT_LINEAR + "tc(1, 2).\nedge(7, 8).\n"
    state = run(program, {"edge": {(1, 2), (2, 3)}})
    assert state["tc"] == {(1, 2): (0, 1), (2, 3): (1, 1), (1, 3): (1, 1), (7, 8): (1, 1)}
    # A program-text fact on a relation without rules is an input like any other.
    assert state["edge"] == {(1, 2): (0, 1), (2, 3): (0, 1), (7, 8): (0, 1)}


def test_inputs_on_a_relation_with_rules_are_asserted_facts() -> None:
    state = run(TC_LEFT_LINEAR, {"edge": {(1, 2), (5, 6)}, "tc": {(2, 5)}})
    assert state["tc"] == {(2, 5): (0, 1), (1, 2): (1, 1), (5, 6): (1, 1), (2, 6): (1, 1)}


ZERO_ARITY = """
.decl edge(x: number, y: number)
.decl flag()
.input edge
.input flag
.decl hasEdge()
.decl noEdge()
.decl both()
hasEdge() :- edge(_, _).
noEdge() :- !hasEdge().
both() :- hasEdge(), flag().
"""


def test_zero_arity_relations() -> None:
    # Each wildcard is its own variable: two edges are two derivations of hasEdge().
    state = run(ZERO_ARITY, {"edge": {(1, 2), (2, 3)}, "flag": {()}})
    assert state["hasEdge"] == {(): (1, 2)}
    assert state["noEdge"] == {}
    assert state["both"] == {(): (1, 1)}
    assert state["flag"] == {(): (0, 1)}


def test_rule_without_positive_atom_fires_when_its_negation_holds() -> None:
    state = run(ZERO_ARITY, {"edge": set(), "flag": set()})
    assert state["hasEdge"] == {}
    assert state["noEdge"] == {(): (1, 1)}
    assert state["both"] == {}


def test_rule_without_positive_atom_fires_in_iteration_one_only() -> None:
    # In a recursive stratum, p(1) comes at k=1; the recursive rule climbs one step per
    # iteration until the guard stops it.
    program = """
    .decl q(x: number)
    .input q
    .decl p(x: number)
    p(1) :- !q(5).
    p(x + 1) :- p(x), x < 3.
    """
    assert run(program, {"q": {(4,)}})["p"] == {(1,): (1, 1), (2,): (2, 1), (3,): (3, 1)}
    assert run(program, {"q": {(5,)}})["p"] == {}


def test_wildcards_repeated_variables_and_constants() -> None:
    program = """
    .decl edge(x: number, y: number)
    .input edge
    out(x) :- edge(x, _).
    loop(x) :- edge(x, x).
    fromOne(y) :- edge(1, y).
    twice(x) :- edge(x, y), edge(x, y).
    """
    state = run(program, {"edge": {(1, 2), (1, 3), (2, 2)}})
    assert state["out"] == {(1,): (1, 2), (2,): (1, 1)}
    assert state["loop"] == {(2,): (1, 1)}
    assert state["fromOne"] == {(2,): (1, 1), (3,): (1, 1)}
    # The same tuple may satisfy two atoms: still one assignment of x, y.
    assert state["twice"] == {(1,): (1, 2), (2,): (1, 1)}


def test_symbols_and_comparisons() -> None:
    program = """
    .decl person(name: symbol, age: number)
    .input person
    adult(n) :- person(n, a), a >= 18.
    notBob(n) :- person(n, _), n != "bob".
    pair(x, y) :- person(x, a), person(y, b), a < b, x != y.
    named(a) :- person("bob", a).
    """
    state = run(program, {"person": {("ann", 30), ("bob", 12), ("cy", 18)}})
    assert state["adult"] == {("ann",): (1, 1), ("cy",): (1, 1)}
    assert state["notBob"] == {("ann",): (1, 1), ("cy",): (1, 1)}
    assert state["pair"] == {("bob", "cy"): (1, 1), ("bob", "ann"): (1, 1), ("cy", "ann"): (1, 1)}
    assert state["named"] == {(12,): (1, 1)}


def test_equality_binds_a_variable() -> None:
    program = """
    .decl n(x: number)
    .input n
    next(y) :- n(x), y = x + 1.
    """
    assert run(program, {"n": {(1,), (2,)}})["next"] == {(2,): (1, 1), (3,): (1, 1)}


def test_division_and_remainder_truncate_toward_zero() -> None:
    program = """
    .decl a(x: number)
    .decl b(x: number)
    .input a
    .input b
    qr(x, y, x / y, x % y) :- a(x), b(y).
    """
    state = run(program, {"a": {(-7,), (7,)}, "b": {(2,), (-2,), (0,)}})
    # Dividing by zero (b = 0) drops the instantiation.
    assert state["qr"] == {
        (-7, 2, -3, -1): (1, 1),
        (7, 2, 3, 1): (1, 1),
        (-7, -2, 3, -1): (1, 1),
        (7, -2, -3, 1): (1, 1),
    }


def test_arithmetic_wraps_around_at_64_bits() -> None:
    program = """
    .decl m(x: number)
    .input m
    ops(x + 1, x * 2, x - 1) :- m(x).
    quotient(x / -1, x % -1) :- m(x), x < 0.
    """
    state = run(program, {"m": {(INT64_MAX,), (INT64_MIN,)}})
    assert state["ops"] == {
        (INT64_MIN, -2, INT64_MAX - 1): (1, 1),
        (INT64_MIN + 1, 0, INT64_MAX): (1, 1),
    }
    assert state["quotient"] == {(INT64_MIN, 0): (1, 1)}


def test_division_by_zero_in_a_comparison_or_negation_drops_the_instantiation() -> None:
    program = """
    .decl n(x: number)
    .input n
    .decl z(x: number)
    .input z
    viaComparison(x) :- n(x), x / (x - 1) >= 0.
    viaNegation(x) :- n(x), !z(x % (x - 1)).
    """
    state = run(program, {"n": {(1,), (2,), (3,)}, "z": {(0,)}})
    # x = 1 has no value in either body; 3 % 2 = 1 is not in z, 2 % 1 = 0 is.
    assert state["viaComparison"] == {(2,): (1, 1), (3,): (1, 1)}
    assert state["viaNegation"] == {(3,): (1, 1)}


def test_every_relation_is_in_the_state_even_when_empty() -> None:
    state = run(TC_LEFT_LINEAR)
    assert state == {"edge": {}, "tc": {}}


def test_inputs_are_type_checked() -> None:
    analyzed = check_program(TC_LEFT_LINEAR)
    with pytest.raises(ValueError, match="types"):
        evaluate(analyzed, {"edge": {(1, "2")}})
    with pytest.raises(ValueError, match="unknown relation"):
        evaluate(analyzed, {"edg": {(1, 2)}})


def test_strata_are_ordered_dependencies_first() -> None:
    program = """
    .decl e(x: number)
    .input e
    c(x) :- b(x), !a(x).
    b(x) :- a(x).
    a(x) :- e(x).
    a(x) :- b(x), e(x).
    d(x) :- c(x), d(x).
    d(x) :- c(x).
    """
    assert stratify(check_program(program).program) == [
        frozenset({"a", "b"}),
        frozenset({"c"}),
        frozenset({"d"}),
    ]


def test_arithmetic_helpers() -> None:
    assert (c_div(-7, 2), c_mod(-7, 2)) == (-3, -1)
    assert (c_div(7, -2), c_mod(7, -2)) == (-3, 1)
    assert c_div(INT64_MIN, -1) == INT64_MIN
    assert wrap(INT64_MAX + 1) == INT64_MIN
    assert wrap(INT64_MIN - 1) == INT64_MAX
