"""Unsigned and float operations: the oracle's own reading of which operations work on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from reasoner.analysis.model import AnalyzedProgram
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
    is_negation,
)
from reasoner.values.records import AdtType, RecordType
from tests.oracle.arithmetic import float_of_bits
from tests.oracle.terms import aggregates_in
from tests.oracle.values import FLOAT, UNSIGNED

_OWN_TYPES = ("unsigned", "float")
"""The numeric types whose operations differ from a number's."""


def typed(program: Program, analyzed: AnalyzedProgram) -> Program:
    """`program` with each operation on unsigned values marked (`UNSIGNED`) and each constant
    read by one as its value 0 .. 2^64 - 1, and each operation on floats marked (`FLOAT`) and
    each constant read by one as a Python float. Soufflé's arithmetic works in its operands'
    one type: a variable's is its column's (or that of what `=` gives it), a literal's its
    suffix or point or its context's (a head's or an atom's column, the other side of a
    comparison)."""
    columns = {name: info.types for name, info in analyzed.relations.items()}
    _record_columns.clear()
    _record_columns.update({name: info.value_types for name, info in analyzed.relations.items()})
    _primitives.clear()
    _primitives.update(_primitive_types(program))
    rules = []
    for rule in program.rules:
        kinds = _variable_kinds(rule, columns)
        rules.append(
            replace(
                rule,
                head=_typed_atom(rule.head, kinds, columns),
                body=tuple(_typed_literal(lit, kinds, columns) for lit in rule.body),
            )
        )
    facts = tuple(replace(fact, atom=_typed_atom(fact.atom, {}, columns)) for fact in program.facts)
    return replace(program, rules=tuple(rules), facts=facts)


_primitives: dict[str, str] = {}
"""The primitive type of each type name of the program being evaluated."""


_record_columns: dict[str, tuple] = {}
"""Each relation's column types with records' fields (`RelationInfo.value_types`)."""


def _primitive_types(program: Program) -> dict[str, str]:
    """Each `.type` name's primitive type: a subtype's or an alias's base's, a union's
    first member's (they share one)."""
    bases = {
        declaration.name: declaration.bases[0] if declaration.bases else "record"
        for declaration in program.types
    }
    found = {name: name for name in ("number", "unsigned", "float", "symbol", "record")}
    for name in bases:
        seen, current = set(), name
        while current in bases and current not in seen:
            seen.add(current)
            current = bases[current]
        found[name] = current
    return found


def _atoms(literals: Iterable[object]) -> Iterator[Atom]:
    for literal in literals:
        if isinstance(literal, Atom):
            yield literal
        elif isinstance(literal, Negation):
            yield literal.atom
        for aggregate in aggregates_in(literal):
            yield from _atoms(aggregate.body)


def _comparisons(literals: Iterable[object]) -> Iterator[Comparison]:
    for literal in literals:
        if isinstance(literal, Comparison):
            yield literal
        for aggregate in aggregates_in(literal):
            yield from _comparisons(aggregate.body)


def _variable_kinds(rule: Rule, columns: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for atom in _atoms([rule.head, *rule.body]):
        for arg, kind in zip(atom.args, columns.get(atom.relation, ()), strict=False):
            if isinstance(arg, Variable):
                kinds.setdefault(arg.name, kind)
    comparisons = list(_comparisons(rule.body))
    changed = True
    while changed:
        changed = False
        for comparison in comparisons:
            for side, other in (
                (comparison.left, comparison.right),
                (comparison.right, comparison.left),
            ):
                kind = _kind(other, kinds)
                if isinstance(side, Variable) and side.name not in kinds and kind is not None:
                    kinds[side.name] = kind
                    changed = True
    return kinds


def _kind(term: object, kinds: Mapping[str, str]) -> str | None:
    if isinstance(term, Variable):
        return kinds.get(term.name)
    if isinstance(term, NumberConst):  # one written negative is a number or a float
        return None if term.kind == "number" else term.kind
    if isinstance(term, BinaryOp):
        return _kind(term.left, kinds) or _kind(term.right, kinds)
    if isinstance(term, Aggregate):
        if term.op == "mean":
            return "float"
        return "number" if term.target is None else _kind(term.target, kinds)
    if isinstance(term, Cast):
        return _primitives.get(term.type, term.type)
    if isinstance(term, Functor) and term.name in ("to_unsigned", "to_float"):
        return term.name[3:]
    return None if term is None else "other"  # a functor's result, a string: not numeric


def _own(kind: object) -> str | None:
    """`kind` if its operations are its own (see `_OWN_TYPES`), else None."""
    return kind if kind in _OWN_TYPES else None  # type: ignore[return-value]


def _typed_atom(atom: Atom, kinds: Mapping[str, str], columns: Mapping[str, tuple]) -> Atom:
    types = _record_columns.get(atom.relation) or columns.get(atom.relation, ())
    args = tuple(
        _typed_field(arg, kind, kinds, columns)
        for arg, kind in zip(atom.args, types or [None] * len(atom.args), strict=True)
    )
    return replace(atom, args=args)


def _typed_field(term: Term, kind: object, kinds: Mapping[str, str], columns: Mapping) -> Term:
    """`term` in a place of type `kind`: a record's fields each in their own field's type."""
    if isinstance(term, RecordTerm) and isinstance(kind, RecordType):
        fields = kind.fields
    elif isinstance(term, BranchTerm) and isinstance(kind, AdtType):
        fields = next(b.fields for b in kind.branches if b.name == term.name)
    else:
        return _typed_term(term, _own(kind), kinds, columns)
    args = tuple(
        _typed_field(arg, field, kinds, columns)
        for arg, field in zip(term.args, fields, strict=True)
    )
    return replace(term, args=args)


def _typed_literal(literal: object, kinds: Mapping[str, str], columns: Mapping[str, tuple]):
    if isinstance(literal, Atom):
        return _typed_atom(literal, kinds, columns)
    if isinstance(literal, Negation):
        return replace(literal, atom=_typed_atom(literal.atom, kinds, columns))
    assert isinstance(literal, Comparison)
    sides = (_kind(literal.left, kinds), _kind(literal.right, kinds))
    context = next((kind for kind in _OWN_TYPES if kind in sides), None)
    return replace(
        literal,
        left=_typed_term(literal.left, context, kinds, columns),
        right=_typed_term(literal.right, context, kinds, columns),
    )


def _typed_term(
    term: Term, context: str | None, kinds: Mapping[str, str], columns: Mapping[str, tuple]
) -> Term:
    """`term` in a place of numeric type `context` (`unsigned`, `float` or None)."""
    if isinstance(term, NumberConst):
        if term.kind == "float":
            return replace(term, value=float_of_bits(term.value))
        if context == "float":  # `-0` is -0.0, as `stod("-0")` is
            negative_zero = term.kind == "number" and term.value == 0
            return replace(term, value=-0.0 if negative_zero else float(term.value))
        return replace(term, value=term.value % 2**64) if context == "unsigned" else term
    if isinstance(term, BinaryOp):
        inner = context or _own(_kind(term, kinds))
        mark = {"unsigned": UNSIGNED, "float": FLOAT}.get(inner or "", "")
        op = "neg" if inner == "float" and is_negation(term) else term.op
        return replace(
            term,
            op=mark + op,
            left=_typed_term(term.left, inner, kinds, columns),
            right=_typed_term(term.right, inner, kinds, columns),
        )
    if isinstance(term, Cast):  # its operand in its own type; a literal in the cast's
        target = _primitives.get(term.type, term.type)
        own = _kind(term.term, kinds)
        if isinstance(term.term, NumberConst) and term.term.kind in (None, "number"):
            own = target  # Soufflé types a constant by its cast: `as(-1, float)` is -1.0
        inner = _typed_term(term.term, _own(own), kinds, columns)
        return replace(term, term=inner, type=target)
    if isinstance(term, Functor):  # a parameter is a symbol or in its own numeric type
        return replace(
            term,
            args=tuple(_typed_term(a, _own(_kind(a, kinds)), kinds, columns) for a in term.args),
        )
    if isinstance(term, Aggregate):
        inner = None if term.target is None else context or _own(_kind(term.target, kinds))
        if term.op == "mean":
            inner = "float"
        target = term.target and _typed_term(term.target, inner, kinds, columns)
        body = tuple(_typed_literal(literal, kinds, columns) for literal in term.body)
        op = term.op
        if inner == "unsigned" and op == "sum":
            op = UNSIGNED + op
        elif inner == "float":
            op = FLOAT + op
        return replace(term, op=op, target=target, body=body)
    return term
