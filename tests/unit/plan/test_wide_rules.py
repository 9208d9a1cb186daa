"""Every rule the parser accepts compiles and evaluates, however wide its body.

The parser allows 64 body literals (`MAX_BODY_LITERALS`) and expressions 64 deep
(`MAX_NESTING`). When plans were generated Python, a rule of 25 atoms failed with "SyntaxError:
too many statically nested blocks"; the kernel sizes its bindings per plan and evaluates an
expression on a stack, and these rules at the limits are its check.

The reference Bootstrap, the local one (its per-tuple path on these small inputs, and Polars
forced) and Update (the rule added, then facts inserted and retracted) must all leave the
state the naive oracle defines (tests/oracle/), Update also that of a fresh Bootstrap.
"""

from __future__ import annotations

import time

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import ProgramError
from reasoner.executors.local.vectorized import bootstrap_vectorized
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.storage.state import State
from reasoner.support.deadline import BootstrapCancelled, Cancellation
from reasoner.syntax.parser import MAX_BODY_LITERALS, MAX_NESTING
from reasoner.values.symbols import SymbolTable
from tests.oracle.evaluation import evaluate

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


@pytest.mark.parametrize(
    "atoms",
    [
        1,
        12,
        13,
        25,
        pytest.param(40, marks=pytest.mark.slow),
        pytest.param(64, marks=pytest.mark.slow),
    ],
)
def test_a_chain_of_atoms(atoms: int) -> None:
    """Up to the parser's limit of 64 atoms; Update's re-discovery is driven by the head,
    with every atom of the body a probe."""
    _assert_evaluated_everywhere([_rule(f"r(x0, x{atoms})", _chain(atoms))])


@pytest.mark.slow  # seconds: out of `make test-fast`, in every full run
def test_negations_comparisons_and_deep_arithmetic_at_the_literal_limit() -> None:
    """64 literals: 40 atoms, 12 negations, 11 comparisons and one comparison on an
    expression nested `MAX_NESTING` deep with a division; and a
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


@pytest.mark.slow  # seconds: out of `make test-fast`, in every full run
def test_a_recursive_rule_of_many_atoms() -> None:
    """Own-relation atoms: Update's inserted and deleted enumerator variants and its
    membership tests; Bootstrap's delta plans."""
    _assert_evaluated_everywhere(
        [
            "t(x, y) :- e(x, y).",
            _rule("t(y, x20)", ["t(y, x0)", *_chain(20), "!blocked(x20)"]),
        ]
    )


# -- cancellation inside wide plans ----------------------------------------------------

EXPLODING = (
    ".decl e(x: number, y: number)\n.decl g(x: number, y: number)\n"
    ".decl cp(x: number, a: number, b: number, c: number)\n"
    + _rule("cp(x0, a, b, c)", [*_chain(25), "g(x25, a)", "g(x25, b)", "g(x25, c)"])
)
"""One chain of 25 atoms reaches x25 = 30, where g fans out to 8,000,000 derivations, the
g atoms being probed only once x25 is bound: the check must come from inside one plan's run."""
PATH = [(i, i + 1) for i in range(40)]
FAN = [(30, v) for v in range(200)]


def _cancelled_in_time(m: Materialization, delta: Delta, strategy: str) -> None:
    """As the service applies a write under `Cancellation`
    (tests/unit/elastic/test_epoch_deadline.py):
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
