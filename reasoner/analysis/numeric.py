"""The operations whose meaning depends on a value's numeric type: `unsigned` and `float`.

Both are stored as 64-bit patterns in the columns numbers use (an unsigned's bits, 2^64 - 1
as -1; a float's IEEE bits), so tables, joins, equality of bits and the state's encoding are
those of numbers, and every executor holds them unchanged. The type inference
(`reasoner.analysis.types`) knows the type each operation works in; this pass rewrites the
rules, facts and queries the engine evaluates into operations every executor knows, and drops
the casts (`as(x, T)`), which change a type and no bit. The program as written keeps its
operators (messages and the test oracle read it).

On `unsigned` values, addition, subtraction, multiplication, the bitwise and logical
operators and the left shift give the same bits under either reading. What differs is:

- **order** (`<`, `<=`, `>`, `>=`, `max`, `min`, and the `min`/`max` aggregates): flipping the
  top bit (`x bxor -2^63`) maps the unsigned order onto the signed one, so an ordering
  comparison of the flipped operands is one every executor already evaluates, and
  `max(a, b)` becomes `flip(max(flip(a), flip(b)))`; the aggregates become `umin`/`umax`;
- **division, remainder and power**: `udiv`, `umod` and `upow` (`reasoner.values.arith`), operators
  of their own in every executor (on Spark, a stratum that divides unsigned values runs in
  the driver);
- **the right shift** `bshr`, which sign-extends a number: on an unsigned it is `bshru`;
- **`to_string`**, which writes an unsigned's unsigned reading (`UNSIGNED_TO_STRING`), while
  `to_number(u)` and `to_unsigned(n)` keep the bits, as a cast does, and are dropped.

On floats every arithmetic operation becomes a functor of `reasoner.values.functors` (`fadd!`...,
`fneg!` for a unary minus), and so do the conversions (`itof!`, `ftoi!`, `ftos!`...); a
literal in float context becomes its IEEE pattern; a comparison becomes one of
`fcmp!(a, b)` with 0, except an equality that is one of Soufflé's aliases
(`reasoner.analysis.floats`); an atom's float argument that is an expression, or the
constant 0.0 or -0.0, gets a variable of its own, compared; the aggregates become `fsum`,
`fmin` and `fmax` (`mean` only takes floats).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import cast

from reasoner.analysis.floats import aliases
from reasoner.analysis.model import AggregateDefinition
from reasoner.analysis.ranges import generator, is_generator
from reasoner.analysis.types import TypeInference
from reasoner.errors import Span
from reasoner.syntax.ast import (
    AggregateOp,
    ArithOp,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    CompareOp,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
    Wildcard,
    is_negation,
    rule_terms,
)
from reasoner.values import floats
from reasoner.values.functors import (
    CONVERSIONS,
    FLOAT_COMPARE,
    FLOAT_CONVERSIONS,
    FLOAT_NEGATE,
    FLOAT_OPERATIONS,
    SYMBOL_COMPARE,
    SYMBOL_OPERATIONS,
    UNSIGNED_TO_STRING,
)
from reasoner.values.records import AdtType, RecordType, ValueType
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType

_BIAS = -(1 << 63)
"""The pattern with only the top bit set: `x bxor _BIAS` maps unsigned order to signed."""
_ORDERING = frozenset({"<", "<=", ">", ">="})
_UNSIGNED_FORM: Mapping[str, ArithOp] = {"/": "udiv", "%": "umod", "^": "upow", "bshr": "bshru"}
_EXTREMES = frozenset({"max", "min"})
DRIVER_OPERATORS = frozenset({"udiv", "umod", "^", "upow"})
"""Operators Spark cannot compute as Soufflé does: unsigned division (Spark has no unsigned
long) and `^` (Soufflé's goes through the C library's `pow`, whose rounding Java's need not
share: `reasoner.values.arith.power`)."""
_TYPED_AGGREGATES: Mapping[ColumnType, Mapping[str, AggregateOp]] = {
    UNSIGNED: {"min": "umin", "max": "umax"},
    FLOAT: {"sum": "fsum", "min": "fmin", "max": "fmax"},
}
_FLOAT_ORDER: Mapping[str, tuple[CompareOp, bool]] = {
    "<": ("<", False),
    "<=": ("<=", False),
    ">": ("<", True),
    ">=": ("<=", True),
    "!=": ("!=", False),
    "=": ("=", False),
}
"""Each comparison of floats as one of `fcmp!` with 0, and whether its operands swap."""
FLOAT_VARIABLE = "#f"
"""The prefix of the variables the rewrite gives an atom's compared float arguments (`#` starts
no name a program can write)."""


def numeric_operations(
    program: Program, inference: TypeInference, origins: dict[int, int] | None = None
) -> Program:
    """`program` with every operation on `unsigned` values and floats in the forms the module
    docstring lists; `program` itself when it has none. `inference` has visited `program`'s
    rules and facts. `origins` receives, for each comparison appended to a rule's body, the
    position of the atom it compares an argument of (why-not names that atom)."""
    rewriter = _Rewriter(inference)
    rules = tuple(rewriter.rule(rule) for rule in program.rules)
    if origins is not None:
        origins.update(rewriter.origins)
    facts = []
    for fact in program.facts:
        rewriter.scope = inference.scopes[id(fact)]
        facts.append(dataclasses.replace(fact, atom=rewriter.atom(fact.atom)))
    if not rewriter.changed:
        return program
    return dataclasses.replace(program, rules=rules, facts=tuple(facts))


def numeric_body(
    body: tuple[BodyLiteral, ...], inference: TypeInference
) -> tuple[BodyLiteral, ...]:
    """A query's body (visited by `inference` as the clause of scope 0) with its unsigned
    and float operations rewritten."""
    rewriter = _Rewriter(inference)
    return rewriter.body(body)


def numeric_aggregates(
    aggregates: Sequence[AggregateDefinition], types: Mapping[str, Sequence[ColumnType]]
) -> tuple[AggregateDefinition, ...]:
    """The aggregates, `min` and `max` of an `unsigned` expression as `umin` and `umax`, and
    `sum`, `min` and `max` of a float one as `fsum`, `fmin` and `fmax`."""
    result = []
    for aggregate in aggregates:
        column = aggregate.value_type(types)
        forms = _TYPED_AGGREGATES.get(column, {}) if column is not None else {}
        if aggregate.op in forms:
            aggregate = dataclasses.replace(aggregate, op=forms[aggregate.op])
        result.append(aggregate)
    return tuple(result)


def uses_driver_arithmetic(rules: Sequence[Rule]) -> bool:
    """Whether any of `rules` uses an operator of `DRIVER_OPERATORS`."""
    return any(
        isinstance(term, BinaryOp) and term.op in DRIVER_OPERATORS for term in rule_terms(rules)
    )


def _flip(term: Term) -> Term:
    return BinaryOp("bxor", term, NumberConst(_BIAS, term.span), term.span)


def _compare_floats(op: str, left: Term, right: Term, span: Span) -> Comparison:
    compared, swap = _FLOAT_ORDER[op]
    operands = (right, left) if swap else (left, right)
    call = Functor(FLOAT_COMPARE, operands, span)
    return Comparison(compared, call, NumberConst(0, span, NUMBER), span)


class _Rewriter:
    def __init__(self, inference: TypeInference) -> None:
        self.inference = inference
        self.changed = False
        self.scope = 0
        """The clause being rewritten (`TypeInference.scopes`; a query's is 0): each clause
        is typed on its own."""
        self.aliases: set[int] = set()
        """The clause's equalities of floats that stay `=` (`reasoner.analysis.floats`)."""
        self.compared: list[Comparison] = []
        """What the clause's atoms' compared float arguments add to its body."""
        self.position = 0
        """The position in its body of the literal being rewritten."""
        self.origins: dict[int, int] = {}
        """For each comparison added, by `id`, the position of its atom in its body."""

    def rule(self, rule: Rule) -> Rule:
        self.scope = self.inference.scopes[id(rule)]
        changed = self.changed
        self.changed = False
        head = self.atom(rule.head)
        body = self.body(rule.body)
        rewritten = dataclasses.replace(rule, head=head, body=body) if self.changed else rule
        self.changed = self.changed or changed
        return rewritten

    def body(self, body: tuple[BodyLiteral, ...]) -> tuple[BodyLiteral, ...]:
        """The literals rewritten, then what comparing atoms' float arguments adds."""
        self.aliases = aliases(body, self._compares_floats)
        unsigned_ranges = self._unsigned_generators(body)
        self.compared = []
        literals: list[BodyLiteral] = []
        for self.position, literal in enumerate(body):
            if is_generator(literal) and generator(literal)[0] in unsigned_ranges:
                literals += self._unsigned_range(cast(Comparison, literal))
            else:
                literals.append(self.literal(literal))
        return (*literals, *self.compared)

    def _unsigned_range(self, literal: Comparison) -> list[BodyLiteral]:
        """`#range<n> = range(a, b[, step])` over unsigned values: a range over the flipped
        patterns, `#range<n>u = range(a', b'[, step])`, whose signed order is the unsigned
        order of the values (up or down by one, or up by a constant step below 2^63, checked
        by the type inference), and `#range<n>` as its flip, in both directions: from a
        bound `#range<n>` the planners then test membership, never list the range."""
        self.changed = True
        call = cast(Functor, literal.right)
        variable = cast(Variable, literal.left)
        flipped = Variable(f"{variable.name}u", variable.span)
        bounds = [_flip(self.term(bound)) for bound in call.args[:2]]
        step = [self.term(arg) for arg in call.args[2:]]
        span = literal.span
        return [
            Comparison("=", flipped, _flip(variable), span),
            Comparison("=", variable, _flip(flipped), span),
            Comparison("=", flipped, dataclasses.replace(call, args=(*bounds, *step)), span),
        ]

    def _unsigned_generators(self, body: tuple[BodyLiteral, ...]) -> frozenset[str]:
        """The variables of the body's unsigned ranges (`_unsigned_range`)."""
        return frozenset(
            generator(literal)[0]
            for literal in body
            if is_generator(literal)
            and self.inference.operation_type(
                cast(Functor, cast(Comparison, literal).right), self.scope
            )
            == UNSIGNED
        )

    def _compares_floats(self, comparison: Comparison) -> bool:
        return self.inference.operation_type(comparison, self.scope) == FLOAT

    def atom(self, atom: Atom, positive: bool = False) -> Atom:
        args = tuple(self._argument(atom, i, arg, positive) for i, arg in enumerate(atom.args))
        return atom if all(map(_same, args, atom.args)) else dataclasses.replace(atom, args=args)

    def _argument(self, atom: Atom, index: int, arg: Term, positive: bool) -> Term:
        """An atom's argument rewritten; in a positive body atom, a float one (a record's
        field too) that matching bits would get wrong (module docstring) becomes a
        variable, compared."""
        term = self.term(arg)
        if not positive:
            return term
        kind = self.inference.column_value_type(atom.relation, index)
        return self._compared(arg, term, kind)

    def _compared(self, written: Term, term: Term, kind: ValueType) -> Term:
        """`term` (`written` rewritten) in an atom's place of type `kind`: compared unless
        it was written a variable or a wildcard (a cast, `as(n, float)`, is a term)."""
        if isinstance(term, RecordTerm | BranchTerm) and isinstance(
            written, RecordTerm | BranchTerm
        ):
            fields = _fields(term, kind)
            if fields is None:
                return term
            parts = zip(written.args, term.args, fields, strict=True)
            args = tuple(self._compared(w, arg, field) for w, arg, field in parts)
            if all(map(_same, args, term.args)):
                return term
            return dataclasses.replace(term, args=args)
        if kind != FLOAT or isinstance(written, Variable | Wildcard):
            return term
        if isinstance(term, NumberConst) and floats.from_bits(term.value) != 0.0:
            return term
        self.changed = True
        variable = Variable(f"{FLOAT_VARIABLE}{len(self.compared)}", term.span)
        self.compared.append(_compare_floats("=", variable, term, term.span))
        self.origins[id(self.compared[-1])] = self.position
        return variable

    def literal(self, literal: BodyLiteral) -> BodyLiteral:
        if isinstance(literal, Atom):
            return self.atom(literal, positive=True)
        if isinstance(literal, Negation):
            atom = self.atom(literal.atom)
            return literal if atom is literal.atom else dataclasses.replace(literal, atom=atom)
        left, right = self.term(literal.left), self.term(literal.right)
        kind = self.inference.operation_type(literal, self.scope)
        if kind == FLOAT and id(literal) not in self.aliases:
            self.changed = True
            return _compare_floats(literal.op, left, right, literal.span)
        if kind == SYMBOL and literal.op in _ORDERING:
            self.changed = True
            call = Functor(SYMBOL_COMPARE, (left, right), literal.span)
            return Comparison(literal.op, call, NumberConst(0, literal.span, NUMBER), literal.span)
        if literal.op in _ORDERING and kind == UNSIGNED:
            self.changed = True
            left, right = _flip(left), _flip(right)
        if left is literal.left and right is literal.right:
            return literal
        return Comparison(literal.op, left, right, literal.span)

    def term(self, term: Term) -> Term:
        if isinstance(term, Cast):  # checked by the type inference; the bits stay
            self.changed = True
            return self.term(term.term)
        if isinstance(term, NumberConst):
            return self._number(term)
        if isinstance(term, Functor):
            return self._functor(term)
        if isinstance(term, RecordTerm | BranchTerm):  # a record's fields are typed terms too
            args = tuple(self.term(arg) for arg in term.args)
            return (
                term if all(map(_same, args, term.args)) else dataclasses.replace(term, args=args)
            )
        if not isinstance(term, BinaryOp):
            return term
        left, right = self.term(term.left), self.term(term.right)
        kind = self.inference.operation_type(term, self.scope)
        if kind == FLOAT and is_negation(term):
            self.changed = True
            return Functor(FLOAT_NEGATE, (right,), term.span)
        if kind == FLOAT and term.op in FLOAT_OPERATIONS:  # others are type errors, reported
            self.changed = True
            return Functor(FLOAT_OPERATIONS[term.op], (left, right), term.span)
        if kind == SYMBOL and term.op in SYMBOL_OPERATIONS:  # others are type errors, reported
            self.changed = True
            return Functor(SYMBOL_OPERATIONS[term.op], (left, right), term.span)
        if kind == UNSIGNED:
            if term.op in _EXTREMES:
                self.changed = True
                return _flip(BinaryOp(term.op, _flip(left), _flip(right), term.span))
            if term.op in _UNSIGNED_FORM:
                self.changed = True
                return BinaryOp(_UNSIGNED_FORM[term.op], left, right, term.span)
        if left is term.left and right is term.right:
            return term
        return BinaryOp(term.op, left, right, term.span)

    def _number(self, term: NumberConst) -> Term:
        """A literal without a point in float context: the pattern of its value as a float
        (`-0` is -0.0: Soufflé reads the literal's text, minus included, with `stod`)."""
        if term.kind in (None, NUMBER) and self.inference.operation_type(term, self.scope) == FLOAT:
            self.changed = True
            value = -0.0 if term.kind == NUMBER and term.value == 0 else float(term.value)
            return NumberConst(floats.to_bits(value), term.span, FLOAT)
        return term

    def _functor(self, term: Functor) -> Term:
        args = tuple(self.term(arg) for arg in term.args)
        kind = self.inference.conversion(term, self.scope)
        if kind == FLOAT and term.name == "to_float":  # a float already
            self.changed = True
            return args[0]
        converted = FLOAT_CONVERSIONS.get((term.name, kind or ""))
        if converted is not None:
            self.changed = True
            return Functor(converted, args, term.span)
        if kind in (NUMBER, UNSIGNED) and term.name in CONVERSIONS:  # the bits stay, as a cast's
            self.changed = True
            return args[0]
        if kind == UNSIGNED and term.name == "to_string":
            self.changed = True
            return Functor(UNSIGNED_TO_STRING, args, term.span)
        if all(map(_same, args, term.args)):
            return term
        return dataclasses.replace(term, args=args)


def _same(a: Term, b: Term) -> bool:
    return a is b


def _fields(term: RecordTerm | BranchTerm, kind: ValueType) -> tuple[ValueType, ...] | None:
    """The types of the fields of a record or branch term of type `kind` (None if it is of
    no such type: a type error, reported)."""
    if isinstance(term, RecordTerm) and isinstance(kind, RecordType):
        return kind.fields if len(kind.fields) == len(term.args) else None
    if isinstance(term, BranchTerm) and isinstance(kind, AdtType):
        branch = next((b for b in kind.branches if b.name == term.name), None)
        return None if branch is None or len(branch.fields) != len(term.args) else branch.fields
    return None
