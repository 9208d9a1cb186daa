"""Comparisons, ranges and the walks over a rule's terms, as the oracle reads them."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    RecordTerm,
    Rule,
    Variable,
)
from reasoner.values.floats import FloatValue
from reasoner.values.types import Value


def compare(op: str, a: Value, b: Value) -> bool:
    """`a op b`, a float's as IEEE compares it (0.0 equals -0.0, a NaN nothing)."""
    a, b = _plain(a), _plain(b)
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    raise ValueError(f"unknown comparison operator {op!r}")


def _plain(value: Value) -> Value:
    """A float as Python compares it (a `FloatValue`, as a relation holds it, compares bits)."""
    return float(value) if isinstance(value, float) else value


def stored(value: Value) -> Value:
    """A value as a relation holds it: a float by its bits (`FloatValue`), as Soufflé's
    relations are sets of bit patterns."""
    return FloatValue(value) if isinstance(value, float) else value


def holds(
    comparison: Comparison,
    left: Value,
    right: Value,
    grounded: set[str],
    bound: Collection[str] = (),
) -> bool:
    """Whether a comparison holds (one that defined a variable is not tested again: see
    `bind_equalities`). An equality of two variables that positive atoms (or an aggregate)
    bind (`grounded`; a variable an alias defined is one of them) is one of Soufflé's
    aliases, a join, so it compares floats' bits; any other compares floats as IEEE does.
    Simpler than Soufflé's alias resolution
    (`reasoner.analysis.floats`): an equality written twice (`y = x + 1.0, y = x + 1.0`) is
    compared here, where Soufflé drops the second as `t = t`."""
    if comparison.op != "=":
        return compare(comparison.op, left, right)
    if comparison.left == comparison.right:  # `t = t`, which Soufflé drops: a NaN passes
        return True
    sides = (comparison.left, comparison.right)
    if all(
        (isinstance(side, Aggregate) and not correlated(side, bound))
        or (isinstance(side, Variable) and side.name in grounded)
        for side in sides
    ):  # an uncorrelated aggregate's result is a relation's (`bound`: the rule's variables)
        return stored(left) == stored(right)
    return compare("=", left, right)


def correlated(aggregate: Aggregate, bound: Collection[str]) -> bool:
    """Whether the rule correlates `aggregate`: some variable of it is one the rule binds
    (`bound`; the variables of its target are its own, renamed by the analysis). Soufflé
    makes an uncorrelated aggregate a relation (`__agg_single`), whose value then joins on
    bits; a correlated one is a generator, compared as IEEE compares."""
    return not aggregate_variables(aggregate)[0].isdisjoint(bound)


def grounded_variables(positives: Iterable[Atom]) -> set[str]:
    """The variables positive atoms bind: their arguments, and those inside their records."""
    found: set[str] = set()
    stack: list[object] = [arg for atom in positives for arg in atom.args]
    while stack:
        term = stack.pop()
        if isinstance(term, Variable):
            found.add(term.name)
        elif isinstance(term, RecordTerm | BranchTerm):
            stack.extend(term.args)
    return found


DEFINING = "defining equalities"
"""Where a binding notes the equalities that gave its variables values (no variable's name
has a space)."""


ALIASED = "aliased variables"
"""Where a binding notes the variables an equality gave the value of one atoms bind, or of an
aggregate the rule does not correlate (Soufflé 2.5, r = {-0.0}, whose sum is 0.0: `r(c), w =
sum y : { r(y) }, c = w` does not hold; `r(c), w = sum y : { r(y), y = c }, c = w` does)."""


class Unbound(Exception):
    """A variable has no value: the rule is unsafe (the analysis should have rejected it)."""


def range_key(term: Functor) -> str:
    """Where a binding holds the value chosen for one `range` of the rule (no Datalog
    variable has a name with a space)."""
    return f"range {id(term)}"


def range_values(args: list[Value]) -> list[int]:
    """Soufflé's documentation and `runRange`: from the first bound toward the second,
    excluded, by the step (by default 1, or -1 when the range goes down); a zero step gives
    the first bound once unless the bounds are equal."""
    start, end = int(args[0]), int(args[1])
    step = int(args[2]) if len(args) > 2 else (1 if start <= end else -1)
    if step == 0:
        return [start] if start != end else []
    values = []
    value = start
    while (value < end) if step > 0 else (value > end):
        values.append(value)
        value += step
    return values


def ranges_in(rule: Rule) -> list[Functor]:
    """The `range` terms of a rule (outside aggregates), each before any that contains it."""
    found: list[Functor] = []

    def visit(term: object) -> None:
        if isinstance(term, Cast):
            visit(term.term)
        elif isinstance(term, BinaryOp):
            visit(term.left)
            visit(term.right)
        elif isinstance(term, Functor | RecordTerm | BranchTerm):
            for arg in term.args:
                visit(arg)
            if isinstance(term, Functor) and term.name == "range":
                found.append(term)

    for term in rule.head.args:
        visit(term)
    for literal in rule.body:
        if isinstance(literal, Atom):
            for term in literal.args:
                visit(term)
        elif isinstance(literal, Negation):
            for term in literal.atom.args:
                visit(term)
        else:
            visit(literal.left)
            visit(literal.right)
    return found


_aggregate_variables: dict[int, tuple[Aggregate, frozenset[str], frozenset[str]]] = {}
"""Each aggregate's variables, by its id (the entry holds the node, so the id stays its own):
a rule asks for them at every one of its bindings, and a product of three atoms has
thousands, each of which walked the aggregate's body again (a property test's example took
5-12 s of its 5 s deadline)."""


def forget_aggregate_variables() -> None:
    """Let go of the aggregates noted so far: a new evaluation has a program of its own."""
    _aggregate_variables.clear()


def aggregate_variables(aggregate: Aggregate) -> tuple[frozenset[str], frozenset[str]]:
    """(every variable of `aggregate`, those of them not in its target): the second are the
    ones a rule may bind outside it."""
    known = _aggregate_variables.get(id(aggregate))
    if known is None:
        names = frozenset(_variables_of(aggregate))
        target = _variables_of(aggregate.target) if aggregate.target is not None else set()
        known = _aggregate_variables[id(aggregate)] = (aggregate, names, names - target)
    return known[1], known[2]


def variables_in(node: object) -> set[str]:
    """Every variable name inside a term, literal or aggregate."""
    if isinstance(node, Aggregate):
        return set(aggregate_variables(node)[0])
    return _variables_of(node)


def _variables_of(node: object) -> set[str]:
    if isinstance(node, Variable):
        return {node.name}
    if isinstance(node, Cast):
        return variables_in(node.term)
    if isinstance(node, BinaryOp):
        return variables_in(node.left) | variables_in(node.right)
    if isinstance(node, Functor | RecordTerm | BranchTerm):
        return set().union(*map(variables_in, node.args))
    if isinstance(node, Aggregate):
        names = variables_in(node.target) if node.target is not None else set()
        for literal in node.body:
            names |= variables_in(literal)
        return names
    if isinstance(node, Atom):
        return set().union(*(variables_in(arg) for arg in node.args))
    if isinstance(node, Negation):
        return variables_in(node.atom)
    if isinstance(node, Comparison):
        return variables_in(node.left) | variables_in(node.right)
    return set()


def aggregates_in(node: object) -> list[Aggregate]:
    """The aggregates inside a term or literal, nested ones included."""
    if isinstance(node, Aggregate):
        found = [node]
        for literal in node.body:
            found += aggregates_in(literal)
        return found + (aggregates_in(node.target) if node.target is not None else [])
    if isinstance(node, Cast):
        return aggregates_in(node.term)
    if isinstance(node, BinaryOp):
        return aggregates_in(node.left) + aggregates_in(node.right)
    if isinstance(node, Functor):
        return [a for arg in node.args for a in aggregates_in(arg)]
    if isinstance(node, Atom):
        return [a for arg in node.args for a in aggregates_in(arg)]
    if isinstance(node, Negation):
        return aggregates_in(node.atom)
    if isinstance(node, Comparison):
        return aggregates_in(node.left) + aggregates_in(node.right)
    return []
