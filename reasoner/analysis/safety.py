"""Range restriction: every variable a rule needs must come from a positive body atom.

A variable is bound when it is a plain argument of a positive body atom, or when it is one side
of an `=` whose other side only uses bound variables (`y = x + 1`, `x = 3`), repeated to a
fixpoint. Head variables, variables of negated atoms, of comparisons and of arithmetic must be
bound, otherwise the rule would range over an infinite domain. Wildcards are fine wherever "any
value" makes sense (positive and negated atom arguments) and nowhere else.

A record taken apart binds its fields: the variables of a record in a positive atom, at any
depth of records (`p([x, [y, _]])`), are bound, and so are those of a record on one side of an
`=` whose other side is bound (`[x, y] = r`).
"""

from __future__ import annotations

from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import leaves, taken_apart
from reasoner.errors import UNSAFE_RULE
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Fact,
    Functor,
    Negation,
    RecordTerm,
    Rule,
    Term,
    Variable,
    Wildcard,
)


def atom_variables(body: tuple[BodyLiteral, ...]) -> set[str]:
    """Names of the variables the positive atoms of `body` bind (their records' too)."""
    return {
        part.name
        for literal in body
        if isinstance(literal, Atom)
        for arg in literal.args
        for part in taken_apart(arg)
        if isinstance(part, Variable)
    }


def bound_variables(body: tuple[BodyLiteral, ...]) -> set[str]:
    """Names of the variables that `body` binds."""
    bound = atom_variables(body)
    equalities = [lit for lit in body if isinstance(lit, Comparison) and lit.op == "="]
    changed = bool(equalities)
    while changed:
        changed = False
        for equality in equalities:
            for target, source in (
                (equality.left, equality.right),
                (equality.right, equality.left),
            ):
                if not all_bound(source, bound):
                    continue
                for part in taken_apart(target):
                    if isinstance(part, Variable) and part.name not in bound:
                        bound.add(part.name)
                        changed = True
    return bound


def all_bound(term: Term, bound: set[str]) -> bool:
    """Whether `term` has a value once `bound` are: no wildcard, every variable bound."""
    for leaf in leaves(term):
        if isinstance(leaf, Wildcard):
            return False
        if isinstance(leaf, Variable) and leaf.name not in bound:
            return False
    return True


class _Checker:
    """Reports each unbound variable once per rule, at its first offending occurrence."""

    def __init__(self, reporter: Reporter, bound: set[str]) -> None:
        self.reporter = reporter
        self.bound = bound
        self.reported: set[str] = set()

    def term(self, term: Term, where: str, *, wildcard_ok: bool = False) -> None:
        for leaf in leaves(term):
            if isinstance(leaf, Variable):
                if leaf.name not in self.bound and leaf.name not in self.reported:
                    self.reported.add(leaf.name)
                    self.reporter.error(
                        UNSAFE_RULE,
                        f"variable `{leaf.name}` {where} is not bound by a positive body atom",
                        leaf.span,
                    )
            elif isinstance(leaf, Wildcard) and not wildcard_ok:
                self.reporter.error(UNSAFE_RULE, f"wildcard `_` is not allowed {where}", leaf.span)

    def body(self, body: tuple[BodyLiteral, ...]) -> None:
        for literal in body:
            if isinstance(literal, Atom):
                for arg in literal.args:
                    for part in taken_apart(arg):
                        if isinstance(part, BinaryOp | Functor | Cast):
                            self.term(part, "in an arithmetic expression")
            elif isinstance(literal, Negation):
                for arg in literal.atom.args:
                    if isinstance(arg, BinaryOp | Functor | Cast):
                        self.term(arg, "in an arithmetic expression")
                    else:
                        self.term(arg, "in a negated atom", wildcard_ok=True)
            else:
                for side, other in ((literal.left, literal.right), (literal.right, literal.left)):
                    # `l = [_, [_, _]]`: a record matched against a value may leave fields out.
                    pattern = (
                        literal.op == "="
                        and isinstance(side, RecordTerm | BranchTerm)
                        and not any(isinstance(leaf, Wildcard) for leaf in leaves(other))
                    )
                    self.term(side, "in a comparison", wildcard_ok=pattern)


def check_rule(rule: Rule, reporter: Reporter) -> None:
    checker = _Checker(reporter, bound_variables(rule.body))
    for arg in rule.head.args:
        checker.term(arg, "in the head")
    checker.body(rule.body)


def check_query(body: tuple[BodyLiteral, ...], reporter: Reporter) -> None:
    _Checker(reporter, bound_variables(body)).body(body)


def check_fact(fact: Fact, reporter: Reporter) -> None:
    for arg in fact.atom.args:
        for leaf in leaves(arg):
            if isinstance(leaf, Variable):
                message = f"variable `{leaf.name}` in a fact: facts must be ground"
                reporter.error(UNSAFE_RULE, message, leaf.span)
            elif isinstance(leaf, Wildcard):
                reporter.error(
                    UNSAFE_RULE, "wildcard `_` in a fact: facts must be ground", leaf.span
                )
