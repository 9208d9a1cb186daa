"""Refuse, before anything runs, a constant `match` pattern whose construct is not translated
exactly into Python's `re` (`reasoner.values.ecmascript_regex`): naming it beats an answer that
might
differ from Soufflé's. A pattern known only at run time is refused when it is met (an
evaluation error naming it); an invalid pattern is no refusal: it matches nothing, and its
negation nothing either, as in Soufflé."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import is_constraint_call
from reasoner.errors import UNSUPPORTED_FEATURE
from reasoner.syntax.ast import BodyLiteral, Comparison, Functor, StringConst
from reasoner.values.ecmascript_regex import unsupported


def refuse_untranslated_patterns(
    bodies: Iterable[Sequence[BodyLiteral]], reporter: Reporter
) -> None:
    """Report each `match("...", s)` of `bodies` whose constant pattern is untranslated
    (`match` is only ever a constraint, a body literal of its own; an aggregate's body is a
    rule's once the aggregates are rewritten)."""
    for body in bodies:
        for literal in body:
            if not (isinstance(literal, Comparison) and is_constraint_call(literal)):
                continue
            call = literal.left
            assert isinstance(call, Functor)
            pattern = call.args[0]
            if call.name != "match" or not isinstance(pattern, StringConst):
                continue
            feature = unsupported(pattern.value)
            if feature is not None:
                reporter.error(
                    UNSUPPORTED_FEATURE,
                    f"`match` pattern {pattern.value!r} uses {feature}, which is not supported",
                    pattern.span,
                )
