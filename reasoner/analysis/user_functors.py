"""User-defined functors: each `.functor` declaration bound to its implementation, and each
`@f(...)` call checked against its declaration and named for what it was bound to.

A declaration's types are `number`, `unsigned`, `float`, `symbol` or named types of one of
them (checked as their primitive type: a subtype's values at a call are not told from its
base's, where Soufflé would refuse a number passed for an `Even`); a record or an algebraic data
type is refused by name (Soufflé passes those to stateful functors only, as ids in its record
table, which a functor of plain values cannot read). The implementation comes from the
`FunctorLibrary` the program is analyzed with (`reasoner.values.functor_library`): none of
that name is `unknown_functor` at the declaration, so a program never fails for it later.

Calls are checked first of all, so that every later pass sees bound calls: a call of a functor
no `.functor` declares is `unknown_functor`, one with the wrong number of arguments
`arity_mismatch`, both at the call; the types of the arguments and of the result are the type
inference's (`reasoner.analysis.types`), as a built-in functor's are. A bound call is named as
`reasoner.values.functors.register` says (`@f#1`, which messages show as `@f`), and every
evaluator applies it as it applies a built-in functor; a refused call keeps its name as written,
which no implementation has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import cast

from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.report import Reporter
from reasoner.errors import ARITY_MISMATCH, UNKNOWN_FUNCTOR, UNKNOWN_TYPE, UNSUPPORTED_FEATURE
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Column,
    Comparison,
    Fact,
    Functor,
    FunctorDeclaration,
    Negation,
    Program,
    RecordTerm,
    Rule,
    Term,
    operands,
)
from reasoner.values import functors, user_functors
from reasoner.values.functor_library import FunctorLibrary, FunctorUnavailable
from reasoner.values.types import RECORD, ColumnType


@dataclasses.dataclass(frozen=True, slots=True)
class Declared:
    """A declared functor: its number of parameters, and the name its calls take once bound
    (None: its types were refused, and so, quietly, are its calls). A functor without an
    implementation is bound to `user_functors.unavailable`, so that its calls are checked;
    its program is refused all the same."""

    arity: int
    bound: str | None


def bind_functors(
    program: Program, named: TypeSystem, library: FunctorLibrary | None, reporter: Reporter
) -> tuple[Program, dict[str, str]]:
    """`program` with its calls of user-defined functors bound, and the name each functor
    (`@f`) is bound to, for the queries that may call it (`bind_calls`)."""
    types = _Types(named, frozenset(t.name for t in program.types), reporter)
    declared = {
        functors.USER_PREFIX + declaration.name: _declare(declaration, types, library, reporter)
        for declaration in program.functors
    }
    bound = {name: found.bound for name, found in declared.items() if found.bound is not None}
    binder = _Binder(declared, reporter)
    rules = tuple(binder.rule(rule) for rule in program.rules)
    facts = tuple(binder.fact(fact) for fact in program.facts)
    if _same(rules, program.rules) and _same(facts, program.facts):
        return program, bound
    return dataclasses.replace(program, rules=rules, facts=facts), bound


def bind_calls(
    body: tuple[BodyLiteral, ...], bound: Mapping[str, str], reporter: Reporter
) -> tuple[BodyLiteral, ...]:
    """A query's body with its calls bound to the functors its program bound (`bound`)."""
    declared = {
        name: Declared(len(functors.signature(target).params), target)
        for name, target in bound.items()
    }
    binder = _Binder(declared, reporter)
    return _calls_last(tuple(binder.literal(literal) for literal in body))


def _declare(
    declaration: FunctorDeclaration,
    kinds: _Types,
    library: FunctorLibrary | None,
    reporter: Reporter,
) -> Declared:
    arity = len(declaration.params)
    what = f"functor `{declaration.name}`"
    types = [
        kinds.of(column, f"parameter {index + 1} of {what}")
        for index, column in enumerate(declaration.params)
    ]
    result = kinds.of(declaration.result, f"the result of {what}")
    if result is None or None in types:
        return Declared(arity, None)
    params = tuple(kind for kind in types if kind is not None)
    library = library if library is not None else FunctorLibrary()
    try:
        implementation = library.implementation(
            declaration.name, params, result, declaration.stateful
        )
    except FunctorUnavailable as unavailable:
        # Reported here; its calls are still checked, as if it had an implementation.
        reporter.error(unavailable.code, unavailable.message, declaration.span)
        implementation = user_functors.unavailable
    return Declared(arity, user_functors.bind(declaration.name, params, result, implementation))


@dataclasses.dataclass(frozen=True, slots=True)
class _Types:
    named: TypeSystem
    declared: frozenset[str]
    """The names `.type` declares (one found wrong is reported at its declaration)."""
    reporter: Reporter

    def of(self, column: Column, what: str) -> ColumnType | None:
        """The primitive type of a declared parameter or result, or None, reported."""
        primitive = self.named.primitive(column.type)
        if primitive is None:
            if column.type not in self.declared:
                self.reporter.error(
                    UNKNOWN_TYPE,
                    f"unknown type `{column.type}` of {what}: number, unsigned, float, symbol "
                    "or a type declared with .type",
                    column.span,
                )
            return None
        if primitive == RECORD:
            self.reporter.error(
                UNSUPPORTED_FEATURE,
                f"`{column.type}`, a record type, as {what} is not supported: Soufflé passes "
                "records to stateful functors as ids of its record table; give the functor "
                "the fields instead",
                column.span,
            )
            return None
        return primitive


def _calls_last(body: tuple[BodyLiteral, ...]) -> tuple[BodyLiteral, ...]:
    """`body` with its comparisons that call a user-defined functor after its other
    comparisons, each in the other's place: the executors test a rule's comparisons in body
    order once their variables are bound, and a functor is so called only on the
    instantiations that the cheap tests let through, as Soufflé (which orders conditions by
    their cost) calls it (`x = @half(y), y % 2 = 0` calls `@half` on even `y` only)."""
    places = [index for index, literal in enumerate(body) if isinstance(literal, Comparison)]
    comparisons = [cast(Comparison, body[index]) for index in places]
    calling = [_calls_user(c.left) or _calls_user(c.right) for c in comparisons]
    ordered = [c for c, call in zip(comparisons, calling, strict=True) if not call]
    ordered += [c for c, call in zip(comparisons, calling, strict=True) if call]
    if all(a is b for a, b in zip(ordered, comparisons, strict=True)):
        return body
    result = list(body)
    for index, comparison in zip(places, ordered, strict=True):
        result[index] = comparison
    return tuple(result)


def _calls_user(term: Term) -> bool:
    stack = [term]
    while stack:
        node = stack.pop()
        if isinstance(node, Functor) and node.name.startswith(functors.USER_PREFIX):
            return True
        if not isinstance(node, Aggregate):  # its body is ordered on its own
            stack.extend(operands(node))
    return False


def _same(new: tuple[object, ...], old: tuple[object, ...]) -> bool:
    return all(a is b for a, b in zip(new, old, strict=True))


class _Walker:
    """Rebuilds rules, facts, literals and terms bottom-up through `visit`, which sees every
    functor call (its arguments done); what `visit` leaves unchanged stays the same object."""

    def __init__(self, visit: Callable[[Functor], Term]) -> None:
        self.visit = visit

    def rule(self, rule: Rule) -> Rule:
        head = self.atom(rule.head)
        body = _calls_last(tuple(self.literal(literal) for literal in rule.body))
        dominating = None if rule.dominating is None else self.atom(rule.dominating)
        if head is rule.head and _same(body, rule.body) and dominating is rule.dominating:
            return rule
        return dataclasses.replace(rule, head=head, body=body, dominating=dominating)

    def fact(self, fact: Fact) -> Fact:
        atom = self.atom(fact.atom)
        return fact if atom is fact.atom else dataclasses.replace(fact, atom=atom)

    def literal(self, literal: BodyLiteral) -> BodyLiteral:
        if isinstance(literal, Atom):
            return self.atom(literal)
        if isinstance(literal, Negation):
            atom = self.atom(literal.atom)
            return literal if atom is literal.atom else dataclasses.replace(literal, atom=atom)
        left, right = self.term(literal.left), self.term(literal.right)
        if left is literal.left and right is literal.right:
            return literal
        return dataclasses.replace(literal, left=left, right=right)

    def atom(self, atom: Atom) -> Atom:
        args = tuple(self.term(arg) for arg in atom.args)
        return atom if _same(args, atom.args) else dataclasses.replace(atom, args=args)

    def term(self, term: Term) -> Term:
        if isinstance(term, Aggregate):
            target = None if term.target is None else self.term(term.target)
            body = _calls_last(tuple(self.literal(literal) for literal in term.body))
            if target is term.target and _same(body, term.body):
                return term
            return dataclasses.replace(term, target=target, body=body)
        if isinstance(term, BinaryOp):
            left, right = self.term(term.left), self.term(term.right)
            if left is term.left and right is term.right:
                return term
            return dataclasses.replace(term, left=left, right=right)
        if isinstance(term, Cast):
            inner = self.term(term.term)
            return term if inner is term.term else dataclasses.replace(term, term=inner)
        if isinstance(term, Functor | RecordTerm | BranchTerm):
            args = tuple(self.term(arg) for arg in term.args)
            if not _same(args, term.args):
                term = dataclasses.replace(term, args=args)
        return self.visit(term) if isinstance(term, Functor) else term


class _Binder(_Walker):
    def __init__(self, declared: Mapping[str, Declared], reporter: Reporter) -> None:
        super().__init__(self._call)
        self.declared = declared
        self.reporter = reporter

    def _call(self, term: Functor) -> Term:
        if not term.name.startswith(functors.USER_PREFIX):
            return term
        found = self.declared.get(term.name)
        if found is None:
            self.reporter.error(
                UNKNOWN_FUNCTOR,
                f"functor `{term.name}` is not declared: declare it with `.functor "
                f"{term.name[1:]}(...): Type`",
                term.span,
            )
            return term
        if len(term.args) != found.arity:
            self.reporter.error(
                ARITY_MISMATCH,
                f"functor `{term.name}` takes {found.arity} argument"
                f"{'s' * (found.arity != 1)}, but this call gives {len(term.args)}",
                term.span,
            )
            return term
        if found.bound is None:
            return term
        return dataclasses.replace(term, name=found.bound)
