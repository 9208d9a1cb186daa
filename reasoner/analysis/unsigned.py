"""Soufflé's `unsigned`: the operations whose result depends on how 64 bits are read.

An `unsigned` value is stored as its 64-bit pattern, the same integer a `number` with those
bits is (2^64 - 1 is stored as -1), so tables, joins, equality and the state's encoding are
those of numbers, and every executor holds unsigned values unchanged. Addition, subtraction,
multiplication, the bitwise and logical operators and the left shift give the same bits under
either reading. What differs is:

- **order** (`<`, `<=`, `>`, `>=`, `max`, `min`, and the `min`/`max` aggregates): flipping the
  top bit (`x bxor -2^63`) maps the unsigned order onto the signed one, so an ordering
  comparison of the flipped operands is one every executor already evaluates, and
  `max(a, b)` becomes `flip(max(flip(a), flip(b)))`; the aggregates become `umin`/`umax`;
- **division, remainder and power**: `udiv`, `umod` and `upow` (`reasoner.arith`), operators
  of their own in every executor (on Spark, a stratum that divides unsigned values runs in
  the driver);
- **the right shift** `bshr`, which sign-extends a number: on an unsigned it is `bshru`;
- **`to_string`**, which writes an unsigned's unsigned reading (`UNSIGNED_TO_STRING`), while
  `to_number(u)` and `to_unsigned(n)` keep the bits, as a cast does, and are dropped.

The type inference (`reasoner.analysis.types`) knows the type each operation works in; this
pass rewrites the rules and facts the engine evaluates, and drops the casts (`as(x, T)`), which
change a type and no bit. The program as written keeps its
operators (messages and the test oracle read it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from reasoner.analysis.model import AggregateDefinition
from reasoner.analysis.types import TypeInference
from reasoner.functors import CONVERSIONS, UNSIGNED_TO_STRING
from reasoner.syntax.ast import (
    UNSIGNED,
    AggregateOp,
    ArithOp,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    ColumnType,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    rule_terms,
)

_BIAS = -(1 << 63)
"""The pattern with only the top bit set: `x bxor _BIAS` maps unsigned order to signed."""
_ORDERING = frozenset({"<", "<=", ">", ">="})
_UNSIGNED_FORM: Mapping[str, ArithOp] = {"/": "udiv", "%": "umod", "^": "upow", "bshr": "bshru"}
_EXTREMES = frozenset({"max", "min"})
UNSIGNED_DIVISION = frozenset({"udiv", "umod"})


def unsigned_operations(program: Program, inference: TypeInference) -> Program:
    """`program` with every operation on `unsigned` values in its unsigned form; `program`
    itself when it has none. `inference` has visited `program`'s rules and facts."""
    rewriter = _Rewriter(inference)
    rules = tuple(rewriter.rule(rule) for rule in program.rules)
    facts = []
    for fact in program.facts:
        rewriter.scope = inference.scopes[id(fact)]
        facts.append(dataclasses.replace(fact, atom=rewriter.atom(fact.atom)))
    if not rewriter.changed:
        return program
    return dataclasses.replace(program, rules=rules, facts=tuple(facts))


def unsigned_body(
    body: tuple[BodyLiteral, ...], inference: TypeInference
) -> tuple[BodyLiteral, ...]:
    """A query's body (visited by `inference` as the clause of scope 0) with its unsigned
    operations rewritten."""
    rewriter = _Rewriter(inference)
    return tuple(rewriter.literal(literal) for literal in body)


def unsigned_aggregates(
    aggregates: Sequence[AggregateDefinition], types: Mapping[str, Sequence[ColumnType]]
) -> tuple[AggregateDefinition, ...]:
    """The aggregates, `min` and `max` of an `unsigned` expression as `umin` and `umax`."""
    result = []
    for aggregate in aggregates:
        if _unsigned_extreme(aggregate, types):
            unsigned: AggregateOp = "umin" if aggregate.op == "min" else "umax"
            aggregate = dataclasses.replace(aggregate, op=unsigned)
        result.append(aggregate)
    return tuple(result)


def _unsigned_extreme(
    aggregate: AggregateDefinition, types: Mapping[str, Sequence[ColumnType]]
) -> bool:
    source = types.get(aggregate.source)
    if aggregate.op not in _EXTREMES or aggregate.value is None or source is None:
        return False
    return source[aggregate.value] == UNSIGNED


def divides_unsigned(rules: Sequence[Rule]) -> bool:
    """Whether any of `rules` divides `unsigned` values (Spark has no unsigned long)."""
    return any(
        isinstance(term, BinaryOp) and term.op in UNSIGNED_DIVISION for term in rule_terms(rules)
    )


def _flip(term: Term) -> Term:
    return BinaryOp("bxor", term, NumberConst(_BIAS, term.span), term.span)


class _Rewriter:
    def __init__(self, inference: TypeInference) -> None:
        self.inference = inference
        self.changed = False
        self.scope = 0
        """The clause being rewritten (`TypeInference.scopes`; a query's is 0): each clause
        is typed on its own."""

    def rule(self, rule: Rule) -> Rule:
        self.scope = self.inference.scopes[id(rule)]
        changed = self.changed
        self.changed = False
        head = self.atom(rule.head)
        body = tuple(self.literal(literal) for literal in rule.body)
        rewritten = dataclasses.replace(rule, head=head, body=body) if self.changed else rule
        self.changed = self.changed or changed
        return rewritten

    def atom(self, atom: Atom) -> Atom:
        args = tuple(self.term(arg) for arg in atom.args)
        return atom if all(map(_same, args, atom.args)) else dataclasses.replace(atom, args=args)

    def literal(self, literal: BodyLiteral) -> BodyLiteral:
        if isinstance(literal, Atom):
            return self.atom(literal)
        if isinstance(literal, Negation):
            atom = self.atom(literal.atom)
            return literal if atom is literal.atom else dataclasses.replace(literal, atom=atom)
        left, right = self.term(literal.left), self.term(literal.right)
        unsigned = (
            literal.op in _ORDERING
            and self.inference.operation_type(literal, self.scope) == UNSIGNED
        )
        if unsigned:
            self.changed = True
            left, right = _flip(left), _flip(right)
        if left is literal.left and right is literal.right:
            return literal
        return Comparison(literal.op, left, right, literal.span)

    def term(self, term: Term) -> Term:
        if isinstance(term, Cast):  # checked by the type inference; the bits stay
            self.changed = True
            return self.term(term.term)
        if isinstance(term, Functor):
            args = tuple(self.term(arg) for arg in term.args)
            kind = self.inference.conversion(term, self.scope)
            if kind is not None and term.name in CONVERSIONS:  # the bits stay, as a cast's
                self.changed = True
                return args[0]
            if kind == UNSIGNED and term.name == "to_string":
                self.changed = True
                return Functor(UNSIGNED_TO_STRING, args, term.span)
            if all(map(_same, args, term.args)):
                return term
            return dataclasses.replace(term, args=args)
        if isinstance(term, RecordTerm | BranchTerm):  # a record's fields are typed terms too
            args = tuple(self.term(arg) for arg in term.args)
            return (
                term if all(map(_same, args, term.args)) else dataclasses.replace(term, args=args)
            )
        if not isinstance(term, BinaryOp):
            return term
        left, right = self.term(term.left), self.term(term.right)
        if self.inference.operation_type(term, self.scope) == UNSIGNED:
            if term.op in _EXTREMES:
                self.changed = True
                return _flip(BinaryOp(term.op, _flip(left), _flip(right), term.span))
            if term.op in _UNSIGNED_FORM:
                self.changed = True
                return BinaryOp(_UNSIGNED_FORM[term.op], left, right, term.span)
        if left is term.left and right is term.right:
            return term
        return BinaryOp(term.op, left, right, term.span)


def _same(a: Term, b: Term) -> bool:
    return a is b
