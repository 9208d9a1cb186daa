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
from reasoner.syntax.ast import Atom, BodyLiteral, Comparison, Variable


def aliases(
    body: tuple[BodyLiteral, ...], compares_floats: Callable[[Comparison], bool]
) -> set[int]:
    """The `id`s of `body`'s equalities of floats that are aliases: both sides variables, or
    one side a variable that a positive atom does not bind and the other side, its variables
    bound, defines (in the order definitions become possible, as Soufflé's fixpoint finds
    them)."""
    bound = {
        part.name
        for literal in body
        if isinstance(literal, Atom)
        for arg in literal.args
        for part in taken_apart(arg)
        if isinstance(part, Variable)
    }
    equalities = [
        literal for literal in body if isinstance(literal, Comparison) and literal.op == "="
    ]
    kept = {
        id(equality)
        for equality in equalities
        if isinstance(equality.left, Variable)
        and isinstance(equality.right, Variable)
        and compares_floats(equality)
    }
    changed = True
    while changed:
        changed = False
        for equality in equalities:
            sides = ((equality.left, equality.right), (equality.right, equality.left))
            for target, source in sides:
                if not all_bound(source, bound):
                    continue
                defined = {
                    part.name
                    for part in taken_apart(target)
                    if isinstance(part, Variable) and part.name not in bound
                }
                if defined:
                    bound |= defined
                    changed = True
                    if compares_floats(equality):
                        kept.add(id(equality))
    return kept
