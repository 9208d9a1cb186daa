"""Which relations each relation's rules read, and how: the dependency graph as the program's
users wrote it. Negation and aggregation are the edges stratification orders, so they are
told apart from plain reads; the relations the analysis made (an aggregate's, a negation's
projection) are folded into the edges through them, since no user wrote or sees them."""

from __future__ import annotations

from collections.abc import Iterator

from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.terms import aggregated_relations, atoms_of

POSITIVE = "positive"
NEGATIVE = "negative"
AGGREGATE = "aggregate"
_RANK = {POSITIVE: 0, NEGATIVE: 1, AGGREGATE: 2}


def relation_reads(analyzed: AnalyzedProgram) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per relation that has rules (or is an aggregate's), the (relation, kind) pairs it
    reads, sorted; relations the analysis made are neither keys nor values."""
    direct: dict[str, set[tuple[str, str]]] = {}
    for stratum in analyzed.strata:
        if stratum.aggregate is not None:
            aggregate = stratum.aggregate
            direct.setdefault(aggregate.name, set()).add((aggregate.source, AGGREGATE))
        for rule in stratum.rules:
            reads = direct.setdefault(rule.head.relation, set())
            for atom, positive in atoms_of(rule.body):
                reads.add((atom.relation, POSITIVE if positive else NEGATIVE))
            for literal in rule.body:
                reads.update((name, AGGREGATE) for name in aggregated_relations(literal))

    def internal(name: str) -> bool:
        info = analyzed.relations.get(name)
        return info is not None and info.internal

    def visible(name: str, kind: str, seen: frozenset[str]) -> Iterator[tuple[str, str]]:
        if not internal(name):
            yield name, kind
            return
        if name in seen:
            return
        for source, inner in direct.get(name, ()):
            yield from visible(source, max(kind, inner, key=_RANK.__getitem__), seen | {name})

    return {
        name: tuple(sorted({edge for r, k in reads for edge in visible(r, k, frozenset())}))
        for name, reads in direct.items()
        if not internal(name)
    }
