"""Soufflé's PartitionBodyLiterals, where it decides which rows a program derives.

Soufflé moves the body literals of a rule that share no variable with its head (`_` counting as
a variable of its own) into a nullary relation of their own, read by the rule:
`a(x) :- b(x), c(_).` becomes `a(x) :- +disconnected0(), b(x).` and
`+disconnected0() :- c(_).`. Where the moved literals read the rule's own recursive stratum,
that relation is derived in one iteration and read in the next, so the rule fires one iteration
later than as written.

Rows do not depend on when a rule fires, except in a stratum whose evaluation depends on the
order of its iterations: one with a subsumption (a tuple derives until it is dominated) or a
choice-domain (the first candidate of a key stays). There the delay decides which rows survive
(`a_0(0, v1) :- a0(x), a0(v1).` beside `a0(s1) <= a0(s2) :- s2 < s1.`: as written, the
dominated `a0(1)` derives `a_0(0, 1)` before it goes; in Soufflé it is gone by then), so the
rewrite is made there as Soufflé makes it, after inlining. Elsewhere it is not made: it would
change iterations and counts, never rows, and give each such rule one more relation to join.

Two more of Soufflé's rewrites decide what moves: an atom `r(_, ..., _)` of a relation read no
other way holds no variable (ReduceExistentials has made it nullary by then), and the one rule
of a nullary relation stays whole where all of its body would move (`h() :- +disconnected0().`
would be a copy, which RemoveRelationCopies takes out again).

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection

from reasoner.analysis.stratify import strongly_connected_components
from reasoner.analysis.terms import aggregated_relations, atoms_of, leaves
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BodyLiteral,
    Negation,
    Program,
    Rule,
    Term,
    Variable,
    Wildcard,
)

DISCONNECTED = "!disconnected"
"""What names a relation this rewrite makes, after the name of the rule's head."""


def delay_disconnected(program: Program, choices: Collection[str]) -> Program:
    """`program` with the disconnected literals of each rule of an order-dependent stratum
    moved to nullary relations, where they read that stratum (see the module). `choices`:
    the relations with a choice-domain."""
    sensitive = {rule.head.relation for rule in program.rules if rule.dominating is not None}
    sensitive |= set(choices)
    if not sensitive:
        return program
    component = _components(program)
    hot = {component[name] for name in sensitive if name in component}
    existential = existential_relations(program)
    clauses = Counter(rule.head.relation for rule in program.rules)
    clauses.update(fact.atom.relation for fact in program.facts)
    io = {directive.relation for directive in program.directives}
    rules: list[Rule] = []
    made: Counter[str] = Counter()
    for rule in program.rules:
        own = component.get(rule.head.relation)
        if rule.dominating is not None or own not in hot:
            rules.append(rule)
            continue
        kept, groups = partition(rule, existential)
        late = [g for g in groups if any(component.get(r) == own for r in _reads(g))]
        name = rule.head.relation
        if not late or (
            # `h() :- d().` is a copy of `d` that Soufflé's RemoveRelationCopies removes: its
            # readers then read the moved literals as soon as `h` itself would hold.
            not rule.head.args
            and not kept
            and len(groups) == 1
            and clauses[name] == 1
            and name not in io
        ):
            rules.append(rule)
            continue
        moved = {id(literal) for group in late for literal in group}
        heads = []
        for group in late:
            head = Atom(f"{name}{DISCONNECTED}{made[name]}", (), rule.span)
            made[name] += 1
            heads.append(head)
            rules.append(Rule(head, tuple(group), rule.span, rule.text))
        body = tuple(heads) + tuple(lit for lit in rule.body if id(lit) not in moved)
        rules.append(dataclasses.replace(rule, body=body))
    return dataclasses.replace(program, rules=tuple(rules))


def existential_relations(program: Program) -> frozenset[str]:
    """The relations Soufflé's ReduceExistentials makes nullary: read only as `r(_, ..., _)`
    (in a clause of another relation; in a clause of its own that reads it, a relation
    existential too may read it otherwise), in no aggregate, neither input nor output, with a
    clause and a column. Such an atom holds no variable, so PartitionBodyLiterals leaves it in
    its rule."""
    irreducible = {directive.relation for directive in program.directives}
    edges: dict[str, set[str]] = {}
    for rule in program.rules:
        head = rule.head.relation
        atoms = [atom for atom, _positive in atoms_of(rule.body)]
        recursive = rule.dominating is not None or any(a.relation == head for a in atoms)
        for atom in atoms:
            if atom.relation == head or all(isinstance(a, Wildcard) for a in atom.args):
                continue
            if recursive:
                edges.setdefault(head, set()).add(atom.relation)
            else:
                irreducible.add(atom.relation)
        for literal in rule.body:
            irreducible.update(aggregated_relations(literal))
        irreducible.update(aggregated_relations(rule.head))
    todo = list(irreducible)
    while todo:
        for name in edges.get(todo.pop(), ()):
            if name not in irreducible:
                irreducible.add(name)
                todo.append(name)
    defined = [rule.head for rule in program.rules] + [fact.atom for fact in program.facts]
    return frozenset(a.relation for a in defined if a.args and a.relation not in irreducible)


def partition(
    rule: Rule, existential: Collection[str] = ()
) -> tuple[list[BodyLiteral], list[list[BodyLiteral]]]:
    """The body literals that stay in the rule (connected to its head, or without
    variables), and the groups of the others, each connected within itself. An atom
    `r(_, ..., _)` of an `existential` relation has no variable (`existential_relations`)."""
    variables = [
        set() if _existential(literal, existential) else _variables(literal, index)
        for index, literal in enumerate(rule.body)
    ]
    reached = _reached(rule, variables)
    kept = [
        lit for lit, names in zip(rule.body, variables, strict=True) if not names or names & reached
    ]
    groups: list[tuple[set[str], list[BodyLiteral]]] = []
    for literal, names in zip(rule.body, variables, strict=True):
        if not names or names & reached:
            continue
        joined = [group for group in groups if group[0] & names]
        merged = (set(names), [literal])
        for group in joined:
            groups.remove(group)
            merged = (merged[0] | group[0], group[1] + merged[1])
        groups.append(merged)
    return kept, [literals for _names, literals in groups]


def head_component(rule: Rule) -> set[str]:
    """The variables connected to the head's, two being connected when a body literal (an
    aggregate's body inside its literal) holds both: what Soufflé's PartitionBodyLiterals
    keeps in a rule, moving the rest to a nullary relation that only says whether they hold."""
    return _reached(rule, [_variables(lit, index) for index, lit in enumerate(rule.body)])


def _reached(rule: Rule, variables: list[set[str]]) -> set[str]:
    reached = {
        leaf.name for arg in rule.head.args for leaf in leaves(arg) if isinstance(leaf, Variable)
    }
    grown = bool(reached)
    while grown:
        grown = False
        for names in variables:
            if names & reached and not names <= reached:
                reached |= names
                grown = True
    return reached


def _variables(literal: BodyLiteral, index: int) -> set[str]:
    """The literal's variables, each `_` one of its own (Soufflé names them before it
    partitions)."""
    terms: tuple[Term, ...]
    if isinstance(literal, Atom):
        terms = literal.args
    elif isinstance(literal, Negation):
        terms = literal.atom.args
    else:
        terms = (literal.left, literal.right)
    names: set[str] = set()
    stack = list(terms)
    while stack:
        for leaf in leaves(stack.pop()):
            if isinstance(leaf, Variable):
                names.add(leaf.name)
            elif isinstance(leaf, Wildcard):
                names.add(f"_{index}:{leaf.span.line}:{leaf.span.column}")
            elif isinstance(leaf, Aggregate):
                for inner in leaf.body:
                    names |= _variables(inner, index)
                if leaf.target is not None:
                    stack.append(leaf.target)
    return names


def _existential(literal: BodyLiteral, existential: Collection[str]) -> bool:
    atom = literal.atom if isinstance(literal, Negation) else literal
    return (
        isinstance(atom, Atom)
        and atom.relation in existential
        and all(isinstance(arg, Wildcard) for arg in atom.args)
    )


def _reads(literals: list[BodyLiteral]) -> set[str]:
    """The relations `literals` read, inside their aggregates too."""
    names = {atom.relation for atom, _positive in atoms_of(tuple(literals))}
    for literal in literals:
        names.update(aggregated_relations(literal))
    return names


def _components(program: Program) -> dict[str, int]:
    """Each relation's strongly connected component in the graph of what rules read."""
    ids: dict[str, int] = {}
    edges: list[tuple[int, int]] = []
    for rule in program.rules:
        head = ids.setdefault(rule.head.relation, len(ids))
        for name in _reads(list(rule.body)):
            edges.append((ids.setdefault(name, len(ids)), head))
    successors: list[list[int]] = [[] for _ in ids]
    for source, target in edges:
        successors[source].append(target)
    component = strongly_connected_components(successors)
    return {name: component[i] for name, i in ids.items()}
