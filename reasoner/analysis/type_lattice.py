"""The lattice of types the inference works in: the primitive types, records, and the vague
types a class has until something decides (`numeric`, `signed?`, `ordered?`, `record?`),
how two types meet (`unify`), how messages name them and how values of each are stored.

Layer: `analysis`; used by the type inference (`reasoner.analysis.types`) and the checks.
"""

from __future__ import annotations

from typing import Literal, cast

from reasoner.syntax.ast import BinaryOp, Term
from reasoner.values.records import AdtType, RecordType
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType

Known = ColumnType | Literal["numeric", "signed?", "record?", "ordered?"] | RecordType | AdtType
"""A class's type: a primitive, `numeric` (a number, an unsigned or a float, not yet known
which: what a bare numeric literal or arithmetic says until something decides), `signed?`
(a number or a float), `ordered?` (numeric or a symbol: what `+`, `max`, `min` and the
ordering comparisons take, which Soufflé overloads for symbols), a record or algebraic data
type, or `record?` (some record type, not yet known which)."""
NUMERIC: Known = "numeric"
SIGNED: Known = "signed?"
"""A literal written negative (`-1`): a number or a float, never an unsigned."""
SOME_RECORD: Known = "record?"
ORDERED: Known = "ordered?"
NUMBERS = (NUMBER, UNSIGNED, FLOAT, NUMERIC, SIGNED)
OVERLOADED = frozenset({"+", "max", "min"})
"""Arithmetic Soufflé also defines on symbols: `cat`, and the lexicographic extremes."""


def unify(a: Known | None, b: Known | None) -> tuple[bool, Known | None]:
    """Whether two types can be one, and which: `numeric` takes the other's numeric type,
    `record?` the other's record type (never an algebraic data type's: `nil` and `[...]` are
    records)."""
    if a is None or a is b or a == b:
        return True, b
    if b is None:
        return True, a
    for vague, sure in ((a, b), (b, a)):
        if vague == NUMERIC and sure in NUMBERS:
            return True, sure
        if vague == ORDERED and (sure in NUMBERS or sure == SYMBOL):
            return True, sure
        if vague == SIGNED and sure in (NUMBER, FLOAT):
            return True, sure
    if a == SOME_RECORD and isinstance(b, RecordType):
        return True, b
    if b == SOME_RECORD and isinstance(a, RecordType):
        return True, a
    return False, None


def overloaded(expression: BinaryOp) -> bool:
    """Whether every operation of `expression` is one Soufflé also defines on symbols."""
    stack: list[Term] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, BinaryOp):
            if node.op not in OVERLOADED:
                return False
            stack += [node.left, node.right]
    return True


def shown(known: Known | None) -> str:
    """A type as messages name it, with its article: `a number`, `an unsigned`, a `Point`
    record."""
    if isinstance(known, RecordType):
        return f"a `{known.name}` record"
    if isinstance(known, AdtType):
        return f"a `{known.name}` value"
    if known == SOME_RECORD:
        return "a record"
    if known == ORDERED:
        return "a number or a symbol"
    name = NUMBER if known in (NUMERIC, SIGNED) else str(known)
    return f"an {name}" if name == UNSIGNED else f"a {name}"


def storage(known: Known | None) -> ColumnType:
    """How values of a class's type are stored (`number` where nothing says)."""
    if known is None or known in (NUMERIC, SIGNED, ORDERED):
        return NUMBER
    if isinstance(known, RecordType | AdtType) or known == SOME_RECORD:
        return RECORD
    return cast(ColumnType, known)
