"""Soufflé's `inline` relations: their clauses are substituted into the rules that read them,
so the relation itself is never materialized.

A positive atom `b(t1, ..., tn)` over an inline relation becomes one alternative per clause
`b(h1, ..., hn) :- B.` of `b` (facts included, with an empty body): the clause's variables
renamed apart, each head variable replaced by the atom's argument where that is a variable or a
constant, an equality `hi = ti` otherwise (against a fresh variable where the atom reads `_`
and `hi` is an expression: an empty `range` there leaves the clause no tuple), then `B`. A
rule with several such atoms becomes the product of their alternatives, and an inline
relation read by another inline relation is substituted in turn. A negated atom `!b(t)`
becomes the negation of the disjunction of those alternatives (`reasoner.syntax.negation`),
which Soufflé allows only when no clause of `b` has a variable outside its head and the atom
has no `_`.

Where Soufflé refuses to inline (an input, output or printed relation, one read inside an
aggregate or, here, by a rule with an aggregate, a negation the rule above does not allow,
inline relations that depend on each other in a cycle), where a relation also has a
subsumption or a choice-domain, and where a column is not a `number` or a `symbol` (its type
types the clauses' literals only as the relation's columns: `1` is 1.0 in a `float` column, a
record literal needs its record type), the relation is materialized instead: the rows of every
other relation are the same either way, only the work differs. So is a nullary relation: it
holds one row at most, so substitution saves no join, while it multiplies each derivation of a
reader by the relation's own (`k() :- m(), m(), m().` over an `m` of 200 derivations is 8 M
derivations of one tuple, each enumerated to count it). So is every inline relation when the
substitution would make more than `MAX_ALTERNATIVES` rules of one.

The inlined relation keeps its declaration, so it exists and reads empty, as Soufflé cannot
output it. Proof counts follow the rules as evaluated: a rule that read an inlined relation now
counts each of the clause instantiations that derived its tuple.

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator

from reasoner.analysis.terms import aggregated_relations, atoms_of
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
)
from reasoner.syntax.negation import Alternatives, negation_of

PRIMITIVE = frozenset({"number", "symbol"})
"""Column types whose literals read the same outside the column: `1` in a `float` column is
1.0, in an `unsigned` one unsigned, but an equality `1 = x` gives it no such type."""
MAX_ALTERNATIVES = 4096
"""Rules one rule may become; past it the program's inline relations are materialized."""

Clause = tuple[Atom, tuple[BodyLiteral, ...]]


def inline_relations(program: Program) -> tuple[Program, frozenset[str]]:
    """`program` with its inline relations substituted where they can be (see the module),
    and the relations substituted."""
    wanted = {d.name for d in program.declarations if d.inline}
    if not wanted:
        return program, frozenset()
    clauses: dict[str, list[Clause]] = {name: [] for name in wanted}
    for rule in program.rules:
        if rule.head.relation in wanted and rule.dominating is None:
            clauses[rule.head.relation].append((rule.head, rule.body))
    for fact in program.facts:
        if fact.atom.relation in wanted:
            clauses[fact.atom.relation].append((fact.atom, ()))
    inlined = frozenset(wanted - _materialized(program, wanted, clauses))
    if not inlined:
        return program, inlined
    substitution = _Substitution({name: clauses[name] for name in inlined})
    rules: list[Rule] = []
    for rule in program.rules:
        if rule.head.relation in inlined:
            continue
        try:
            bodies = substitution.body(rule.body)
        except _TooMany:
            return program, frozenset()
        rules += [dataclasses.replace(rule, body=tuple(body)) for body in bodies]
    facts = tuple(f for f in program.facts if f.atom.relation not in inlined)
    return dataclasses.replace(program, rules=tuple(rules), facts=facts), inlined


def _materialized(program: Program, wanted: set[str], clauses: dict[str, list[Clause]]) -> set[str]:
    """The inline relations that are materialized instead (see the module)."""
    kept = wanted & {d.relation for d in program.directives}
    kept |= {d.name for d in program.declarations if d.name in wanted and not d.columns}
    kept |= {r.head.relation for r in program.rules if r.dominating is not None}
    kept |= {d.name for d in program.declarations if d.choice_domain}
    kept |= {  # a column's type types the clauses' literals only as the relation's columns
        d.name for d in program.declarations if any(c.type not in PRIMITIVE for c in d.columns)
    }
    # An atom of another arity than its relation's is refused later (`arity_mismatch`, at the
    # atom, as for any relation): its relation is kept as written until then.
    arity = {d.name: len(d.columns) for d in program.declarations if d.name in wanted}
    kept |= {name for name in wanted if any(len(h.args) != arity[name] for h, _ in clauses[name])}
    for rule in program.rules:
        for atom, _positive in atoms_of(rule.body):
            if atom.relation in wanted and len(atom.args) != arity[atom.relation]:
                kept.add(atom.relation)
    negatable = {name for name in wanted if all(_closed(clause) for clause in clauses[name])}
    for rule in program.rules:
        if any(True for literal in (rule.head, *rule.body) for _ in aggregated_relations(literal)):
            # An aggregate may read a variable that only the inline atom binds, which a
            # clause would bind by an equality: the aggregate needs an atom to bind it.
            kept |= wanted & {atom.relation for atom, _ in atoms_of(rule.body)}
        for literal in (rule.head, *rule.body):  # `out(x, count : { il(x, _) }) :- ...` too
            kept |= wanted & set(aggregated_relations(literal))
            if isinstance(literal, Negation) and literal.atom.relation in wanted:
                wild = any(isinstance(leaf, Wildcard) for leaf in _leaves(literal.atom.args))
                if wild or literal.atom.relation not in negatable:
                    kept.add(literal.atom.relation)
    reads = {
        name: {a.relation for _, body in clauses[name] for a, _ in atoms_of(body)} & wanted
        for name in wanted
    }
    for name in wanted:  # in a cycle of inline relations
        seen, todo = set(), list(reads[name])
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo += reads[other]
        if name in seen:
            kept.add(name)
    return kept


def _closed(clause: Clause) -> bool:
    """Whether every variable of the clause's body is one of its head's."""
    head, body = clause
    names = {leaf.name for leaf in _leaves(head.args) if isinstance(leaf, Variable)}
    return all(v in names for v in _variables_of(body))


class _TooMany(Exception):
    """A rule would become more than `MAX_ALTERNATIVES` rules."""


class _Substitution:
    def __init__(self, clauses: dict[str, list[Clause]]) -> None:
        self.clauses = clauses
        self.renamed = itertools.count()

    def body(self, body: tuple[BodyLiteral, ...]) -> Alternatives:
        """The body with every inline atom substituted: its alternatives."""
        alternatives: Alternatives = [[]]
        for literal in body:
            if isinstance(literal, Atom) and literal.relation in self.clauses:
                options = self.atom(literal)
            elif isinstance(literal, Negation) and literal.atom.relation in self.clauses:
                options = negation_of(self.atom(literal.atom), literal.span)
            else:
                options = [[literal]]
            if len(alternatives) * len(options) > MAX_ALTERNATIVES:
                raise _TooMany
            alternatives = [a + o for a in alternatives for o in options]
        return alternatives

    def atom(self, atom: Atom) -> Alternatives:
        """The alternatives of an inline atom: one per clause, substituted in turn."""
        out: Alternatives = []
        for head, body in self.clauses[atom.relation]:
            suffix = f"#i{next(self.renamed)}_"
            rename: dict[str, Term] = {}

            def fresh(leaf: Term, rename: dict[str, Term] = rename, suffix: str = suffix) -> Term:
                if isinstance(leaf, Variable):
                    return rename.setdefault(leaf.name, Variable(suffix + leaf.name, leaf.span))
                return leaf

            head_args = [_map(arg, fresh) for arg in head.args]
            renamed = [_map_literal(literal, fresh) for literal in body]
            bound: dict[str, Term] = {}
            equalities: list[BodyLiteral] = []
            for i, (h, t) in enumerate(zip(head_args, atom.args, strict=True)):
                if isinstance(h, Wildcard) or (isinstance(t, Wildcard) and _valued(h)):
                    continue
                if isinstance(t, Wildcard):  # the clause's tuples still depend on it
                    t = Variable(f"{suffix}_{i}", atom.span)
                simple = isinstance(t, Variable | NumberConst | StringConst)
                if isinstance(h, Variable) and h.name not in bound and simple:
                    bound[h.name] = t
                else:
                    equalities.append(Comparison("=", h, t, atom.span))

            def put(leaf: Term, bound: dict[str, Term] = bound) -> Term:
                return bound.get(leaf.name, leaf) if isinstance(leaf, Variable) else leaf

            conjunction = tuple(_map_literal(lit, put) for lit in (*renamed, *equalities))
            out += self.body(conjunction)
            if len(out) > MAX_ALTERNATIVES:
                raise _TooMany
        return out


def _valued(term: Term) -> bool:
    """Whether a head argument has exactly one value once its clause's body holds: a
    variable or a constant. An expression may have none (an empty `range`, a functor without
    a value) or several (a `range`), and so decides the clause's tuples even where the reader
    reads the column as `_`."""
    return isinstance(term, Variable | NumberConst | StringConst)


def _map(term: Term, leaf: Callable[[Term], Term]) -> Term:
    """`term` with each variable (at any depth, aggregates' bodies included) mapped."""
    if isinstance(term, BinaryOp):
        return dataclasses.replace(term, left=_map(term.left, leaf), right=_map(term.right, leaf))
    if isinstance(term, Functor | RecordTerm | BranchTerm):
        return dataclasses.replace(term, args=tuple(_map(a, leaf) for a in term.args))
    if isinstance(term, Cast):
        return dataclasses.replace(term, term=_map(term.term, leaf))
    if isinstance(term, Aggregate):
        target = None if term.target is None else _map(term.target, leaf)
        body = tuple(_map_literal(literal, leaf) for literal in term.body)
        return dataclasses.replace(term, target=target, body=body)
    return leaf(term)


def _map_atom(atom: Atom, leaf: Callable[[Term], Term]) -> Atom:
    return dataclasses.replace(atom, args=tuple(_map(a, leaf) for a in atom.args))


def _map_literal(literal: BodyLiteral, leaf: Callable[[Term], Term]) -> BodyLiteral:
    if isinstance(literal, Atom):
        return _map_atom(literal, leaf)
    if isinstance(literal, Negation):
        return dataclasses.replace(literal, atom=_map_atom(literal.atom, leaf))
    return dataclasses.replace(
        literal, left=_map(literal.left, leaf), right=_map(literal.right, leaf)
    )


def _leaves(terms: tuple[Term, ...]) -> Iterator[Term]:
    """Every leaf of `terms`, aggregates' bodies included."""
    found: list[Term] = []

    def keep(leaf: Term) -> Term:
        found.append(leaf)
        return leaf

    for term in terms:
        _map(term, keep)
    return iter(found)


def _variables_of(body: tuple[BodyLiteral, ...]) -> set[str]:
    names: set[str] = set()
    for literal in body:
        atom_or_sides: tuple[Term, ...]
        if isinstance(literal, Comparison):
            atom_or_sides = (literal.left, literal.right)
        else:
            atom_or_sides = (literal.atom if isinstance(literal, Negation) else literal).args
        names |= {leaf.name for leaf in _leaves(atom_or_sides) if isinstance(leaf, Variable)}
    return names
