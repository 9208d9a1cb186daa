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

A variable shared by two negated atoms, or by a negated atom and the head, is not local: it
stays unsafe (`unsafe_rule`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from reasoner.analysis.terms import leaves
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Comparison,
    Negation,
    Program,
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
        arg.name for arg in atom.args if isinstance(arg, Variable) and arg.name not in outside
    )
    inner = set(_variables(tuple(a for a in atom.args if not isinstance(a, Variable))))
    if not local or inner & local.keys():
        return negation  # nothing local, or a local variable inside arithmetic: unsafe
    if all(count == 1 for count in local.values()):
        args = tuple(
            Wildcard(arg.span) if isinstance(arg, Variable) and arg.name in local else arg
            for arg in atom.args
        )
        return dataclasses.replace(negation, atom=dataclasses.replace(atom, args=args))
    number = {
        name: f"p{n}"
        for n, name in enumerate(
            dict.fromkeys(
                arg.name for arg in atom.args if isinstance(arg, Variable) and arg.name in local
            )
        )
    }
    pattern: list[str] = []
    body_args: list[Variable | Wildcard] = []
    head_args: list[Variable] = []
    outer: list[Term] = []
    for arg in atom.args:
        if isinstance(arg, Wildcard):
            pattern.append("_")
            body_args.append(arg)
        elif isinstance(arg, Variable) and arg.name in local:
            pattern.append(number[arg.name])
            body_args.append(Variable(number[arg.name], arg.span))
        else:
            pattern.append("$")
            fresh = Variable(f"v{len(outer)}", arg.span)
            body_args.append(fresh)
            head_args.append(fresh)
            outer.append(arg)
    name = f"{atom.relation}!({','.join(pattern)})"
    if name not in auxiliary:
        head = Atom(name, tuple(head_args), atom.span)
        source = Atom(atom.relation, tuple(body_args), atom.span)
        shown = ", ".join("_" if isinstance(a, Wildcard) else a.name for a in body_args)
        text = (
            f"{name}({', '.join(a.name for a in head_args)}) :- {atom.relation}({shown}).  "
            "// the negation's local variables"
        )
        auxiliary[name] = Rule(head, (source,), negation.span, text)
    return Negation(Atom(name, tuple(outer), atom.span), negation.span)
