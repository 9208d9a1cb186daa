"""`!` of a body term, as Soufflé's parser negates it: the term in disjunctive form (a list
of conjunctions, as the parser builds every body), negated by De Morgan.

Layer: `syntax`; used by the parser alone.
"""

from __future__ import annotations

from reasoner.errors import Span
from reasoner.syntax.ast import Atom, BodyLiteral, CompareOp, Comparison, Negation

Alternatives = list[list[BodyLiteral]]
"""A body in disjunctive form: one conjunction of literals per alternative."""

_NEGATED_COMPARISON: dict[str, CompareOp] = {
    "=": "!=",
    "!=": "=",
    "<": ">=",
    ">=": "<",
    ">": "<=",
    "<=": ">",
}


def negation_of(alternatives: Alternatives, start: Span) -> Alternatives:
    """`!` of a body term in disjunctive form, as Soufflé's parser negates it (`RuleBody::
    negated`): the conjunction over the alternatives of the disjunction of each one's
    negated literals, so `!(a(x) ; b(x))` is `!a(x), !b(x)` and `!(a(x), b(x))` is `!a(x) ;
    !b(x)`. A negated atom becomes the atom and a comparison its complement (`<` and `>=`,
    as Soufflé flips it, a NaN included)."""
    result: Alternatives = [[]]
    for conjunction in alternatives:
        step = [[_negated_literal(literal, start)] for literal in conjunction]
        result = [left + right for left in result for right in step]
    return result


def _negated_literal(literal: BodyLiteral, start: Span) -> BodyLiteral:
    if isinstance(literal, Atom):
        return Negation(literal, start.through(literal.span))
    if isinstance(literal, Negation):
        return literal.atom
    return Comparison(
        _NEGATED_COMPARISON[literal.op], literal.left, literal.right, start.through(literal.span)
    )
