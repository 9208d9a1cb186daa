"""Proofs and refutations (`reasoner.reads.proofs`) checked against the rules, not against the code
that found them.

Every node of a proof is checked on its own: a fact is a tuple at iteration 0; any other node
names a rule of the program and premises that are one instantiation of it by the naive oracle
(`tests.oracle.instantiations` over the whole state: positive atoms are the premises in body
order, negated atoms absent, comparisons true, the head the node's tuple), and its premises of
the same stratum are strictly older. Random programs and inputs come from the property
tests' generator.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings

from reasoner.materialization import Materialization
from reasoner.reads.proofs import (
    EXPLAIN_SUBSUMED,
    Explainer,
    ExplainError,
    Proof,
    ProofNode,
)
from reasoner.values.arith import wrap64
from reasoner.values.records import AdtType, RecordType
from tests.conftest import examples
from tests.oracle.arithmetic import bits_of_float
from tests.oracle.enumeration import instantiations
from tests.oracle.records import packed, read_record
from tests.property.programs import GeneratedProgram, programs

TC = """
.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
.input edge
.input label
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
lonely(x) :- label(x, _), !tc(x, _).
named(s, t) :- label(x, s), label(y, t), tc(x, y), x < y.
degree(x, c) :- label(x, _), c = count : { edge(x, _) }.
"""
INPUTS = {
    "edge": [(1, 2), (2, 3), (3, 4), (4, 1), (5, 6)],
    "label": [(1, "a"), (4, "d"), (7, "g"), (5, "e")],
}


def built(text: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(text)
    m.load(inputs)
    m.bootstrap()
    return m


def check_proof(m: Materialization, proof: Proof) -> None:
    """Each node a fact or a valid rule instance whose same-stratum premises are older."""
    analyzed = m.analyzed

    def held(name: str, row: tuple) -> tuple:
        """A row as the analyzed rules compute it: an unsigned or a float as its 64-bit
        pattern (they compare and divide unsigned values in their rewritten forms, and
        compute floats with functors on patterns; the oracle's functors give the values
        0 .. 2^64 - 1, which this also maps), a record's text as what `pack!` makes
        (`tests.oracle.packed`; a row the rules computed is in that form)."""
        types = m.analyzed.relations[name].value_types
        return tuple(
            packed(read_record(v, t), t)
            if isinstance(t, RecordType | AdtType) and isinstance(v, str)
            else wrap64(v)
            if t == "unsigned"
            else bits_of_float(v)
            if t == "float" and isinstance(v, float)
            else v
            for v, t in zip(row, types, strict=True)
        )

    rows = {name: [held(name, row) for row in m.rows(name)] for name in analyzed.relations}
    rules = [rule for stratum in analyzed.strata for rule in stratum.rules]
    instances: dict[int, set] = {}

    def instances_of(rule) -> set:
        if id(rule) not in instances:
            instances[id(rule)] = {
                (held(rule.head.relation, head), tuple((r, held(r, row)) for r, row in body))
                for head, body in instantiations(rule, rows)
            }
        return instances[id(rule)]

    aggregates = [s.aggregate for s in analyzed.strata if s.aggregate is not None]

    def named(node: ProofNode) -> list[str]:
        """The relations a node may be of: an aggregate's row names the aggregate as
        written, which several aggregate relations may share."""
        if not node.aggregate:
            return [node.relation]
        return [a.name for a in aggregates if a.text == node.relation]

    for node in proof.nodes:
        found = []
        for name in named(node):
            encode = m.symbols.encoder(m.analyzed.relations[name].value_types)
            found.append(m.state[name].get(encode(node.row)))
        assert (node.iteration, node.count) in found, node
        if node.aggregate:
            continue
        if node.rule is None:
            assert node.iteration == 0
            continue
        choices = [
            [(name, held(name, p.row)) for name in named(p)]
            for p in (proof.nodes[i] for i in node.premises)
        ]
        assert any(
            (held(node.relation, node.row), premises) in instances_of(rule)
            for rule in rules
            if rule.text == node.rule and rule.head.relation == node.relation
            for premises in itertools.product(*choices)
        ), node
        own = analyzed.stratum_of[node.relation]
        for i in node.premises:
            premise = proof.nodes[i]
            if analyzed.stratum_of.get(premise.relation) == own:
                assert premise.iteration < node.iteration


def explainer(m: Materialization) -> Explainer:
    return Explainer(m.analyzed, m.state, m.symbols)


def test_a_recursive_tuple_is_proved_down_to_facts() -> None:
    m = built(TC, INPUTS)
    e = explainer(m)
    proof = e.explain("tc", e.encode("tc", (1, 1)))
    check_proof(m, proof)
    assert [(n.relation, n.row) for n in proof.nodes if n.rule is None] == [
        ("edge", (4, 1)),
        ("edge", (3, 4)),
        ("edge", (2, 3)),
        ("edge", (1, 2)),
    ]
    assert proof.depth == 4
    assert proof.render().splitlines()[:2] == [
        "tc(1, 1)  #0  [iteration 4, 1 derivation]",
        "  by tc(x, z) :- tc(x, y), edge(y, z).",
    ]


def test_negations_aggregates_and_comparisons_appear_in_proofs() -> None:
    m = built(TC, INPUTS)
    e = explainer(m)
    lonely = e.explain("lonely", e.encode("lonely", (7,)))
    check_proof(m, lonely)
    assert lonely.nodes[0].absent == ("tc(7, _)",)
    named = e.explain("named", e.encode("named", ("a", "d")))
    check_proof(m, named)
    degree = e.explain("degree", e.encode("degree", (1, 1)))
    assert any(node.aggregate for node in degree.nodes)


def test_why_not_names_the_first_literal_that_fails() -> None:
    m = built(TC, INPUTS)
    e = explainer(m)
    base, step = e.why_not("tc", e.encode("tc", (5, 1)))
    assert (base.literal, base.reason, base.binding) == (
        "edge(x, y)",
        "no tuple matches",
        {"x": 5, "y": 1},
    )
    assert (step.literal, step.binding) == ("edge(y, z)", {"x": 5, "z": 1, "y": 6})
    (negated,) = e.why_not("lonely", e.encode("lonely", (1,)))
    assert (negated.literal, negated.reason) == ("!tc(x, _)", "the negated atom holds")
    (compared,) = e.why_not("named", e.encode("named", ("d", "a")))
    assert (compared.literal, compared.reason) == ("x < y", "the comparison is false")
    assert compared.binding["s"] == "d"
    assert e.why_not("edge", e.encode("edge", (9, 9))) == []  # an input: no rule


def test_why_not_decodes_symbols_bound_from_the_head() -> None:
    """`t = x` copies a symbol the head bound: shown as the symbol, not its number (a
    review found `t: 0`)."""
    m = built(
        ".decl s(x: symbol)\n.decl bad(x: symbol)\n.input s\n.input bad\n"
        "r(x) :- s(x), t = x, !bad(t).\n",
        {"s": [("foo",)], "bad": [("foo",)]},
    )
    e = explainer(m)
    (failure,) = e.why_not("r", e.encode("r", ("foo",)))
    assert failure.binding == {"x": "foo", "t": "foo"}


def test_limits_and_bad_tuples_are_errors() -> None:
    m = built(TC, {"edge": [(i, i + 1) for i in range(50)], "label": []})
    e = explainer(m)
    with pytest.raises(ExplainError) as deep:
        e.explain("tc", e.encode("tc", (0, 50)), max_depth=10)
    assert deep.value.code == "explain_too_deep"
    with pytest.raises(ExplainError) as large:
        e.explain("tc", e.encode("tc", (0, 50)), max_nodes=20)
    assert large.value.code == "explain_too_large"
    for relation, row, code in [
        ("nope", (1,), "unknown_relation"),
        ("tc", (1,), "arity_mismatch"),
        ("tc", ("a", 1), "type_mismatch"),
    ]:
        with pytest.raises(ExplainError) as bad:
            e.encode(relation, row)
        assert bad.value.code == code


@settings(max_examples=examples(60))
@given(programs())
def test_every_proof_is_valid_rule_instances(generated: GeneratedProgram) -> None:
    m = built(generated.text, {k: sorted(v) for k, v in generated.inputs.items()})
    e = explainer(m)
    for name, info in m.analyzed.relations.items():
        if info.internal:
            continue
        for row in sorted(m.state[name], key=repr)[:3]:
            try:
                proof = e.explain(name, row)
            except ExplainError as error:  # a premise that subsumption removed since
                assert error.code == EXPLAIN_SUBSUMED, error
                continue
            check_proof(m, proof)


def test_a_tuple_whose_premise_subsumption_removed_has_no_proof() -> None:
    """`b(0, 1)` and `a_0(0, 1)` come at iteration 2 from the fact `a_0(0, 0)`, which
    `a_0(0, 1)` then dominates, and it goes; what it derived stays (Soufflé's rule, and
    Soufflé's rows), so no proof of `b(0, 1)` is left: refused by name."""
    text = """.decl a(c0: number, c1: number)
    .decl a_0(x: number, y: number)
    .decl b(x: number, y: number)
    a(0, 1).
    a_0(0, 0).
    b(x, y) :- a_0(x, _), a(x, y).
    a_0(x, y) :- b(x, y), y > 5.
    a_0(x, v0) :- a_0(x, v1), a(v1, v0).
    a_0(_, s1) <= a_0(_, s2) :- s2 > s1.
    """
    m = built(text, {})
    assert set(m.rows("a_0")) == {(0, 1)} and set(m.rows("b")) == {(0, 1)}
    with pytest.raises(ExplainError) as raised:
        explainer(m).explain("b", (0, 1))
    assert raised.value.code == EXPLAIN_SUBSUMED


def test_a_late_premise_is_named_by_its_rule() -> None:
    """`pair(2, y)`'s unconnected `low(_)` is a nullary relation of its own
    (`reasoner.analysis.disconnected`), first derived from `low(1)`, which subsumption
    removed since: the refusal names the user's rule, not the relation made of it."""
    text = """.decl low(x: number)
    .decl pair(x: number, y: number)
    low(1).
    pair(0, 0).
    low(y) :- pair(_, y).
    low(s1) <= low(s2) :- s2 < s1.
    pair(2, y) :- low(_), low(y).
    """
    m = built(text, {})
    assert (2, 0) in set(m.rows("pair"))
    with pytest.raises(ExplainError) as raised:
        explainer(m).explain("pair", (2, 0))
    assert raised.value.code == EXPLAIN_SUBSUMED
    assert "`pair(2, y) :- low(_), low(y).`" in str(raised.value)
    assert "!" not in str(raised.value)
