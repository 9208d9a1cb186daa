"""Soufflé's functors as its documentation states them: strings, conversions and the float
functors the analysis makes. Two things come from the engine: a user-defined functor's own
implementation, and the reading of an ECMAScript pattern (`match`)."""

from __future__ import annotations

import re

from reasoner.values import functors
from reasoner.values.ecmascript_regex import compiled
from reasoner.values.types import Value
from tests.oracle.arithmetic import bits_of_float, float_arithmetic, float_of_bits, float_text, wrap
from tests.oracle.values import PACKED, NoValue

ANALYZED_FLOAT_FUNCTORS = {
    "fadd!": "+",
    "fsub!": "-",
    "fmul!": "*",
    "fdiv!": "/",
    "fpow!": "^",
    "fmax!": "max",
    "fmin!": "min",
    "fneg!": "neg",
    "fcmp!": "",
    "itof!": "",
    "utof!": "",
    "ftoi!": "",
    "ftou!": "",
    "ftos!": "",
}
"""Functors the analysis makes of float operations: a test that reads the analyzed rules
(explain's proofs) evaluates them on the IEEE patterns the engine holds."""


def analyzed_float_functor(name: str, args: list[int]) -> Value:
    values = [float_of_bits(arg) for arg in args]
    if name == "fcmp!":
        a, b = values
        return -1 if a < b else 1 if a > b else 0 if a == b else 2
    if name == "itof!":
        return bits_of_float(float(wrap(args[0])))
    if name == "utof!":
        return bits_of_float(float(args[0] % 2**64))
    if name in ("ftoi!", "ftou!"):
        return wrap(functor("to_number" if name == "ftoi!" else "to_unsigned", values))  # type: ignore[arg-type]
    if name == "ftos!":
        return float_text(values[0])
    if name == "fneg!":
        return bits_of_float(-values[0])
    op = ANALYZED_FLOAT_FUNCTORS[name]
    return bits_of_float(float_arithmetic(op, values[0], values[1]))


def truncated(value: float) -> int:
    """x86's conversion to a 64-bit integer: toward zero, 2^63's pattern when it does not fit."""
    if value != value or not -(2.0**63) <= value < 2.0**63:
        return -(2**63)
    return int(value)


_STOD = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
    re.I,
)


_STRTOL = {
    base: re.compile(r"[ \t\n\v\f\r]*([+-]?)" + prefix + f"([{digits}]+)")
    for base, prefix, digits in (
        (2, "", "01"),
        (10, "", "0-9"),
        (16, "(?:0[xX](?=[0-9a-fA-F]))?", "0-9a-fA-F"),
    )
}
"""C's `strtoll` in each base Soufflé reads numbers in: space, a sign, digits (a prefix)."""


def read_integer(text: str, *, unsigned: bool = False) -> int:
    """Soufflé's `RamSignedFromString` (`RamUnsignedFromString` if `unsigned`, which refuses
    a first minus): `0b` and `-0b` binary, `0x` and `-0x` hexadecimal, else decimal, each by
    `std::stoll` over a prefix of the text; no value where Soufflé stops with an error."""
    base = 10
    if text.startswith("-") and unsigned:
        raise NoValue
    if text.startswith("-0b"):
        text, base = "-" + text[3:], 2
    elif text.startswith("0b"):
        text, base = text[2:], 2
    elif text.startswith(("0x", "-0x")):
        base = 16
    found = _STRTOL[base].match(text)
    if found is None or len(found.group(2).lstrip("0")) > 70:
        raise NoValue
    value = int(found.group(2), base)
    return -value if found.group(1) == "-" else value


def functor(name: str, args: list[Value]) -> Value:
    """Soufflé's string functors as its documentation states them, on C++ byte strings:
    `substr` is `std::string::substr` (a bad position gives ""), `match` is a whole-string
    `std::regex_match` (no value for an invalid pattern), `to_number` of text that is no
    number has no value. `ord` depends on the engine's symbol numbering, which the oracle
    does not model. A user-defined functor (`@f#1`, as the analysis bound it) is its
    implementation, whatever it computes (`reasoner.values.user_functors`)."""
    if name.startswith("@"):
        bound = functors.signature(name)
        value = bound.scalar(*args)
        return value % 2**64 if bound.result == "unsigned" else value  # type: ignore[operator]
    if name == "cat":
        return "".join(args)  # type: ignore[arg-type]
    if name == "strlen":
        return len(str(args[0]).encode("utf-8"))
    if name == "substr":
        text, start, length = str(args[0]).encode("utf-8"), int(args[1]), int(args[2])
        if not 0 <= start <= len(text):
            return ""
        piece = text[start:] if length < 0 else text[start : start + length]
        return piece.decode("utf-8")  # a cut character is refused
    if name == "contains":
        return 1 if str(args[0]) in str(args[1]) else 0
    if name == "match":  # libstdc++'s ECMAScript over UTF-8 bytes, checked against Soufflé
        pattern = compiled(str(args[0]))
        if pattern is None:  # invalid: match and !match both fail
            raise NoValue
        return 1 if pattern.fullmatch(str(args[1]).encode()) else 0
    if name == "to_float":
        if isinstance(args[0], int | float):
            return float(args[0])  # a number, an unsigned (0 .. 2^64 - 1), or a float
        text = str(args[0]).lstrip(" \t\n\v\f\r")
        found = _STOD.match(text)
        if found is None:
            raise NoValue
        return float(found.group())
    if name == "to_number" and isinstance(args[0], float):
        return truncated(args[0])
    if name == "to_unsigned" and isinstance(args[0], float):
        value = args[0]
        if value != value or value < 2.0**63:  # a NaN: gcc's first branch
            return truncated(value) % 2**64
        return (truncated(value - 2.0**63) + 2**63) % 2**64
    if name == "to_string" and isinstance(args[0], float):
        return float_text(args[0])
    if name == "to_number" and isinstance(args[0], int):  # an unsigned's bits, as a number
        return wrap(args[0])
    if name == "to_unsigned" and isinstance(args[0], int):  # a number's bits, as an unsigned
        return args[0] % 2**64
    if name == "to_unsigned":  # std::stoull: a minus wraps around, below 2^64
        value = read_integer(str(args[0]), unsigned=True)
        if abs(value) >= 2**64:
            raise NoValue
        return value % 2**64
    if name == "to_number":
        value = read_integer(str(args[0]))
        if wrap(value) != value:
            raise NoValue
        return value
    if name == "to_string":
        return str(args[0])
    if name == "to_string!u":  # the analysis's form of `to_string` on an unsigned pattern
        return str(int(args[0]) % 2**64)
    if name in ANALYZED_FLOAT_FUNCTORS:  # the analysis's float functors, on IEEE patterns
        return analyzed_float_functor(name, [int(arg) for arg in args])  # type: ignore[call-overload]
    if name in ("pack!", "find!"):  # the analysis's record built: its fields, nil being 0
        return (PACKED, tuple(args))  # type: ignore[return-value]
    if name == "field!":
        record, index = args
        if not isinstance(record, tuple) or not 0 <= int(index) < len(record[1]):
            raise NoValue  # nil, or a field of another branch
        return record[1][int(index)]
    raise NotImplementedError(f"the oracle does not model `{name}`")
