"""Soufflé's `autoinc()`: a number per row a rule derives, from a counter that starts at 0.

Soufflé increments one counter each time it inserts a row whose head calls `autoinc()`, so the
numbers follow its order of evaluation: the order of its strata, of the rules within them, of
its join loops, and of the index each loop scans, which its index selection chooses from every
other use of the relation (`e(x, y)` is scanned by `y` when another rule searches `e` on `y`
alone). That order is reproduced exactly where it does not depend on those choices:

- one rule of the program calls `autoinc()`, once, as (part of) a head argument, so its numbers
  start at 0 whatever runs before it;
- its body reads at most one relation positively (negations, comparisons and aggregates only
  filter or extend each row, and Soufflé evaluates them inside the scan), not an `eqrel` (whose
  scan follows its classes), and that atom has at most one column that is not a constant (a
  variable repeated across columns is one column), so every index of the relation orders the
  rows the scan meets by that column's value alone;
- the head holds that column's variable, so Soufflé visits every row. A body that shares no
  variable with the head (`r(autoinc()) :- a(x), !b(x).`, `a(_)`) is, after Soufflé's
  PartitionBodyLiterals and its conversion of unused scans into existence checks, a test made
  once: one row at most, numbered 0, here too. A variable that reaches the head only through
  other literals is refused: Soufflé's alias resolution decides between the two
  (`y = x + 1` puts `x` in the head, `y = 5, x < y` makes the check);
- Soufflé orders a column by its 64-bit pattern as a signed integer: numbers by value, unsigned
  values above 2^63 first, floats by their bits, symbols by their ordinal (the order they were
  first seen in, which `ord` shows and the symbol table here keeps); a record column is refused,
  its ids being Soufflé's own.

Anything else is refused by name (`unsupported_feature`), at the place that makes the order
Soufflé's own. A recursive rule is refused by the stratification, as a numbering that depends
on itself.

The rewrite:

    r(x, autoinc() + 1) :- a(x), !b(x).

becomes a rule of the rows to number, keyed by the scanned column, with the head's variables:

    autoinc!<digest>!b(x) :- a(x), !b(x).

a relation `autoinc!<digest>(x, n)` that numbers those rows in the order of `x` (an
`AggregateDefinition` of op `autoinc`, a stratum of its own computed from all of its source's
rows: `reasoner.executors.aggregate`), and the rule as written reading it:

    r(x, n + 1) :- autoinc!<digest>(x, n).

The counter belongs to one
evaluation: an Update renumbers the rows from their source, as a fresh Bootstrap would, so the
state stays a Bootstrap's (a row inserted before others moves their numbers, as it would in
Soufflé's next run).

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from reasoner.analysis.disconnected import head_component
from reasoner.analysis.model import AggregateDefinition
from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import (
    deep_terms,
    leaves,
    map_term,
    render,
    render_atom,
    render_literal,
)
from reasoner.errors import UNSUPPORTED_FEATURE, Span
from reasoner.support.digest import short_digest
from reasoner.syntax.ast import (
    AUTOINC,
    Atom,
    BodyLiteral,
    Comparison,
    Functor,
    NumberConst,
    Program,
    Rule,
    Term,
    Variable,
    Wildcard,
)
from reasoner.values.functors import GENERATOR

NUMBER_VARIABLE = "!n"
"""The variable that holds a row's number in the rule as rewritten (`!` starts no name a
program can write)."""
TEXT = "autoinc()"
"""How explanations name a numbered row's relation."""


@dataclasses.dataclass(frozen=True, slots=True)
class Numbered:
    """The program without `autoinc()`, the numbering it needs, and its typing rule (for type
    inference only, as an aggregate's: `reasoner.analysis.aggregates.Rewritten`)."""

    program: Program
    numberings: tuple[AggregateDefinition, ...] = ()
    typing_rules: tuple[Rule, ...] = ()


def number_rows(program: Program, reporter: Reporter) -> Numbered:
    """`program` with its `autoinc()` rewritten as the module docstring shows. Where it
    cannot be numbered as Soufflé numbers it, raises `ProgramError` with every error reported
    so far: the checks after this one expect no `autoinc()` left."""
    refusals: list[tuple[str, Functor | Span]] = [
        ("in a fact: write it in a rule's head", call)
        for fact in program.facts
        for call in _calls(fact.atom.args)
    ]
    numbered = []
    for rule in program.rules:
        body_calls = list(_calls((), rule.body))
        if rule.dominating is not None:
            body_calls += _calls(rule.dominating.args)
        refusals += [
            ("outside a rule's head: only a head's argument is numbered", call)
            for call in body_calls
        ]
        head_calls = sorted(_calls(rule.head.args), key=lambda c: (c.span.line, c.span.column))
        if len(head_calls) > 1:
            refusals.append(
                (
                    "twice in one head: the numbers would follow Soufflé's order of the head's "
                    "arguments",
                    head_calls[1],
                )
            )
        elif head_calls and not body_calls:
            numbered.append((rule, head_calls[0]))
    refusals += [
        (
            "in more than one rule (a disjunction's branches and an inline relation's clauses "
            "are rules of their own): their numbers would follow the order Soufflé evaluates "
            "the rules in",
            call,
        )
        for _rule, call in numbered[1:]
    ]
    eqrels = frozenset(d.name for d in program.declarations if d.eqrel)
    scanned = _scanned(numbered[0][0], eqrels) if numbered and not refusals else None
    if isinstance(scanned, _Refusal):
        refusals.append((scanned.reason, scanned.where))
    for reason, where in refusals:
        _refuse(reporter, reason, where)
    if refusals:
        reporter.raise_if_errors()
    if scanned is None or isinstance(scanned, _Refusal):
        return Numbered(program)
    rule, call = numbered[0]
    return _rewritten(program, rule, call.span, *scanned)


def refuse_in_query(body: tuple[BodyLiteral, ...], reporter: Reporter) -> None:
    """A query numbers nothing: raises `ProgramError` at its first `autoinc()`."""
    for call in _calls((), body):
        _refuse(reporter, "in a query: only a rule's head is numbered", call)
        reporter.raise_if_errors()


def _refuse(reporter: Reporter, reason: str, where: Functor | Span) -> None:
    span = where.span if isinstance(where, Functor) else where
    reporter.error(UNSUPPORTED_FEATURE, f"`autoinc()` {reason}", span)


def _calls(terms: tuple[Term, ...], body: tuple[BodyLiteral, ...] = ()) -> Iterator[Functor]:
    for term in deep_terms(terms, body):
        if isinstance(term, Functor) and term.name == AUTOINC:
            yield term


@dataclasses.dataclass(frozen=True, slots=True)
class _Refusal:
    reason: str
    where: Span


def _scanned(
    rule: Rule, eqrels: frozenset[str]
) -> tuple[tuple[BodyLiteral, ...], Variable | None] | _Refusal:
    """The rule's body, with its scanned column's variable (None for none, a `_` there
    named); or why Soufflé's order is not reproduced."""
    atoms = [literal for literal in rule.body if isinstance(literal, Atom)]
    if len(atoms) > 1:
        return _Refusal(
            f"in a rule that joins `{atoms[0].relation}` with `{atoms[1].relation}`: the "
            "numbers would follow Soufflé's join order",
            atoms[1].span,
        )
    for literal in rule.body:
        if isinstance(literal, Comparison) and any(
            isinstance(side, Functor) and side.name == GENERATOR
            for side in (literal.left, literal.right)
        ):
            return _Refusal(
                "in a rule with `range`: the numbers would follow Soufflé's order of the "
                "values it generates",
                literal.span,
            )
    if not atoms:
        return rule.body, None
    atom = atoms[0]
    if atom.relation in eqrels:
        return _Refusal(
            f"numbers the rows of `{atom.relation}`, an `eqrel`, which Soufflé scans in the "
            "order of its classes",
            atom.span,
        )
    columns: dict[str, Term] = {}
    for column, arg in enumerate(atom.args):
        if isinstance(arg, Variable):
            columns.setdefault(arg.name, arg)
        elif any(isinstance(leaf, Variable | Wildcard) for leaf in leaves(arg)):
            columns[f"{column}"] = arg
    connected = head_component(rule)
    if not any(_variables((term,), ()) & connected for term in columns.values()):
        return rule.body, None  # Soufflé checks the body once: at most one row
    if len(columns) > 1:
        return _Refusal(
            f"numbers the rows of `{atom.relation}` in the order of the index Soufflé scans, "
            "which its other uses of the relation choose: read one of its columns (the "
            "others constants)",
            atom.span,
        )
    (key,) = columns.values()
    if not isinstance(key, Variable):
        return _Refusal(
            "numbers rows by a column's values: read the column with a variable, not a "
            f"pattern ({render(key)})",
            key.span,
        )
    if any(leaf == key for arg in rule.head.args for leaf in leaves(arg)):
        return rule.body, key
    return _Refusal(
        f"in a rule whose head reaches `{key.name}` only through the body: whether Soufflé "
        "numbers each row or checks that one exists depends on its rewrites; write "
        f"`{key.name}` (or the expression of it) in the head",
        key.span,
    )


def _variables(terms: tuple[Term, ...], body: tuple[BodyLiteral, ...]) -> set[str]:
    return {term.name for term in deep_terms(terms, body) if isinstance(term, Variable)}


def _rewritten(
    program: Program,
    rule: Rule,
    span: Span,
    body: tuple[BodyLiteral, ...],
    key: Variable | None,
) -> Numbered:
    """The program with `rule` made the three parts of the module docstring."""
    head_variables: dict[str, Variable] = {}
    for arg in rule.head.args:
        for leaf in leaves(arg):
            if isinstance(leaf, Variable) and (key is None or leaf.name != key.name):
                head_variables.setdefault(leaf.name, leaf)
    columns = ([key] if key is not None else []) + list(head_variables.values())
    digest = short_digest(f"{rule.text}\n{render_atom(rule.head)}")
    name = f"{AUTOINC}!{digest}"
    source = Atom(f"{name}!b", tuple(columns), span)
    body_text = f"{render_atom(source)} :- {', '.join(map(render_literal, body))}."
    definition = AggregateDefinition(
        name=name,
        source=source.relation,
        group_names=tuple(c.name for c in columns),
        group=tuple(range(len(columns))),
        op=AUTOINC,
        value=None if key is None else 0,
        span=span,
        text=TEXT,
    )
    number = Variable(NUMBER_VARIABLE, span)

    def numbered(term: Term) -> Term | None:
        return number if isinstance(term, Functor) and term.name == AUTOINC else None

    head = dataclasses.replace(
        rule.head, args=tuple(map_term(arg, numbered) for arg in rule.head.args)
    )
    reading = Rule(head, (Atom(name, (*columns, number), span),), rule.span, rule.text)
    rows = Rule(source, body, rule.span, body_text)
    typing = Rule(Atom(name, (*columns, NumberConst(0, span)), span), (source,), span)
    rules = tuple(
        new for old in program.rules for new in ((rows, reading) if old is rule else (old,))
    )
    return Numbered(dataclasses.replace(program, rules=rules), (definition,), (typing,))
