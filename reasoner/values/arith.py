"""Integer arithmetic and comparison with Soufflé's semantics.

Soufflé's `number` is a signed 64-bit integer (an `unsigned` is held as its 64-bit pattern,
see `reasoner.analysis.numeric`): results wrap around, `/` truncates toward zero
and `%` takes the sign of the dividend (C semantics), unlike Python's floor division. A division
or remainder by zero has no result: the rule instantiation that needs it simply does not hold
(raising `ArithmeticError`, which evaluators treat as "no derivation").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def power(a: int, b: int) -> int:
    """`a ^ b`: exact, wrapped to 64 bits, for b >= 0; for b < 0 the integer part of the
    real power (1 for a = 1, +-1 for a = -1, 0 otherwise), and no value for 0 ^ -n (Soufflé
    casts pow's infinity, which C leaves undefined)."""
    if b >= 0:
        return wrap64(pow(a, b, 1 << 64))
    if a == 0:
        raise ZeroDivisionError("zero to a negative power")
    if a == 1:
        return 1
    if a == -1:
        return 1 if b % 2 == 0 else -1
    return 0


def shift_left(a: int, b: int) -> int:
    """`a bshl b`: the shift amount taken modulo 64, as the hardware Soufflé runs on does."""
    return wrap64(a << (b & 63))


def shift_right(a: int, b: int) -> int:
    """`a bshr b`: arithmetic (sign-extending) shift, amount modulo 64."""
    return a >> (b & 63)


def shift_right_unsigned(a: int, b: int) -> int:
    """`a bshru b`: logical shift of the 64-bit pattern, amount modulo 64."""
    return wrap64((a & _MASK) >> (b & 63))


def unsigned_div(a: int, b: int) -> int:
    """`a / b` on `unsigned` values (their 64-bit patterns): the quotient of the unsigned
    readings."""
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return wrap64((a & _MASK) // (b & _MASK))


def unsigned_mod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("remainder by zero")
    return wrap64((a & _MASK) % (b & _MASK))


def unsigned_power(a: int, b: int) -> int:
    """`a ^ b` on `unsigned` values: exact modulo 2^64, as `power` for a number's
    non-negative exponents (an unsigned exponent is never negative)."""
    return wrap64(pow(a & _MASK, b & _MASK, 1 << 64))


def as_unsigned(value: int) -> int:
    """The unsigned reading of a stored 64-bit pattern (how an `unsigned` is shown)."""
    return value & _MASK


ARITH: dict[str, Callable[[int, int], int]] = {
    "+": add,
    "-": sub,
    "*": mul,
    "/": div,
    "%": mod,
    "^": power,
    "band": lambda a, b: a & b,
    "bor": lambda a, b: a | b,
    "bxor": lambda a, b: a ^ b,
    "bshl": shift_left,
    "bshr": shift_right,
    "bshru": shift_right_unsigned,
    "land": lambda a, b: int(a != 0 and b != 0),
    "lor": lambda a, b: int(a != 0 or b != 0),
    "lxor": lambda a, b: int((a != 0) != (b != 0)),
    "max": max,
    "min": min,
    "udiv": unsigned_div,
    "umod": unsigned_mod,
    "upow": unsigned_power,
}
"""Every operator of `reasoner.syntax.ast.ArithOp` on 64-bit values (bitwise ones read them
in two's complement, as Python's unbounded ints already do); logical ones give 0 or 1; the
`u` ones read them unsigned (`reasoner.analysis.numeric`)."""

COMPARE: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    # Symbols only meet `=` and `!=`: the analysis refuses ordering them.
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


LOGICAL = frozenset({"land", "lor", "lxor"})


def logical_condition(op: str, a: Any, b: Any) -> Any:
    """The condition under which a logical operator gives 1, over column expressions of any
    library whose `!=`, `&` and `|` build conditions (Polars, Spark)."""
    p, q = a != 0, b != 0
    if op == "land":
        return p & q
    if op == "lor":
        return p | q
    return p != q
