"""`range(a, b[, step])` lifted out of the terms that use it.

A range has one value per number it spans, and the rule holds once for each: Soufflé's
`p(x, range(0, x)) :- q(x)` derives `p(x, 0) ... p(x, x - 1)`. Every other term has one
value, so each range becomes a body literal of its own, `#range<n> = range(...)` over a
fresh variable, and the term that held it reads the variable. Executors evaluate that literal
as a generator when the variable is unbound and as a membership test when an earlier step
bound it (the head, in Update's re-discovery of a deleted tuple; a positive atom). `#` cannot
start a Datalog name, so no variable of the user's is taken. Ranges nested in a range's bounds
are lifted first, so a generator's bounds never hold one.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
)
from reasoner.values.functors import GENERATOR

PREFIX = "#range"


def lift_ranges(program: Program) -> Program:
    """`program` with each rule's ranges lifted (the program itself when it has none)."""
    rules = tuple(lift_rule(rule) for rule in program.rules)
    if all(new is old for new, old in zip(rules, program.rules, strict=True)):
        return program
    return dataclasses.replace(program, rules=rules)


def is_generator(literal: BodyLiteral) -> bool:
    """Whether `literal` is a lifted range: `#range<n> = range(...)`."""
    return (
        isinstance(literal, Comparison)
        and isinstance(literal.left, Variable)
        and literal.left.name.startswith(PREFIX)
        and isinstance(literal.right, Functor)
        and literal.right.name == GENERATOR
    )


def generator(literal: BodyLiteral) -> tuple[str, tuple[Term, ...]]:
    """A lifted range's variable and bounds (`literal` is one: `is_generator`)."""
    assert is_generator(literal)
    literal = cast(Comparison, literal)
    return cast(Variable, literal.left).name, cast(Functor, literal.right).args


class _Lifter:
    def __init__(self, taken: int = 0) -> None:
        self.taken = taken
        """Generators the clause already has (`#range0` ...): new ones are numbered after."""
        self.generators: list[Comparison] = []
        self.variables: list[Variable] = []

    def term(self, term: Term) -> Term:
        if isinstance(term, Cast):
            inner = self.term(term.term)
            return term if inner is term.term else dataclasses.replace(term, term=inner)
        if isinstance(term, BinaryOp):
            left, right = self.term(term.left), self.term(term.right)
            if left is term.left and right is term.right:
                return term
            return dataclasses.replace(term, left=left, right=right)
        if not isinstance(term, Functor | RecordTerm | BranchTerm):
            return term
        args = tuple(self.term(arg) for arg in term.args)
        if any(new is not old for new, old in zip(args, term.args, strict=True)):
            term = dataclasses.replace(term, args=args)
        if not isinstance(term, Functor) or term.name != GENERATOR:
            return term
        variable = Variable(f"{PREFIX}{self.taken + len(self.generators)}", term.span)
        self.generators.append(Comparison("=", variable, term, term.span))
        self.variables.append(variable)
        return variable

    def atom(self, atom: Atom) -> Atom:
        args = tuple(self.term(arg) for arg in atom.args)
        if all(new is old for new, old in zip(args, atom.args, strict=True)):
            return atom
        return dataclasses.replace(atom, args=args)

    def literal(self, literal: BodyLiteral) -> BodyLiteral:
        if is_generator(literal):  # lifted already (an aggregate's body, `lift_body`)
            return literal
        if isinstance(literal, Atom):
            return self.atom(literal)
        if isinstance(literal, Negation):
            atom = self.atom(literal.atom)
            return literal if atom is literal.atom else dataclasses.replace(literal, atom=atom)
        left, right = self.term(literal.left), self.term(literal.right)
        if left is literal.left and right is literal.right:
            return literal
        return dataclasses.replace(literal, left=left, right=right)


def lift_body(body: tuple[BodyLiteral, ...]) -> tuple[tuple[BodyLiteral, ...], list[Variable]]:
    """An aggregate's body with its ranges lifted, and their variables: with the body's other
    variables they tell its instantiations apart (`count : { n(range(0, x)) }` counts one
    per value whose `n` holds)."""
    lifter = _Lifter(_generators(body))
    lifted = tuple(lifter.literal(literal) for literal in body)
    if not lifter.generators:
        return body, []
    return (*lifted, *lifter.generators), lifter.variables


def _generators(body: tuple[BodyLiteral, ...]) -> int:
    return sum(1 for literal in body if is_generator(literal))


def lift_rule(rule: Rule) -> Rule:
    """`rule` with its ranges lifted (the rule itself when it has none)."""
    lifter = _Lifter(_generators(rule.body))
    body = tuple(lifter.literal(literal) for literal in rule.body)
    head = lifter.atom(rule.head)
    if not lifter.generators:
        return rule
    return dataclasses.replace(rule, head=head, body=(*body, *lifter.generators))
