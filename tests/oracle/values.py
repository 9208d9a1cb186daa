"""The oracle's state and values: tuple -> (iteration, count), records as Python values,
and the marks its own typing puts on operations."""

from __future__ import annotations

from reasoner.values.types import Value

Row = tuple[Value, ...]


PACKED = "#"
"""A record as the analysis's rewritten rules see it, `(PACKED, fields)` (a branch's index
first) and nil 0: what `pack!` makes and `field!` reads (`packed`)."""


RECORD_TAG = "[]"
"""A record value here is `(RECORD_TAG, fields)`, a branch's `("$Name", fields)`, nil None:
Python values compared structurally, with no table of ids."""


State = dict[str, dict[Row, tuple[int, int]]]


Binding = dict[str, Value]


class NoValue(Exception):
    """An arithmetic expression has no value (division or remainder by zero): the rule
    instantiation that needs it does not exist."""


UNSIGNED = "u:"
"""Marks an operator (and the `sum` aggregate) that works on `unsigned` values."""


FLOAT = "f:"
"""Marks an operator (and an aggregate) that works on floats; a unary minus is `f:neg`."""
