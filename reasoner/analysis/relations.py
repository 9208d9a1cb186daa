"""Which relations exist, and with how many columns.

Declarations are optional, so a relation's arity comes from its first `.decl`, or else from
its first use in the text. Every later use is checked against that; an atom with the wrong
arity is recorded so that type inference can skip it instead of piling on follow-up errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reasoner.analysis.negation_locals import is_internal
from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import atoms_of
from reasoner.errors import ARITY_MISMATCH, TYPE_MISMATCH, UNKNOWN_RELATION, Span
from reasoner.syntax.ast import Atom, Declaration, Program


def position(span: Span) -> tuple[int, int]:
    return (span.line, span.column)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@dataclass
class RelationTable:
    order: list[str] = field(default_factory=list)
    """Every relation mentioned, by first mention in the source text."""
    arity: dict[str, int] = field(default_factory=dict)
    declarations: dict[str, Declaration] = field(default_factory=dict)
    """The first declaration of each declared relation."""
    bad_atoms: set[int] = field(default_factory=set)
    """`id()` of atoms whose arity is wrong."""


@dataclass(frozen=True)
class _Use:
    span: Span
    atom: Atom
    in_body: bool


def _uses(program: Program) -> list[_Use]:
    uses: list[_Use] = []
    for rule in program.rules:
        uses.append(_Use(rule.head.span, rule.head, False))
        uses.extend(_Use(atom.span, atom, True) for atom, _ in atoms_of(rule.body))
    uses.extend(_Use(fact.atom.span, fact.atom, False) for fact in program.facts)
    uses.sort(key=lambda use: position(use.span))
    return uses


def collect_relations(
    program: Program, reporter: Reporter, *, allow_undefined: bool
) -> RelationTable:
    """Fix the arity of every relation and report arity conflicts and unknown relations."""
    table = RelationTable()
    uses = _uses(program)
    mentions: list[tuple[tuple[int, int], str]] = [
        (position(decl.span), decl.name) for decl in program.declarations
    ]
    mentions.extend((position(d.span), d.relation) for d in program.directives)
    mentions.extend((position(use.span), use.atom.relation) for use in uses)
    mentions.sort(key=lambda mention: mention[0])
    table.order = list(dict.fromkeys(name for _, name in mentions))

    for decl in sorted(program.declarations, key=lambda d: position(d.span)):
        first = table.declarations.get(decl.name)
        if first is None:
            table.declarations[decl.name] = decl
            table.arity[decl.name] = len(decl.columns)
        elif len(first.columns) != len(decl.columns):
            reporter.error(
                ARITY_MISMATCH,
                f"relation `{decl.name}` is declared again with "
                f"{plural(len(decl.columns), 'column')}; its declaration at line "
                f"{first.span.line} has {len(first.columns)}",
                decl.span,
            )
        elif [c.type for c in first.columns] != [c.type for c in decl.columns]:
            reporter.error(
                TYPE_MISMATCH,
                f"relation `{decl.name}` is declared again with different column types "
                f"than at line {first.span.line}",
                decl.span,
            )

    first_use: dict[str, Span] = {}
    for use in uses:
        atom = use.atom
        name = atom.relation
        count = len(atom.args)
        expected = table.arity.get(name)
        if expected is None:
            table.arity[name] = count
            first_use[name] = atom.span
        elif expected != count:
            table.bad_atoms.add(id(atom))
            if name in table.declarations:
                message = (
                    f"relation `{name}` is declared with {plural(expected, 'column')}, "
                    f"but this atom has {plural(count, 'argument')}"
                )
            else:
                message = (
                    f"relation `{name}` is used with {plural(expected, 'argument')} at line "
                    f"{first_use[name].line}, but with {count} here"
                )
            reporter.error(ARITY_MISMATCH, message, atom.span)

    defined = set(table.declarations)
    defined.update(rule.head.relation for rule in program.rules)
    defined.update(fact.atom.relation for fact in program.facts)
    defined.update(d.relation for d in program.directives if d.kind == "input")
    reported: set[str] = set()
    for use in uses:
        name = use.atom.relation
        if use.in_body and name not in defined and name not in reported and not is_internal(name):
            reported.add(name)
            if allow_undefined:
                reporter.warning(
                    UNKNOWN_RELATION,
                    f"relation `{name}` is not defined (no .decl, rule, fact or .input): it is "
                    "empty until facts for it arrive",
                    use.atom.span,
                )
            else:
                reporter.error(
                    UNKNOWN_RELATION,
                    f"relation `{name}` is not defined: it has no .decl, rule, fact or .input",
                    use.atom.span,
                )

    for directive in program.directives:
        if directive.relation not in table.arity:
            reporter.error(
                UNKNOWN_RELATION,
                f"`.{directive.kind}` of relation `{directive.relation}`, which is never "
                "declared or used",
                directive.span,
            )
    return table
