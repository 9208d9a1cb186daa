"""Every rule the parser accepts compiles and evaluates, however wide its body.

Each positive atom of a plan is a loop of generated Python, and CPython refuses a function with
more than 20 statically nested blocks: a rule of 25 atoms failed with "SyntaxError: too many
statically nested blocks" in every engine. The parser allows 64 body literals
(`MAX_BODY_LITERALS`) and expressions 64 deep (`MAX_NESTING`); the code generator now goes on
in continuation functions past `MAX_NESTED_LOOPS` loops (reasoner/executors/local/codegen.py).

The reference Bootstrap, the local one (its per-tuple path on these small inputs, and Polars
forced) and Update (the rule added, then facts inserted and retracted) must all leave the
state the naive oracle defines (tests/oracle.py), Update also that of a fresh Bootstrap.
"""

from __future__ import annotations

import time

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.bootstrap import BootstrapCancelled, Cancellation
from reasoner.elastic.engines import EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.errors import ProgramError
from reasoner.executors.local import codegen
from reasoner.executors.local.codegen import CHECK_EVERY, EmitContext, PlanCompiler
from reasoner.executors.local.vectorized import bootstrap_vectorized
from reasoner.materialization import Materialization
from reasoner.plan.joins import plan_rule
from reasoner.state import State
from reasoner.symbols import SymbolTable
from reasoner.syntax.parser import MAX_BODY_LITERALS, MAX_NESTING
from tests.oracle import evaluate

DECLARATIONS = """\
.decl e(x: number, y: number)
.decl blocked(x: number)
.decl r(x: number, y: number)
.decl w(x: number)
.decl t(x: number, y: number)
.input e
.input blocked
"""
"""Every relation declared, so that the program without the rules has them all."""

Rows = dict[str, set[tuple[int, ...]]]

FACTS: Rows = {
    "e": {(i, i + 1) for i in range(70)} | {(3, 5), (30, 32)},
    "blocked": {(50,)},
}
"""A path long enough for a chain of 64 atoms, with two shortcuts: a few derivations per
start, and tuples with several derivations (counts above 1)."""

DELTAS: list[tuple[Rows, Rows]] = [
    ({"e": {(10, 12), (40, 42)}, "blocked": {(9,)}}, {"e": {(10, 11)}, "blocked": {(50,)}}),
    ({"e": {(10, 11)}, "blocked": {(50,)}}, {"e": {(3, 5), (40, 42)}, "blocked": {(9,)}}),
]
"""(inserted, retracted) per epoch: chains cut and restored, negated facts flipped."""


def _chain(count: int, first: int = 0) -> list[str]:
    return [f"e(x{i}, x{i + 1})" for i in range(first, first + count)]


def _rule(head: str, body: list[str]) -> str:
    assert len(body) <= MAX_BODY_LITERALS
    return f"{head} :- {', '.join(body)}."


def _oracle(rules: list[str], facts: Rows):
    return evaluate(check_program(DECLARATIONS + "\n".join(rules)), facts)


def _polars_state(rules: list[str], facts: Rows):
    """The local Bootstrap with Polars forced for every iteration (numbers only, so the
    state's tuples are the user's values)."""
    analyzed = check_program(DECLARATIONS + "\n".join(rules))
    state = State()
    for name, info in analyzed.relations.items():
        state.relation(name, info.arity)
    for name, rows in facts.items():
        state.load_facts(name, analyzed.relations[name].arity, rows)
    bootstrap_vectorized(analyzed, state, SymbolTable(), small_iteration=0)
    return state.snapshot()


def _assert_evaluated_everywhere(rules: list[str]) -> None:
    text = DECLARATIONS + "\n".join(rules)
    facts = {name: set(rows) for name, rows in FACTS.items()}
    expected = _oracle(rules, facts)
    for rule in check_program(text).program.rules:
        assert expected[rule.head.relation], f"nothing to compare: {rule.text}"
    for engine in ("reference", "local"):
        m = Materialization.from_text(text, engines=EngineSettings(engine=engine))
        m.load(facts)
        m.bootstrap()
        assert m.snapshot() == expected, engine
    assert _polars_state(rules, facts) == expected

    live = Materialization.from_text(DECLARATIONS)
    live.load(facts)
    live.bootstrap()
    live.apply(Delta(add_rules=rules), strategy="update")
    assert live.snapshot() == expected
    for insert, retract in DELTAS:
        report = live.apply(
            Delta(
                insert={n: sorted(rows) for n, rows in insert.items()},
                retract={n: sorted(rows) for n, rows in retract.items()},
            ),
            strategy="update",
        )
        assert report.strategy == "update"
        for name, rows in retract.items():
            facts[name] -= rows
        for name, rows in insert.items():
            facts[name] |= rows
        assert live.snapshot() == _oracle(rules, facts)
        assert live.differences(live.rebuilt()) == {}


@pytest.mark.parametrize("atoms", [1, 12, 13, 25, 40, 64])
def test_a_chain_of_atoms(atoms: int) -> None:
    """Bootstrap's plans of up to 12 atoms are one function, from 13 on they go on in
    continuations; Update's re-discovery, driven by the head, has a loop more and splits at
    12 already. 64 is the parser's limit."""
    _assert_evaluated_everywhere([_rule(f"r(x0, x{atoms})", _chain(atoms))])


def test_negations_comparisons_and_deep_arithmetic_at_the_literal_limit() -> None:
    """64 literals: 40 atoms, 12 negations, 11 comparisons and one comparison on an
    expression nested `MAX_NESTING` deep with a division (whose `try` is a block too); and a
    rule of 30 atoms whose head has arithmetic, which Update cannot invert: it re-evaluates
    the rule in full for a deleted head."""
    # x0 * 2 / 2 + 1 + ... + 0 + ...: one level per operator, to the parser's bound exactly.
    deep = "x0 * 2 / 2" + " + 1" * 40 + " + 0" * (MAX_NESTING - 42)
    check_program(f"w(x0) :- e(x0, _), x0 <= {deep}.")
    with pytest.raises(ProgramError, match="nested more than"):
        check_program(f"w(x0) :- e(x0, _), x0 <= {deep} + 0.")
    body = [
        *_chain(40),
        *(f"!blocked(x{3 * j})" for j in range(12)),
        *(f"x{i} < x{i + 1}" if i % 2 else f"x{i} != x{i + 1}" for i in range(11)),
        f"x40 <= {deep}",
    ]
    assert len(body) == MAX_BODY_LITERALS
    _assert_evaluated_everywhere(
        [_rule("r(x0, x40)", body), _rule("w(x0 + 100 * x30)", _chain(30))]
    )


def test_a_recursive_rule_of_many_atoms() -> None:
    """Own-relation atoms: Update's inserted and deleted enumerator variants and its
    membership tests, in the continuations; Bootstrap's delta plans."""
    _assert_evaluated_everywhere(
        [
            "t(x, y) :- e(x, y).",
            _rule("t(y, x20)", ["t(y, x0)", *_chain(20), "!blocked(x20)"]),
        ]
    )


def test_a_split_plan_iterates_and_checks_exactly_as_an_unsplit_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same plan with every loop in a continuation of its own: same derivations in the
    same order, and `check` called as often, once per `CHECK_EVERY` iterations of all its
    loops together (the count travels through the continuations and back)."""
    text = ".decl u(x: number)\nq(a, b, c, d) :- u(a), u(b), u(c), u(d).\n"
    analyzed = check_program(text)
    (rule,) = analyzed.program.rules
    values = [(v,) for v in range(20)]

    def run(loops: int) -> tuple[list, int, str]:
        monkeypatch.setattr(codegen, "MAX_NESTED_LOOPS", loops)
        state = State()
        state.load_facts("u", 1, values)
        arities = {name: info.arity for name, info in analyzed.relations.items()}
        checks: list[None] = []
        compiled = PlanCompiler(state, SymbolTable(), arities).compile(
            plan_rule(rule, None, {"u": len(values)}),
            params=("out",),
            atom_filter=lambda _step, _t: None,
            negation_present=None,
            emit=lambda ctx: [f"out.append({ctx.head})"],
            namespace={"_tick": lambda: checks.append(None)},
            check="_tick",
        )
        out: list = []
        compiled.function(values, out)
        return out, len(checks), compiled.source

    whole, whole_checks, whole_source = run(12)
    split, split_checks, split_source = run(1)
    assert "def run__3(" in split_source and "__" not in whole_source
    assert split == whole and len(whole) == 20**4
    iterations = 20 + 20**2 + 20**3 + 20**4
    assert split_checks == whole_checks == iterations // CHECK_EVERY


def test_emit_sees_every_atom_of_a_split_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tuples of the atoms matched in the plan's function reach the last continuation,
    which records the derivation."""
    monkeypatch.setattr(codegen, "MAX_NESTED_LOOPS", 2)
    analyzed = check_program(DECLARATIONS + _rule("r(x0, x6)", _chain(6)))
    (rule,) = analyzed.program.rules
    state = State()
    state.load_facts("e", 2, sorted(FACTS["e"]))
    arities = {name: info.arity for name, info in analyzed.relations.items()}

    def emit(ctx: EmitContext) -> list[str]:
        tuples = ", ".join(ctx.positive[i] for i in sorted(ctx.positive))
        return [f"out.append(({tuples},))"]

    compiled = PlanCompiler(state, SymbolTable(), arities).compile(
        plan_rule(rule, 0, {}),
        params=("out",),
        atom_filter=lambda _step, _t: None,
        negation_present=None,
        emit=emit,
        namespace={},
    )
    out: list = []
    compiled.function([(10, 11)], out)
    assert "def run__2(" in compiled.source
    assert out == [tuple((i, i + 1) for i in range(10, 16))]


# -- cancellation inside the continuations ----------------------------------------------------

EXPLODING = (
    ".decl e(x: number, y: number)\n.decl g(x: number, y: number)\n"
    ".decl cp(x: number, a: number, b: number, c: number)\n"
    + _rule("cp(x0, a, b, c)", [*_chain(25), "g(x25, a)", "g(x25, b)", "g(x25, c)"])
)
"""One chain of 25 atoms reaches x25 = 30, where g fans out to 8,000,000 derivations: all in
the plan's last continuation, the g atoms being probed only once x25 is bound."""
PATH = [(i, i + 1) for i in range(40)]
FAN = [(30, v) for v in range(200)]


def _cancelled_in_time(m: Materialization, delta: Delta, strategy: str) -> None:
    """As the service applies a write under `Cancellation` (tests/unit/test_epoch_deadline.py):
    refused within twice the deadline plus one second."""
    seconds = 1.0
    cancellation = Cancellation(seconds)
    start = time.monotonic()
    with pytest.raises(BootstrapCancelled, match="deadline"):
        m.apply(m.prepare(delta), strategy=strategy, check=cancellation.check)
    assert time.monotonic() - start <= 2 * seconds + 1


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_an_exploding_wide_bootstrap_is_cancelled(engine: str) -> None:
    m = Materialization.from_text(EXPLODING, engines=EngineSettings(engine=engine))
    m.load({"e": PATH})
    m.bootstrap()
    _cancelled_in_time(m, Delta(insert={"g": FAN}), "bootstrap")
    assert m.rows("cp") == []


def test_an_exploding_wide_update_is_cancelled() -> None:
    """The missing link of the chain inserted: Update's enumerators driven by it."""
    m = Materialization.from_text(EXPLODING)
    m.load({"e": [p for p in PATH if p != (10, 11)], "g": FAN})
    m.bootstrap()
    _cancelled_in_time(m, Delta(insert={"e": [(10, 11)]}), "update")
    assert m.rows("cp") == []
