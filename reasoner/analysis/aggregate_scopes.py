"""The scopes of aggregates' variables, as Soufflé 2.5 draws them before typing.

A variable of an aggregate that the rule binds outside it is the outer one (the aggregate is
correlated: `reasoner.analysis.aggregates` groups by it). Three rules of Soufflé's refine that,
each a rewrite here, each checked against Soufflé's output (`tests/golden/aggregate_scopes`):

**Shadows.** In what an aggregate aggregates, a variable the rule also uses outside is a new
one: `s = sum y + z : { b(y, z) }` beside `a(y)` adds over all of `b`, as Soufflé's
SimplifyAggregateTargetExpression renames it throughout the aggregate, and `s = sum y : {
a(y) }` beside `a(y)` adds over all of `a` (its getInjectedVariables drops every variable of
the target from those the rule injects). A variable outside the target, `y` in `sum z : {
b(y, z) }`, stays the outer one.

**Values of other aggregates.** `s = max y : { a(y) }, c = count : { b(s, _) }` correlates
the count with `s`: an aggregate's value binds what it is assigned to (`bind_aggregate_results`
makes it a relation's column, which the aggregate rewrite groups by).

**Witnesses** of `min` and `max`. `w(x, m) :- m = min y : { e(x, y) }.` uses `x` inside the
aggregate and outside it, where nothing else binds it. Soufflé 2.5 reads `x` as a *witness*:
the aggregate is taken over all of `e` (the `x` inside is another variable), and `x` ranges
over the rows that reach the minimum. Its GroundWitnesses pass makes that explicit, and so
does this one:

    w(x, m) :- m = min y : { e(x!w, y) }, e(x, v!), v! = min y : { e(x!w, y) }.

- The witnesses are the variables the aggregate's body binds that the rule uses outside the
  aggregate without binding them there (the other aggregates standing for bound values).
- Inside the aggregate they are renamed; the aggregate's body, as written, is added to the
  rule with the aggregated variable replaced by the aggregate's value.
- A variable local to the body that the added literals bring outside is then bound outside,
  so the aggregate is taken per value of it, as in Soufflé.
- An aggregated expression is first made a variable (`min y + 1 : { .. }` is
  `min t! : { .., t! = y + 1 }`), as Soufflé's SimplifyAggregateTargetExpression does.

Only `min` and `max` have witnesses: Soufflé refuses them for `count`, `sum` and `mean` (the
aggregate rewrite reports them, `reasoner.analysis.aggregates`). The rewrite runs before the
program is kept as written, so the oracle of the tests evaluates the grounded rules with
plain aggregate semantics; what grounding means is held to Soufflé's output instead.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterable

from reasoner.analysis.safety import bound_variables
from reasoner.analysis.terms import (
    deep_terms,
    leaves,
    map_atom,
    map_literal,
    map_term,
    render_atom,
    render_literal,
)
from reasoner.support.digest import short_digest
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BodyLiteral,
    Comparison,
    Negation,
    Program,
    Rule,
    Term,
    Variable,
    operands,
)

_WITNESSED = frozenset({"min", "max", "umin", "umax", "fmin", "fmax"})


def as_written(name: str) -> str:
    """The name a renamed shadow or witness (`y!s0`, `x!w0`) has in the program."""
    return name.split("!", 1)[0] or name


def scope_aggregates(program: Program) -> Program:
    """`program` with its rules' shadows renamed and the witnesses of their outermost
    aggregates grounded (the same object when no rule has either)."""
    rules = tuple(_grounded(separate_shadows(rule)) for rule in program.rules)
    if all(new is old for new, old in zip(rules, program.rules, strict=True)):
        return program
    return dataclasses.replace(program, rules=rules)


def separate_shadows(rule: Rule) -> Rule:
    """`rule` with each variable of an outermost aggregate's target (an expression or a lone
    variable) that the rule also uses outside the aggregate (not as a witness) renamed
    throughout the aggregate. The aggregate rewrite applies it again to the rule it makes of
    an aggregate's body, for the aggregates nested there: a name already in the rule (an
    outer aggregate's shadow) is not taken again."""
    for index, aggregate in enumerate(_outermost(rule)):
        target = aggregate.target
        if target is None:
            continue
        names = _names(deep_terms(rule.head.args, rule.body))
        uses = Counter(names)
        uses.subtract(_names(deep_terms((aggregate,), ())))
        outside = {name for name, count in uses.items() if count > 0}
        shadowed = _variables([target]) & (outside - _witnesses(rule, aggregate))
        if not shadowed:
            continue
        taken = set(names)
        suffix = next(
            f"!s{k}"
            for k in itertools.count(index)
            if not any(name + f"!s{k}" in taken for name in shadowed)
        )
        rule = _replaced(rule, aggregate, _renamed_inside(aggregate, shadowed, suffix))
    return rule


def _renamed_inside(aggregate: Aggregate, names: set[str], suffix: str) -> Aggregate:
    """`aggregate` with each of `names` in its target and body renamed `name + suffix`: a
    variable of its own, whatever the rule calls `name` outside it."""

    def renamed(term: Term) -> Term | None:
        if isinstance(term, Variable) and term.name in names:
            return dataclasses.replace(term, name=term.name + suffix)
        return None

    target = None if aggregate.target is None else map_term(aggregate.target, renamed)
    body = tuple(map_literal(literal, renamed) for literal in aggregate.body)
    return dataclasses.replace(aggregate, target=target, body=body)


def _names(terms: Iterable[Term]) -> list[str]:
    return [term.name for term in terms if isinstance(term, Variable)]


def _replaced(rule: Rule, old: Aggregate, new: Aggregate) -> Rule:
    def replaced(term: Term) -> Term | None:
        return new if term is old else None

    return dataclasses.replace(
        rule,
        head=map_atom(rule.head, replaced),
        body=tuple(map_literal(literal, replaced) for literal in rule.body),
    )


def _grounded(rule: Rule) -> Rule:
    for index, aggregate in enumerate(_outermost(rule)):
        if aggregate.op not in _WITNESSED or aggregate.target is None:
            continue
        witnesses = _witnesses(rule, aggregate)
        if not witnesses:
            continue
        target, simple = aggregate.target, aggregate
        if not isinstance(target, Variable):  # min y + 1 : { .. } is min t! : { .., t! = y + 1 }
            variable = Variable(f"t!{index}", target.span)
            body = (*aggregate.body, Comparison("=", variable, target, target.span))
            simple = dataclasses.replace(aggregate, target=variable, body=body)
            target = variable
        if target.name in witnesses:
            continue  # the aggregated variable used outside, unbound: left to the rewrite's error
        rule = _with_witnesses(rule, aggregate, simple, target, witnesses, index)
    return rule


def _outermost(rule: Rule) -> list[Aggregate]:
    found: list[Aggregate] = []
    stack = list(_terms(rule.head, rule.body))
    while stack:
        term = stack.pop()
        if isinstance(term, Aggregate):
            found.append(term)
        else:
            stack.extend(operands(term))
    return found


def _terms(head: Atom | None, body: tuple[BodyLiteral, ...]) -> list[Term]:
    terms = list(head.args) if head is not None else []
    for literal in body:
        if isinstance(literal, Comparison):
            terms += [literal.left, literal.right]
        else:
            terms.extend((literal.atom if isinstance(literal, Negation) else literal).args)
    return terms


def _variables(terms: list[Term]) -> set[str]:
    """The variables of `terms`, outside their aggregates."""
    return {leaf.name for term in terms for leaf in leaves(term) if isinstance(leaf, Variable)}


def _witnesses(rule: Rule, aggregate: Aggregate) -> set[str]:
    """The variables `aggregate`'s body binds that `rule` uses outside its aggregates
    without binding them there (each aggregate a bound value, the head binding nothing)."""
    values: dict[int, Term] = {}

    def value(term: Term) -> Term | None:
        if isinstance(term, Aggregate):
            return values.setdefault(id(term), Variable(f"a!{len(values)}", term.span))
        return None

    body = tuple(map_literal(literal, value) for literal in rule.body)
    head = map_atom(rule.head, value)
    stand_ins = tuple(Atom("!bound", (v,), v.span) for v in values.values())
    outside = _variables(_terms(head, body))
    bound_outside = bound_variables(body + stand_ins)
    bound_inside = bound_variables(aggregate.body)
    return {name for name in outside - bound_outside if name in bound_inside}


def _with_witnesses(
    rule: Rule,
    aggregate: Aggregate,
    simple: Aggregate,
    target: Variable,
    witnesses: set[str],
    index: int,
) -> Rule:
    """`rule` with `aggregate` (`simple`: it with a variable, `target`, aggregated) grounding
    its `witnesses`."""
    inner = _renamed_inside(simple, witnesses, f"!w{index}")
    value = Variable(f"v!{index}", aggregate.span)

    def valued(term: Term) -> Term | None:
        return value if isinstance(term, Variable) and term.name == target.name else None

    added = tuple(map_literal(literal, valued) for literal in simple.body)

    rule = _replaced(rule, aggregate, inner)
    grounding = Comparison("=", value, inner, aggregate.span)
    return dataclasses.replace(rule, body=(*rule.body, *added, grounding))


def bind_aggregate_results(program: Program) -> Program:
    """`program` with each aggregate whose outer variable only another aggregate's value
    binds read from a relation of that value (the same object when no rule has one).

    `r(s, c) :- s = max y : { a(y) }, c = count : { b(s, _) }.` correlates the count with
    `s`, as Soufflé 2.5 does (an aggregate's value grounds what it is assigned to). The
    aggregate rewrite groups by variables that atoms bind, so the value is made one:

        bind!<digest>(s) :- s = max y : { a(y) }.
        r(s, c) :- bind!<digest>(s), c = count : { b(s, _) }.

    The relation holds, per instantiation of the rule's literals that need no aggregate (its
    other columns), the value; those literals move into its rule."""
    rules: list[Rule] = []
    for rule in program.rules:
        rules.extend(_bound_results(rule))
    if len(rules) == len(program.rules):
        return program
    return dataclasses.replace(program, rules=tuple(rules))


def _bound_results(rule: Rule) -> list[Rule]:
    made: list[Rule] = []
    while True:
        step = _bind_one(rule)
        if step is None:
            return [*made, rule]
        definition, rule = step
        made.append(definition)


def _bind_one(rule: Rule) -> tuple[Rule, Rule] | None:
    """The rule of one aggregate value another aggregate needs, and `rule` reading it; None
    when no aggregate needs one."""
    plain_bound = bound_variables(tuple(lit for lit in rule.body if not _has_aggregate(lit)))
    plain = tuple(
        lit
        for lit in rule.body
        if not _has_aggregate(lit) and _literal_variables(lit) <= plain_bound
    )
    for aggregate in _outermost(rule):
        for name in sorted(_aggregate_needs(rule, aggregate) - plain_bound):
            binding = _assigning(rule, name, plain_bound)
            if binding is None:
                continue
            columns = tuple(Variable(v, rule.span) for v in sorted(plain_bound))
            value = Variable(name, binding.span)
            text = " ".join(render_literal(lit) for lit in (*plain, binding))
            digest = short_digest(f"{render_atom(rule.head)} {text}")
            head = Atom(f"bind!{digest}", (*columns, value), binding.span)
            definition = Rule(head, (*plain, binding), rule.span, rule.text)
            rest = tuple(lit for lit in rule.body if lit not in plain and lit is not binding)
            return definition, dataclasses.replace(rule, body=(head, *rest))
    return None


def _assigning(rule: Rule, name: str, bound: set[str]) -> Comparison | None:
    """`name = <aggregate>` in `rule`'s body whose aggregate needs no variable but `bound`."""
    for literal in rule.body:
        if not isinstance(literal, Comparison) or literal.op != "=":
            continue
        for side, other in ((literal.left, literal.right), (literal.right, literal.left)):
            if (
                isinstance(side, Variable)
                and side.name == name
                and isinstance(other, Aggregate)
                and _aggregate_needs(rule, other) <= bound
            ):
                return literal
    return None


def _aggregate_needs(rule: Rule, aggregate: Aggregate) -> set[str]:
    uses = Counter(_names(deep_terms(rule.head.args, rule.body)))
    inside = Counter(_names(deep_terms((aggregate,), ())))
    return {name for name in inside if uses[name] > inside[name]}


def _has_aggregate(literal: BodyLiteral) -> bool:
    return any(isinstance(term, Aggregate) for term in deep_terms((), (literal,)))


def _literal_variables(literal: BodyLiteral) -> set[str]:
    return set(_names(deep_terms((), (literal,))))
