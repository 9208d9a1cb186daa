"""Soufflé's integer, unsigned and float arithmetic, written out independently of
reasoner/values/arith.py and reasoner/values/floats.py (C doubles on x86-64)."""

from __future__ import annotations

import ctypes
import math
import struct

from tests.oracle.values import NoValue


def wrap(value: int) -> int:
    """Signed 64-bit two's-complement wrap-around."""
    return (value + 2**63) % 2**64 - 2**63


def c_div(a: int, b: int) -> int:
    """C division: the quotient truncated toward zero."""
    if b == 0:
        raise NoValue
    quotient = abs(a) // abs(b)
    return wrap(quotient if (a < 0) == (b < 0) else -quotient)


def c_mod(a: int, b: int) -> int:
    """C remainder: `a == b * c_div(a, b) + c_mod(a, b)`, so it takes the sign of `a`."""
    if b == 0:
        raise NoValue
    remainder = abs(a) % abs(b)
    return remainder if a >= 0 else -remainder


def int_power(a: int, b: int) -> int:
    """`a ^ b` as Soufflé's 64-bit build computes it: `(int64_t) pow((double) a, (double) b)`
    with the C library's `pow`, and what x86-64's `cvttsd2si` makes of a double outside the
    range (an overflow, the infinity of zero to a negative power): 0x8000000000000000."""
    result = C_POW(float(a), float(b))
    if math.isnan(result) or not -(2.0**63) <= result < 2.0**63:
        return -(2**63)
    return math.trunc(result)


def bits(value: int) -> str:
    """The 64-bit two's-complement pattern, most significant bit first."""
    return format(value % 2**64, "064b")


def from_bits(pattern: str) -> int:
    return wrap(int(pattern, 2))


def bitwise(op: str, a: int, b: int) -> int:
    """band, bor, bxor bit by bit on the patterns, and the shifts as string slices (the
    amount taken modulo 64)."""
    x, y = bits(a), bits(b)
    if op in ("band", "bor", "bxor"):
        truth = {"band": ("11",), "bor": ("01", "10", "11"), "bxor": ("01", "10")}[op]
        return from_bits("".join("1" if p + q in truth else "0" for p, q in zip(x, y, strict=True)))
    amount = b % 64
    if op == "bshl":
        return from_bits(x[amount:] + "0" * amount)
    fill = x[0] if op == "bshr" else "0"
    return from_bits(fill * amount + x[: 64 - amount])


ANALYZED_FORMS = {"udiv": "/", "umod": "%", "upow": "^"}
"""Operators the analysis makes of `/`, `%` and `^` on unsigned values: a test that reads the
analyzed rules (explain's proofs) evaluates them on the patterns the engine holds."""


def arithmetic(op: str, a: int, b: int) -> int:
    if op in ("band", "bor", "bxor", "bshl", "bshr", "bshru"):
        return bitwise(op, a, b)
    if op == "^":
        return int_power(a, b)
    if op in ("land", "lor", "lxor"):
        p, q = a != 0, b != 0
        return int({"land": p and q, "lor": p or q, "lxor": p != q}[op])
    if op == "max":
        return a if a >= b else b
    if op == "min":
        return a if a <= b else b
    if op == "+":  # on symbols, Soufflé's overload concatenates
        return a + b if isinstance(a, str) else wrap(a + b)
    if op == "-":
        return wrap(a - b)
    if op == "*":
        return wrap(a * b)
    if op == "/":
        return c_div(a, b)
    if op == "%":
        return c_mod(a, b)
    if op in ANALYZED_FORMS:  # the analysis's unsigned forms, on 64-bit patterns
        return wrap(unsigned_arithmetic(ANALYZED_FORMS[op], a % 2**64, b % 2**64))
    raise ValueError(f"unknown arithmetic operator {op!r}")


def unsigned_arithmetic(op: str, a: int, b: int) -> int:
    """The operators on `unsigned` values, held here as the integers 0 .. 2^64 - 1 they are:
    results modulo 2^64, and division, remainder, shifts and extremes as on naturals."""
    size = 2**64
    if op in ("+", "-", "*"):
        return {"+": a + b, "-": a - b, "*": a * b}[op] % size
    if op in ("/", "%"):
        if b == 0:
            raise NoValue
        return a // b if op == "/" else a % b
    if op == "^":  # `(uint64_t) pow(...)`: GCC's sequence on x86-64 gives 0 past 2^64
        result = C_POW(float(a), float(b))
        return math.trunc(result) if 0.0 <= result < 2.0**64 else 0
    if op == "bshl":
        return (a << (b % 64)) % size
    if op in ("bshr", "bshru"):
        return a >> (b % 64)
    if op == "bxor":  # `bnot x` is `x bxor -1`, its -1 read as 2^64 - 1
        return a ^ b
    return arithmetic(op, a, b)  # band, bor, the logical ones, max and min: as on naturals


X86_NAN = struct.unpack("<d", bytes.fromhex("000000000000f8ff"))[0]
"""The NaN x86 makes of 0/0 and inf - inf: its sign bit is set (printed `-nan`)."""


DBL_MAX = struct.unpack("<d", bytes.fromhex("ffffffffffffef7f"))[0]


def float_of_bits(pattern: int) -> float:
    return struct.unpack("<d", (pattern % 2**64).to_bytes(8, "little"))[0]


def float_arithmetic(op: str, a: float, b: float) -> float:
    """`+ - * /`, `^` (C's `pow`), `max`/`min` (`std::max`/`std::min`), and a unary minus
    (`neg`, which flips the sign bit) on doubles."""
    a, b = float(a), float(b)
    if op == "neg":
        return -b
    if op in ("+", "-", "*"):
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op == "/":
        if b != 0:
            return a / b
        if a != a:
            return a
        if a == 0:
            return X86_NAN
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    if op == "^":
        return C_POW(a, b)
    if op == "max":
        return b if a < b else a
    if op == "min":
        return b if b < a else a
    raise ValueError(f"unknown float operator {op!r}")


C_POW = ctypes.CDLL("libm.so.6").pow
"""`pow` as Soufflé calls it: the C library's."""


C_POW.argtypes = (ctypes.c_double, ctypes.c_double)


C_POW.restype = ctypes.c_double


def bits_of_float(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def float_text(value: float) -> str:
    """`std::to_string` of a double: `%f`, a NaN as `nan` or `-nan` by its sign."""
    if value != value:
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:f}"
