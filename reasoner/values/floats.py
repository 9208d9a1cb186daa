"""Soufflé's `float`, as its 64-bit build computes it on x86-64: one definition of each
operation, for every evaluator and for the readers and writers.

A float is held as the 64-bit pattern of its IEEE double (read as a signed integer), in the
same int64 columns as numbers. Joins, set semantics and negation therefore compare bits, as
Soufflé's B-trees do: 0.0 and -0.0 are two values, a NaN equals itself. The analysis
(`reasoner.analysis.floats`) rewrites every operation whose meaning differs from the
integers' into a functor of `reasoner.values.functors` defined here over Python floats; CPython does
float arithmetic with the same C operations, so `+ - *` give Soufflé's bits, NaN signs
included. What C or x86 defines that Python does not is spelled out: division by zero, `pow`'s
domain and pole errors, conversion of out-of-range values to integers, and how a NaN prints.

Aggregates over floats are where Soufflé's answer depends on the order its B-tree holds the
rows, which no other evaluator shares: a `sum` or `mean` whose rounding could differ between
orders is refused (`reasoner.errors.FloatRefused`), never answered differently.
"""

from __future__ import annotations

import ctypes
import math
import re
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from reasoner.support.c_library import c_library

if TYPE_CHECKING:  # `reasoner.errors` reaches the parser, which reads this module
    from reasoner.errors import FloatRefused

_PACK = struct.Struct("<d")
_BITS = struct.Struct("<q")
DEFAULT_NAN_BITS = -(1 << 63) | (0x7FF8 << 48)
"""x86's default NaN (the sign bit set): what `0.0 / 0.0` and `inf - inf` give, printed
`-nan`."""
DBL_MAX = 1.7976931348623157e308
_INT64 = 1 << 63
_INT64_MAX = _INT64 - 1


def to_bits(value: float) -> int:
    """The IEEE pattern of `value`, as the signed 64-bit integer the columns hold."""
    return int(_BITS.unpack(_PACK.pack(value))[0])


def from_bits(bits: int) -> float:
    return float(_PACK.unpack(_BITS.pack(bits))[0])


DEFAULT_NAN = from_bits(DEFAULT_NAN_BITS)


def _nan_text(value: float) -> str:
    return "-nan" if math.copysign(1.0, value) < 0 else "nan"


def float_text(value: float) -> str:
    """A float as Soufflé writes it, in `.csv` files, on stdout and inside records (`os <<
    double` at `max_digits10`, i.e. `%.17g`: 0.1 is `0.10000000000000001`, 2.0 is `2`), so
    the text reads back to the same bits; a NaN with its sign, as glibc writes it. The
    service writes floats so too wherever it writes text (CSV answers, cursors)."""
    return _nan_text(value) if math.isnan(value) else f"{value:.17g}"


def format_f(value: float) -> str:
    """`to_string` of a float (`std::to_string`: `%f`)."""
    return _nan_text(value) if math.isnan(value) else f"{value:f}"


_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEXADECIMAL = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
_STOD = re.compile(
    rf"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:(?P<hex>{_HEXADECIMAL})|(?P<dec>{_DECIMAL})"
    r"|(?P<inf>(?i:inf(?:inity)?))|(?P<nan>(?i:nan)))"
)
"""What C's `strtod` reads: leading white space, a sign, then a decimal or hexadecimal float,
`inf`, `infinity` or `nan` (in any case). `nan(payload)` is left out: its payload's bits are
the C library's business."""


def _read(found: re.Match[str]) -> float | None:
    """The value of a `_STOD` match; None when C would report a range error (overflow, or a
    result too small to hold in full precision)."""
    negative = found["sign"] == "-"
    if found["nan"]:
        return -math.nan if negative else math.nan
    if found["inf"]:
        return -math.inf if negative else math.inf
    if found["hex"]:
        text = found["hex"]
        try:
            value = float.fromhex(text)
        except OverflowError:
            return None
        digits = text[2:].split("p")[0].split("P")[0]
    else:
        text = found["dec"]
        value = float(text)
        digits = text.split("e")[0].split("E")[0]
    if math.isinf(value):
        return None
    nonzero = any(c not in "0." for c in digits)
    if nonzero and (value == 0.0 or abs(value) < 2.2250738585072014e-308):
        return None
    return -value if negative else value


def parse_float(text: str) -> float | None:
    """A `.facts` element as Soufflé reads a float (`std::stod`, which must read all of it);
    None if it does not, or if C would report a range error."""
    found = _STOD.fullmatch(text)
    return None if found is None else _read(found)


def prefix_float(text: str) -> float | None:
    """`to_float` of a symbol: `std::stod` of its longest prefix that reads as a float
    (`"1.5abc"` is 1.5); None (no value) when none does."""
    found = _STOD.match(text)
    return None if found is None else _read(found)


def read_float(text: str, position: int) -> tuple[float, int] | None:
    """A float read where `text` holds one at `position` (a record's field), and where it
    ends; None if none is there."""
    found = _STOD.match(text, position)
    if found is None:
        return None
    value = _read(found)
    return None if value is None else (value, found.end())


def compare(a: float, b: float) -> int:
    """-1, 0 or 1 as `a` is below, equal to or above `b` in IEEE order (0.0 equals -0.0);
    2 when they are unordered (a NaN)."""
    if a < b:
        return -1
    if a > b:
        return 1
    return 0 if a == b else 2


def divide(a: float, b: float) -> float:
    """IEEE division: by zero, a signed infinity, or the default NaN for 0/0."""
    if b != 0.0 or math.isnan(b):
        return a / b
    if math.isnan(a):
        return a
    if a == 0.0:
        return DEFAULT_NAN
    negative = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
    return -math.inf if negative else math.inf


def _odd_integer(value: float) -> bool:
    return value.is_integer() and abs(value) < 2**53 and int(value) % 2 == 1


def _c_pow() -> Callable[[float, float], float] | None:
    """The C library's `pow`, which Soufflé calls (`std::pow`); None where none loads."""
    try:
        libm = c_library("m", "libm.so.6")
    except OSError:
        return None
    function = libm.pow
    function.argtypes = (ctypes.c_double, ctypes.c_double)
    function.restype = ctypes.c_double
    return cast(Callable[[float, float], float], function)


_POW = _c_pow()


def power(base: float, exponent: float) -> float:
    """C's `pow`, the C library's own (glibc gives `pow(-nan, 3)` a positive NaN, which no
    rule of Python's reproduces); without one, Python's, its errors mapped to what C
    returns: the default NaN (a negative base to a fractional power) or an infinity
    (overflow, and a zero base to a negative power)."""
    if _POW is not None:
        return _POW(base, exponent)
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return -math.inf if base < 0 and _odd_integer(exponent) else math.inf
    except ValueError:
        if base == 0.0:  # a pole: the sign of a zero base survives an odd exponent
            return math.copysign(math.inf, base) if _odd_integer(exponent) else math.inf
        return DEFAULT_NAN


def maximum(a: float, b: float) -> float:
    """`std::max(a, b)`: `a` unless `a < b`, so a NaN survives only as the first operand."""
    return b if a < b else a


def minimum(a: float, b: float) -> float:
    """`std::min(a, b)`: `a` unless `b < a`."""
    return b if b < a else a


def _truncate(value: float) -> int:
    """x86's `cvttsd2si`: toward zero, and the pattern 2^63 for what does not fit (NaN,
    infinities, out of range)."""
    if math.isnan(value) or not -(2.0**63) <= value < 2.0**63:
        return -_INT64
    return int(value)


def to_number(value: float) -> int:
    """`to_number(f)`: C's `static_cast<int64_t>`, as x86-64 computes it (C leaves NaN,
    infinities and values out of range undefined; the processor gives the pattern 2^63)."""
    return _truncate(value)


def to_unsigned(value: float) -> int:
    """`to_unsigned(f)`, as bits: `static_cast<uint64_t>` as gcc compiles it for x86-64 (one
    conversion below 2^63, another of `value - 2^63` with the top bit set above)."""
    if math.isnan(value) or value < 2.0**63:
        return _truncate(value)
    return _truncate(value - 2.0**63) ^ -_INT64


def _exact_sum(values: Sequence[float]) -> float | None:
    """The sum of finite `values` if every order of adding them gives it: when the sum of
    their magnitudes, as integers times the smallest power of two among them, needs at most
    53 bits (every partial sum is then exact) and stays finite; else None."""
    parts = []
    for value in values:
        numerator, denominator = value.as_integer_ratio()
        zeros = (numerator & -numerator).bit_length() - 1 if numerator else 0
        parts.append((numerator >> zeros, zeros + 1 - denominator.bit_length()))
    smallest = min((exponent for _, exponent in parts), default=0)
    scaled = [numerator << (exponent - smallest) for numerator, exponent in parts]
    magnitude = sum(map(abs, scaled))
    if magnitude >= 1 << 53:
        return None
    try:
        math.ldexp(float(magnitude), smallest)
    except OverflowError:
        return None
    return math.ldexp(float(sum(scaled)), smallest)


def _refused(message: str) -> FloatRefused:
    from reasoner.errors import FloatRefused

    return FloatRefused(message)


def _order_dependent(what: str) -> FloatRefused:
    return _refused(
        f"a float `sum` or `mean` {what} whose result depends on the order Soufflé adds the "
        "values in (its rounding, or which NaN survives): not supported"
    )


def total(values: Sequence[float], what: str) -> float:
    """Soufflé's float `sum`: `0.0 + v1 + v2 + ...` in its B-tree's order; here when every
    order gives the same bits, else `FloatRefused` (`what` names the group for messages).

    Every order agrees when there are at most two values (`0.0 + a` is exact, and `a + b`
    commutes, unless both are NaNs), when every partial sum of the finite values is exact
    (`_exact_sum`), and when a NaN or the infinities decide the result whatever comes first:
    x86 keeps a NaN operand, and `inf + -inf` is the default NaN."""
    nans = {to_bits(value) for value in values if math.isnan(value)}
    if len(values) <= 2 and len(nans) <= 1:
        result = 0.0
        for value in values:
            result += value
        return result
    infinities = {value for value in values if math.isinf(value)}
    if len(infinities) == 2:
        nans.add(DEFAULT_NAN_BITS)
    if len(nans) > 1:
        raise _order_dependent(what)
    if nans:
        return from_bits(nans.pop())
    finite = [value for value in values if math.isfinite(value)]
    if infinities:  # it decides, unless the finite values could overflow to the other one
        from fractions import Fraction  # and `decimal` with it: rare here, 1.5 ms of a start

        if sum(Fraction(abs(value)) for value in finite) > Fraction(DBL_MAX):
            raise _order_dependent(what)
        return infinities.pop()
    exact = _exact_sum(finite)
    if exact is None:
        raise _order_dependent(what)
    return exact


def mean(values: Sequence[float], what: str) -> float:
    """Soufflé's `mean`: the `sum` (as `total` decides it) over the count, in doubles."""
    return divide(total(values, what), float(len(values)))


def extreme(values: Sequence[float], largest: bool, what: str) -> float:
    """Soufflé's float `min` or `max` aggregate: from ±`DBL_MAX`, keep a value that is below
    (above) the one kept, so a NaN is never kept and the result never passes `DBL_MAX`. A tie
    between 0.0 and -0.0 keeps the one met first in B-tree order: refused."""
    kept = -DBL_MAX if largest else DBL_MAX
    for value in values:
        if (value > kept) if largest else (value < kept):
            kept = value
    if kept == 0.0 and len({to_bits(v) for v in values if v == 0.0}) == 2:
        raise _refused(
            f"a float `{'max' if largest else 'min'}` {what} tied between 0.0 and -0.0, "
            "where Soufflé keeps the one it meets first: not supported"
        )
    return kept


def order_keys(bits: np.ndarray) -> np.ndarray:
    """Int64 keys whose order is the floats' (IEEE patterns in `bits`), total: -0.0 just
    before 0.0, NaNs beyond the infinities by sign. Outputs and pages sort on these."""
    return bits ^ ((bits >> 63) & _INT64_MAX)


def order_key(value: float) -> int:
    bits = to_bits(value)
    return bits ^ (_INT64_MAX if bits < 0 else 0)


class FloatValue(float):
    """A float as a value of a relation: equal, hashed and ordered by its bits, as Soufflé's
    relations hold it (0.0 and -0.0 are two values, a NaN is one), so that sets of rows and
    sorted output keep what the engine keeps."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, float):
            return to_bits(self) == to_bits(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, float):
            return to_bits(self) != to_bits(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(to_bits(self))

    def __lt__(self, other: float) -> bool:
        return order_key(self) < order_key(other)

    def __le__(self, other: float) -> bool:
        return order_key(self) <= order_key(other)

    def __gt__(self, other: float) -> bool:
        return order_key(self) > order_key(other)

    def __ge__(self, other: float) -> bool:
        return order_key(self) >= order_key(other)


def json_value(value: object) -> object:
    """A value as JSON writes it: a float that JSON has no number for (an infinity, a NaN) as
    the text C's `strtod` reads back (`"inf"`, `"-nan"`), which every request takes; any
    other float as a plain one (a `FloatValue`'s comparisons would hide a NaN from `json`)."""
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else float_text(value)
    return value


def json_safe(document: object) -> object:
    """A document of dicts, lists and tuples with every value as `json_value` writes it."""
    if isinstance(document, dict):
        return {key: json_safe(value) for key, value in document.items()}
    if isinstance(document, list | tuple):
        return [json_safe(value) for value in document]
    return json_value(document)


def user_float(value: object) -> float | None:
    """A value given for a float column (a delta's, a query's, an explain request's): a
    number (an int is the float of its value, as a literal without a point), or one of the
    texts C's `strtod` reads (`"inf"`, `"-nan"`: what JSON has no number for); None for
    anything else."""
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return None
    return parse_float(value) if isinstance(value, str) else None


def exact_row(row: Sequence[object]) -> tuple[object, ...]:
    """`row` with its floats as `FloatValue`s: a set of such rows holds what a relation
    holds (0.0 and -0.0 two rows), where Python floats would merge them."""
    return tuple(FloatValue(v) if isinstance(v, float) else v for v in row)
