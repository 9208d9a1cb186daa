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

An aggregate's value is bound two ways. An aggregate that takes nothing from the rule is
first made a relation of its own (MaterializeSingletonAggregation's `__agg_single`): its
value is an atom's argument like any other. One the rule correlates stays a generator, which
resolution never substitutes: it gives its value to a variable nothing else binds, and is
compared as IEEE compares with one an atom, an uncorrelated aggregate or another generator
binds (Soufflé 2.5: for r = {-0.0}, `r(c), w = sum y : { r(y), y = c }, c = w` holds, the
sum being 0.0, and `r(c), w = sum y : { r(y) }, c = w` does not; and in `k(c), w = min y : {
b(c, y) }, v = sum y : { b(_, y) }, w = v` the head's w is the sum's).

An atom's argument that is an expression over floats (`p(x + 1.0)`) is such a comparison in
Soufflé, and so is a constant 0.0 or -0.0 (the only constants whose IEEE equality is not
their bits'): the rewrite gives those a variable of their own and compares it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from reasoner.analysis.aggregates import is_aggregate_result
from reasoner.analysis.ranges import is_generator
from reasoner.analysis.safety import all_bound, atom_variables
from reasoner.analysis.terms import taken_apart
from reasoner.syntax.ast import (
    Atom,
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
    one term is dropped. A record an atom's variable is mapped to binds its fields (Soufflé
    repeats the transform, and the next pass sees them in the atom). An equality left
    unresolved that alone gives a variable its value stays `=` too (the engine assigns it):
    a comparison there would leave the variable unbound."""
    equalities = [
        literal
        for literal in body
        if isinstance(literal, Comparison) and literal.op == "=" and not is_generator(literal)
    ]
    if not any(compares_floats(literal) for literal in equalities):
        return set()
    correlated = _correlated_results(body)
    grounded = _grounded(body, correlated)
    generators: list[Comparison] = []
    ordinary: list[Comparison] = []
    for literal in equalities:
        (generators if _generated(literal, correlated) else ordinary).append(literal)
    kept = _resolved(ordinary, generators, grounded)
    kept |= _needed(equalities, kept, compares_floats, grounded)
    return {
        id(literal) for literal in equalities if id(literal) in kept and compares_floats(literal)
    }


def _resolved(  # noqa: C901
    equalities: list[Comparison], generators: list[Comparison], grounded: set[str]
) -> set[int]:
    """The equalities Soufflé's resolution turns into substitutions or drops (`aliases`);
    `grounded` gains the fields of records atoms' variables are mapped to. `generators`
    equate a variable with a correlated aggregate's value (`_generated`), which is never
    substituted: resolved last, each gives the value to the variable only where nothing
    else binds it (the module's docstring)."""
    mapping: dict[str, Term] = {}
    memo: dict[str | int, Term] = {}
    """Substituted terms, by variable name or node `id`; emptied when the mapping grows (the
    nodes it holds stay alive meanwhile, so no `id` is reused)."""

    def substituted(term: Term) -> Term:
        """`term` with each mapped variable replaced by its term (itself substituted); each
        node once per mapping (substitutions share their terms, and chains of definitions
        would otherwise be walked as trees)."""
        key = term.name if isinstance(term, Variable) else id(term)
        if key in memo:
            return memo[key]
        if isinstance(term, Variable):
            found = mapping.get(term.name)
            result = term if found is None else substituted(found)
        elif isinstance(term, BinaryOp):
            result = dataclasses.replace(
                term, left=substituted(term.left), right=substituted(term.right)
            )
        elif isinstance(term, Functor | RecordTerm | BranchTerm):
            result = dataclasses.replace(term, args=tuple(map(substituted, term.args)))
        elif isinstance(term, Cast):
            result = dataclasses.replace(term, term=substituted(term.term))
        else:
            result = term
        memo[key] = result
        return result

    def map_to(name: str, term: Term) -> None:
        mapping[name] = term
        memo.clear()

    pending = [(literal, literal.left, literal.right) for literal in equalities]
    kept: set[int] = set()
    while pending:
        waiting: list[tuple[Comparison, Term, Term]] = []
        swapped: list[tuple[Comparison, Term, Term]] = []
        for literal, left, right in pending:
            lhs, rhs = substituted(left), substituted(right)
            if lhs is rhs or lhs == rhs:
                kept.add(id(literal))
            elif isinstance(lhs, Variable) and isinstance(rhs, Variable):
                if lhs.name not in grounded and rhs.name in grounded:
                    map_to(lhs.name, rhs)
                else:
                    map_to(rhs.name, lhs)
                kept.add(id(literal))
            elif not isinstance(lhs, Variable):
                if isinstance(rhs, Variable):
                    swapped.append((literal, rhs, lhs))
            elif lhs.name in _names(rhs):
                continue  # a comparison (Soufflé's #7)
            elif isinstance(rhs, RecordTerm | BranchTerm):
                if lhs.name in grounded:
                    grounded |= {v.name for v in taken_apart(rhs) if isinstance(v, Variable)}
                map_to(lhs.name, rhs)
                kept.add(id(literal))
            elif lhs.name not in grounded and _names(rhs) <= grounded:
                map_to(lhs.name, rhs)
                kept.add(id(literal))
            elif lhs.name not in grounded:
                waiting.append((literal, lhs, rhs))
        if not swapped and len(waiting) == len(pending):
            break
        pending = waiting + swapped
    for literal in generators:  # the value's side is never mapped: either side is a variable
        left, right = substituted(literal.left), substituted(literal.right)
        for bound, value in ((left, right), (right, left)):
            if isinstance(bound, Variable) and bound.name not in grounded:
                map_to(bound.name, value)
                kept.add(id(literal))
                break
    return kept


def _needed(
    equalities: list[Comparison],
    kept: set[int],
    compares_floats: Callable[[Comparison], bool],
    grounded: set[str],
) -> set[int]:
    """Equalities of floats left comparisons that alone bind a variable: as safety binds
    (`reasoner.analysis.safety.bound_variables`), from the atoms through the equalities that
    stay `=`, then through these, each kept in turn (and what it binds spread again)."""
    bound = set(grounded)
    needed: set[int] = set()
    while True:
        staying = kept | needed | {id(e) for e in equalities if not compares_floats(e)}
        _spread([literal for literal in equalities if id(literal) in staying], bound)
        for literal in equalities:
            if id(literal) in staying:
                continue
            sides = ((literal.left, literal.right), (literal.right, literal.left))
            target = next(
                (
                    target
                    for target, source in sides
                    if isinstance(target, Variable)
                    and target.name not in bound
                    and all_bound(source, bound)
                ),
                None,
            )
            if target is not None:
                needed.add(id(literal))
                bound.add(target.name)
                break
        else:
            return needed


def _spread(equalities: list[Comparison], bound: set[str]) -> None:
    """Add to `bound` what `equalities` bind from it, to a fixpoint."""
    changed = True
    while changed:
        changed = False
        for literal in equalities:
            for target, source in ((literal.left, literal.right), (literal.right, literal.left)):
                if not all_bound(source, bound):
                    continue
                new = {
                    part.name
                    for part in taken_apart(target)
                    if isinstance(part, Variable) and part.name not in bound
                }
                if new:
                    bound |= new
                    changed = True
                    break


def _names(term: Term) -> set[str]:
    """The variables of a term whose shared subterms (`_resolved`'s substitutions) are
    visited once each."""
    seen: set[int] = set()
    names: set[str] = set()
    stack = [term]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Variable):
            names.add(node.name)
        elif isinstance(node, BinaryOp):
            stack += [node.left, node.right]
        elif isinstance(node, Functor | RecordTerm | BranchTerm):
            stack.extend(node.args)
        elif isinstance(node, Cast):
            stack.append(node.term)
    return names


def _correlated_results(body: tuple[BodyLiteral, ...]) -> set[str]:
    """The values of the body's correlated aggregates. The analysis binds an aggregate's
    value by an atom of the aggregate's relation, whose other arguments are what the rule
    correlates it by (none: uncorrelated)."""
    return {
        arg.name
        for literal in body
        if isinstance(literal, Atom) and len(literal.args) > 1
        for arg in literal.args
        if isinstance(arg, Variable) and is_aggregate_result(arg)
    }


def _generated(literal: Comparison, correlated: set[str]) -> bool:
    """Whether `literal` equates a variable with a correlated aggregate's value."""
    sides = (literal.left, literal.right)
    return all(isinstance(side, Variable) for side in sides) and any(
        isinstance(side, Variable) and side.name in correlated for side in sides
    )


def _grounded(body: tuple[BodyLiteral, ...], correlated: set[str]) -> set[str]:
    """Soufflé's base-grounded variables: arguments of positive atoms (fields of their
    records too), and the variables generators bind: a range's, and an uncorrelated
    aggregate's result (`s = min y : ...`, which the analysis made `s = !r0` and an atom
    binding `!r0`). What a `correlated` aggregate's value gives a variable is not among them:
    its equation is resolved apart (`_resolved`)."""
    names = atom_variables(body)
    for literal in body:
        if is_generator(literal):
            assert isinstance(literal, Comparison) and isinstance(literal.left, Variable)
            names.add(literal.left.name)
        elif isinstance(literal, Comparison) and literal.op == "=":
            sides = (literal.left, literal.right)
            if (
                not _generated(literal, correlated)
                and all(isinstance(side, Variable) for side in sides)
                and any(is_aggregate_result(side) for side in sides)
            ):
                names |= {side.name for side in sides if isinstance(side, Variable)}
    return names
