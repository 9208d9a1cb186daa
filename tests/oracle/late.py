"""Soufflé's late start of a rule's disconnected literals, in the strata where it decides rows
(the package's docstring gives the definition)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import replace

from reasoner.syntax.ast import Atom, BodyLiteral, Negation, Program, Rule, Wildcard
from tests.oracle.terms import aggregates_in, variables_in

LATE = "~late"
"""In the name of a relation this makes: no identifier holds a `~`."""


@dataclasses.dataclass(frozen=True)
class Shapes:
    """What of the whole program decides which literals move (the package's docstring)."""

    existential: frozenset[str]
    clauses: Counter[str]
    io: frozenset[str]

    @classmethod
    def of(cls, program: Program) -> Shapes:
        clauses = Counter(rule.head.relation for rule in program.rules)
        clauses.update(fact.atom.relation for fact in program.facts)
        io = frozenset(directive.relation for directive in program.directives)
        return cls(_existential(program, io), clauses, io)


def delayed(
    rules: list[Rule], stratum: frozenset[str], shapes: Shapes
) -> tuple[list[Rule], frozenset[str]]:
    """`rules` (a stratum's) with each group of body literals that shares no variable with
    the head and reads `stratum` moved into a nullary relation of its own, which the rule
    reads instead; and the stratum with those relations."""
    out: list[Rule] = []
    members = set(stratum)
    for rule in rules:
        groups, alone = _apart(rule, shapes.existential)
        late = [group for group in groups if _reads(group) & stratum]
        name = rule.head.relation
        if (
            not rule.head.args
            and not alone
            and len(groups) == 1
            and shapes.clauses[name] == 1
            and name not in shapes.io
        ):
            late = []  # `h() :- late().` is a copy, which Soufflé reads as `late` itself
        moved = {id(literal) for group in late for literal in group}
        heads = []
        for group in late:
            head = Atom(f"{name}{LATE}{len(members)}", (), rule.span)
            members.add(head.relation)
            heads.append(head)
            out.append(Rule(head, tuple(group), rule.span))
        body = (*heads, *(literal for literal in rule.body if id(literal) not in moved))
        out.append(replace(rule, body=body) if late else rule)
    return out, frozenset(members)


def is_late(name: str) -> bool:
    return LATE in name


def _apart(
    rule: Rule, existential: frozenset[str]
) -> tuple[list[list[BodyLiteral]], list[BodyLiteral]]:
    """The body's groups of literals connected by shared variables (each `_` a variable of
    its own) that share none with the head; and the literals that stay, being connected to
    the head or without variables (`r(_)` of an existential `r` has none)."""
    head = variables_in(rule.head)
    groups: list[tuple[set[str], list[BodyLiteral]]] = [(set(head), [])]
    alone: list[BodyLiteral] = []
    for literal in rule.body:
        names: set[str] = set()
        if not _existence(literal, existential):
            names = variables_in(literal)
            if _has_wildcard(literal):
                names.add(f"_{id(literal)}")
        if not names:
            alone.append(literal)
            continue
        joined = [group for group in groups if group[0] & names]
        merged: tuple[set[str], list[BodyLiteral]] = (names, [literal])
        for group in joined:
            groups.remove(group)
            merged = (merged[0] | group[0], group[1] + merged[1])
        groups.append(merged)
    alone += [lit for names, literals in groups if names & head for lit in literals]
    return [literals for names, literals in groups if not names & head and literals], alone


def _existence(literal: BodyLiteral, existential: frozenset[str]) -> bool:
    atom = literal.atom if isinstance(literal, Negation) else literal
    return (
        isinstance(atom, Atom)
        and atom.relation in existential
        and all(isinstance(arg, Wildcard) for arg in atom.args)
    )


def _existential(program: Program, io: frozenset[str]) -> frozenset[str]:
    """Soufflé's ReduceExistentials: the relations with a column and a clause that no
    aggregate reads, neither input nor output, read only as `r(_, ..., _)` except by the
    clauses of such relations that read themselves."""
    blocked = set(io)
    uses: dict[str, set[str]] = {}
    for rule in program.rules:
        head = rule.head.relation
        atoms = [
            lit.atom if isinstance(lit, Negation) else lit
            for lit in rule.body
            if isinstance(lit, Atom | Negation)
        ]
        recursive = rule.dominating is not None or any(a.relation == head for a in atoms)
        for atom in atoms:
            if atom.relation == head or all(isinstance(arg, Wildcard) for arg in atom.args):
                continue
            if recursive:
                uses.setdefault(head, set()).add(atom.relation)
            else:
                blocked.add(atom.relation)
        for node in (rule.head, *rule.body):
            for aggregate in aggregates_in(node):
                for inner in aggregate.body:
                    if isinstance(inner, Negation):
                        blocked.add(inner.atom.relation)
                    elif isinstance(inner, Atom):
                        blocked.add(inner.relation)
    grown = True
    while grown:
        grown = False
        for name in list(blocked):
            for used in uses.get(name, ()):
                if used not in blocked:
                    blocked.add(used)
                    grown = True
    heads = [rule.head for rule in program.rules] + [fact.atom for fact in program.facts]
    return frozenset(atom.relation for atom in heads if atom.args and atom.relation not in blocked)


def _reads(literals: list[BodyLiteral]) -> set[str]:
    """What the literals read where they could read their own stratum: positive atoms."""
    return {literal.relation for literal in literals if isinstance(literal, Atom)}


def _has_wildcard(node: object) -> bool:
    if isinstance(node, Wildcard):
        return True
    if isinstance(node, tuple | list):
        return any(_has_wildcard(item) for item in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return any(_has_wildcard(getattr(node, f.name)) for f in dataclasses.fields(node))
    return False
