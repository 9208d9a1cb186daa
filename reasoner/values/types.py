"""The value types every layer names: the column types and the Python value of a cell.

They stand here, on the ground floor, so that the values' own modules (records, symbols,
functors) can name them without reaching up into the syntax that spells them.
"""

from __future__ import annotations

from typing import Literal as TypingLiteral

ColumnType = TypingLiteral["number", "unsigned", "float", "symbol", "record"]
NUMBER: ColumnType = "number"
UNSIGNED: ColumnType = "unsigned"
"""Soufflé's `unsigned`: stored as the 64-bit pattern of the value (as a `number` of the same
bits), so storage, joins and equality are those of numbers; the analysis gives the operations
whose result depends on the reading (order, division, remainder, power, right shift, extremes)
their unsigned forms (`reasoner.analysis.numeric`)."""
FLOAT: ColumnType = "float"
"""Soufflé's `float` (a double): stored as the 64-bit pattern of its IEEE value, so joins,
sets and negation compare bits as Soufflé's do; the analysis makes every operation whose
meaning differs from the integers' a functor (`reasoner.analysis.floats`,
`reasoner.values.floats`)."""
SYMBOL: ColumnType = "symbol"
RECORD: ColumnType = "record"
"""How a record or an algebraic data type's value is stored: the id of its fields in the
record table (`reasoner.values.records`); equality only, no order, no arithmetic. The type as users
see it, with its fields, is the column's `RecordType` or `AdtType`."""

Value = int | float | str
"""A cell as the engine's callers see it: a number, a float or a symbol's text (a record is
its id, a number)."""
