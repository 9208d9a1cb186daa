"""Components (`.comp`, `.init`, type parameters, inheritance, `.override`, nested instances,
qualified names) expand into plain relations named `instance.relation`, with the results that
Soufflé's documentation of components gives; the naive oracle reads the expanded program too."""

from __future__ import annotations

from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from reasoner.syntax import parse_program
from reasoner.syntax.lexer import tokenize
from tests.oracle.evaluation import evaluate

PROGRAM = """
.comp Graph<N> {
    .decl edge(u: N, v: N)
    .decl reach(u: N, v: N) overridable
    reach(x, y) :- edge(x, y).
    reach(x, z) :- reach(x, y), edge(y, z).
}
.comp Symmetric<N> : Graph<N> {
    .decl both(u: N, v: N)
    both(x, y) :- reach(x, y), reach(y, x).
}
.comp OneStep<N> : Graph<N> {
    .override reach
    reach(x, y) :- edge(x, y), x != y.
}
.comp Pair {
    .type Id <: number
    .decl seed(x: Id)
    .init left = Graph<Id>
    .init right = Graph<Id>
    left.edge(x, x + 1) :- seed(x).
    right.edge(x + 1, x) :- seed(x), limit(m), x < m.
}
.decl limit(m: number)
limit(5).
.init g = Symmetric<number>
.init s = Graph<symbol>
.init o = OneStep<number>
.init p = Pair
g.edge(1, 2). g.edge(2, 3). g.edge(3, 1). g.edge(7, 8).
s.edge("a", "b"). s.edge("b", "c").
o.edge(1, 2). o.edge(2, 3). o.edge(4, 4).
p.seed(1). p.seed(9).
common(x, y) :- g.reach(x, y), o.reach(x, y).
"""

EXPECTED = {
    "g.reach": {(x, y) for x in (1, 2, 3) for y in (1, 2, 3)} | {(7, 8)},
    "g.both": {(x, y) for x in (1, 2, 3) for y in (1, 2, 3)},
    "s.reach": {("a", "b"), ("b", "c"), ("a", "c")},
    "o.reach": {(1, 2), (2, 3)},  # overridden: one step, no loop
    "p.left.edge": {(1, 2), (9, 10)},
    "p.left.reach": {(1, 2), (9, 10)},
    "p.right.edge": {(2, 1)},  # 9 is not below the global limit
    "p.right.reach": {(2, 1)},
    "common": {(1, 2), (2, 3)},
}


def test_instances_hold_what_the_components_define() -> None:
    m = Materialization.from_text(PROGRAM)
    m.bootstrap()
    assert {name: set(m.rows(name)) for name in EXPECTED} == EXPECTED
    oracle = evaluate(m.analyzed, {})
    assert {name: set(oracle[name]) for name in EXPECTED} == EXPECTED


def test_names_declared_in_a_component_are_its_instances() -> None:
    program = parse_program(PROGRAM)
    declared = {d.name: [c.type for c in d.columns] for d in program.declarations}
    assert declared["s.edge"] == ["symbol", "symbol"]
    assert declared["p.seed"] == ["p.Id"]  # the component's own type, per instance
    assert declared["p.left.edge"] == ["p.Id", "p.Id"]  # a type argument from the instance
    assert {t.name for t in program.types} == {"p.Id"}
    assert "limit" in declared and "p.limit" not in declared  # global, read from inside


def test_a_qualified_name_is_one_token_and_clauses_still_end_at_dots() -> None:
    kinds = [t.kind for t in tokenize("g.edge(1, 2).q(x).").tokens]
    assert kinds == [
        "ident",
        "(",
        "number",
        ",",
        "number",
        ")",
        ".",
        "ident",
        "(",
        "ident",
        ")",
        ".",
        "eof",
    ]
    assert tokenize("g.edge").tokens[0].text == "g.edge"
    assert len(parse_program("p(1).q(2).").facts) == 2
    # A directive glued to a name is still a directive.
    assert [d.kind for d in parse_program(".decl a(x: number)\n.input a.output a").directives] == [
        "input",
        "output",
    ]
    assert len(parse_program(".decl a(x: number) btree.decl b(x: number)").declarations) == 2


def test_rule_changes_see_clauses_as_written() -> None:
    """A rule of a component is listed once (not per instance) and removing it removes it
    from every instance; added text may instantiate a component defined before it."""
    m = Materialization.from_text(PROGRAM)
    m.bootstrap()
    texts = [entry.text for entry in m.rules()]
    assert texts.count("reach(x, z) :- reach(x, y), edge(y, z).") == 1
    (step,) = [e.id for e in m.rules() if e.text == "reach(x, z) :- reach(x, y), edge(y, z)."]
    m.apply(Delta(remove_rules=[step]))
    assert set(m.rows("s.reach")) == {("a", "b"), ("b", "c")}
    assert set(m.rows("g.reach")) == {(1, 2), (2, 3), (3, 1), (7, 8)}
    m.apply(Delta(add_rules=[".init h = Graph<number>\nh.edge(5, 6).\nh.edge(6, 7)."]))
    assert set(m.rows("h.reach")) == {(5, 6), (6, 7)}
    assert m.facts["h.edge"]  # the added text's facts are data, retractable as any
    assert m.differences(m.rebuilt()) == {}


def rows_of(text: str, name: str) -> set:
    m = Materialization.from_text(text)
    m.bootstrap()
    return set(m.rows(name))


def test_override_drops_the_inherited_facts_too() -> None:
    text = """
    .comp A { .decl r(x: number) overridable  r(1).  r(x) :- x = 2. }
    .comp B : A { .override r  r(3). }
    .init b = B
    """
    assert rows_of(text, "b.r") == {(3,)}


def test_only_an_instance_name_qualifies_a_name() -> None:
    """A relation `g` of a component does not capture `g.edge`, the global instance's."""
    text = """
    .comp G { .decl edge(x: number)  edge(1). }
    .init g = G
    .comp C { .decl g(x: number)  .decl r(x: number)  r(x) :- g.edge(x). }
    .init c = C
    """
    assert rows_of(text, "c.r") == {(1,)}


def test_a_nested_instance_s_types_are_named_through_it() -> None:
    text = """
    .comp Inner { .type Id <: number  .decl v(x: Id)  v(1). }
    .comp Outer { .init i = Inner  .decl s(x: i.Id)  s(x) :- i.v(x). }
    .init o = Outer
    """
    assert rows_of(text, "o.s") == {(1,)}


def test_casts_name_type_parameters_and_functors_hold_aggregates() -> None:
    """`as(x, N)` in a component reads the instance's type; an aggregate inside a functor's
    argument reads the instance's relation."""
    m = Materialization.from_text(
        """
        .comp Box<N> {
          .decl v(x: N)
          .decl w(x: N)
          w(as(x, N)) :- v(x).
          .decl c(s: symbol)
          c(to_string(count : { v(_) })) :- v(_).
        }
        .init u = Box<unsigned>
        .init n = Box<number>
        u.v(5). u.v(6). n.v(-1).
        """
    )
    m.bootstrap()
    assert m.analyzed.relations["u.w"].types == ("unsigned",)
    assert m.analyzed.relations["n.w"].types == ("number",)
    assert set(m.rows("u.c")) == {("2",)} and set(m.rows("n.c")) == {("1",)}
    assert set(m.rows("n.w")) == {(-1,)}
