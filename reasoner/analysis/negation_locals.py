"""Variables local to a negated atom: `!s(p, p, y)` where `p` occurs nowhere else in the rule.

Such a variable is existential inside the negation, as Nemo reads it: the literal holds when
there is no `p` with `s(p, p, y)`. A local variable that occurs once in the atom is exactly a
wildcard, and becomes one. Repeated ones (`p, p`) cannot be written with `_`; the negation
then reads an auxiliary relation that projects the atom onto its other arguments,

    s!(p0,p0,$)(v0) :- s(p0, p0, v0).        !s(p, p, y)  becomes  !s!(p0,p0,$)(y)

so every executor, Update and the rule changes see ordinary stratified negation, and the state
(iteration, count) is that of the rewritten program. The auxiliary relation's name cannot be
written in a program or a request (`!` is no identifier character), one is shared by every
negation of the same shape, and it is marked internal (`RelationInfo.internal`): the service
and the command line do not show it.

A record in a negated atom may hold wildcards and local variables too (`!p([x, _])`): the
auxiliary relation then takes the record apart, `p!([$,_])(v0) :- p([v0, _])`.

A variable shared by two negated atoms, or by a negated atom and the head, is not local: it
stays unsafe (`unsafe_rule`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from reasoner.analysis.terms import leaves, render_atom, taken_apart
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    BranchTerm,
    Comparison,
    Negation,
    NilConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
    Wildcard,
)


def is_internal(name: str) -> bool:
    """Whether a relation is one this rewrite made (no identifier holds a `!`)."""
    return "!" in name


def _variables(terms: tuple[Term, ...]) -> list[str]:
    return [leaf.name for term in terms for leaf in leaves(term) if isinstance(leaf, Variable)]


def _literal_variables(literal: BodyLiteral) -> list[str]:
    if isinstance(literal, Comparison):
        return _variables((literal.left, literal.right))
    atom = literal.atom if isinstance(literal, Negation) else literal
    return _variables(atom.args)


def existential_negations(program: Program) -> Program:
    """The program with local variables of negated atoms made existential (see the module
    docstring); its auxiliary relations are the ones `is_internal` names."""
    auxiliary: dict[str, Rule] = {}
    rules: list[Rule] = []
    for rule in program.rules:
        body = list(rule.body)
        for index, literal in enumerate(rule.body):
            if not isinstance(literal, Negation):
                continue
            outside = set(_variables(rule.head.args))
            for other, literal_other in enumerate(rule.body):
                if other != index:
                    outside.update(_literal_variables(literal_other))
            body[index] = _existential(literal, outside, auxiliary)
        rules.append(
            rule if body == list(rule.body) else dataclasses.replace(rule, body=tuple(body))
        )
    if not auxiliary and rules == list(program.rules):
        return program
    return dataclasses.replace(program, rules=(*rules, *auxiliary.values()))


def _existential(negation: Negation, outside: set[str], auxiliary: dict[str, Rule]) -> Negation:
    atom = negation.atom
    local = Counter(
        part.name
        for arg in atom.args
        for part in taken_apart(arg)
        if isinstance(part, Variable) and part.name not in outside
    )
    computed = tuple(part for arg in atom.args for part in taken_apart(arg) if _computed(part))
    if set(_variables(computed)) & local.keys():
        return negation  # a local variable inside arithmetic: unsafe
    in_record = any(
        isinstance(part, Wildcard) or (isinstance(part, Variable) and part.name in local)
        for arg in atom.args
        if isinstance(arg, RecordTerm | BranchTerm)
        for part in taken_apart(arg)
    )
    if not local and not in_record:
        return negation
    if not in_record and all(count == 1 for count in local.values()):
        args = tuple(
            Wildcard(arg.span) if isinstance(arg, Variable) and arg.name in local else arg
            for arg in atom.args
        )
        return dataclasses.replace(negation, atom=dataclasses.replace(atom, args=args))
    number = {name: f"p{n}" for n, name in enumerate(local)}
    head_args: list[Variable] = []
    outer: list[Term] = []

    def project(term: Term) -> tuple[Term, str]:
        """The auxiliary rule's argument for `term` and how the relation's name shows it."""
        if isinstance(term, Wildcard):
            return term, "_"
        if isinstance(term, Variable) and term.name in local:
            return Variable(number[term.name], term.span), number[term.name]
        if isinstance(term, NilConst):
            return term, "nil"
        if isinstance(term, RecordTerm | BranchTerm) and any(
            isinstance(part, Wildcard) or (isinstance(part, Variable) and part.name in local)
            for part in taken_apart(term)
        ):
            fields = [project(field) for field in term.args]
            shown = ",".join(text for _, text in fields)
            args = tuple(field for field, _ in fields)
            if isinstance(term, RecordTerm):
                return dataclasses.replace(term, args=args), f"[{shown}]"
            return dataclasses.replace(term, args=args), f"${term.name}({shown})"
        fresh = Variable(f"v{len(outer)}", term.span)
        head_args.append(fresh)
        outer.append(term)
        return fresh, "$"

    projected = [project(arg) for arg in atom.args]
    body_args = tuple(arg for arg, _ in projected)
    name = f"{atom.relation}!({','.join(text for _, text in projected)})"
    if name not in auxiliary:
        head = Atom(name, tuple(head_args), atom.span)
        source = Atom(atom.relation, body_args, atom.span)
        text = (
            f"{name}({', '.join(a.name for a in head_args)}) :- {render_atom(source)}.  "
            "// the negation's local variables"
        )
        auxiliary[name] = Rule(head, (source,), negation.span, text)
    return Negation(Atom(name, tuple(outer), atom.span), negation.span)


def _computed(term: Term) -> bool:
    return not isinstance(term, Variable | Wildcard | RecordTerm | BranchTerm | NilConst)
