"""`.decl r inline`: the relation's clauses substituted into its readers, never materialized
(`reasoner.analysis.inline`). `tests/golden/inline/` holds a program and what the 64-bit
Soufflé 2.5 wrote for it."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import UNSUPPORTED_FEATURE, InvalidDelta, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("inline")
PROGRAM = GOLDEN.program
OUTPUTS = ("three", "notlo", "t", "c", "usenested", "tags")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_inline_relations_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)
    assert m.analyzed.inlined == {"two", "lo", "nested", "tag"}
    assert not list(m.rows("two"))  # never materialized


def test_a_hundred_million_pairs_are_never_built() -> None:
    """`pair` would hold 10^8 tuples; its readers take a few of them."""
    text = """
    .decl n(x: number)
    n(x) :- x = range(0, 10000).
    .decl pair(x: number, y: number) inline
    pair(x, y) :- n(x), n(y).
    .decl diag(x: number)
    diag(x) :- pair(x, x), x % 1000 = 0.
    """
    m = Materialization.from_text(text)
    m.bootstrap()
    assert {x for (x,) in m.rows("diag")} == set(range(0, 10000, 1000))


def test_where_soufflé_would_not_inline_the_relation_is_materialized() -> None:
    """An output, a relation read in an aggregate, a negation whose clause has a variable of
    its own, inline relations in a cycle, a float column: the same rows, materialized."""
    text = """
    .decl e(x: number, y: number)
    .decl out(x: number) inline
    out(x) :- e(x, _).
    .output out
    .decl counted(x: number) inline
    counted(x) :- e(x, _).
    .decl n(c: number)
    n(c) :- c = count : { counted(_) }.
    .decl reach(x: number) inline
    reach(y) :- e(z, y), z > 0.
    .decl unreached(x: number)
    unreached(x) :- e(x, _), !reach(x).
    .decl p(x: number) inline
    .decl q(x: number) inline
    p(x) :- q(x).
    q(x) :- p(x).
    q(x) :- e(x, _).
    .decl f(x: float) inline
    f(1).
    .decl g(x: float)
    g(x) :- f(x).
    """
    analyzed = check_program(text)
    assert analyzed.inlined == frozenset()
    m = Materialization.from_text(text)
    m.load({"e": [(1, 2), (2, 3)]})
    m.bootstrap()
    assert set(m.rows("unreached")) == {(1,)}
    assert set(m.rows("p")) == {(1,), (2,)}
    assert set(m.rows("n")) == {(2,)}
    assert [float(x) for (x,) in m.rows("g")] == [1.0]


def test_a_nullary_relation_is_materialized_not_multiplied_into_its_readers() -> None:
    """`m` has 100 derivations: substituted three times, `k` would count 10^6."""
    text = """
    .decl e(x: number, y: number)
    .decl m() inline
    m() :- e(_, _).
    .decl k()
    k() :- m(), m(), m().
    """
    assert check_program(text).inlined == frozenset()
    m = Materialization.from_text(text)
    m.load({"e": [(x, y) for x in range(10) for y in range(10)]})
    m.bootstrap()
    assert m.lookup("k", ())[1] == 1  # one derivation, where inlining would count 10^6


TEXT = """
.decl e(x: number, y: number)
.decl hop(x: number, z: number) inline
hop(x, z) :- e(x, y), e(y, z).
hop(x, x) :- e(x, x).
.decl far(x: number, y: number)
far(x, y) :- hop(x, y).
far(x, z) :- far(x, y), hop(y, z), !blocked(z).
.decl blocked(x: number) inline
blocked(3).
blocked(x) :- e(x, x).
"""


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(TEXT)
    m.load(facts)
    m.bootstrap()
    return m


def test_inlined_rules_under_update_equal_a_fresh_bootstrap() -> None:
    inputs = {"e": [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (2, 2)]}
    steps = [
        Delta(insert={"e": [(6, 7), (7, 8)]}),
        Delta(retract={"e": [(2, 2), (3, 4)]}),
        Delta(insert={"e": [(2, 4), (8, 8)]}),
    ]
    check_updates(_built(inputs), inputs, steps, _built)


def test_an_unsafe_clause_is_refused_though_its_reader_would_bind_the_variable() -> None:
    text = """
    .decl e(x: number, y: number)
    .decl two(x: number, z: number) inline
    two(x, z) :- e(x, y).
    .decl three(x: number, w: number)
    three(x, w) :- two(x, z), e(z, w).
    """
    with pytest.raises(ProgramError) as info:
        check_program(text)
    assert [(d.code, d.line, d.column) for d in info.value.diagnostics] == [("unsafe_rule", 4, 12)]


@pytest.mark.parametrize("reader", ["", "p(x) :- r(x).\n"])
def test_an_inline_relations_clauses_are_typed_as_written(reader: str) -> None:
    """As Soufflé types them before it substitutes them: a clause no rule reads, which
    substitution drops, was accepted ill-typed (found by the differential test against
    Soufflé)."""
    text = (
        ".decl n(x: number)\n.decl u(x: unsigned)\n.decl r(x: number) inline\n"
        ".decl p(x: number)\n.output p\nr(x) :- n(x), !u(x).\np(x) :- n(x).\n" + reader
    )
    with pytest.raises(ProgramError) as info:
        check_program(text)
    assert [(d.code, d.line, d.column) for d in info.value.diagnostics] == [
        ("type_mismatch", 6, 18)
    ]


def test_an_inline_relation_takes_no_facts() -> None:
    """Its readers would never see them (Soufflé refuses an `.input` of it)."""
    m = _built({"e": [(1, 2)]})
    with pytest.raises(InvalidDelta) as info:
        m.apply(Delta(insert={"hop": [(1, 2)]}), strategy="update")
    assert info.value.code == UNSUPPORTED_FEATURE
    with pytest.raises(ValueError, match="inline relation"):
        Materialization.from_text(TEXT).load({"hop": [(1, 1)]})


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_clause_substituted_twice_keeps_its_columns_types(engine: str) -> None:
    """Both substitutions of `small` share the clause's literal `5`: typed twice, it turned the
    declared `unsigned` column `number`, so that 2^63 read as negative and `x < 5` held
    (a wrong row, which Soufflé does not derive; found by the rule-change property test)."""
    text = """
    .decl big(x: unsigned)
    big(9223372036854775808).
    .decl small(c: number) inline
    small(0) :- big(x), x < 5.
    .decl hit(c: number)
    hit(a) :- small(a), small(a).
    """
    m = Materialization.from_text(text, engines=EngineSettings(engine))
    m.bootstrap()
    assert m.analyzed.relations["big"].types == ("unsigned",)
    assert list(m.rows("hit")) == []


def test_an_undeclared_relation_takes_the_types_an_inline_clause_gives_it() -> None:
    """Typed as written, as Soufflé types before it substitutes: `o`'s column is unsigned
    because the clause of `r`, which nothing reads and substitution drops, says so (found
    by the differential test against Soufflé). Typed after substitution it was `number`."""
    text = """
    .decl u(x: unsigned)
    .decl r(x: number) inline
    r(1) :- o(x), !u(x).
    o(5).
    .output o
    """
    analyzed = check_program(text)
    assert analyzed.inlined == {"r"} and analyzed.relations["o"].types == ("unsigned",)


def test_a_clause_whose_head_range_is_empty_gives_a_reader_of_its_column_nothing() -> None:
    """`a(_, _)` reads no column of `a`, but each clause of `a` still has a tuple only where its
    `range` has a value: b(2) gives `range(2, 2, -1)`, none, b(7) one (the 64-bit Soufflé 2.5:
    q holds 5 once b(7) is there, nothing before)."""
    text = """
    .decl a(c0: symbol, c1: number) inline
    .decl b(x: number)
    .decl q(x: number)
    .decl r(x: number)
    a("b", range(2, x % 3, -1)) :- b(x).
    q(5) :- a(_, _).
    r(y) :- a(_, y).
    """
    m = Materialization.from_text(text)
    m.load({"b": [(2,)]})
    m.bootstrap()
    assert (list(m.rows("q")), list(m.rows("r"))) == ([], [])
    m.apply(Delta(insert={"b": [(7,)]}))
    assert m.snapshot()["q"] == {(5,): (1, 1)}  # one derivation: b(7)'s
    assert list(m.rows("r")) == [(2,)]
