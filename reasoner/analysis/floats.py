"""Which of a clause's float equalities are Soufflé's aliases, and which compare.

Soufflé compares floats two ways. Its relations are sets of bit patterns, so a variable
repeated across atoms, an atom's constant and a negated atom match bits (0.0 is not -0.0, a
NaN equals itself). An equality `a = b` is resolved first (`ResolveAliases`): where one side
is a variable the other side defines (the variable is then replaced by it), or where both are
variables, it is an alias, and the value is moved, bits and all; any other `a = b` is a
comparison of numbers, IEEE's (0.0 equals -0.0, a NaN equals nothing). The rewrite
(`reasoner.analysis.numeric`) keeps the aliases as the engine's `=`, an assignment or a join
on bits, and makes the comparisons `fcmp!(a, b) = 0`.

An atom's argument that is an expression over floats (`p(x + 1.0)`) is such a comparison in
Soufflé, and so is a constant 0.0 or -0.0 (the only constants whose IEEE equality is not
their bits'): the rewrite gives those a variable of their own and compares it.
"""

from __future__ import annotations

from collections.abc import Callable

from reasoner.analysis.safety import all_bound, taken_apart
from reasoner.plan.joins import term_variables
from reasoner.syntax.ast import Atom, BodyLiteral, Comparison, Term, Variable


def aliases(
    body: tuple[BodyLiteral, ...], compares_floats: Callable[[Comparison], bool]
) -> set[int]:
    """The `id`s of `body`'s equalities of floats that stay the engine's `=`.

    Soufflé's `v = w` between variables unites them into one; a group of united variables
    that a positive atom binds is that atom's value, compared bitwise where the group meets
    another atom (the engine's join on `=`). Any other group is replaced by the first term
    that defines it (`v = t`, once `t`'s variables have values), and every other equality
    that names it becomes a comparison of terms, IEEE's. So: every `v = w` stays (the
    engine moves bits from the defined side); of the definitions, the first for each group
    that can be evaluated stays, in the order a fixpoint finds them; the rest compare."""
    group: dict[str, str] = {}

    def root(name: str) -> str:
        while group.get(name, name) != name:
            name = group[name]
        return name

    equalities = [
        literal for literal in body if isinstance(literal, Comparison) and literal.op == "="
    ]
    kept = set()
    for equality in equalities:
        left, right = equality.left, equality.right
        if isinstance(left, Variable) and isinstance(right, Variable) and compares_floats(equality):
            kept.add(id(equality))
            group[root(left.name)] = root(right.name)
    defined = {
        root(part.name)
        for literal in body
        if isinstance(literal, Atom)
        for arg in literal.args
        for part in taken_apart(arg)
        if isinstance(part, Variable)
    }

    def bound_names(term: Term) -> bool:
        return all_bound(term, {name for name in term_variables(term) if root(name) in defined})

    changed = True
    while changed:
        changed = False
        for equality in equalities:
            if id(equality) in kept:
                continue
            sides = ((equality.left, equality.right), (equality.right, equality.left))
            for target, source in sides:
                if not bound_names(source):
                    continue
                groups = {
                    root(part.name)
                    for part in taken_apart(target)
                    if isinstance(part, Variable) and root(part.name) not in defined
                }
                if groups:
                    defined |= groups
                    changed = True
                    if compares_floats(equality):
                        kept.add(id(equality))
                    break
    return kept
