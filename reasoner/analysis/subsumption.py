"""Soufflé's subsumption (`a(x, c1) <= a(x, c2) :- c2 < c1.`) as rules over the relation.

Soufflé removes a relation's dominated tuples as it evaluates (`UnitTranslator::
translateSubsumptiveRecursiveClauses`): after each iteration, the new tuples that another new
tuple or a tuple of the relation dominates are rejected, and then the tuples of the relation
that a surviving new tuple dominates are deleted; "another" is Soufflé's `addDistinct`, the
two tuples differ in some column. Each subsumptive clause becomes rules that derive those two
sets, per column i of the relation:

    a!rejected(d) :- a!new(d), a(g), body, d_i != g_i.
    a!deleted(d) :- a(d), a!new(g), body, d_i != g_i.

where `d` and `g` are the dominated and the dominating atoms' arguments made distinct variables
(a constant, an expression, a repeated variable or `_` becomes a fresh one, bound by `=` when it
is a term). The analysis types and rewrites them as any rule, then takes them out of the program
onto the relation's stratum (`Stratum.subsumption`), where `reasoner.executors.subsumption`
runs them after every iteration with `a!new` holding the iteration's tuples. The relations the
body reads are evaluated before the relation, or with it when they depend on it (`reads_of`;
a negated one then is a `cyclic_negation`).

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from reasoner.analysis.model import Stratum, Subsumption
from reasoner.analysis.relations import plural
from reasoner.analysis.report import Reporter
from reasoner.errors import ARITY_MISMATCH, Span
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Comparison,
    Program,
    Rule,
    Term,
    Variable,
    Wildcard,
)

NEW = "!new"
REJECTED = "!rejected"
DELETED = "!deleted"


def rewrite_subsumptions(program: Program, reporter: Reporter) -> Program:
    """`program` with each subsumptive clause replaced by its rules (see the module). The
    two atoms of a clause are tuples of one relation: of different lengths, the clause is
    refused (`arity_mismatch`, the relation's declaration is checked later)."""
    if not any(rule.dominating is not None for rule in program.rules):
        return program
    rules: list[Rule] = []
    for rule in program.rules:
        if rule.dominating is None:
            rules.append(rule)
        elif len(rule.dominating.args) != len(rule.head.args):
            reporter.error(
                ARITY_MISMATCH,
                f"the dominating atom has {plural(len(rule.dominating.args), 'argument')}, "
                f"the dominated one {len(rule.head.args)}: both are tuples of "
                f"`{rule.head.relation}`",
                rule.dominating.span,
            )
        else:
            rules.extend(_rules(rule))
    return dataclasses.replace(program, rules=tuple(rules))


def _rules(rule: Rule) -> Iterator[Rule]:
    assert rule.dominating is not None
    name = rule.head.relation
    bound: list[BodyLiteral] = []
    seen: set[str] = set()
    dominated = _variables(rule.head.args, "d", bound, seen)
    dominating = _variables(rule.dominating.args, "g", bound, seen)
    body = (*bound, *rule.body)
    span = rule.span

    def atom(relation: str, names: Sequence[Variable]) -> Atom:
        return Atom(relation, tuple(names), span)

    for d, g in zip(dominated, dominating, strict=True):
        differ = Comparison("!=", d, g, span)
        yield Rule(
            atom(name + REJECTED, dominated),
            (atom(name + NEW, dominated), atom(name, dominating), *body, differ),
            span,
            rule.text,
        )
        yield Rule(
            atom(name + DELETED, dominated),
            (atom(name, dominated), atom(name + NEW, dominating), *body, differ),
            span,
            rule.text,
        )


def _variables(
    args: tuple[Term, ...], prefix: str, bound: list[BodyLiteral], seen: set[str]
) -> list[Variable]:
    """The atom's arguments as distinct variables, binding a fresh one to each term."""
    out = []
    for i, arg in enumerate(args):
        if isinstance(arg, Variable) and arg.name not in seen:
            seen.add(arg.name)
            out.append(arg)
            continue
        fresh = Variable(f"{prefix}${i}", arg.span)
        if not isinstance(arg, Wildcard):
            bound.append(Comparison("=", fresh, arg, arg.span))
        out.append(fresh)
    return out


def split_subsumptions(program: Program) -> tuple[Program, dict[str, Subsumption]]:
    """The program without the subsumptions' rules, and each relation's `Subsumption`."""
    reject: dict[str, list[Rule]] = {}
    delete: dict[str, list[Rule]] = {}
    plain: list[Rule] = []
    for rule in program.rules:
        head = rule.head.relation
        if head.endswith(REJECTED):
            reject.setdefault(head.removesuffix(REJECTED), []).append(rule)
        elif head.endswith(DELETED):
            delete.setdefault(head.removesuffix(DELETED), []).append(rule)
        else:
            plain.append(rule)
    if not reject:
        return program, {}
    found = {
        name: Subsumption(name, name + NEW, tuple(rules), tuple(delete[name]))
        for name, rules in reject.items()
    }
    return dataclasses.replace(program, rules=tuple(plain)), found


def reads_of(found: dict[str, Subsumption]) -> dict[str, tuple[tuple[str, bool, Span], ...]]:
    """The relations each relation's subsumptions read, each with whether it is negated and
    where: the stratification evaluates them first, and refuses a negated one that depends on
    the relation."""
    reads: dict[str, tuple[tuple[str, bool, Span], ...]] = {}
    for name, subsumption in found.items():
        seen: dict[tuple[str, bool], Span] = {}
        for atom, positive in subsumption.body_atoms():
            seen.setdefault((atom.relation, not positive), atom.span)
        reads[name] = tuple((relation, negated, span) for (relation, negated), span in seen.items())
    return reads


def with_subsumptions(
    strata: Sequence[Stratum], found: dict[str, Subsumption]
) -> tuple[Stratum, ...]:
    """`strata` with each relation's subsumption on its stratum."""
    return tuple(
        dataclasses.replace(
            stratum,
            subsumption=tuple(found[n] for n in sorted(stratum.relations) if n in found),
        )
        if stratum.relations & found.keys()
        else stratum
        for stratum in strata
    )
