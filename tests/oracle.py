"""The test oracle: a naive evaluator that *defines* the sparse proof-count state.

It is the specification the engine is tested against, so it is written to be obviously right
rather than fast, and shares nothing with the engine beyond the parser's AST: it computes its
own strata, does its own arithmetic and enumerates rule instantiations by brute force (nested
loops over whole relations, no indexes, no join planning).

The state (Zhao et al., *Towards Elastic Incrementalization for Datalog*, §3.1) maps every
tuple of every relation to `(iteration, count)`:

- Facts of relations without rules (inputs and program-text facts) are `(0, 1)`.
- Strata are evaluated in dependency order. For a stratum S, every tuple of a lower stratum
  counts as iteration 0 (whatever its own iteration), and so do the facts asserted on S's own
  relations: together they are I_0 = N_0.
- Iteration k ≥ 1 counts the instantiations of S's rules whose positive atoms hold in I_{k-1},
  whose negated atoms have no match in I_{k-1}, whose comparisons hold and whose head
  evaluates — and of which at least one positive atom is in N_{k-1}. A rule without positive
  atoms counts as having one extra atom that is in N_0 only, so it fires at k = 1 only.
- N_k holds the heads with a non-zero count that are not in I_{k-1}, each with iteration k and
  that count; I_k = I_{k-1} ∪ N_k. The stratum is done when N_k is empty.
"""

from __future__ import annotations

import ctypes
import math
import re
import struct
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import NamedTuple

from reasoner.analysis.model import AnalyzedProgram
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NilConst,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
    is_negation,
)
from reasoner.values import functors
from reasoner.values.ecmascript_regex import compiled
from reasoner.values.floats import FloatValue
from reasoner.values.records import AdtType, RecordType, ValueType
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


# --- Soufflé arithmetic, written out independently of reasoner/values/arith.py
# ---------------------


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


# --- floats: C doubles on x86-64, written out independently of reasoner/values/floats.py
# -----------

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


def bits_of_float(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


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


def float_text(value: float) -> str:
    """`std::to_string` of a double: `%f`, a NaN as `nan` or `-nan` by its sign."""
    if value != value:
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:f}"


def compare(op: str, a: Value, b: Value) -> bool:
    """`a op b`, a float's as IEEE compares it (0.0 equals -0.0, a NaN nothing)."""
    a, b = _plain(a), _plain(b)
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    raise ValueError(f"unknown comparison operator {op!r}")


def _plain(value: Value) -> Value:
    """A float as Python compares it (a `FloatValue`, as a relation holds it, compares bits)."""
    return float(value) if isinstance(value, float) else value


def stored(value: Value) -> Value:
    """A value as a relation holds it: a float by its bits (`FloatValue`), as Soufflé's
    relations are sets of bit patterns."""
    return FloatValue(value) if isinstance(value, float) else value


def holds(
    comparison: Comparison,
    left: Value,
    right: Value,
    grounded: set[str],
    bound: Collection[str] = (),
) -> bool:
    """Whether a comparison holds (one that defined a variable is not tested again: see
    `bind_equalities`). An equality of two variables that positive atoms (or an aggregate)
    bind (`grounded`; a variable an alias defined is one of them) is one of Soufflé's
    aliases, a join, so it compares floats' bits; any other compares floats as IEEE does.
    Simpler than Soufflé's alias resolution
    (`reasoner.analysis.floats`): an equality written twice (`y = x + 1.0, y = x + 1.0`) is
    compared here, where Soufflé drops the second as `t = t`."""
    if comparison.op != "=":
        return compare(comparison.op, left, right)
    if comparison.left == comparison.right:  # `t = t`, which Soufflé drops: a NaN passes
        return True
    sides = (comparison.left, comparison.right)
    if all(
        (isinstance(side, Aggregate) and not correlated(side, bound))
        or (isinstance(side, Variable) and side.name in grounded)
        for side in sides
    ):  # an uncorrelated aggregate's result is a relation's (`bound`: the rule's variables)
        return stored(left) == stored(right)
    return compare("=", left, right)


def correlated(aggregate: Aggregate, bound: Collection[str]) -> bool:
    """Whether the rule correlates `aggregate`: some variable of it is one the rule binds
    (`bound`; the variables of its target are its own, renamed by the analysis). Soufflé
    makes an uncorrelated aggregate a relation (`__agg_single`), whose value then joins on
    bits; a correlated one is a generator, compared as IEEE compares."""
    return bool(variables_in(aggregate) & set(bound))


def grounded_variables(positives: Iterable[Atom]) -> set[str]:
    """The variables positive atoms bind: their arguments, and those inside their records."""
    found: set[str] = set()
    stack: list[object] = [arg for atom in positives for arg in atom.args]
    while stack:
        term = stack.pop()
        if isinstance(term, Variable):
            found.add(term.name)
        elif isinstance(term, RecordTerm | BranchTerm):
            stack.extend(term.args)
    return found


DEFINING = "defining equalities"
"""Where a binding notes the equalities that gave its variables values (no variable's name
has a space)."""
ALIASED = "aliased variables"
"""Where a binding notes the variables an equality gave the value of one atoms bind, or of an
aggregate the rule does not correlate (Soufflé 2.5, r = {-0.0}, whose sum is 0.0: `r(c), w =
sum y : { r(y) }, c = w` does not hold; `r(c), w = sum y : { r(y), y = c }, c = w` does)."""


class Unbound(Exception):
    """A variable has no value: the rule is unsafe (the analysis should have rejected it)."""


def value_of(
    term: Term, binding: Binding, rows: Mapping[str, Iterable[Row]] | None = None
) -> Value:
    """The value of `term`; `rows` (the relations) is needed for an aggregate."""
    if isinstance(term, NumberConst | StringConst):
        return term.value
    if isinstance(term, Variable):
        if term.name not in binding:
            raise Unbound(term.name)
        return binding[term.name]
    if isinstance(term, NilConst):
        return None  # type: ignore[return-value]  # a record value (see RECORD_TAG)
    if isinstance(term, RecordTerm | BranchTerm):
        tag = RECORD_TAG if isinstance(term, RecordTerm) else "$" + term.name
        return (tag, tuple(value_of(arg, binding, rows) for arg in term.args))  # type: ignore[return-value]
    if isinstance(term, BinaryOp):
        left, right = value_of(term.left, binding, rows), value_of(term.right, binding, rows)
        if term.op.startswith(UNSIGNED):
            return unsigned_arithmetic(term.op[len(UNSIGNED) :], left, right)  # type: ignore[arg-type]
        if term.op.startswith(FLOAT):
            return float_arithmetic(term.op[len(FLOAT) :], left, right)  # type: ignore[arg-type]
        return arithmetic(term.op, left, right)  # type: ignore[arg-type]
    if isinstance(term, Aggregate):
        return aggregate_value(term, binding, rows or {})
    if isinstance(term, Functor) and term.name == "range":
        chosen = binding.get(range_key(term))
        if chosen is None:
            raise Unbound(range_key(term))
        return chosen
    if isinstance(term, Functor):
        return functor(term.name, [value_of(arg, binding, rows) for arg in term.args])
    if isinstance(term, Cast):  # its type made primitive by `typed`: the same 64 bits
        value = value_of(term.term, binding, rows)
        if isinstance(value, float) or term.type == "float":  # the same 64 bits, read anew
            pattern = (
                struct.unpack("<q", struct.pack("<d", value))[0]
                if isinstance(value, float)
                else value
            )
            if term.type == "float":
                return float_of_bits(pattern)  # type: ignore[arg-type]
            value = pattern
        return value % 2**64 if term.type == "unsigned" else wrap(value)  # type: ignore[operator]
    raise Unbound("_")


def range_key(term: Functor) -> str:
    """Where a binding holds the value chosen for one `range` of the rule (no Datalog
    variable has a name with a space)."""
    return f"range {id(term)}"


def range_values(args: list[Value]) -> list[int]:
    """Soufflé's documentation and `runRange`: from the first bound toward the second,
    excluded, by the step (by default 1, or -1 when the range goes down); a zero step gives
    the first bound once unless the bounds are equal."""
    start, end = int(args[0]), int(args[1])
    step = int(args[2]) if len(args) > 2 else (1 if start <= end else -1)
    if step == 0:
        return [start] if start != end else []
    values = []
    value = start
    while (value < end) if step > 0 else (value > end):
        values.append(value)
        value += step
    return values


def ranges_in(rule: Rule) -> list[Functor]:
    """The `range` terms of a rule (outside aggregates), each before any that contains it."""
    found: list[Functor] = []

    def visit(term: object) -> None:
        if isinstance(term, Cast):
            visit(term.term)
        elif isinstance(term, BinaryOp):
            visit(term.left)
            visit(term.right)
        elif isinstance(term, Functor | RecordTerm | BranchTerm):
            for arg in term.args:
                visit(arg)
            if isinstance(term, Functor) and term.name == "range":
                found.append(term)

    for term in rule.head.args:
        visit(term)
    for literal in rule.body:
        if isinstance(literal, Atom):
            for term in literal.args:
                visit(term)
        elif isinstance(literal, Negation):
            for term in literal.atom.args:
                visit(term)
        else:
            visit(literal.left)
            visit(literal.right)
    return found


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


def aggregate_value(
    aggregate: Aggregate, binding: Binding, rows: Mapping[str, Iterable[Row]]
) -> int:
    """Soufflé's aggregates, as its documentation defines them: over every instantiation of the
    body (a choice of one tuple per positive atom and of one value per range, agreeing with
    the variables the rule bound outside), `count` counts them, `sum` adds the target's
    value, `min`/`max` take the least / greatest. An empty body gives 0 for `count` and
    `sum`, no value (no derivation) otherwise.

    Variables of the body that the rule binds outside are those of `binding` (the rule's other
    variables); all others are the aggregate's own, and so are those of its target whatever
    the rule binds (Soufflé's getInjectedVariables: the analysis renames them in an outermost
    aggregate, not in one nested in another's body)."""
    target = variables_in(aggregate.target) if aggregate.target is not None else set()
    inner = variables_in(aggregate) - target
    outer = {name: value for name, value in binding.items() if name in inner}
    key = (id(aggregate), tuple(sorted(outer.items())))
    if key not in _aggregates:
        _aggregates[key] = _aggregate(aggregate, outer, rows)
    value = _aggregates[key]
    if value is None:
        raise NoValue
    return value


_aggregates: dict[tuple[int, tuple], int | None] = {}
"""Aggregates already computed in this `evaluate`, by aggregate and outer binding: they read
lower strata only, which no longer change once a stratum above them is evaluated."""


def _aggregate(
    aggregate: Aggregate, outer: Binding, rows: Mapping[str, Iterable[Row]]
) -> int | None:
    body = Rule(Atom("", (), aggregate.span), aggregate.body, aggregate.span)
    values = []
    seen = set()
    for inner_binding, chosen in body_instantiations(body, outer, rows):
        # An instantiation is a choice of tuples and of a value for each range.
        ranges = sorted((k, v) for k, v in inner_binding.items() if k.startswith("range "))
        key = (tuple(chosen), tuple(ranges))
        if key in seen:
            continue
        seen.add(key)
        if aggregate.target is not None:
            values.append(value_of(aggregate.target, inner_binding, rows))
    if aggregate.op == "count":
        return len(seen)
    if aggregate.op == "sum":
        return wrap(sum(values))  # type: ignore[arg-type]
    if aggregate.op == UNSIGNED + "sum":
        return sum(values) % 2**64  # type: ignore[arg-type]
    if aggregate.op == FLOAT + "sum":  # in any order: where the order matters, refused
        return sum(map(float, values), 0.0)  # type: ignore[return-value, arg-type]
    if not values:
        return None
    if aggregate.op == FLOAT + "mean":
        return sum(map(float, values), 0.0) / len(values)  # type: ignore[return-value, arg-type]
    if aggregate.op in (FLOAT + "min", FLOAT + "max"):  # from ±DBL_MAX; a NaN is never kept
        largest = aggregate.op == FLOAT + "max"
        kept = -DBL_MAX if largest else DBL_MAX
        for value in map(float, values):  # type: ignore[arg-type]
            if (value > kept) if largest else (value < kept):
                kept = value
        return kept  # type: ignore[return-value]
    return min(values) if aggregate.op == "min" else max(values)  # type: ignore[type-var]


def variables_in(node: object) -> set[str]:
    """Every variable name inside a term, literal or aggregate."""
    if isinstance(node, Variable):
        return {node.name}
    if isinstance(node, Cast):
        return variables_in(node.term)
    if isinstance(node, BinaryOp):
        return variables_in(node.left) | variables_in(node.right)
    if isinstance(node, Functor | RecordTerm | BranchTerm):
        return set().union(*map(variables_in, node.args))
    if isinstance(node, Aggregate):
        names = variables_in(node.target) if node.target is not None else set()
        for literal in node.body:
            names |= variables_in(literal)
        return names
    if isinstance(node, Atom):
        return set().union(*(variables_in(arg) for arg in node.args))
    if isinstance(node, Negation):
        return variables_in(node.atom)
    if isinstance(node, Comparison):
        return variables_in(node.left) | variables_in(node.right)
    return set()


def aggregates_in(node: object) -> list[Aggregate]:
    """The aggregates inside a term or literal, nested ones included."""
    if isinstance(node, Aggregate):
        found = [node]
        for literal in node.body:
            found += aggregates_in(literal)
        return found + (aggregates_in(node.target) if node.target is not None else [])
    if isinstance(node, Cast):
        return aggregates_in(node.term)
    if isinstance(node, BinaryOp):
        return aggregates_in(node.left) + aggregates_in(node.right)
    if isinstance(node, Functor):
        return [a for arg in node.args for a in aggregates_in(arg)]
    if isinstance(node, Atom):
        return [a for arg in node.args for a in aggregates_in(arg)]
    if isinstance(node, Negation):
        return aggregates_in(node.atom)
    if isinstance(node, Comparison):
        return aggregates_in(node.left) + aggregates_in(node.right)
    return []


# --- unsigned: the oracle's own reading of which operations work on unsigned values ----------

UNSIGNED = "u:"
"""Marks an operator (and the `sum` aggregate) that works on `unsigned` values."""
FLOAT = "f:"
"""Marks an operator (and an aggregate) that works on floats; a unary minus is `f:neg`."""
_OWN_TYPES = ("unsigned", "float")
"""The numeric types whose operations differ from a number's."""


def typed(program: Program, analyzed: AnalyzedProgram) -> Program:
    """`program` with each operation on unsigned values marked (`UNSIGNED`) and each constant
    read by one as its value 0 .. 2^64 - 1, and each operation on floats marked (`FLOAT`) and
    each constant read by one as a Python float. Soufflé's arithmetic works in its operands'
    one type: a variable's is its column's (or that of what `=` gives it), a literal's its
    suffix or point or its context's (a head's or an atom's column, the other side of a
    comparison)."""
    columns = {name: info.types for name, info in analyzed.relations.items()}
    _record_columns.clear()
    _record_columns.update({name: info.value_types for name, info in analyzed.relations.items()})
    _primitives.clear()
    _primitives.update(_primitive_types(program))
    rules = []
    for rule in program.rules:
        kinds = _variable_kinds(rule, columns)
        rules.append(
            replace(
                rule,
                head=_typed_atom(rule.head, kinds, columns),
                body=tuple(_typed_literal(lit, kinds, columns) for lit in rule.body),
            )
        )
    facts = tuple(replace(fact, atom=_typed_atom(fact.atom, {}, columns)) for fact in program.facts)
    return replace(program, rules=tuple(rules), facts=facts)


_primitives: dict[str, str] = {}
"""The primitive type of each type name of the program being evaluated."""
_record_columns: dict[str, tuple] = {}
"""Each relation's column types with records' fields (`RelationInfo.value_types`)."""


def _primitive_types(program: Program) -> dict[str, str]:
    """Each `.type` name's primitive type: a subtype's or an alias's base's, a union's
    first member's (they share one)."""
    bases = {
        declaration.name: declaration.bases[0] if declaration.bases else "record"
        for declaration in program.types
    }
    found = {name: name for name in ("number", "unsigned", "float", "symbol", "record")}
    for name in bases:
        seen, current = set(), name
        while current in bases and current not in seen:
            seen.add(current)
            current = bases[current]
        found[name] = current
    return found


def _atoms(literals: Iterable[object]) -> Iterator[Atom]:
    for literal in literals:
        if isinstance(literal, Atom):
            yield literal
        elif isinstance(literal, Negation):
            yield literal.atom
        for aggregate in aggregates_in(literal):
            yield from _atoms(aggregate.body)


def _comparisons(literals: Iterable[object]) -> Iterator[Comparison]:
    for literal in literals:
        if isinstance(literal, Comparison):
            yield literal
        for aggregate in aggregates_in(literal):
            yield from _comparisons(aggregate.body)


def _variable_kinds(rule: Rule, columns: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for atom in _atoms([rule.head, *rule.body]):
        for arg, kind in zip(atom.args, columns.get(atom.relation, ()), strict=False):
            if isinstance(arg, Variable):
                kinds.setdefault(arg.name, kind)
    comparisons = list(_comparisons(rule.body))
    changed = True
    while changed:
        changed = False
        for comparison in comparisons:
            for side, other in (
                (comparison.left, comparison.right),
                (comparison.right, comparison.left),
            ):
                kind = _kind(other, kinds)
                if isinstance(side, Variable) and side.name not in kinds and kind is not None:
                    kinds[side.name] = kind
                    changed = True
    return kinds


def _kind(term: object, kinds: Mapping[str, str]) -> str | None:
    if isinstance(term, Variable):
        return kinds.get(term.name)
    if isinstance(term, NumberConst):  # one written negative is a number or a float
        return None if term.kind == "number" else term.kind
    if isinstance(term, BinaryOp):
        return _kind(term.left, kinds) or _kind(term.right, kinds)
    if isinstance(term, Aggregate):
        if term.op == "mean":
            return "float"
        return "number" if term.target is None else _kind(term.target, kinds)
    if isinstance(term, Cast):
        return _primitives.get(term.type, term.type)
    if isinstance(term, Functor) and term.name in ("to_unsigned", "to_float"):
        return term.name[3:]
    return None if term is None else "other"  # a functor's result, a string: not numeric


def _own(kind: object) -> str | None:
    """`kind` if its operations are its own (see `_OWN_TYPES`), else None."""
    return kind if kind in _OWN_TYPES else None  # type: ignore[return-value]


def _typed_atom(atom: Atom, kinds: Mapping[str, str], columns: Mapping[str, tuple]) -> Atom:
    types = _record_columns.get(atom.relation) or columns.get(atom.relation, ())
    args = tuple(
        _typed_field(arg, kind, kinds, columns)
        for arg, kind in zip(atom.args, types or [None] * len(atom.args), strict=True)
    )
    return replace(atom, args=args)


def _typed_field(term: Term, kind: object, kinds: Mapping[str, str], columns: Mapping) -> Term:
    """`term` in a place of type `kind`: a record's fields each in their own field's type."""
    if isinstance(term, RecordTerm) and isinstance(kind, RecordType):
        fields = kind.fields
    elif isinstance(term, BranchTerm) and isinstance(kind, AdtType):
        fields = next(b.fields for b in kind.branches if b.name == term.name)
    else:
        return _typed_term(term, _own(kind), kinds, columns)
    args = tuple(
        _typed_field(arg, field, kinds, columns)
        for arg, field in zip(term.args, fields, strict=True)
    )
    return replace(term, args=args)


def _typed_literal(literal: object, kinds: Mapping[str, str], columns: Mapping[str, tuple]):
    if isinstance(literal, Atom):
        return _typed_atom(literal, kinds, columns)
    if isinstance(literal, Negation):
        return replace(literal, atom=_typed_atom(literal.atom, kinds, columns))
    assert isinstance(literal, Comparison)
    sides = (_kind(literal.left, kinds), _kind(literal.right, kinds))
    context = next((kind for kind in _OWN_TYPES if kind in sides), None)
    return replace(
        literal,
        left=_typed_term(literal.left, context, kinds, columns),
        right=_typed_term(literal.right, context, kinds, columns),
    )


def _typed_term(
    term: Term, context: str | None, kinds: Mapping[str, str], columns: Mapping[str, tuple]
) -> Term:
    """`term` in a place of numeric type `context` (`unsigned`, `float` or None)."""
    if isinstance(term, NumberConst):
        if term.kind == "float":
            return replace(term, value=float_of_bits(term.value))
        if context == "float":  # `-0` is -0.0, as `stod("-0")` is
            negative_zero = term.kind == "number" and term.value == 0
            return replace(term, value=-0.0 if negative_zero else float(term.value))
        return replace(term, value=term.value % 2**64) if context == "unsigned" else term
    if isinstance(term, BinaryOp):
        inner = context or _own(_kind(term, kinds))
        mark = {"unsigned": UNSIGNED, "float": FLOAT}.get(inner or "", "")
        op = "neg" if inner == "float" and is_negation(term) else term.op
        return replace(
            term,
            op=mark + op,
            left=_typed_term(term.left, inner, kinds, columns),
            right=_typed_term(term.right, inner, kinds, columns),
        )
    if isinstance(term, Cast):  # its operand in its own type; a literal in the cast's
        target = _primitives.get(term.type, term.type)
        own = _kind(term.term, kinds)
        if isinstance(term.term, NumberConst) and term.term.kind in (None, "number"):
            own = target  # Soufflé types a constant by its cast: `as(-1, float)` is -1.0
        inner = _typed_term(term.term, _own(own), kinds, columns)
        return replace(term, term=inner, type=target)
    if isinstance(term, Functor):  # a parameter is a symbol or in its own numeric type
        return replace(
            term,
            args=tuple(_typed_term(a, _own(_kind(a, kinds)), kinds, columns) for a in term.args),
        )
    if isinstance(term, Aggregate):
        inner = None if term.target is None else context or _own(_kind(term.target, kinds))
        if term.op == "mean":
            inner = "float"
        target = term.target and _typed_term(term.target, inner, kinds, columns)
        body = tuple(_typed_literal(literal, kinds, columns) for literal in term.body)
        op = term.op
        if inner == "unsigned" and op == "sum":
            op = UNSIGNED + op
        elif inner == "float":
            op = FLOAT + op
        return replace(term, op=op, target=target, body=body)
    return term


# --- strata -------------------------------------------------------------------------------


def dependencies(program: Program) -> dict[str, set[str]]:
    """head relation -> the relations its rules read (positively or under negation)."""
    edges: dict[str, set[str]] = {rule.head.relation: set() for rule in program.rules}
    for rule in program.rules:
        for literal in rule.body:
            if isinstance(literal, Atom):
                edges[rule.head.relation].add(literal.relation)
            elif isinstance(literal, Negation):
                edges[rule.head.relation].add(literal.atom.relation)
        edges[rule.head.relation] |= aggregated(rule)
    return edges


def aggregated(rule: Rule) -> set[str]:
    """The relations that the rule's aggregates read (they must lie in lower strata)."""
    names = set()
    for node in (rule.head, *rule.body):
        for aggregate in aggregates_in(node):
            for literal in aggregate.body:
                if isinstance(literal, Atom):
                    names.add(literal.relation)
                elif isinstance(literal, Negation):
                    names.add(literal.atom.relation)
    return names


def stratify(program: Program) -> list[frozenset[str]]:
    """The relations defined by rules, grouped into strata, dependencies first.

    p and q share a stratum iff each depends on the other, directly or not. Ordering: if
    stratum B depends on stratum A, B depends on everything A depends on and on A itself, so
    B depends on strictly more relations outside itself than A does. Sorting by that number
    is therefore a topological order.
    """
    reads = dependencies(program)
    depends_on: dict[str, set[str]] = {}  # r -> every relation r depends on, transitively
    for start in reads:
        seen: set[str] = set()
        todo = list(reads[start])
        while todo:
            relation = todo.pop()
            if relation not in seen:
                seen.add(relation)
                todo.extend(reads.get(relation, ()))
        depends_on[start] = seen
    strata = {
        frozenset({r} | {s for s in reads if s in depends_on[r] and r in depends_on[s]})
        for r in reads
    }

    def rank(stratum: frozenset[str]) -> tuple[int, list[str]]:
        member = next(iter(stratum))
        return len(depends_on[member] - stratum), sorted(stratum)

    ordered = sorted(strata, key=rank)
    for stratum in ordered:
        for rule in program.rules:
            if rule.head.relation not in stratum:
                continue
            for literal in rule.body:
                if isinstance(literal, Negation) and literal.atom.relation in stratum:
                    raise ValueError(
                        f"negation of {literal.atom.relation} inside its own stratum: "
                        "the program is not stratifiable"
                    )
            if aggregated(rule) & stratum:
                raise ValueError("an aggregate inside its own stratum: not stratifiable")
    return ordered


# --- rule instantiations ------------------------------------------------------------------


def unify(
    args: tuple[Term, ...], row: Row, binding: Binding, positive: bool = True
) -> Binding | None:
    """Extend `binding` so that the atom's arguments match `row`, or None if they cannot.

    A wildcard matches anything (its value is fixed by the row, so different rows are
    different instantiations). Arithmetic arguments are checked later, once every variable
    has a value.
    """
    if len(args) != len(row):
        raise ValueError(f"arity mismatch: {len(args)} arguments for a row of {len(row)}")
    extended = dict(binding)
    for term, value in zip(args, row, strict=True):
        if positive and isinstance(term, NumberConst) and isinstance(term.value, float):
            if compare("=", term.value, value):  # Soufflé compares a float constant so
                continue
            return None
        if not match(term, value, extended):
            return None
    return extended


def match(term: Term, value: object, binding: Binding, nested: bool = False) -> bool:
    """Whether `value` can be `term`, binding `term`'s unbound variables (in place); a record
    pattern matches field by field. Arithmetic is checked later, once it has a value (inside
    a record: now if it has one already, and again by `finish`)."""
    if isinstance(term, Variable):
        if term.name in binding and binding[term.name] != value:
            return False
        binding[term.name] = value  # type: ignore[assignment]
        return True
    if isinstance(term, NumberConst | StringConst):
        return term.value == value
    if isinstance(term, NilConst):
        return value is None
    if isinstance(term, RecordTerm | BranchTerm):
        tag = RECORD_TAG if isinstance(term, RecordTerm) else "$" + term.name
        if not isinstance(value, tuple) or value[0] != tag or len(value[1]) != len(term.args):
            return False
        return all(
            match(arg, field, binding, nested=True)
            for arg, field in zip(term.args, value[1], strict=True)
        )
    if not nested:
        return True
    try:
        return value_of(term, binding) == value
    except (Unbound, NoValue):
        return True


def instantiations(
    rule: Rule,
    rows: Mapping[str, Iterable[Row]],
    newest: Mapping[str, Collection[Row]] | None = None,
) -> Iterator[tuple[Row, list[tuple[str, Row]]]]:
    """Every instantiation of `rule` over `rows` (relation -> the tuples of I_{k-1}):
    (head tuple, [(relation, tuple) of each positive atom, in body order]); with `newest`
    (N_{k-1}), only those of which a positive atom is in it."""
    for binding, chosen in body_instantiations(rule, {}, rows, newest):
        try:
            head = tuple(stored(value_of(term, binding, rows)) for term in rule.head.args)
        except NoValue:
            continue
        yield head, chosen


def body_instantiations(
    rule: Rule,
    start: Binding,
    rows: Mapping[str, Iterable[Row]],
    newest: Mapping[str, Collection[Row]] | None = None,
) -> Iterator[tuple[Binding, list[tuple[str, Row]]]]:
    """Every way to satisfy `rule`'s body over `rows` extending `start`: (the binding, [(relation,
    tuple) of each positive atom, in body order]); with `newest`, only the ways of which a
    positive atom takes a tuple of it.

    The loops stay nested over whole relations; `newest` only cuts the choices that could not
    qualify: once no later atom's relation has a newest tuple and none was chosen so far, the
    atom at hand must take one (an iteration after the first counts only those instantiations,
    and enumerating all of them again, iteration after iteration, was most of the Update
    property test's time)."""
    body = Body.of(rule)
    positives = body.positives
    # later[i]: whether an atom after the i-th may take a newest tuple.
    later = [
        newest is not None and any(newest.get(atom.relation) for atom in positives[i + 1 :])
        for i in range(len(positives))
    ]
    # A comparison is tested as soon as the atoms so far bind all its variables, not only
    # once every atom has a tuple: `finish` would test it on the same values, so this only
    # spares enumerating choices that cannot hold (a body of four atoms over 25 tuples each
    # is 390,000 choices).
    tests = [
        (literal, variables_in(literal))
        for literal in rule.body
        if isinstance(literal, Comparison) and not aggregates_in(literal)
    ]
    grounded = body.grounded

    def tested(binding: Binding) -> bool:
        for comparison, names in tests:
            if names <= binding.keys():
                try:
                    left = value_of(comparison.left, binding, rows)
                    right = value_of(comparison.right, binding, rows)
                except NoValue:
                    return False
                except Unbound:  # a range's value, chosen later
                    continue
                if not holds(comparison, left, right, grounded):
                    return False
        return True

    def extend(
        index: int, binding: Binding, chosen: list[tuple[str, Row]], found: bool
    ) -> Iterator[tuple[Binding, list[tuple[str, Row]]]]:
        """`found`: a newest tuple is among `chosen` (always, without `newest`)."""
        if index == len(positives):
            if found:
                for complete in finishes(body, binding, chosen, rows):
                    yield complete, chosen
            return
        atom = positives[index]
        candidates = rows.get(atom.relation, ())
        news: Collection[Row] = () if newest is None else newest.get(atom.relation, ())
        if not found and not later[index]:
            candidates = news  # the last atom that can take a newest tuple
        for row in candidates:
            extended = unify(atom.args, row, binding)
            if extended is not None and tested(extended):
                now = found or row in news
                yield from extend(index + 1, extended, [*chosen, (atom.relation, row)], now)

    yield from extend(0, dict(start), [], newest is None)


class Body(NamedTuple):
    """A rule's body as `finish` reads it, taken apart once per enumeration rather than once
    per instantiation."""

    rule: Rule
    positives: list[Atom]
    comparisons: list[Comparison]
    grounded: set[str]
    """The variables the positive atoms bind."""
    ranges: list[Functor]

    @classmethod
    def of(cls, rule: Rule) -> Body:
        positives = [literal for literal in rule.body if isinstance(literal, Atom)]
        comparisons = [literal for literal in rule.body if isinstance(literal, Comparison)]
        return cls(rule, positives, comparisons, grounded_variables(positives), ranges_in(rule))


def finishes(
    body: Body,
    binding: Binding,
    chosen: list[tuple[str, Row]],
    rows: Mapping[str, Iterable[Row]],
) -> Iterator[Binding]:
    """`finish` once per choice of a value for each `range` of the rule: a range is chosen
    as soon as its bounds have values (they may need equalities, or other ranges)."""
    ranges, comparisons = body.ranges, body.comparisons

    def choose(binding: Binding) -> Iterator[Binding]:
        binding = dict(binding)
        try:
            bind_equalities(comparisons, binding, rows, body.grounded)
        except NoValue:
            return
        for term in ranges:
            if range_key(term) in binding:
                continue
            try:
                bounds = [value_of(arg, binding, rows) for arg in term.args]
            except Unbound:
                continue
            except NoValue:
                return
            for value in range_values(bounds):
                yield from choose({**binding, range_key(term): value})
            return
        complete = finish(body, binding, chosen, rows)
        if complete is not None:
            yield complete

    if not ranges:
        complete = finish(body, binding, chosen, rows)
        if complete is not None:
            yield complete
        return
    yield from choose(binding)


def finish(
    body: Body,
    binding: Binding,
    chosen: list[tuple[str, Row]],
    rows: Mapping[str, Iterable[Row]],
) -> Binding | None:
    """The binding of a complete assignment to the positive atoms, with the variables that
    equalities bind, or None if the rest of the body fails or some expression has no value."""
    binding = dict(binding)
    rule, comparisons, by_atoms = body.rule, body.comparisons, body.grounded
    try:
        bind_equalities(comparisons, binding, rows, by_atoms)
        for atom, (_, row) in zip(body.positives, chosen, strict=True):
            for term, value in zip(atom.args, row, strict=True):
                if isinstance(term, BinaryOp | Functor | Aggregate | Cast) and not compare(
                    "=", value_of(term, binding, rows), value
                ):
                    return None
                if isinstance(term, RecordTerm | BranchTerm) and not match(term, value, binding):
                    return None
        for comparison in comparisons:
            if comparison.op == "=" and isinstance(comparison.left, RecordTerm | BranchTerm):
                if not match(
                    comparison.left, value_of(comparison.right, binding, rows), dict(binding)
                ):
                    return None
                continue
            if comparison.op == "=" and isinstance(comparison.right, RecordTerm | BranchTerm):
                if not match(
                    comparison.right, value_of(comparison.left, binding, rows), dict(binding)
                ):
                    return None
                continue
            if id(comparison) in binding.get(DEFINING, ()):  # type: ignore[operator]
                continue
            left = value_of(comparison.left, binding, rows)
            right = value_of(comparison.right, binding, rows)
            aliased = binding.get(ALIASED, frozenset())
            grounded = by_atoms | aliased  # type: ignore[operator]
            if not holds(comparison, left, right, grounded, binding.keys()):
                return None
        for literal in rule.body:
            if isinstance(literal, Negation) and matches_any(literal.atom, binding, rows):
                return None
        return binding
    except NoValue:
        return None


def bind_equalities(
    comparisons: list[Comparison],
    binding: Binding,
    rows: Mapping[str, Iterable[Row]],
    grounded: Collection[str] = (),
) -> None:
    """`x = expr` gives x a value when x is not bound by a positive atom (Soufflé allows it).
    Repeated until nothing changes, since one equality may enable the next. The equalities
    that gave a value are noted under `DEFINING`: Soufflé substitutes them away, so they are
    not tested again (a NaN so defined is a value like any other). A correlated aggregate is
    a generator Soufflé never substitutes: it gives a value only to a variable nothing else
    gives one, so it is taken last. A variable given the value of one that atoms bind
    (`grounded`, or `ALIASED` itself), or of an uncorrelated aggregate, is noted `ALIASED`."""
    generators = False
    while True:
        defined = _define_one(comparisons, binding, rows, grounded, generators)
        if defined:
            generators = False
        elif generators:
            return
        else:
            generators = True


def _define_one(
    comparisons: list[Comparison],
    binding: Binding,
    rows: Mapping[str, Iterable[Row]],
    grounded: Collection[str],
    generators: bool,
) -> bool:
    """One step of `bind_equalities`: whether an equality gave a value (a correlated
    aggregate's only when `generators`)."""
    for comparison in comparisons:
        if comparison.op != "=":
            continue
        for target, source in (
            (comparison.left, comparison.right),
            (comparison.right, comparison.left),
        ):
            if isinstance(target, Variable) and target.name not in binding:
                generated = isinstance(source, Aggregate) and correlated(source, binding.keys())
                if generated and not generators:
                    continue
                try:
                    binding[target.name] = value_of(source, binding, rows)
                except Unbound:
                    continue
                defining = binding.get(DEFINING, frozenset())
                binding[DEFINING] = defining | {id(comparison)}  # type: ignore[operator]
                aliased = binding.get(ALIASED, frozenset())
                if (
                    isinstance(source, Variable)
                    and (source.name in grounded or source.name in aliased)  # type: ignore[operator]
                ) or (isinstance(source, Aggregate) and not generated):
                    binding[ALIASED] = aliased | {target.name}  # type: ignore[operator]
                return True
            if (
                isinstance(target, RecordTerm | BranchTerm)
                and not variables_in(target) <= binding.keys()
            ):
                try:
                    value = value_of(source, binding, rows)
                except Unbound:
                    continue
                if not match(target, value, binding):
                    raise NoValue  # `[x, y] = r` where r is no such record
                return True
    return False


def matches_any(atom: Atom, binding: Binding, rows: Mapping[str, Iterable[Row]]) -> bool:
    """Whether some tuple matches a negated atom. Its wildcards are existential, and so are
    its variables that nothing else in the rule binds (`!s(p, p, y)`: no p with s(p, p, y)),
    each standing for one value wherever it occurs."""
    for row in rows.get(atom.relation, ()):
        extended = unify(atom.args, row, binding, positive=False)
        if extended is not None and all(
            stored(value_of(term, binding, rows)) == value
            for term, value in zip(atom.args, row, strict=True)
            if isinstance(term, BinaryOp | Functor | Aggregate | Cast)
        ):
            return True
    return False


# --- evaluation ---------------------------------------------------------------------------


def evaluate(analyzed: AnalyzedProgram, inputs: Mapping[str, Iterable[Row]]) -> State:
    """The proof-count state of every relation: tuple -> (iteration, count)."""
    program = typed(analyzed.written or analyzed.program, analyzed)
    _aggregates.clear()
    asserted: dict[str, set[Row]] = {
        name: set() for name, info in analyzed.relations.items() if not info.internal
    }
    choices = choice_keys(program)
    guard: dict[str, set[tuple[int, tuple[Value, ...]]]] = {}  # a choice's keys facts took
    for fact in program.facts:
        try:
            row = tuple(stored(value_of(term, {})) for term in fact.atom.args)
        except NoValue:
            continue
        name = fact.atom.relation
        if name in choices and row not in asserted.get(name, ()):  # guarded, in order written
            held = {(i, tuple(row[c] for c in key)) for i, key in enumerate(choices[name])}
            if held & guard.setdefault(name, set()):
                continue
            guard[name] |= held
        asserted.setdefault(name, set()).add(row)
    for name, given in inputs.items():
        if name not in analyzed.relations:
            raise ValueError(f"inputs for unknown relation {name!r}")
        asserted[name].update(checked_rows(analyzed, name, given))

    subsumptions: dict[str, list[Rule]] = {}
    for rule in program.rules:
        if rule.dominating is not None:
            subsumptions.setdefault(rule.head.relation, []).append(rule)
    program = replace(program, rules=tuple(r for r in program.rules if r.dominating is None))
    strata = stratify(program)
    derived = set().union(*strata) if strata else set()
    state: State = {name: {} for name in asserted}
    for name, rows in asserted.items():
        if name not in derived:
            state[name] = {row: (0, 1) for row in rows}
    for name, rules in subsumptions.items():  # relations of facts alone
        if name not in derived:
            for row in dominated(rules, set(state[name]), set(state[name]), state):
                del state[name][row]
    filters = Filters(choices, subsumptions, state)
    for stratum in strata:
        rules = [rule for rule in program.rules if rule.head.relation in stratum]
        state.update(evaluate_stratum(stratum, rules, asserted, state, filters))
    for name in analyzed.inlined:  # substituted into their readers: never materialized
        state[name] = {}
    return _as_text(state, analyzed)


def dominated(
    rules: list[Rule], candidates: set[Row], dominators: set[Row], state: State
) -> set[Row]:
    """The candidates that another tuple of `dominators` dominates by a subsumptive clause
    (`a(d) <= a(g) :- body`): the clause's body holds with d a candidate, g a dominator."""
    found: set[Row] = set()
    rows = {name: list(r) for name, r in state.items()}
    rows["dominated?"] = list(candidates)
    rows["dominating?"] = list(dominators)
    for rule in rules:
        assert rule.dominating is not None
        arity = len(rule.head.args)
        named = [  # each `_` a variable of its own, so that the pair can be read
            Variable(f"_{i}", arg.span) if isinstance(arg, Wildcard) else arg
            for i, arg in enumerate((*rule.head.args, *rule.dominating.args))
        ]
        pair = Rule(
            Atom("pair", tuple(named), rule.span),
            (
                Atom("dominated?", tuple(named[:arity]), rule.span),
                Atom("dominating?", tuple(named[arity:]), rule.span),
                *rule.body,
            ),
            rule.span,
        )
        for row, _atoms in instantiations(pair, rows):
            if row[:arity] != row[arity:]:
                found.add(row[:arity])
    return found


class Filters:
    """What removes an iteration's tuples: choice-domains, then subsumptions."""

    def __init__(
        self,
        choices: Mapping[str, list[tuple[int, ...]]],
        subsumptions: Mapping[str, list[Rule]],
        state: State,
    ) -> None:
        self.choices = choices
        self.subsumptions = subsumptions
        self.state = state

    def facts(self, own: State) -> None:
        """Remove the dominated facts of the stratum's relations (before iteration 1)."""
        for name, rules in self.subsumptions.items():
            if name in own:
                for row in dominated(rules, set(own[name]), set(own[name]), self.state):
                    del own[name][row]

    def __call__(self, fresh: dict[tuple[str, Row], int], own: State) -> dict[tuple[str, Row], int]:
        """An iteration's new tuples after the choices, then the subsumptions: the new tuples
        another tuple dominates are rejected, then the older tuples a kept one dominates go
        (`reasoner.analysis.subsumption`)."""
        fresh = chosen(fresh, own, self.choices)
        for name, rules in self.subsumptions.items():
            new = {row for relation, row in fresh if relation == name}
            if not new:
                continue
            state = {**self.state, **own}
            rejected = dominated(rules, new, set(own[name]) | new, state)
            kept = new - rejected
            for row in dominated(rules, set(own[name]), kept, state):
                del own[name][row]
            fresh = {key: c for key, c in fresh.items() if key[0] != name or key[1] in kept}
        return fresh


def choice_keys(program: Program) -> dict[str, list[tuple[int, ...]]]:
    """Each `choice-domain` relation's keys as column positions. The oracle orders a choice's
    candidates by their Python values, which is the engine's order for `number` columns only
    (the engine compares symbols by their ids): it refuses any other column."""
    keys: dict[str, list[tuple[int, ...]]] = {}
    for declaration in program.declarations:
        if not declaration.choice_domain:
            continue
        names = [column.name for column in declaration.columns]
        if any(column.type != "number" for column in declaration.columns):
            raise NotImplementedError("the oracle's choice-domain takes number columns only")
        keys[declaration.name] = [
            tuple(sorted({names.index(a) for a in key.attributes}))
            for key in declaration.choice_domain
        ]
    return keys


def chosen(
    fresh: dict[tuple[str, Row], int],
    own: State,
    choices: Mapping[str, list[tuple[int, ...]]],
) -> dict[tuple[str, Row], int]:
    """An iteration's new tuples after the choices (`reasoner.executors.choice` says what the
    engine fixes): in ascending order, a tuple of a `choice-domain` relation is kept when no
    tuple of an earlier iteration and none kept before it holds its values in a key."""
    kept = {key: count for key, count in fresh.items() if key[0] not in choices}
    for name, keys in choices.items():
        held: list[set[Row]] = [set() for _ in keys]
        for row in sorted(row for relation, row in fresh if relation == name):
            values = [tuple(row[c] for c in key) for key in keys]
            if any(
                value in mine or any(tuple(old[c] for c in key) == value for old in own[name])
                for key, value, mine in zip(keys, values, held, strict=True)
            ):
                continue
            for value, mine in zip(values, held, strict=True):
                mine.add(value)
            kept[name, row] = fresh[name, row]
    return kept


def comparable(state: Mapping[str, dict], analyzed: AnalyzedProgram) -> dict[str, dict]:
    """`state` as the oracle checks it (`visible`): where inline relations were substituted
    (`reasoner.analysis.inline`) or the magic-set transformation rewrote relations
    (`reasoner.analysis.magic`), the iterations and counts follow the rules as rewritten,
    which the oracle does not evaluate, so the tuples alone compare."""
    shown = visible(state, analyzed)
    if not analyzed.inlined and not analyzed.goal_directed:
        return shown
    return {name: dict.fromkeys(rows) for name, rows in shown.items()}


def visible(state: Mapping[str, dict], analyzed: AnalyzedProgram) -> dict[str, dict]:
    """`state` without the relations the analysis made for evaluation (which the oracle,
    reading the program as written, does not have), nor those the magic-set transformation
    made goal-directed (the state holds their facts alone, the oracle all their rows)."""
    return {
        name: rows
        for name, rows in state.items()
        if (name not in analyzed.relations or not analyzed.relations[name].internal)
        and name not in analyzed.goal_directed
    }


def checked_rows(analyzed: AnalyzedProgram, name: str, given: Iterable[Row]) -> set[Row]:
    """The input rows as tuples, refusing values of the wrong arity or type: a typo in a test's
    inputs must not silently become a different relation."""
    types = analyzed.relations[name].types
    rows = {tuple(row) for row in given}
    for row in rows:
        expected = tuple(
            str if t in ("symbol", "record") else float if t == "float" else int for t in types
        )
        actual = tuple(float if isinstance(value, float) else type(value) for value in row)
        if actual != expected:
            raise ValueError(f"{name}{row!r} does not have the types {types}")
    kinds = analyzed.relations[name].value_types
    return {
        tuple(
            read_record(v, k) if isinstance(k, RecordType | AdtType) else stored(v)  # type: ignore[arg-type]
            for v, k in zip(row, kinds, strict=True)
        )
        for row in rows
    }


# --- records as text: the oracle's own reader and writer of Soufflé's syntax -----------------


def read_record(text: str, kind: ValueType) -> object:
    """A record column's text (`[1, a]`, `$A(2)`, `nil`) as a value (see RECORD_TAG)."""
    value, rest = _read(text.strip(), kind)
    if rest.strip():
        raise ValueError(f"text after the record: {rest!r}")
    return value


def _read(text: str, kind: ValueType) -> tuple[object, str]:
    text = text.lstrip()
    if kind == "symbol":
        if text.startswith('"'):
            end = text.index('"', 1)
            while text[end - 1] == "\\":
                end = text.index('"', end + 1)
            return text[1:end].replace('\\"', '"'), text[end + 1 :]
        end = min(i for i in (text.find(","), text.find("]"), text.find(")")) if i >= 0)
        return text[:end], text[end:]
    if isinstance(kind, str):
        found = re.match(r"[+-]?[0-9]+", text)
        assert found is not None, text
        number = int(found.group())
        return (number if kind == "number" else number % 2**64), text[found.end() :]
    if isinstance(kind, RecordType):
        if text.startswith("nil"):
            return None, text[3:]
        assert text.startswith("["), text
        fields, text = _read_fields(text[1:], kind.fields, "]")
        return (RECORD_TAG, fields), text
    found = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)", text)
    assert found is not None, text
    branch = next(b for b in kind.branches if b.name == found.group(1))
    text = text[found.end() :]
    if not branch.fields:
        return ("$" + branch.name, ()), text
    assert text.startswith("("), text
    fields, text = _read_fields(text[1:], branch.fields, ")")
    return ("$" + branch.name, fields), text


def _read_fields(text: str, kinds: tuple[ValueType, ...], close: str) -> tuple[tuple, str]:
    fields = []
    for index, kind in enumerate(kinds):
        if index:
            text = text.lstrip()
            assert text.startswith(","), text
            text = text[1:]
        value, text = _read(text, kind)
        fields.append(value)
    text = text.lstrip()
    assert text.startswith(close), text
    return tuple(fields), text[1:]


def packed(value: object, kind: ValueType) -> object:
    """A record value (see RECORD_TAG) in the rewritten rules' form (see PACKED)."""
    if isinstance(kind, str):
        return wrap(value) if kind == "unsigned" else value  # type: ignore[arg-type]
    if value is None:
        return 0
    tag, fields = value  # type: ignore[misc]
    if isinstance(kind, RecordType):
        return (PACKED, tuple(map(packed, fields, kind.fields)))
    branch = next(b for b in kind.branches if "$" + b.name == tag)
    return (PACKED, (branch.index, *map(packed, fields, branch.fields)))


def write_record(value: object, kind: ValueType) -> str:
    """The text Soufflé writes for a record value (quoting a symbol only where its reader
    would misread it; the empty symbol is written bare, `[0, ]`)."""
    if kind == "symbol":
        text = str(value)
        if re.search(r'[,\])"\\]|^\s', text):
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return text
    if isinstance(kind, str):
        return str(value % 2**64 if kind == "unsigned" else value)
    if value is None:
        return "nil"
    tag, fields = value  # type: ignore[misc]
    if isinstance(kind, RecordType):
        return "[" + ", ".join(map(write_record, fields, kind.fields)) + "]"
    branch = next(b for b in kind.branches if "$" + b.name == tag)
    if not branch.fields:
        return tag
    return tag + "(" + ", ".join(map(write_record, fields, branch.fields)) + ")"


def _as_text(state: State, analyzed: AnalyzedProgram) -> State:
    """Record columns written as text, as the engine shows them."""
    out: State = {}
    for name, rows in state.items():
        info = analyzed.relations.get(name)
        kinds = info.value_types if info is not None else ()
        if not any(isinstance(k, RecordType | AdtType) for k in kinds):
            out[name] = rows
            continue
        out[name] = {
            tuple(
                write_record(v, k) if isinstance(k, RecordType | AdtType) else v
                for v, k in zip(row, kinds, strict=True)
            ): entry
            for row, entry in rows.items()
        }
    return out


def evaluate_stratum(
    stratum: frozenset[str],
    rules: list[Rule],
    asserted: Mapping[str, set[Row]],
    state: State,
    filters: Filters,
) -> State:
    own: State = {name: {row: (0, 1) for row in asserted.get(name, ())} for name in stratum}
    filters.facts(own)
    newest: dict[str, set[Row]] | None = None  # N_{k-1} for k >= 2; None stands for N_0 = I_0
    k = 1
    while True:
        current = {name: list(rows) for name, rows in state.items()}  # I_{k-1}
        current.update({name: list(rows) for name, rows in own.items()})
        counts: Counter[tuple[str, Row]] = Counter()
        for rule in rules:
            if newest is not None and not reads_own_relation(rule, stratum):
                continue  # only atoms in N_{k-1} qualify, and N_{k-1} holds own tuples only
            for head, body in instantiations(rule, current, newest):
                # The definition's condition, which the enumeration already keeps to: checked,
                # so that a choice it let through by mistake fails instead of counting.
                assert newest is None or any(
                    row in newest.get(relation, ()) for relation, row in body
                ), (rule, body)
                counts[rule.head.relation, head] += 1
        fresh = {key: count for key, count in counts.items() if key[1] not in own[key[0]]}
        fresh = filters(fresh, own)
        if not fresh:
            return own
        newest = {name: set() for name in stratum}
        for (name, row), count in fresh.items():
            own[name][row] = (k, count)
            newest[name].add(row)
        k += 1


def reads_own_relation(rule: Rule, stratum: frozenset[str]) -> bool:
    return any(isinstance(lit, Atom) and lit.relation in stratum for lit in rule.body)
