"""Soufflé's `.type` declarations: subtypes, aliases and unions over `number` and `symbol`;
records and algebraic data types.

The engine stores values by their primitive type alone (a subtype's values are its base's: an
`Even` is a 64-bit integer, a `Name` an interned symbol), so a named type changes no value and
no plan. What it adds is checking, as Soufflé does it: two subtypes of one base are disjoint
sets of values, so a variable that one rule uses both as an `Even` and as an `Odd` can never
be bound, and the rule is refused rather than silently deriving nothing.

Each type is represented by the set of *regions* it covers: a subtype is a region of its own
(plus those of its own subtypes), a primitive covers its region and every subtype under it,
an alias covers what its target covers and a union what its members cover. Two types share a
value only if their sets meet.

A record or algebraic data type is stored as `record` (an id, `reasoner.values.records`) and is a
region of its own; its descriptor (`RecordType`, `AdtType`: its fields' types) is what reads and
writes its values. A union or subtype of one is refused, as in Soufflé.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from reasoner.analysis.relations import RelationTable
from reasoner.analysis.report import Reporter
from reasoner.errors import TYPE_MISMATCH, UNKNOWN_TYPE, Span
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Column,
    Negation,
    Program,
    TypeDeclaration,
    Variable,
)
from reasoner.values.records import AdtType, Branch, RecordType, ValueType
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType

PRIMITIVES: dict[str, ColumnType] = {
    "number": NUMBER,
    "unsigned": UNSIGNED,
    "float": FLOAT,
    "symbol": SYMBOL,
}
"""Written primitive types."""


@dataclass
class TypeSystem:
    """Every type name of a program: its primitive type and the regions it covers."""

    base: dict[str, ColumnType] = field(default_factory=dict)
    regions: dict[str, frozenset[str]] = field(default_factory=dict)
    records: dict[str, RecordType | AdtType] = field(default_factory=dict)
    """Each record or algebraic data type by name (an alias of one too)."""
    branches: dict[str, Branch] = field(default_factory=dict)
    """Each branch of an algebraic data type by its name (`$Name`)."""

    def primitive(self, name: str) -> ColumnType | None:
        """How values of type `name` are stored; None for a type that is not known."""
        return self.base.get(name)

    def value_type(self, name: str) -> ValueType | None:
        """What values of type `name` are as users see them: a record's descriptor, else the
        primitive type; None for a type that is not known."""
        return self.records.get(name) or self.base.get(name)


class _Resolver:
    def __init__(self, declarations: dict[str, TypeDeclaration], reporter: Reporter) -> None:
        self.declarations = declarations
        self.reporter = reporter
        self.system = TypeSystem()
        self.children: dict[str, list[str]] = {}
        """Subtypes declared directly under each type."""
        self._visiting: set[str] = set()
        self._broken: set[str] = set()
        """Declared types found wrong (reported once, at their declaration)."""

    def resolve(self, name: str) -> ColumnType | None:
        """The primitive type of a declared type, reporting unknown and cyclic definitions
        (once each, at the declaration)."""
        system = self.system
        if name in PRIMITIVES:
            return PRIMITIVES[name]
        if name in system.base:
            return system.base[name]
        if name in self._broken:
            return None
        declaration = self.declarations[name]
        if declaration.kind in ("record", "adt"):
            system.base[name] = RECORD
            return RECORD
        if name in self._visiting:
            self.reporter.error(
                TYPE_MISMATCH, f"type `{name}` is defined in terms of itself", declaration.span
            )
            self._broken.add(name)
            return None
        self._visiting.add(name)
        bases = [self._base_of(base, declaration) for base in declaration.bases]
        self._visiting.discard(name)
        if any(base is None for base in bases):
            self._broken.add(name)
            return None
        if RECORD in bases and declaration.kind != "alias":
            record = declaration.bases[bases.index(RECORD)]
            what = "a subtype" if declaration.kind == "subtype" else "a union"
            self.reporter.error(
                TYPE_MISMATCH,
                f"type `{name}` cannot be {what} of `{record}`, a record type",
                declaration.span,
            )
            self._broken.add(name)
            return None
        if len(set(bases)) > 1:
            members = ", ".join(
                f"`{m}` ({b})" for m, b in zip(declaration.bases, bases, strict=True)
            )
            self.reporter.error(
                TYPE_MISMATCH,
                f"union `{name}` mixes primitive types: {members}",
                declaration.span,
            )
            self._broken.add(name)
            return None
        system.base[name] = bases[0]  # type: ignore[assignment]  # a primitive: checked above
        return bases[0]

    def _base_of(self, base: str, declaration: TypeDeclaration) -> ColumnType | None:
        if base in PRIMITIVES or base in self.declarations:
            return self.resolve(base)
        _unknown(self.reporter, base, declaration.span)
        return None

    def covered(self, name: str) -> frozenset[str]:
        """The regions of a resolved type (see the module docstring)."""
        known = self.system.regions.get(name)
        if known is not None:
            return known
        declaration = self.declarations.get(name)
        own: set[str] = set()
        if declaration is None or declaration.kind in ("subtype", "record", "adt"):
            own.add(name)  # a primitive or a subtype: a region of its own
        else:
            for member in declaration.bases:
                own |= self.covered(member)
        for child in self.children.get(name, ()):
            own |= self.covered(child)
        regions = self.system.regions[name] = frozenset(own)
        return regions


def _unknown(reporter: Reporter, name: str, span: Span) -> None:
    reporter.error(
        UNKNOWN_TYPE,
        f"unknown type `{name}`: number, unsigned, float, symbol or a type declared with .type",
        span,
    )


def resolve_types(program: Program, reporter: Reporter) -> TypeSystem:
    """The program's type names with their primitive types and regions; reports types used
    but not declared, declared twice, cyclic, or mixing number and symbol."""
    declarations: dict[str, TypeDeclaration] = {}
    for declaration in program.types:
        name = declaration.name
        if name in PRIMITIVES:
            message = f"`{name}` is a built-in type and cannot be declared"
            reporter.error(TYPE_MISMATCH, message, declaration.span)
        elif name in declarations:
            first = declarations[name].span.line
            reporter.error(
                TYPE_MISMATCH,
                f"type `{name}` is declared again; its declaration is at line {first}",
                declaration.span,
            )
        else:
            declarations[name] = declaration
    resolver = _Resolver(declarations, reporter)
    for name in declarations:
        resolver.resolve(name)
    for name, declaration in declarations.items():
        if declaration.kind == "subtype" and name in resolver.system.base:
            resolver.children.setdefault(declaration.bases[0], []).append(name)
    system = resolver.system
    system.base.update(PRIMITIVES)
    _describe_records(declarations, system, reporter)
    for name in list(system.base):
        resolver.covered(name)
    for decl in program.declarations:
        for column in decl.columns:
            if column.type not in system.base and column.type not in declarations:
                _unknown(reporter, column.type, column.span)  # (a broken one is reported)
    return system


def _describe_records(
    declarations: dict[str, TypeDeclaration], system: TypeSystem, reporter: Reporter
) -> None:
    """The descriptors of the record and algebraic data types: shells first, so that fields
    may name any of them (a list's tail is the list), then the fields."""
    for name, declaration in declarations.items():
        if declaration.kind == "record":
            system.records[name] = RecordType(name, tuple(c.name for c in declaration.fields))
        elif declaration.kind == "adt":
            adt = system.records[name] = AdtType(name)
            branches = []
            for index, written in enumerate(declaration.branches):
                first = system.branches.get(written.name)
                if first is not None:
                    reporter.error(
                        TYPE_MISMATCH,
                        f"branch `{written.name}` is declared again; it is a branch of "
                        f"`{first.adt.name}`",
                        written.span,
                    )
                branch = Branch(written.name, index, adt, tuple(c.name for c in written.fields))
                branches.append(branch)
                system.branches.setdefault(written.name, branch)
            adt.branches = tuple(branches)
    for name in declarations:
        target = name
        seen = set()
        while declarations[target].kind == "alias" and target not in seen:
            seen.add(target)
            target = declarations[target].bases[0]
            if target not in declarations:
                break
        if target != name and target in system.records:
            system.records[name] = system.records[target]
    for name, declaration in declarations.items():
        described = system.records.get(name)
        if isinstance(described, RecordType) and described.name == name:
            described.fields = _field_types(declaration.fields, system, reporter, declarations)
        elif isinstance(described, AdtType) and described.name == name:
            for branch, written in zip(described.branches, declaration.branches, strict=True):
                branch.fields = _field_types(written.fields, system, reporter, declarations)


def _field_types(
    columns: tuple[Column, ...], system: TypeSystem, reporter: Reporter, declared: Iterable[str]
) -> tuple[ValueType, ...]:
    found: list[ValueType] = []
    for column in columns:
        value_type = system.value_type(column.type)
        if value_type is None:
            if column.type not in declared:  # (a broken one is reported)
                _unknown(reporter, column.type, column.span)
            value_type = NUMBER
        found.append(value_type)
    return tuple(found)


def check_subtypes(
    program: Program, table: RelationTable, system: TypeSystem, reporter: Reporter
) -> None:
    """Refuse a clause that uses one variable at columns of disjoint types (`Even` and `Odd`):
    no value could bind it. Once per variable, at its first conflicting occurrence; a number
    against a symbol is left to the type inference, which reports it."""
    for rule in program.rules:
        _check_clause(rule.head, rule.body, table, system, reporter)


def _typed_arguments(atoms: Iterable[Atom], table: RelationTable) -> Iterable[tuple[Variable, str]]:
    for atom in atoms:
        declaration = table.declarations.get(atom.relation)
        if declaration is None or len(declaration.columns) != len(atom.args):
            continue
        for arg, column in zip(atom.args, declaration.columns, strict=True):
            if isinstance(arg, Variable):
                yield arg, column.type


def _check_clause(
    head: Atom,
    body: tuple[BodyLiteral, ...],
    table: RelationTable,
    system: TypeSystem,
    reporter: Reporter,
) -> None:
    atoms = [
        literal.atom if isinstance(literal, Negation) else literal
        for literal in body
        if isinstance(literal, Atom | Negation)
    ]
    possible: dict[str, tuple[frozenset[str], str, Span]] = {}
    """Per variable: the regions its uses so far allow, and the last type and place that
    narrowed them."""
    reported: set[str] = set()
    for variable, type_name in _typed_arguments([*atoms, head], table):
        regions = system.regions.get(type_name)
        if regions is None or variable.name in reported:
            continue
        known = possible.get(variable.name)
        if known is None:
            possible[variable.name] = (regions, type_name, variable.span)
            continue
        if system.base[type_name] != system.base[known[1]] or system.base[type_name] == RECORD:
            continue  # number against symbol, or records: the type inference reports that
        narrowed = known[0] & regions
        if narrowed:
            if narrowed != known[0]:
                possible[variable.name] = (narrowed, type_name, variable.span)
            continue
        reported.add(variable.name)
        where = known[2]
        reporter.error(
            TYPE_MISMATCH,
            f"variable `{variable.name}` is a `{type_name}` here but a `{known[1]}` at line "
            f"{where.line}, column {where.column}: no value is both",
            variable.span,
        )
