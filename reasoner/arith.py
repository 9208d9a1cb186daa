"""Integer arithmetic and comparison with Soufflé's semantics.

Soufflé's `number` is a signed 64-bit integer: results wrap around, `/` truncates toward zero
and `%` takes the sign of the dividend (C semantics), unlike Python's floor division. A division
or remainder by zero has no result: the rule instantiation that needs it simply does not hold
(raising `ArithmeticError`, which evaluators treat as "no derivation").
"""

from __future__ import annotations

from collections.abc import Callable

_MASK = (1 << 64) - 1
_SIGN = 1 << 63


def wrap64(value: int) -> int:
    """Reduce an unbounded Python int to the signed 64-bit range, two's-complement style."""
    if -_SIGN <= value < _SIGN:
        return value
    value &= _MASK
    return value - (1 << 64) if value & _SIGN else value


def add(a: int, b: int) -> int:
    return wrap64(a + b)


def sub(a: int, b: int) -> int:
    return wrap64(a - b)


def mul(a: int, b: int) -> int:
    return wrap64(a * b)


def div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("division by zero")
    q = abs(a) // abs(b)
    return wrap64(q if (a >= 0) == (b >= 0) else -q)


def mod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("remainder by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


ARITH: dict[str, Callable[[int, int], int]] = {"+": add, "-": sub, "*": mul, "/": div, "%": mod}

COMPARE: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}
