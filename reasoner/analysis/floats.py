"""Which of a clause's float equalities are Soufflé's aliases, and which compare.

Soufflé compares floats two ways. Its relations are sets of bit patterns, so a variable
repeated across atoms, an atom's constant and a negated atom match bits (0.0 is not -0.0, a
NaN equals itself). An equality `a = b` is first resolved (`ResolveAliases`): one that
unites two variables, or gives a variable no atom binds its definition, becomes a
substitution, so the value is moved, bits and all; any other `a = b` stays a comparison of
numbers, IEEE's (0.0 equals -0.0, a NaN equals nothing), unless the substitutions made its
two sides the same term, when it is dropped. The rewrite (`reasoner.analysis.numeric`)
keeps the substitutions and the dropped ones as the engine's `=` (an assignment, or a test
on bits that then holds), and makes the comparisons `fcmp!(a, b) = 0`.

An atom's argument that is an expression over floats (`p(x + 1.0)`) is such a comparison in
Soufflé, and so is a constant 0.0 or -0.0 (the only constants whose IEEE equality is not
their bits'): the rewrite gives those a variable of their own and compares it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from reasoner.analysis.ranges import is_generator
from reasoner.analysis.safety import atom_variables
from reasoner.plan.joins import term_variables
from reasoner.syntax.ast import (
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    RecordTerm,
    Term,
    Variable,
)


def aliases(
    body: tuple[BodyLiteral, ...], compares_floats: Callable[[Comparison], bool]
) -> set[int]:
    """The `id`s of `body`'s equalities of floats that stay the engine's `=`, found as
    Soufflé's `resolveLocalAliases` finds its substitutions: equations taken in order, each
    with the substitutions so far applied; `v = w` maps the variable no atom binds (else
    `w`) to the other; `v = t` maps `v` when no atom binds it and every variable of `t` is
    bound by an atom, and waits for a later round otherwise; an equation whose sides became
    one term is dropped."""
    grounded = _grounded(body)
    mapping: dict[str, Term] = {}
    pending = [
        (literal, literal.left, literal.right)
        for literal in body
        if isinstance(literal, Comparison) and literal.op == "=" and not is_generator(literal)
    ]
    kept: set[int] = set()
    while pending:
        waiting: list[tuple[Comparison, Term, Term]] = []
        swapped: list[tuple[Comparison, Term, Term]] = []
        for literal, left, right in pending:
            lhs, rhs = _substituted(left, mapping), _substituted(right, mapping)
            if lhs == rhs:
                kept.add(id(literal))
            elif isinstance(lhs, Variable) and isinstance(rhs, Variable):
                if lhs.name not in grounded and rhs.name in grounded:
                    mapping[lhs.name] = rhs
                else:
                    mapping[rhs.name] = lhs
                kept.add(id(literal))
            elif not isinstance(lhs, Variable):
                if isinstance(rhs, Variable):
                    swapped.append((literal, rhs, lhs))
            elif lhs.name in term_variables(rhs):
                continue  # a comparison (Soufflé's #7)
            elif isinstance(rhs, RecordTerm | BranchTerm) or (
                lhs.name not in grounded and term_variables(rhs) <= grounded
            ):
                mapping[lhs.name] = rhs
                kept.add(id(literal))
            elif lhs.name not in grounded:
                waiting.append((literal, lhs, rhs))
        if not swapped and len(waiting) == len(pending):
            break
        pending = waiting + swapped
    return {
        id(literal)
        for literal in body
        if isinstance(literal, Comparison) and id(literal) in kept and compares_floats(literal)
    }


def _grounded(body: tuple[BodyLiteral, ...]) -> set[str]:
    """Soufflé's base-grounded variables: arguments of positive atoms (fields of their
    records too), and the variables generators bind."""
    names = atom_variables(body)
    for literal in body:
        if is_generator(literal):
            assert isinstance(literal, Comparison) and isinstance(literal.left, Variable)
            names.add(literal.left.name)
    return names


def _substituted(term: Term, mapping: Mapping[str, Term]) -> Term:
    """`term` with each mapped variable replaced by its term (itself substituted)."""
    if isinstance(term, Variable):
        found = mapping.get(term.name)
        return term if found is None else _substituted(found, mapping)
    if isinstance(term, BinaryOp):
        left, right = _substituted(term.left, mapping), _substituted(term.right, mapping)
        return dataclasses.replace(term, left=left, right=right)
    if isinstance(term, Functor | RecordTerm | BranchTerm):
        args = tuple(_substituted(arg, mapping) for arg in term.args)
        return dataclasses.replace(term, args=args)
    if isinstance(term, Cast):
        return dataclasses.replace(term, term=_substituted(term.term, mapping))
    return term
