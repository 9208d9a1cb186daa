"""The oracle's own strata, from the rules' dependencies (negation and aggregation)."""

from __future__ import annotations

from reasoner.syntax.ast import (
    Atom,
    Negation,
    Program,
    Rule,
)
from tests.oracle.terms import aggregates_in


def dependencies(program: Program) -> dict[str, set[str]]:
    """head relation -> the relations its rules read (positively or under negation)."""
    edges: dict[str, set[str]] = {rule.head.relation: set() for rule in program.rules}
    for rule in program.rules:
        for literal in rule.body:
            if isinstance(literal, Atom):
                edges[rule.head.relation].add(literal.relation)
            elif isinstance(literal, Negation):
                edges[rule.head.relation].add(literal.atom.relation)
        edges[rule.head.relation] |= aggregated(rule)
    return edges


def aggregated(rule: Rule) -> set[str]:
    """The relations that the rule's aggregates read (they must lie in lower strata)."""
    names = set()
    for node in (rule.head, *rule.body):
        for aggregate in aggregates_in(node):
            for literal in aggregate.body:
                if isinstance(literal, Atom):
                    names.add(literal.relation)
                elif isinstance(literal, Negation):
                    names.add(literal.atom.relation)
    return names


def stratify(program: Program) -> list[frozenset[str]]:
    """The relations defined by rules, grouped into strata, dependencies first.

    p and q share a stratum iff each depends on the other, directly or not. Ordering: if
    stratum B depends on stratum A, B depends on everything A depends on and on A itself, so
    B depends on strictly more relations outside itself than A does. Sorting by that number
    is therefore a topological order.
    """
    reads = dependencies(program)
    depends_on: dict[str, set[str]] = {}  # r -> every relation r depends on, transitively
    for start in reads:
        seen: set[str] = set()
        todo = list(reads[start])
        while todo:
            relation = todo.pop()
            if relation not in seen:
                seen.add(relation)
                todo.extend(reads.get(relation, ()))
        depends_on[start] = seen
    strata = {
        frozenset({r} | {s for s in reads if s in depends_on[r] and r in depends_on[s]})
        for r in reads
    }

    def rank(stratum: frozenset[str]) -> tuple[int, list[str]]:
        member = next(iter(stratum))
        return len(depends_on[member] - stratum), sorted(stratum)

    ordered = sorted(strata, key=rank)
    for stratum in ordered:
        for rule in program.rules:
            if rule.head.relation not in stratum:
                continue
            for literal in rule.body:
                if isinstance(literal, Negation) and literal.atom.relation in stratum:
                    raise ValueError(
                        f"negation of {literal.atom.relation} inside its own stratum: "
                        "the program is not stratifiable"
                    )
            if aggregated(rule) & stratum:
                raise ValueError("an aggregate inside its own stratum: not stratifiable")
    return ordered
