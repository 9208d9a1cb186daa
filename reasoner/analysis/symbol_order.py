"""The order in which Soufflé's interpreter first meets a program's symbols: the order of their
numbers, which `ord` shows and by which `autoinc()` numbers a symbol column.

Soufflé's interpreter numbers a program's string constants while it builds its evaluation
trees, before it runs anything: one tree per stratum, the strata in the order of their names
(the least relation name of each strongly connected component, as its `std::map` of
subroutines orders them); in a stratum, relation by relation (by name), the clauses in the
program's order, those that read no relation of the stratum first (the recursive ones run in
the fixpoint loop after them); in a clause, the body's constants before the head's, which the
innermost insert holds. Only the
relations an output needs are evaluated (its RemoveRedundantRelations drops the others with
their constants). Input files are read while the program runs, each in its stratum, the
strata in evaluation order: by their longest distance from a stratum that reads nothing, then
by name (its TopologicallySortedSCCGraph).

Two of Soufflé's rewrites are followed, as they move or drop constants: a rule whose body
holds its head derives nothing and is dropped (MinimiseProgram); a rule whose body has
literals unconnected to its head (no variable in common, `_` counting as a variable of its
own) has them moved to a nullary relation `+disconnectedN` of their own, whose stratum's name
sorts before any other, and the rule itself moved to the end of the program
(PartitionBodyLiterals).

Interning the program's constants in this order before anything else, and reading the inputs
in this order, gives symbols Soufflé's numbers in the programs this order describes. What it
leaves out is the rest of Soufflé's rewrites (a body's atoms are taken in the order its SIPS
chooses; an inline relation's constants are met in its readers), and a symbol a functor makes
(`cat`) is numbered when the evaluation makes it. Where those decide, the numbers may differ
from Soufflé's (README: `ord`).

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from reasoner.analysis.disconnected import partition
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.stratify import strongly_connected_components
from reasoner.analysis.terms import aggregated_relations, atoms_of, leaves
from reasoner.syntax.ast import (
    AUTOINC,
    Aggregate,
    Atom,
    BodyLiteral,
    Comparison,
    Fact,
    Functor,
    Negation,
    Program,
    Rule,
    StringConst,
    Term,
    rule_terms,
)

DISCONNECTED = "+disconnected"
"""The prefix of the relations Soufflé's PartitionBodyLiterals makes."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Clause:
    """A clause as Soufflé evaluates it: its relation, the relations it reads and its string
    constants in the order its evaluation tree holds them."""

    relation: str
    reads: tuple[str, ...]
    body: tuple[str, ...]
    head: tuple[str, ...] = ()

    def strings(self, recursive: bool) -> tuple[str, ...]:
        """The constants in tree order: the body's, then the insert's. A recursive clause
        first checks that its head is new, which Soufflé tests before the body where the head
        is ground, and that is where its first constants are met."""
        return self.head + self.body if recursive else self.body + self.head


def constant_order(program: Program) -> list[str]:
    """The program's string constants, each once, in the order Soufflé numbers them."""
    clauses = _clauses(program)
    graph = _Graph(program, clauses)
    seen: dict[str, None] = {}
    for component in sorted(graph.needed(), key=graph.subroutine_name):
        members = graph.members[component]
        own = [(any(r in members for r in c.reads), c) for c in clauses if c.relation in members]
        # Relation by relation (by name), the clauses that read none of the stratum; then,
        # in the fixpoint loop, the others, relation by relation again.
        own.sort(key=lambda pair: (pair[0], pair[1].relation.encode()))
        for recursive, clause in own:
            seen.update(dict.fromkeys(clause.strings(recursive)))
    return list(seen)


def shows_symbol_numbers(analyzed: AnalyzedProgram) -> bool:
    """Whether the program's answers depend on the symbols' numbers: it calls `ord`, or
    `autoinc()` numbers a column (of symbols, perhaps) in their order."""
    numbering = any(s.aggregate is not None and s.aggregate.op == AUTOINC for s in analyzed.strata)
    return numbering or any(
        isinstance(term, Functor) and term.name == "ord"
        for term in rule_terms(analyzed.program.rules)
    )


def input_order(program: Program, inputs: list[str]) -> list[str]:
    """`inputs` (relations) in the order Soufflé reads them: by stratum, in evaluation order;
    then those no output needs, which Soufflé does not read at all."""
    graph = _Graph(program, _clauses(program))
    distance = graph.distances()
    needed = graph.needed()

    def key(name: str) -> tuple[bool, int, bytes]:
        if name not in graph.ids:
            return True, 0, name.encode()
        component = graph.component[graph.ids[name]]
        return component not in needed, distance[component], graph.subroutine_name(component)

    return sorted(inputs, key=key)


def _clauses(program: Program) -> list[_Clause]:
    """The program's clauses in Soufflé's order, after its PartitionBodyLiterals."""
    written: list[Rule | Fact] = [*program.facts, *program.rules]
    written.sort(key=lambda c: (c.span.line, c.span.column))
    clauses: list[_Clause] = []
    moved: list[_Clause] = []
    for clause in written:
        if isinstance(clause, Rule) and clause.head in clause.body:
            continue  # it derives nothing: Soufflé's MinimiseProgram drops it
        if isinstance(clause, Fact):
            clauses.append(_Clause(clause.atom.relation, (), (), tuple(_strings(clause.atom.args))))
            continue
        kept, apart = partition(clause)
        names: list[str] = []
        for literals in apart:
            names.append(f"{DISCONNECTED}{len(moved) + len(names)}")
            inner = [s for literal in literals for s in _literal_strings(literal)]
            moved.append(_Clause(names[-1], tuple(_reads(literals)), tuple(inner)))
        strings = tuple(s for literal in kept for s in _literal_strings(literal))
        head = tuple(_strings(clause.head.args))
        rule = _Clause(clause.head.relation, (*names, *_reads(kept)), strings, head)
        (moved if apart else clauses).append(rule)
    return clauses + moved


class _Graph:
    """The relations' dependency graph and its strongly connected components."""

    def __init__(self, program: Program, clauses: list[_Clause]) -> None:
        names: dict[str, None] = dict.fromkeys(d.name for d in program.declarations)
        for clause in clauses:
            names.setdefault(clause.relation)
            names.update(dict.fromkeys(clause.reads))
        self.ids = {name: index for index, name in enumerate(names)}
        edges = [(self.ids[r], self.ids[c.relation]) for c in clauses for r in c.reads]
        successors: list[list[int]] = [[] for _ in names]
        for source, target in edges:
            successors[source].append(target)
        self.component = strongly_connected_components(successors)
        self.members: dict[int, set[str]] = {}
        for name, index in self.ids.items():
            self.members.setdefault(self.component[index], set()).add(name)
        self.after: dict[int, set[int]] = {c: set() for c in self.members}
        self.before: dict[int, set[int]] = {c: set() for c in self.members}
        for source, target in edges:
            a, b = self.component[source], self.component[target]
            if a != b:
                self.after[a].add(b)
                self.before[b].add(a)
        self.outputs = {
            self.component[self.ids[d.relation]]
            for d in program.directives
            if d.kind in ("output", "printsize") and d.relation in self.ids
        }

    def subroutine_name(self, component: int) -> bytes:
        return min(name.encode() for name in self.members[component])

    def needed(self) -> set[int]:
        """The components an output reads, itself included."""
        needed = set(self.outputs)
        pending = list(needed)
        while pending:
            for earlier in self.before[pending.pop()] - needed:
                needed.add(earlier)
                pending.append(earlier)
        return needed

    def distances(self) -> dict[int, int]:
        """Each component's longest distance from a component that reads nothing."""
        distance = {c: 0 for c, earlier in self.before.items() if not earlier}
        pending = list(distance)
        waiting = {c: len(earlier) for c, earlier in self.before.items()}
        while pending:
            component = pending.pop()
            for later in self.after[component]:
                distance[later] = max(distance.get(later, 0), distance[component] + 1)
                waiting[later] -= 1
                if not waiting[later]:
                    pending.append(later)
        return distance


def _reads(body: list[BodyLiteral] | tuple[BodyLiteral, ...]) -> Iterator[str]:
    for atom, _positive in atoms_of(tuple(body)):
        yield atom.relation
    for literal in body:
        yield from aggregated_relations(literal)


def _literal_strings(literal: BodyLiteral) -> Iterator[str]:
    if isinstance(literal, Atom):
        yield from _strings(literal.args)
    elif isinstance(literal, Negation):
        yield from _strings(literal.atom.args)
    elif isinstance(literal, Comparison):
        yield from _strings((literal.left, literal.right))


def _strings(terms: tuple[Term, ...]) -> Iterator[str]:
    """The string constants of `terms`, left to right, aggregates' bodies included."""
    for term in terms:
        for leaf in leaves(term):
            if isinstance(leaf, StringConst):
                yield leaf.value
            elif isinstance(leaf, Aggregate):
                for literal in leaf.body:
                    yield from _literal_strings(literal)
                if leaf.target is not None:
                    yield from _strings((leaf.target,))
