"""Soufflé's late start of a rule's disconnected literals, in the strata where it decides rows
(the package's docstring gives the definition)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from reasoner.syntax.ast import Atom, BodyLiteral, Rule, Wildcard
from tests.oracle.terms import variables_in

LATE = "~late"
"""In the name of a relation this makes: no identifier holds a `~`."""


def delayed(rules: list[Rule], stratum: frozenset[str]) -> tuple[list[Rule], frozenset[str]]:
    """`rules` (a stratum's) with each group of body literals that shares no variable with
    the head and reads `stratum` moved into a nullary relation of its own, which the rule
    reads instead; and the stratum with those relations."""
    out: list[Rule] = []
    members = set(stratum)
    for rule in rules:
        late = [group for group in _apart(rule) if _reads(group) & stratum]
        moved = {id(literal) for group in late for literal in group}
        heads = []
        for group in late:
            head = Atom(f"{rule.head.relation}{LATE}{len(members)}", (), rule.span)
            members.add(head.relation)
            heads.append(head)
            out.append(Rule(head, tuple(group), rule.span))
        body = (*heads, *(literal for literal in rule.body if id(literal) not in moved))
        out.append(replace(rule, body=body) if late else rule)
    return out, frozenset(members)


def is_late(name: str) -> bool:
    return LATE in name


def _apart(rule: Rule) -> list[list[BodyLiteral]]:
    """The body's groups of literals connected by shared variables (each `_` a variable of
    its own) that share none with the head; a literal without variables is in none."""
    groups: list[tuple[set[str], list[BodyLiteral]]] = [(variables_in(rule.head), [])]
    for literal in rule.body:
        names = variables_in(literal)
        if _has_wildcard(literal):
            names.add(f"_{id(literal)}")
        if not names:
            continue
        joined = [group for group in groups if group[0] & names]
        merged: tuple[set[str], list[BodyLiteral]] = (names, [literal])
        for group in joined:
            groups.remove(group)
            merged = (merged[0] | group[0], group[1] + merged[1])
        groups.append(merged)
    head = variables_in(rule.head)
    return [literals for names, literals in groups if not names & head and literals]


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
