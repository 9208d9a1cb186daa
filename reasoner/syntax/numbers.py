"""Numeric literals as Soufflé reads them: what value and which type a literal's text gives.

Layer: `syntax`; used by the parser alone.
"""

from __future__ import annotations

from reasoner.errors import Span
from reasoner.syntax.ast import NumberConst
from reasoner.values import floats
from reasoner.values.arith import wrap64
from reasoner.values.types import FLOAT, ColumnType

_INT64_MAX = (1 << 63) - 1


class LiteralRefused(ValueError):
    """A literal no 64-bit column can hold; the message says why."""


def number_literal(text: str, span: Span, *, negate: bool) -> NumberConst:
    """A numeric literal: decimal, `0x` or `0b`, with `u` for an unsigned one. A decimal
    past 2^63 - 1 can only be an unsigned (Soufflé's inference finds no other type that
    reads it), and a literal written negative only a number (see `NumberConst.kind`)."""
    written = text
    if "." in text:  # Soufflé's float literal: digits, a point, digits; no exponent
        value = -float(text) if negate else float(text)
        return NumberConst(floats.to_bits(value), span, FLOAT)
    unsigned = text.endswith("u")
    if unsigned:
        text = text[:-1]
    base = {"0x": 16, "0X": 16, "0b": 2, "0B": 2}.get(text[:2], 10)
    digits = (text[2:] if base != 10 else text).lstrip("0") or "0"
    shown = f"-{written}" if negate else written
    if len(shown) > 40:
        shown = f"{shown[:20]}...{shown[-10:]}"
    if negate and unsigned:
        raise LiteralRefused(f"an unsigned literal cannot be negative: `{shown}`")
    too_large = LiteralRefused(f"number literal `{shown}` does not fit in 64 bits")
    if len(digits) > (64 if base == 2 else 20):  # never convert thousands of digits
        raise too_large
    number = int(digits, base)
    if number >= 1 << 64 or (base == 10 and negate and number > 1 << 63):
        raise too_large
    kind: ColumnType | None = None
    if unsigned or (base == 10 and not negate and number > _INT64_MAX):
        kind = "unsigned"
    elif negate:
        kind = "number"
    number = wrap64(number)
    return NumberConst(wrap64(-number) if negate else number, span, kind)
