"""Small, non-recursive helpers over terms and literals.

Arithmetic chains such as `1 + 1 + ... + 1` parse into left-deep trees; walking them with an
explicit stack keeps deep expressions from hitting Python's recursion limit. The rewrites
(`map_term` and its atom and literal forms) recurse: they rebuild the path to what they replace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence

from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NilConst,
    NumberConst,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
    operands,
    rule_terms,
)
from reasoner.values import floats
from reasoner.values.arith import as_unsigned
from reasoner.values.functors import CONSTRAINTS, written_name
from reasoner.values.types import FLOAT, UNSIGNED

Leaf = Variable | Wildcard | NumberConst | StringConst | NilConst | Aggregate


def leaves(term: Term) -> Iterator[Leaf]:
    """The variables, wildcards, constants and aggregates of `term`, left to right, records'
    fields included (an aggregate's own variables are inside its body, not among them)."""
    stack: list[Term] = [term]
    while stack:
        node = stack.pop()
        if isinstance(node, BinaryOp | Functor | Cast | RecordTerm | BranchTerm):
            stack.extend(reversed(operands(node)))
        else:
            yield node


def taken_apart(term: Term) -> Iterator[Term]:
    """`term` and, through records and branches, the terms of their fields: what a match
    against a value binds or tests."""
    stack = [term]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, RecordTerm | BranchTerm):
            stack.extend(reversed(node.args))


def map_term(term: Term, leaf: Callable[[Term], Term | None]) -> Term:
    """`term` with each node that `leaf` maps replaced (arithmetic rebuilt around it; what
    nothing replaced inside is returned as it was). Recursive, unlike the walks above: a
    rewrite rebuilds the path to each replaced node. An aggregate is a leaf: its body is
    its own scope."""
    replaced = leaf(term)
    if replaced is not None:
        return replaced
    if isinstance(term, BinaryOp):
        left, right = map_term(term.left, leaf), map_term(term.right, leaf)
        if left is not term.left or right is not term.right:
            return dataclasses.replace(term, left=left, right=right)
    if isinstance(term, Functor | RecordTerm | BranchTerm):
        args = tuple(map_term(arg, leaf) for arg in term.args)
        if any(new is not old for new, old in zip(args, term.args, strict=True)):
            return dataclasses.replace(term, args=args)
    if isinstance(term, Cast):
        inner = map_term(term.term, leaf)
        if inner is not term.term:
            return dataclasses.replace(term, term=inner)
    return term


def map_atom(atom: Atom, leaf: Callable[[Term], Term | None]) -> Atom:
    return dataclasses.replace(atom, args=tuple(map_term(arg, leaf) for arg in atom.args))


def map_literal(literal: BodyLiteral, leaf: Callable[[Term], Term | None]) -> BodyLiteral:
    if isinstance(literal, Atom):
        return map_atom(literal, leaf)
    if isinstance(literal, Negation):
        return dataclasses.replace(literal, atom=map_atom(literal.atom, leaf))
    return dataclasses.replace(
        literal, left=map_term(literal.left, leaf), right=map_term(literal.right, leaf)
    )


def deep_terms(terms: Iterable[Term], body: Iterable[BodyLiteral]) -> Iterator[Term]:
    """Every term of `terms` and of `body`'s literals, at any depth: operands, and the targets
    and bodies of aggregates."""
    stack: list[Term] = list(terms)
    literals = list(body)
    while literals or stack:
        while literals:
            literal = literals.pop()
            if isinstance(literal, Comparison):
                stack += [literal.left, literal.right]
            else:
                stack.extend((literal.atom if isinstance(literal, Negation) else literal).args)
        if stack:
            term = stack.pop()
            yield term
            if isinstance(term, Aggregate):
                literals.extend(term.body)
                if term.target is not None:
                    stack.append(term.target)
            else:
                stack.extend(operands(term))


def atoms_of(body: tuple[BodyLiteral, ...]) -> Iterator[tuple[Atom, bool]]:
    """Each atom of a body with its polarity (True for positive)."""
    for literal in body:
        if isinstance(literal, Atom):
            yield literal, True
        elif isinstance(literal, Negation):
            yield literal.atom, False


def aggregated_relations(literal: BodyLiteral) -> Iterator[str]:
    """The relations read inside the literal's aggregates."""
    if isinstance(literal, Comparison):
        terms: tuple[Term, ...] = (literal.left, literal.right)
    else:
        terms = (literal.atom if isinstance(literal, Negation) else literal).args
    stack = list(terms)
    while stack:
        term = stack.pop()
        if isinstance(term, Aggregate):
            for inner, _positive in atoms_of(term.body):
                yield inner.relation
            for nested in term.body:
                yield from aggregated_relations(nested)
            if term.target is not None:
                stack.append(term.target)
        elif isinstance(term, BinaryOp):
            stack += [term.left, term.right]
        elif isinstance(term, Functor | RecordTerm | BranchTerm):
            stack += list(term.args)
        elif isinstance(term, Cast):
            stack.append(term.term)


def render(term: Term) -> str:
    """Source-like text of a term, for messages."""
    if isinstance(term, Variable):
        return term.name
    if isinstance(term, Wildcard):
        return "_"
    if isinstance(term, NumberConst):
        if term.kind == FLOAT:
            return repr(floats.from_bits(term.value))
        return f"{as_unsigned(term.value)}u" if term.kind == UNSIGNED else str(term.value)
    if isinstance(term, StringConst):
        escaped = (
            term.value.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("\n", "\\n")
            .replace("\t", "\\t")
            .replace("\r", "\\r")
        )
        return f'"{escaped}"'
    if isinstance(term, Aggregate):
        target = "" if term.target is None else f" {render(term.target)}"
        return f"{term.op}{target} : {{ {', '.join(map(render_literal, term.body))} }}"
    if isinstance(term, Functor):
        return f"{written_name(term.name)}({', '.join(map(render, term.args))})"
    if isinstance(term, Cast):
        return f"as({render(term.term)}, {term.type})"
    if isinstance(term, NilConst):
        return "nil"
    if isinstance(term, RecordTerm):
        return f"[{', '.join(map(render, term.args))}]"
    if isinstance(term, BranchTerm):
        args = f"({', '.join(map(render, term.args))})" if term.args else ""
        return f"${term.name}{args}"
    try:
        if term.op in ("max", "min"):
            return f"{term.op}({render(term.left)}, {render(term.right)})"
        return f"{_operand(term.left)} {term.op} {_operand(term.right)}"
    except RecursionError:
        return "(expression)"


def _operand(term: Term) -> str:
    return f"({render(term)})" if isinstance(term, BinaryOp) else render(term)


def render_atom(atom: Atom) -> str:
    return f"{atom.relation}({', '.join(map(render, atom.args))})"


def render_literal(literal: BodyLiteral) -> str:
    """Source-like text of a body literal, for messages and the rules the analysis makes."""
    if isinstance(literal, Atom):
        return render_atom(literal)
    if isinstance(literal, Negation):
        return "!" + render_atom(literal.atom)
    if is_constraint_call(literal):
        return ("!" if literal.op == "=" else "") + render(literal.left)
    return f"{render(literal.left)} {literal.op} {render(literal.right)}"


def is_constraint_call(literal: Comparison) -> bool:
    """Whether `literal` is the parser's reading of a constraint functor: `contains(a, b)`
    as `contains(a, b) != 0`, its negation as `... = 0`."""
    return (
        literal.op in ("=", "!=")
        and isinstance(literal.left, Functor)
        and literal.left.name in CONSTRAINTS
        and literal.right == NumberConst(0, literal.right.span)
    )


def calls_functor(rules: Sequence[Rule]) -> bool:
    """Whether any of `rules` calls a functor (an executor that cannot reach the symbol table
    runs them elsewhere)."""
    return any(isinstance(term, Functor) for term in rule_terms(rules))
