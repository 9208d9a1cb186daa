"""Soufflé's `eqrel` relations, as rules: the equivalence closure of what the relation holds.

`.decl same(x: T, y: T) eqrel` makes `same` reflexive (on the values it relates), symmetric
and transitive. Soufflé stores such a relation as a union-find; here it becomes three rules
over the relation itself,

    same(x, x) :- same(x, _).
    same(y, x) :- same(x, y).
    same(x, z) :- same(x, y), same(y, z).

added to the user's, so Bootstrap, Update and rule changes maintain it like any recursive
relation, and the state (iteration, count) is that of this program. The relation holds every
pair of each class, as Soufflé's output does (quadratic in the class sizes).
"""

from __future__ import annotations

from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.report import Reporter
from reasoner.errors import ARITY_MISMATCH, TYPE_MISMATCH, Span
from reasoner.syntax.ast import Atom, Declaration, Program, Rule, Variable, Wildcard


def equivalence_rules(program: Program, named: TypeSystem, reporter: Reporter) -> tuple[Rule, ...]:
    """The closure rules of every `eqrel` relation (each once); a relation that is not
    binary over one primitive type (`named`) is reported instead."""
    rules: list[Rule] = []
    done: set[str] = set()
    for declaration in program.declarations:
        if not declaration.eqrel or declaration.name in done:
            continue
        done.add(declaration.name)
        if _well_formed(declaration, named, reporter):
            rules.extend(_closure(declaration.name, declaration.span))
    return tuple(rules)


def _well_formed(declaration: Declaration, named: TypeSystem, reporter: Reporter) -> bool:
    columns = declaration.columns
    if len(columns) != 2:
        reporter.error(
            ARITY_MISMATCH,
            f"eqrel relation `{declaration.name}` must have 2 columns, not {len(columns)}",
            declaration.span,
        )
        return False
    first, second = (named.primitive(column.type) for column in columns)
    if first is None or second is None:
        return False  # an unknown type, reported as such
    if first != second:
        reporter.error(
            TYPE_MISMATCH,
            f"eqrel relation `{declaration.name}` relates values of one type, not "
            f"`{columns[0].type}` and `{columns[1].type}`",
            declaration.span,
        )
        return False
    return True


def _closure(name: str, span: Span) -> list[Rule]:
    def atom(*args: str) -> Atom:
        terms = tuple(Wildcard(span) if a == "_" else Variable(a, span) for a in args)
        return Atom(name, terms, span)

    def rule(head: Atom, *body: Atom) -> Rule:
        text = f"{_render(head)} :- {', '.join(map(_render, body))}.  // eqrel"
        return Rule(head, body, span, text)

    return [
        rule(atom("x", "x"), atom("x", "_")),
        rule(atom("y", "x"), atom("x", "y")),
        rule(atom("x", "z"), atom("x", "y"), atom("y", "z")),
    ]


def _render(atom: Atom) -> str:
    args = ", ".join(a.name if isinstance(a, Variable) else "_" for a in atom.args)
    return f"{atom.relation}({args})"
