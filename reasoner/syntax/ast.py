"""The abstract syntax of the Datalog dialect (a Soufflé-compatible subset).

Every node carries a `Span` so that any later stage (analysis, planning, the service) can point
a diagnostic at the exact source text. Nodes are frozen dataclasses: the AST is shared between
stages and between the engine and the service, and must never be mutated in place.

Disjunction (`a :- b ; c.`) does not appear here: the parser desugars it into one `Rule` per
disjunct, each keeping the span of the whole source rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final
from typing import Literal as TypingLiteral

from reasoner.errors import Span
from reasoner.values.types import ColumnType


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Wildcard:
    """`_`: a fresh, anonymous variable at each occurrence."""

    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class NumberConst:
    value: int
    """The 64-bit pattern: an unsigned literal past 2^63 - 1 is stored as its wrapped value."""
    span: Span = field(compare=False)
    kind: ColumnType | None = None
    """`unsigned` for a literal that can only be one (`5u`, or a decimal past 2^63 - 1),
    `number` for one written negative (a number or a float, as its context says), `float`
    for one with a point (`value` is then its IEEE pattern); None for the others, whose type
    is the context's (a `number` where nothing says which), as Soufflé types its numeric
    constants."""


@dataclass(frozen=True, slots=True)
class StringConst:
    value: str
    span: Span = field(compare=False)


ArithOp = TypingLiteral[
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "band",
    "bor",
    "bxor",
    "bshl",
    "bshr",
    "bshru",
    "land",
    "lor",
    "lxor",
    "max",
    "min",
    # The unsigned forms of `/`, `%` and `^`, which the analysis gives operations on
    # `unsigned` values (`reasoner.analysis.numeric`); never written.
    "udiv",
    "umod",
    "upow",
]


@dataclass(frozen=True, slots=True)
class BinaryOp:
    """Integer arithmetic with Soufflé semantics (64-bit wrap-around, C division; see
    `reasoner.values.arith`). Soufflé's unary `bnot x` and `lnot x` and its `max(a, b, ...)` and
    `min(...)` are written with these by the parser."""

    op: ArithOp
    left: Term
    right: Term
    span: Span = field(compare=False)


def negation(operand: Term, minus: Span, span: Span) -> BinaryOp:
    """Unary `-x`, written `0 - x` so that every evaluator has only binary operations to
    know. Its 0 has an empty span at the minus sign (a written 0 spans one character at
    least): a float's negation flips its sign, which `0.0 - x` does not for `x = 0.0`."""
    zero = NumberConst(0, Span(minus.line, minus.column, minus.line, minus.column))
    return BinaryOp("-", zero, operand, span)


def is_negation(term: BinaryOp) -> bool:
    """Whether `term` is a unary `-x` (`negation`)."""
    zero = term.left
    return (
        term.op == "-"
        and isinstance(zero, NumberConst)
        and zero.value == 0
        and zero.kind is None
        and (zero.span.line, zero.span.column) == (zero.span.end_line, zero.span.end_column)
    )


@dataclass(frozen=True, slots=True)
class Functor:
    """A call of one of Soufflé's string functors (`cat`, `strlen`, `substr`, `contains`,
    `match`, `ord`, `to_number`, `to_string`; see `reasoner.values.functors`), a term like any
    arithmetic. The parser checks the name and the number of arguments. A user-defined
    functor's name starts with `@` (`@f`), as it is written; the analysis checks its call
    against its `.functor` declaration."""

    name: str
    args: tuple[Term, ...]
    span: Span = field(compare=False)


AUTOINC: Final = "autoinc"
"""`autoinc()`: a `Functor` of no arguments in a rule's head, a number per row the rule
derives; the analysis rewrites it (`reasoner.analysis.autoinc`)."""


AggregateOp = TypingLiteral[
    "count", "sum", "min", "max", "mean", "umin", "umax", "fsum", "fmin", "fmax", "autoinc"
]
"""`umin` and `umax`: `min` and `max` over `unsigned` values; `fsum`, `fmin` and `fmax`: over
floats (`mean` only takes floats); made by the analysis. `autoinc`: the numbering of a rule's
rows that `autoinc()` makes (`reasoner.analysis.autoinc`), never written as an aggregate."""


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Soufflé's `count : { body }`, `sum x : { body }`, `min`, `max`, `mean`: a value computed
    over the instantiations of `body`, one per binding of the variables the rule binds outside
    it. Only the parser and the analysis see one: `reasoner.analysis.aggregates` rewrites each
    into an auxiliary relation evaluated by grouping, so every later stage sees plain rules."""

    op: AggregateOp
    target: Term | None
    """The aggregated expression; None for `count`."""
    body: tuple[BodyLiteral, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Cast:
    """Soufflé's `as(term, Type)`: the value of `term`, its bits unchanged, read as a value of
    `Type` (a name as written; the analysis resolves it). Between `number` and `unsigned` it
    reinterprets the 64 bits, as Soufflé's does; the analysis checks it and then removes it
    (`reasoner.analysis.numeric`), so no executor meets one."""

    term: Term
    type: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class RecordTerm:
    """`[a, b, ...]`: a record, built in a head or an expression, taken apart in a body atom;
    its type is the record type its place gives (the analysis infers it)."""

    args: tuple[Term, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class BranchTerm:
    """`$Name(a, ...)` or `$Name`: a value of the algebraic data type that has the branch."""

    name: str
    args: tuple[Term, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class NilConst:
    """`nil`: the empty value of every record type."""

    span: Span = field(compare=False)


Term = (
    Variable
    | Wildcard
    | NumberConst
    | StringConst
    | BinaryOp
    | Functor
    | Aggregate
    | Cast
    | RecordTerm
    | BranchTerm
    | NilConst
)


PARTIAL_OPS = frozenset({"/", "%", "udiv", "umod"})
"""Operators without a value for some operands: a division by zero. (`^` has one for every
pair: zero to a negative power is Soufflé's -2^63, `reasoner.values.arith.power`.)"""
PARTIAL_FUNCTORS = frozenset({"to_number", "to_unsigned", "field!"})
"""Functors without a value for some operands: `to_number("x")`, a field of nil."""


def operands(term: Term) -> tuple[Term, ...]:
    """The terms `term` computes from: an operator's or functor's operands (an aggregate's
    are inside its body, which is not a term's)."""
    if isinstance(term, BinaryOp):
        return (term.left, term.right)
    if isinstance(term, Functor | RecordTerm | BranchTerm):
        return term.args
    if isinstance(term, Cast):
        return (term.term,)
    return ()


def rule_terms(rules: Iterable[Rule]) -> Iterator[Term]:
    """Every term of `rules`, arguments and comparison sides and their operands, at any
    depth (an aggregate's body aside)."""
    stack: list[Term] = []
    for rule in rules:
        stack.extend(rule.head.args)
        for literal in rule.body:
            if isinstance(literal, Comparison):
                stack += [literal.left, literal.right]
            else:
                stack.extend((literal.atom if isinstance(literal, Negation) else literal).args)
    while stack:
        term = stack.pop()
        yield term
        stack.extend(operands(term))


def may_lack_value(term: Term) -> bool:
    """Whether evaluating `term` applies a `PARTIAL_OPS` operator or a `PARTIAL_FUNCTORS`
    functor: it may then have no value, so every executor must drop the instantiations where
    it has none."""
    stack = [term]
    while stack:
        node = stack.pop()
        if isinstance(node, BinaryOp) and node.op in PARTIAL_OPS:
            return True
        if isinstance(node, Functor) and node.name in PARTIAL_FUNCTORS:
            return True
        stack.extend(operands(node))
    return False


@dataclass(frozen=True, slots=True)
class Atom:
    relation: str
    args: tuple[Term, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Negation:
    """`!atom` or `not atom`; only allowed on relations of strictly lower strata."""

    atom: Atom
    span: Span = field(compare=False)


CompareOp = TypingLiteral["=", "!=", "<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class Comparison:
    op: CompareOp
    left: Term
    right: Term
    span: Span = field(compare=False)


BodyLiteral = Atom | Negation | Comparison


@dataclass(frozen=True, slots=True)
class Rule:
    """A Horn clause with a conjunctive body (never empty: facts are `Fact`s).

    `text` is the source text of the rule as written (for a desugared disjunction: the whole
    source rule), used for display and as the stable identity of a rule in the service.
    """

    head: Atom
    body: tuple[BodyLiteral, ...]
    span: Span = field(compare=False)
    text: str = field(compare=False, default="")
    dominating: Atom | None = None
    """A subsumption (`head <= dominating :- body.`): the head's tuple is removed when the
    dominating atom's tuple of the same relation is another and the body holds
    (`reasoner.analysis.subsumption`); None for a plain rule."""


@dataclass(frozen=True, slots=True)
class Fact:
    """A ground head with no body; its arguments may be constant arithmetic (`p(1+2).`)."""

    atom: Atom
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    """The type as written: `number`, `unsigned`, `symbol`, or a name declared with `.type`
    (the analysis resolves it to a `ColumnType`)."""
    span: Span = field(compare=False)
    """Where the type is written."""


@dataclass(frozen=True, slots=True)
class BranchDeclaration:
    """`Name {field: Type, ...}`, one constructor of an algebraic data type."""

    name: str
    fields: tuple[Column, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class TypeDeclaration:
    """`.type Name <: base` (a subtype: the base's values, distinct from its other subtypes
    for checking), `.type Name = Other` (an alias), `.type Name = A | B` (a union),
    `.type Name = [x: T, ...]` (a record: `fields`) or `.type Name = A {x: T} | B {}` (an
    algebraic data type: `branches`)."""

    name: str
    kind: TypingLiteral["subtype", "alias", "union", "record", "adt"]
    bases: tuple[str, ...]
    span: Span = field(compare=False)
    fields: tuple[Column, ...] = ()
    branches: tuple[BranchDeclaration, ...] = ()


@dataclass(frozen=True, slots=True)
class Pragma:
    """`.pragma "key" "value"`: one of Soufflé's command-line options, set in the program."""

    key: str
    value: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class FunctorDeclaration:
    """`.functor name(a: Type, ...): Type [stateful]`: a user-defined functor that terms call as
    `@name(...)` (`reasoner.analysis.user_functors`), its implementation loaded beside the
    program (`reasoner.values.functor_library`). A parameter's `name` is "" when it is written
    as its type alone (`.functor f(number): number`)."""

    name: str
    params: tuple[Column, ...]
    result: Column
    stateful: bool
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Declaration:
    name: str
    columns: tuple[Column, ...]
    span: Span = field(compare=False)
    eqrel: bool = False
    """Soufflé's `eqrel` qualifier: the relation is the equivalence closure of what its
    rules and facts give (`reasoner.analysis.eqrel`)."""
    overridable: bool = False
    """Soufflé's `overridable` qualifier: a component inheriting the relation may replace
    its rules (`.override`, `reasoner.syntax.components`)."""
    choice_domain: tuple[ChoiceKey, ...] = ()
    """Soufflé's `choice-domain`: each key's attributes hold at most one tuple's values
    (`reasoner.executors.choice`)."""
    inline: bool = False
    """Soufflé's `inline` qualifier: the relation's clauses are substituted into the rules that
    read it (`reasoner.analysis.inline`)."""
    magic: bool | None = None
    """Soufflé's `magic` (True) and `no_magic` (False) qualifiers: the relation is, or is not,
    one the magic-set transformation may rewrite (`reasoner.analysis.magic`)."""


@dataclass(frozen=True, slots=True)
class ChoiceKey:
    """One key of a `choice-domain` (`choice-domain x` or `choice-domain (x, y)`): its
    attributes, as written."""

    attributes: tuple[str, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Directive:
    """`.input name` / `.output name` / `.printsize name`, with optional Soufflé-style
    parameters (`.input edge(filename="e.tsv", delimiter=",")`)."""

    kind: TypingLiteral["input", "output", "printsize"]
    relation: str
    params: tuple[tuple[str, str], ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Program:
    declarations: tuple[Declaration, ...] = ()
    directives: tuple[Directive, ...] = ()
    rules: tuple[Rule, ...] = ()
    facts: tuple[Fact, ...] = ()
    types: tuple[TypeDeclaration, ...] = ()
    pragmas: tuple[Pragma, ...] = ()
    functors: tuple[FunctorDeclaration, ...] = ()
