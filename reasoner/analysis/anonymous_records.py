"""Record literals that no declaration types, resolved as Soufflé resolves them before typing.

A record literal takes its type from its place: a relation's column, a field, a functor's
parameter. `[x, y] = [y, x]` or `r = [x, 2], r = [1, y]` give it none, yet Soufflé runs them:
its FoldAnonymousRecords and ResolveAnonymousRecordAliases passes rewrite them away first.

- `[a, b] = [c, d]` is `a = c, b = d`: records are equal when their fields are.
- `[a, b] != [c, d]` holds when a field differs: the rule becomes one rule per field, `a != c`
  in the first and `b != d` in the second (one such comparison per pass; the rules made are
  rewritten again). Of two empty records, `=` holds and `!=` does not.
- `r = [x, 2]`, where the rule binds `r` and uses it only as a side of `=` with a record
  literal (so that nothing declares its type), is `r` replaced by `[x, 2]` throughout the rule;
  the comparisons it was in are then between records, and fold.

Each rewrite keeps what the rule derives (records are compared by value), so it is applied
wherever it matches, typed or not; only comparisons at the top of a body are rewritten, as
Soufflé rewrites them (an aggregate's body is its own scope).
"""

from __future__ import annotations

import dataclasses
from typing import TypeGuard

from reasoner.analysis.safety import bound_variables
from reasoner.analysis.terms import deep_terms, map_atom, map_literal
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Comparison,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
)

MAX_PASSES = 64
"""Rewrites of one rule before the rest is left to typing: each pass removes a record
literal, so only a rule with more literals than this stops early."""


def resolve_anonymous_records(program: Program) -> Program:
    """`program` with each rule's record comparisons rewritten as the module docstring says
    (the same object when no rule has one)."""
    rules: list[Rule] = []
    changed = False
    for rule in program.rules:
        rewritten = _rewrite(rule)
        changed |= rewritten != [rule]
        rules.extend(rewritten)
    return dataclasses.replace(program, rules=tuple(rules)) if changed else program


def _rewrite(rule: Rule) -> list[Rule]:
    pending, done = [rule], []
    for _ in range(MAX_PASSES):
        if not pending:
            break
        following = []
        for current in pending:
            step = _substitute_alias(current) or _fold(current)
            if step is None:
                done.append(current)
            else:
                following.extend(step)
        pending = following
    return done + pending


def _fold(rule: Rule) -> list[Rule] | None:
    """The rules that `rule`'s comparisons between two record literals of one size become;
    None when it has none."""
    body: list[BodyLiteral] = []
    unequal: Comparison | None = None
    folded = False
    for literal in rule.body:
        if not _between_records(literal):
            body.append(literal)
        elif literal.op == "=":
            body.extend(_fieldwise(literal))
            folded = True
        elif unequal is None:
            unequal = literal
        else:
            body.append(literal)  # the next pass splits it
    if not folded and unequal is None:
        return None
    if unequal is None:
        return [dataclasses.replace(rule, body=tuple(body))]
    return [dataclasses.replace(rule, body=(*body, field)) for field in _fieldwise(unequal)]


def _between_records(literal: BodyLiteral) -> TypeGuard[Comparison]:
    return (
        isinstance(literal, Comparison)
        and literal.op in ("=", "!=")
        and isinstance(literal.left, RecordTerm)
        and isinstance(literal.right, RecordTerm)
        and len(literal.left.args) == len(literal.right.args)
    )


def _fieldwise(comparison: Comparison) -> list[Comparison]:
    """`[a, b] op [c, d]` as `a op c` and `b op d`; of empty records, a comparison that
    holds (`=`) or does not (`!=`)."""
    left, right = comparison.left, comparison.right
    assert isinstance(left, RecordTerm) and isinstance(right, RecordTerm)
    if not left.args:
        zero = NumberConst(0, comparison.span)
        return [Comparison(comparison.op, zero, zero, comparison.span)]
    return [
        Comparison(comparison.op, a, b, comparison.span)
        for a, b in zip(left.args, right.args, strict=True)
    ]


def _substitute_alias(rule: Rule) -> list[Rule] | None:
    """`rule` with its first bound record alias replaced by its record; None when it has
    none."""
    bound = bound_variables(rule.body)
    for literal in rule.body:
        if not isinstance(literal, Comparison) or literal.op != "=":
            continue
        for side, other in ((literal.left, literal.right), (literal.right, literal.left)):
            if not (isinstance(side, Variable) and isinstance(other, RecordTerm)):
                continue
            if side.name in bound and _only_record_aliases(rule, side.name):
                return [_replaced(rule, side.name, other)]
    return None


def _only_record_aliases(rule: Rule, name: str) -> bool:
    """Whether each use of variable `name` in `rule` is a side of an `=` whose other side is
    a record literal: no declaration types it then."""
    aliases = sum(
        (
            isinstance(lit.left, Variable)
            and lit.left.name == name
            and isinstance(lit.right, RecordTerm)
        )
        + (
            isinstance(lit.right, Variable)
            and lit.right.name == name
            and isinstance(lit.left, RecordTerm)
        )
        for lit in rule.body
        if isinstance(lit, Comparison) and lit.op == "="
    )
    uses = sum(
        1
        for term in deep_terms(rule.head.args, rule.body)
        if isinstance(term, Variable) and term.name == name
    )
    return uses == aliases


def _replaced(rule: Rule, name: str, record: RecordTerm) -> Rule:
    def leaf(term: Term) -> Term | None:
        return record if isinstance(term, Variable) and term.name == name else None

    head: Atom = map_atom(rule.head, leaf)
    body = tuple(map_literal(literal, leaf) for literal in rule.body)
    return dataclasses.replace(rule, head=head, body=body)
