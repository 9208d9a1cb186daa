"""Integer arithmetic and comparison with Soufflé's semantics.

Soufflé's `number` is a signed 64-bit integer (an `unsigned` is held as its 64-bit pattern,
see `reasoner.analysis.numeric`): results wrap around, `/` truncates toward zero
and `%` takes the sign of the dividend (C semantics), unlike Python's floor division. A division
or remainder by zero has no result: the rule instantiation that needs it simply does not hold
(raising `ArithmeticError`, which evaluators treat as "no derivation"). `^` is the exception
to exact arithmetic: Soufflé computes it through the C library's `pow` on doubles (`power`).

We follow Soufflé's 64-bit build (`-DSOUFFLE_DOMAIN_64BIT=ON`, `../shared/tools/souffle64`);
its default build has 32-bit numbers, whose results wrap at 2^32 instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasoner.values import floats

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


_TWO_63 = 2.0**63
_TWO_64 = 2.0**64


def power(a: int, b: int) -> int:
    """`a ^ b` on numbers as Soufflé computes it: `(int64_t) pow((double) a, (double) b)`,
    through the C library's `pow` (`floats.power`), whose rounding is Soufflé's bit for bit
    (glibc's is not correctly rounded: 3^34 is 16677181699666570 through it, ...568 exactly
    rounded). So the result is rounded to a double's 53 bits (3^39 is 4052555153018976256, not
    ...267), a negative exponent gives the integer part of the real power (2^-1 is 0), and a
    power past the 64-bit range, or zero to a negative power (infinity), is the conversion's
    value on x86-64, the smallest number (-2^63), as `cvttsd2si` makes it."""
    result = floats.power(float(a), float(b))
    if -_TWO_63 <= result < _TWO_63:  # False for NaN, as for infinities
        return int(result)
    return -(1 << 63)


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
    """`a ^ b` on `unsigned` values as Soufflé computes it: `(uint64_t) pow((double) a,
    (double) b)`, rounded to a double's 53 bits, and 0 for a power of 2^64 or more (the
    value GCC's conversion sequence on x86-64 gives it)."""
    result = floats.power(float(a & _MASK), float(b & _MASK))
    if 0.0 <= result < _TWO_64:
        return wrap64(int(result))
    return 0


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
