"""Records and algebraic data types, rewritten into plain rules over ids.

Typed and checked as written, a rule's records become calls of two functors no program can
write (`reasoner.values.functors.PACK`, `FIELD`), so that every executor, Update and the rule
changes
see integers and expressions only, as they do for symbols:

    p([x, y]) :- q(x), r(y).       p(pack!(x, y)) :- q(x), r(y).
    s(x) :- p([x, _]).             s(x) :- p(#r0), x = field!(#r0, 0).
    t(v) :- e($Add($Num(v), _)).   t(v) :- e(#r0), field!(#r0, 0) = 1,
                                           #r1 = field!(#r0, 1), field!(#r1, 0) = 0,
                                           v = field!(#r1, 1).

A record built (in a head, a negated atom, a comparison whose variables the body binds) is
packed in place; one matched (in a positive atom, or against a bound value in an `=`) is taken
apart: each field is a test or an assignment, which the planner orders as any other. A field
of nil has no value, so a pattern never matches nil; a pattern of wildcards only is `!= nil`.
`nil` is 0. A branch's index is its first field. Facts are not rewritten: their records are
folded to text (`reasoner.analysis.facts`).
"""

from __future__ import annotations

import dataclasses
from itertools import count
from typing import cast

from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.safety import all_bound, bound_variables
from reasoner.errors import Span
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    BranchTerm,
    Comparison,
    Functor,
    Negation,
    NilConst,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
    Wildcard,
    rule_terms,
)
from reasoner.values.functors import FIELD, FIND, PACK

RECORD_VARIABLE = "#r"
"""The prefix of the variables the rewrite makes (no program can write a `#`)."""


_RECORDS = (RecordTerm, BranchTerm, NilConst)


def record_terms(
    program: Program, types: TypeSystem, origins: dict[int, int] | None = None
) -> Program:
    """`program` with its rules' records rewritten (see the module docstring); the same
    program when it has none. `origins` receives, for each literal the rewrite appends to a
    body (by `id`), the position of the body literal it takes apart."""
    if not any(isinstance(term, _RECORDS) for term in rule_terms(program.rules)):
        return program
    rewrite = _Rewrite(types)
    rules = tuple(rewrite.rule(rule) for rule in program.rules)
    if origins is not None:
        origins.update(rewrite.origins)
    return dataclasses.replace(program, rules=rules)


def _patterns(
    body: tuple[BodyLiteral, ...],
) -> tuple[dict[int, tuple[RecordTerm | BranchTerm, Term]], set[int]]:
    """The `=` comparisons of `body` that take a record apart, by position: (the record side,
    the side it is matched against). One is when the side it matches is bound and the record
    is not; decided one at a time, as safety binds variables, each binding the record's
    variables for the next (two copies of `[x, y] = r` must not each count on the other). A
    record whose variables are bound is built instead, and binds the variable it is
    assigned to (`r = [x, y]`): those comparisons are the second set."""
    candidates = {
        index: cast(Comparison, literal)
        for index, literal in enumerate(body)
        if _takes_record(literal)
    }
    chosen: dict[int, tuple[RecordTerm | BranchTerm, Term]] = {}
    built: set[int] = set()
    while True:
        settled = tuple(
            literal
            for index, literal in enumerate(body)
            if index not in candidates or index in chosen or index in built
        )
        bound = bound_variables(settled)
        for index, literal in candidates.items():
            if index in chosen or index in built:
                continue
            for pattern, other in ((literal.left, literal.right), (literal.right, literal.left)):
                if not all_bound(other, bound):
                    continue
                if isinstance(pattern, RecordTerm | BranchTerm) and not all_bound(pattern, bound):
                    chosen[index] = (pattern, other)
                elif isinstance(pattern, Variable) and pattern.name not in bound:
                    built.add(index)
            if index in chosen or index in built:
                break
        else:
            return chosen, built


def _takes_record(literal: BodyLiteral) -> bool:
    """Whether `literal` is an `=` with a record side (`_patterns` decides what it binds)."""
    return (
        isinstance(literal, Comparison)
        and literal.op == "="
        and isinstance(literal.left, _RECORDS) | isinstance(literal.right, _RECORDS)
    )


def record_body(body: tuple[BodyLiteral, ...], types: TypeSystem) -> tuple[BodyLiteral, ...]:
    """A query's body with its records rewritten as a rule's are."""
    span = Span(1, 1, 1, 1)
    return _Rewrite(types).rule(Rule(Atom("?", (), span), body, span)).body


class _Rewrite:
    def __init__(self, types: TypeSystem) -> None:
        self.types = types
        self.fresh = count()
        self.origins: dict[int, int] = {}

    def rule(self, rule: Rule) -> Rule:
        if not any(isinstance(term, _RECORDS) for term in rule_terms((rule,))):
            return rule
        body: list[BodyLiteral] = []
        added: list[BodyLiteral] = []
        patterns, assignments = _patterns(rule.body)
        stored = bound_variables(
            tuple(literal for index, literal in enumerate(rule.body) if not _takes_record(literal))
        )
        for index, literal in enumerate(rule.body):
            first = len(added)
            if isinstance(literal, Atom):
                args = tuple(self._matched(arg, added) for arg in literal.args)
                body.append(dataclasses.replace(literal, args=args))
            elif isinstance(literal, Negation):
                atom = literal.atom
                args = tuple(self.packed(arg, FIND) for arg in atom.args)
                body.append(dataclasses.replace(literal, atom=dataclasses.replace(atom, args=args)))
            elif index in patterns:
                body.append(self._matched_comparison(*patterns[index], added))
            else:
                body.append(self._packed_comparison(literal, index in assignments, stored))
            self.origins.update((id(new), index) for new in added[first:])
        head = dataclasses.replace(
            rule.head, args=tuple(self.packed(arg) for arg in rule.head.args)
        )
        return dataclasses.replace(rule, head=head, body=(*body, *added))

    def packed(self, term: Term, functor: str = PACK) -> Term:
        """`term` with its records built: `pack!` of their fields, nil as 0; `find!` where
        the record is only compared with stored ones (a negated atom's argument, a test),
        so that testing a record no tuple holds adds none to the table. (Typed, a record is
        an argument, a comparison's side or a field: never an operand.)"""
        if isinstance(term, NilConst):
            return NumberConst(0, term.span)
        if isinstance(term, RecordTerm | BranchTerm):
            fields = tuple(self.packed(arg, functor) for arg in term.args)
            if isinstance(term, BranchTerm):
                fields = (NumberConst(self._index(term), term.span), *fields)
            return Functor(functor, fields, term.span)
        return term

    def _index(self, term: BranchTerm) -> int:
        return self.types.branches[term.name].index

    def _matched(self, term: Term, added: list[BodyLiteral]) -> Term:
        """An argument of a positive atom: a record pattern becomes a fresh variable, taken
        apart by literals appended to `added`."""
        if isinstance(term, NilConst):
            return NumberConst(0, term.span)
        if not isinstance(term, RecordTerm | BranchTerm):
            return term
        variable = self._variable(term.span)
        self._take_apart(variable, term, added)
        return variable

    def _variable(self, span: Span) -> Variable:
        return Variable(f"{RECORD_VARIABLE}{next(self.fresh)}", span)

    def _take_apart(
        self, value: Term, pattern: RecordTerm | BranchTerm, added: list[BodyLiteral]
    ) -> None:
        """Literals that hold when `value` (bound) matches `pattern`."""
        stack: list[tuple[Term, RecordTerm | BranchTerm]] = [(value, pattern)]
        while stack:
            value, pattern = stack.pop()
            span = pattern.span
            fields: list[Term] = list(pattern.args)
            if isinstance(pattern, BranchTerm):
                fields.insert(0, NumberConst(self._index(pattern), span))
            tested = False
            for index, field in enumerate(fields):
                if isinstance(field, Wildcard):
                    continue
                tested = True
                read = Functor(FIELD, (value, NumberConst(index, span)), field.span)
                if isinstance(field, RecordTerm | BranchTerm):
                    inner = self._variable(field.span)
                    added.append(Comparison("=", inner, read, field.span))
                    stack.append((inner, field))
                else:
                    added.append(Comparison("=", self.packed(field), read, field.span))
            if not tested:
                added.append(Comparison("!=", value, NumberConst(0, span), span))

    def _packed_comparison(
        self, comparison: Comparison, assigns: bool, stored: set[str]
    ) -> Comparison:
        """A comparison with its records built: by `find!` where a record is only compared
        with a value from stored tuples (`!=`, or `=` whose other side atoms and plain
        comparisons bind: the planner may not make an assignment of it), else by `pack!`
        (`r = [x, y]` binds `r`; two built records must differ when no tuple holds either)."""
        left, right = comparison.left, comparison.right
        if not isinstance(left, _RECORDS) and not isinstance(right, _RECORDS):
            return comparison
        built = [isinstance(side, RecordTerm | BranchTerm) for side in (left, right)]
        other = right if built[0] else left
        compared = comparison.op == "!=" or all_bound(other, stored)
        functor = FIND if compared and not assigns and not all(built) else PACK
        return dataclasses.replace(
            comparison, left=self.packed(left, functor), right=self.packed(right, functor)
        )

    def _matched_comparison(
        self, pattern: RecordTerm | BranchTerm, other: Term, added: list[BodyLiteral]
    ) -> BodyLiteral:
        """`pattern = other` with `other` bound: the literals that take `other` apart (the
        first takes the comparison's place, one literal for one; the others go to `added`)."""
        value = self.packed(other)
        if not isinstance(value, Variable):  # the value built first, in the comparison's place
            variable = self._variable(other.span)
            self._take_apart(variable, pattern, added)
            return Comparison("=", variable, value, other.span)
        start = len(added)
        self._take_apart(value, pattern, added)
        return added.pop(start)
