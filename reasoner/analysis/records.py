"""Records and algebraic data types, rewritten into plain rules over ids.

Typed and checked as written, a rule's records become calls of two functors no program can
write (`reasoner.functors.PACK`, `FIELD`), so that every executor, Update and the rule changes
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

from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.safety import all_bound, bound_variables
from reasoner.functors import FIELD, PACK
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
    Span,
    Term,
    Variable,
    Wildcard,
    rule_terms,
)

RECORD_VARIABLE = "#r"
"""The prefix of the variables the rewrite makes (no program can write a `#`)."""


_RECORDS = (RecordTerm, BranchTerm, NilConst)


def record_terms(program: Program, types: TypeSystem) -> Program:
    """`program` with its rules' records rewritten (see the module docstring); the same
    program when it has none."""
    if not any(isinstance(term, _RECORDS) for term in rule_terms(program.rules)):
        return program
    rules = tuple(_Rewrite(types).rule(rule) for rule in program.rules)
    return dataclasses.replace(program, rules=rules)


class _Rewrite:
    def __init__(self, types: TypeSystem) -> None:
        self.types = types
        self.fresh = count()

    def rule(self, rule: Rule) -> Rule:
        if not any(isinstance(term, _RECORDS) for term in rule_terms((rule,))):
            return rule
        body: list[BodyLiteral] = []
        added: list[BodyLiteral] = []
        for index, literal in enumerate(rule.body):
            if isinstance(literal, Atom):
                args = tuple(self._matched(arg, added) for arg in literal.args)
                body.append(dataclasses.replace(literal, args=args))
            elif isinstance(literal, Negation):
                atom = literal.atom
                args = tuple(self.packed(arg) for arg in atom.args)
                body.append(dataclasses.replace(literal, atom=dataclasses.replace(atom, args=args)))
            else:
                others = rule.body[:index] + rule.body[index + 1 :]
                body.append(self._comparison(literal, bound_variables(others), added))
        head = dataclasses.replace(
            rule.head, args=tuple(self.packed(arg) for arg in rule.head.args)
        )
        return dataclasses.replace(rule, head=head, body=(*body, *added))

    def packed(self, term: Term) -> Term:
        """`term` with its records built: `pack!` of their fields, nil as 0. (Typed, a
        record is an argument, a comparison's side or a field: never an operand.)"""
        if isinstance(term, NilConst):
            return NumberConst(0, term.span)
        if isinstance(term, RecordTerm | BranchTerm):
            fields = tuple(self.packed(arg) for arg in term.args)
            if isinstance(term, BranchTerm):
                fields = (NumberConst(self._index(term), term.span), *fields)
            return Functor(PACK, fields, term.span)
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

    def _comparison(
        self, comparison: Comparison, bound: set[str], added: list[BodyLiteral]
    ) -> BodyLiteral:
        """A comparison of records: packed where the rest of the body binds every variable of
        a record side, else that side is taken apart against the other (the first literal
        that does it takes the comparison's place, the others go to `added`)."""
        left, right = comparison.left, comparison.right
        if not isinstance(left, _RECORDS) and not isinstance(right, _RECORDS):
            return comparison
        for pattern, other in ((left, right), (right, left)):
            if (
                comparison.op == "="
                and isinstance(pattern, RecordTerm | BranchTerm)
                and not all_bound(pattern, bound)
                and all_bound(other, bound)
            ):
                value = self.packed(other)
                if not isinstance(value, Variable):
                    variable = self._variable(other.span)
                    added.append(Comparison("=", variable, value, other.span))
                    value = variable
                start = len(added)
                self._take_apart(value, pattern, added)
                return added.pop(start)  # in the comparison's place: one literal for one
        return dataclasses.replace(comparison, left=self.packed(left), right=self.packed(right))
