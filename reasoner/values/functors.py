"""Soufflé's string functors, with Soufflé's semantics, for every evaluator.

Symbols are interned integers everywhere past the parser, so a functor over symbols decodes
its operands through the symbol table and interns a symbol it makes (`cat`, `substr`,
`to_string`). Each functor is defined once, over Python values (`Signature.scalar`); the
evaluators apply it through `apply` (one instantiation: the Update kernel) or `apply_arrays`
(a column of them: Polars), and the oracle and the fact folder call `scalar` directly.

Soufflé's strings are C++ byte strings: `strlen` and `substr` count UTF-8 bytes, as there. A
`substr` that cuts a character in two is where the two differ: Soufflé keeps the bytes, which
no symbol here (Unicode text) holds, so it is refused by name. A functor without a
value for its operands (`to_number("x")`) gives no derivation, like a division by zero.
User-defined functors (`@f`) are registered here once the analysis has bound them to their
implementations (`register`, `reasoner.values.user_functors`), and are then applied as these.
`contains` and `match` are constraints in Soufflé; here they are numbers (1 or 0) that the
parser compares with 0, so every evaluator treats them as any other term; `match` of an
invalid pattern has no value, so that `match` and `!match` both fail, as in Soufflé.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from reasoner.support import allocations
from reasoner.values import ecmascript_regex, floats
from reasoner.values.arith import as_unsigned, wrap64
from reasoner.values.records import NO_RECORD
from reasoner.values.types import ColumnType, Value

if TYPE_CHECKING:
    from reasoner.values.symbols import SymbolTable


@dataclass(frozen=True, slots=True)
class Signature:
    """A functor's parameter and result types, and its meaning over decoded values (None: no
    value). `variadic`: any number (at least one) of parameters of the type of the first;
    `optional`: how many of the last parameters may be left out."""

    params: tuple[ColumnType, ...]
    result: ColumnType
    scalar: Callable[..., Value | None]
    variadic: bool = False
    optional: int = 0

    def param(self, index: int) -> ColumnType:
        return self.params[0] if self.variadic else self.params[index]

    def accepts(self, count: int) -> bool:
        if self.variadic:
            return count >= 1
        return len(self.params) - self.optional <= count <= len(self.params)


def _substr(text: str, start: int, length: int) -> str:
    """C++ `std::string::substr`: a start past the end (or negative, which is huge as a
    size_t) gives Soufflé's fallback, the empty string; a negative length reads to the end.
    A cut through a UTF-8 character is refused: Soufflé keeps the bytes cut off, which no
    symbol here holds (symbols are Unicode text)."""
    data = text.encode()
    if start < 0 or start > len(data):
        return ""
    end = len(data) if length < 0 else start + length
    try:
        return data[start:end].decode()
    except UnicodeDecodeError:
        raise _refused(
            f"`substr({text!r}, {start}, {length})` cuts a UTF-8 character in two (Soufflé "
            "keeps the partial bytes, which no symbol here holds)"
        ) from None


def _refused(what: str) -> Exception:
    """What a functor raises for operands it cannot give Soufflé's value of: an evaluation
    error naming them, and the epoch that meets it changes nothing."""
    from reasoner.errors import UNSUPPORTED_FEATURE, InvalidDelta  # errors reads the parser

    return InvalidDelta(UNSUPPORTED_FEATURE, f"{what}: not supported")


def _match(pattern: str, text: str) -> int | None:
    """`std::regex_match` of the text's UTF-8 bytes against an ECMAScript pattern, as
    libstdc++ reads it (`reasoner.values.ecmascript_regex`). An invalid pattern has no value:
    Soufflé
    makes both `match` and `!match` false then (it warns, once per pattern here). A pattern
    with a construct that is not translated is refused by name (a constant one earlier, by
    the analysis: `reasoner.analysis.patterns`)."""
    try:
        compiled = ecmascript_regex.compiled(pattern)
    except ecmascript_regex.UnsupportedPattern as error:
        raise _refused(f"`match` pattern {pattern!r} uses {error}") from None
    if compiled is None:
        _warn_invalid(pattern)
        return None
    return int(compiled.fullmatch(text.encode()) is not None)


@lru_cache(maxsize=256)
def _warn_invalid(pattern: str) -> None:
    """Soufflé's warning, once a pattern. `logging` is imported here: 3 ms of every start
    otherwise."""
    import logging

    logging.getLogger(__name__).warning(
        "wrong pattern provided %r: match and !match are both false", pattern
    )


def _strtol(text: str, base: int) -> tuple[bool, int] | None:
    """C's `strtoll`/`strtoull` reading of `text`, which `std::stoll` throws on when it reads
    nothing: white space, a sign, `0x` for base 16, then the longest run of digits (what
    follows is ignored); (whether a minus was read, the magnitude), or None."""
    position = 0
    while position < len(text) and text[position] in _C_SPACE:
        position += 1
    negative = text[position : position + 1] == "-"
    if text[position : position + 1] in ("-", "+"):
        position += 1
    allowed = _DIGITS if base == 16 else _DIGITS[:base]
    prefix = text[position : position + 3]  # `0x` counts only before a hexadecimal digit
    if base == 16 and len(prefix) == 3 and prefix[:2] in ("0x", "0X") and prefix[2] in allowed:
        position += 2
    end = position
    while end < len(text) and text[end] in allowed:
        end += 1
    if end == position:
        return None
    digits = text[position:end].lstrip("0") or "0"
    if len(digits) > 70:  # past 64 bits in any base: never ask int() for thousands of digits
        return negative, 1 << 70
    return negative, int(digits, base)


_C_SPACE = " \t\n\v\f\r"
_DIGITS = "0123456789abcdefABCDEF"


def _to_number(text: str) -> int | None:
    """`to_number` of text, as Soufflé's `RamSignedFromString` reads it: `0b` (or `-0b`)
    then binary digits, text starting `0x` or `-0x` in base 16, anything else in base 10,
    each by `std::stoll`, which reads a prefix (`to_number("12a")` is 12, `"0X1f"` is 0,
    `" 7"` is 7). Where Soufflé stops the program with an error (no digits, past 64 bits),
    here it has no value."""
    if text.startswith("-0b"):
        read = _strtol("-" + text[3:], 2)
    elif text.startswith("0b"):
        read = _strtol(text[2:], 2)
    else:
        read = _strtol(text, 16 if text.startswith(("0x", "-0x")) else 10)
    if read is None:
        return None
    value = -read[1] if read[0] else read[1]
    return value if wrap64(value) == value else None


def _to_unsigned(text: str) -> int | None:
    """`to_unsigned` of text, as Soufflé reads it with `std::stoull` (held as its 64-bit
    pattern): as `to_number`, but text that starts with a minus stops Soufflé with an error
    (no value here), while a minus after white space wraps around (`" -12"` is 2^64 - 12)."""
    if text.startswith("-"):
        return None
    if text.startswith("0b"):
        read = _strtol(text[2:], 2)
    else:
        read = _strtol(text, 16 if text.startswith("0x") else 10)
    if read is None or read[1] >= 1 << 64:
        return None
    return wrap64(-read[1] if read[0] else read[1])


UNSIGNED_TO_STRING = "to_string!u"
"""`to_string` of an unsigned (its unsigned reading), which the analysis makes of a
`to_string` call on one; never written (`!` is no identifier character)."""

FLOAT_OPERATIONS: dict[str, str] = {
    "+": "fadd!",
    "-": "fsub!",
    "*": "fmul!",
    "/": "fdiv!",
    "^": "fpow!",
    "max": "fmax!",
    "min": "fmin!",
}
"""The functor the analysis makes of each arithmetic operation on floats
(`reasoner.analysis.floats`)."""
FLOAT_NEGATE = "fneg!"
FLOAT_COMPARE = "fcmp!"
"""`fcmp!(a, b)`: -1, 0 or 1 as `a` is below, equal to or above `b`, 2 when unordered; the
analysis compares it with 0 for each comparison of floats."""
SYMBOL_OPERATIONS: dict[str, str] = {"+": "cat", "max": "smax!", "min": "smin!"}
"""The functor the analysis makes of each arithmetic operation Soufflé overloads on symbols:
`+` concatenates, `max` and `min` take the lexicographic extremes."""
SYMBOL_COMPARE = "scmp!"
"""`scmp!(a, b)`: -1, 0 or 1 as symbol `a` is below, equal to or above `b` in the order of
their UTF-8 bytes (C++'s `std::string` comparison, which Soufflé's `<` on symbols is); the
analysis compares it with 0 for each ordering comparison of symbols."""


def _compare_text(a: str, b: str) -> int:
    """Code point order, which is UTF-8's byte order."""
    return (a > b) - (a < b)


FLOAT_CONVERSIONS: dict[tuple[str, str], str] = {
    ("to_float", "number"): "itof!",
    ("to_float", "unsigned"): "utof!",
    ("to_number", "float"): "ftoi!",
    ("to_unsigned", "float"): "ftou!",
    ("to_string", "float"): "ftos!",
}
"""The functor of each conversion between a float and a number, an unsigned or text, by the
functor written and its argument's type (`to_float` of a symbol is `to_float` itself)."""


SYMBOL_BYTES = 128
"""What a new symbol costs beside its characters (the string's header, its entries in the
symbol table's dict and list), charged for every symbol a functor makes
(`reasoner.support.allocations`)."""
RECORD_BYTES = 160
FIELD_BYTES = 40
"""What a packed record costs (its tuple, its entries in the record table), and each field."""
WIDE_CHAR_BYTES = 4
"""Bytes a character of text that is not all ASCII may take (Python stores such text in up to
four bytes a character; its UTF-8 copy takes as many)."""


def _text_bytes(parts: Sequence[str]) -> int:
    """An upper bound of the bytes `parts`' characters take, without reading them."""
    width = 1 if all(part.isascii() for part in parts) else WIDE_CHAR_BYTES
    return width * sum(map(len, parts))


def _cat(*parts: str) -> str:
    """`cat`, charged before it is made: one rule doubling a string a few times over would
    otherwise grow the process by gigabytes between two checks of its budget."""
    allocations.charge(_text_bytes(parts))
    return "".join(parts)


def _strlen(text: str) -> int:
    """Soufflé's `strlen`, in UTF-8 bytes: ASCII text is its own length (no copy made)."""
    if text.isascii():
        return len(text)
    allocations.charge(_text_bytes((text,)))
    return len(text.encode())


def _charged_substr(text: str, start: int, length: int) -> str:
    """`_substr`, charged before its UTF-8 copy of the text and the cut are made."""
    allocations.charge(2 * _text_bytes((text,)))
    return _substr(text, start, length)


def _binary(operation: Callable[[float, float], float]) -> Signature:
    return Signature(("float", "float"), "float", operation)


SIGNATURES: dict[str, Signature] = {
    "cat": Signature(("symbol",), "symbol", _cat, variadic=True),
    "strlen": Signature(("symbol",), "number", _strlen),
    "substr": Signature(("symbol", "number", "number"), "symbol", _charged_substr),
    "contains": Signature(("symbol", "symbol"), "number", lambda part, text: int(part in text)),
    "match": Signature(("symbol", "symbol"), "number", _match),
    "to_number": Signature(("symbol",), "number", _to_number),
    "to_string": Signature(("number",), "symbol", str),
    "to_unsigned": Signature(("symbol",), "unsigned", _to_unsigned),
    UNSIGNED_TO_STRING: Signature(("unsigned",), "symbol", lambda value: str(as_unsigned(value))),
    "to_float": Signature(("symbol",), "float", floats.prefix_float),
    "fadd!": _binary(lambda a, b: a + b),
    "fsub!": _binary(lambda a, b: a - b),
    "fmul!": _binary(lambda a, b: a * b),
    "fdiv!": _binary(floats.divide),
    "fpow!": _binary(floats.power),
    "fmax!": _binary(floats.maximum),
    "fmin!": _binary(floats.minimum),
    FLOAT_NEGATE: Signature(("float",), "float", lambda value: -value),
    FLOAT_COMPARE: Signature(("float", "float"), "number", floats.compare),
    SYMBOL_COMPARE: Signature(("symbol", "symbol"), "number", _compare_text),
    "smax!": Signature(("symbol", "symbol"), "symbol", max),
    "smin!": Signature(("symbol", "symbol"), "symbol", min),
    "itof!": Signature(("number",), "float", float),
    "utof!": Signature(("unsigned",), "float", lambda value: float(as_unsigned(value))),
    "ftoi!": Signature(("float",), "number", floats.to_number),
    "ftou!": Signature(("float",), "unsigned", floats.to_unsigned),
    "ftos!": Signature(("float",), "symbol", floats.format_f),
}
"""Every functor by name. `ord` is not here: its value is a symbol's id, see `apply`; nor is
`range`, which has many values (see `range_values`)."""

GENERATOR = "range"
"""`range(a, b[, step])`: a term with one value per number of the range. The analysis lifts
each into a body literal `#range<n> = range(...)` of its own (`reasoner.analysis.ranges`),
which executors evaluate as a generator (or, the variable already bound, as a membership
test); no other term of theirs ever holds one."""

PACK = "pack!"
"""`pack!(a, b, ...)`: the id of the record of those fields (`reasoner.values.records`), which the
analysis makes of `[a, b, ...]` and `$Branch(...)` (`reasoner.analysis.records`); never
written."""
FIND = "find!"
"""`find!(a, b, ...)`: the id of the record of those fields if the table has it, else -1,
which no stored record has: a record only compared with stored ones (`!p([x, 1])`) need
not be added to the table. Made by the analysis, never written."""
FIELD = "field!"
"""`field!(r, i)`: field `i` of record `r`, no value for nil; made by the analysis to take a
record apart, never written."""

NAMES = frozenset(name for name in SIGNATURES if "!" not in name) | {"ord", GENERATOR}
"""The functors a program may call (`!` is in no name a program can write)."""
CONVERSIONS = frozenset({"to_number", "to_unsigned"})
"""Functors that also take a number or an unsigned (`to_number(u)`, `to_unsigned(n)`): then
they keep the 64 bits and change the type, and the analysis drops them."""
CONSTRAINTS = frozenset({"contains", "match"})
"""Functors Soufflé writes as body literals (`contains("a", s)`), not as terms."""


def signature(name: str) -> Signature:
    if name == "ord":
        return _ORD
    if name == GENERATOR:
        return _RANGE
    if name.startswith(USER_PREFIX):
        return _USER[name]
    return SIGNATURES[name]


def find(name: str) -> Signature | None:
    """`name`'s signature, or None for a user-defined functor that is not registered (a call
    the analysis refused)."""
    return _USER.get(name) if name.startswith(USER_PREFIX) else signature(name)


USER_PREFIX = "@"
"""How a user-defined functor's call is named: `@f`, as written."""
_USER: dict[str, Signature] = {}
"""The user-defined functors bound in this process, by the name their calls take."""
_USER_NAMES: list[str] = []
"""The same, in order of registration: their numbers follow `ORDER`'s."""
_USER_KEYS: dict[Hashable, str] = {}
_USER_LOCK = threading.Lock()


def register(written: str, user: Signature, key: Hashable) -> str:
    """Make `user` the meaning of the calls of a user-defined functor written `written`
    (`@f`); the name those calls take from then on: `@f#1` for the first binding of the name
    in the process, `@f#2` for the next (two programs may give one name two implementations),
    and so on. The same `key` (the declared types and the implementation) is the same binding,
    whose name is given again. A call named as written is one the analysis refused: no
    signature has its name."""
    with _USER_LOCK:
        found = _USER_KEYS.get(key)
        if found is not None:
            return found
        count = 1
        while f"{written}#{count}" in _USER:
            count += 1
        name = f"{written}#{count}"
        _USER[name] = user
        _USER_NAMES.append(name)
        _USER_KEYS[key] = name
        return name


def written_name(name: str) -> str:
    """A functor's name as the program writes it (`@f` for a binding named `@f#1`)."""
    return name.split("#", 1)[0]


_ORD = Signature(("symbol",), "number", lambda ident: ident)
"""`ord(s)`: the symbol's number in the symbol table, as in Soufflé (whose numbers differ)."""


def _range_step(start: int, end: int, step: int | None) -> int:
    """Soufflé's default step: up by one, or down by one when the range goes down."""
    if step is not None:
        return step
    return 1 if start <= end else -1


def range_values(start: int, end: int, step: int | None = None) -> Iterator[int]:
    """The values of `range(start, end[, step])` as Soufflé's `runRange` gives them: from
    `start` toward `end` (excluded) by `step`; a zero step gives `start` once, if the range is
    not empty."""
    step = _range_step(start, end, step)
    if step == 0:
        if start != end:
            yield start
        return
    yield from range(start, end, step)


def in_range(value: int, start: int, end: int, step: int | None = None) -> bool:
    """Whether `range_values(start, end, step)` holds `value`, without listing them."""
    step = _range_step(start, end, step)
    if step == 0:
        return start != end and value == start
    if step > 0:
        return start <= value < end and (value - start) % step == 0
    return end < value <= start and (start - value) % -step == 0


def _many(*_operands: int) -> int:
    raise TypeError("range has one value per number: see range_values")


_RANGE = Signature(("number", "number", "number"), "number", _many, optional=1)


def apply(name: str, symbols: SymbolTable, operands: Sequence[int]) -> int | None:
    """`name` over interned operands: the interned result, or None for no value."""
    if name == "ord":
        return operands[0]
    if name == PACK:
        allocations.charge(RECORD_BYTES + FIELD_BYTES * len(operands))
        return symbols.records.pack(tuple(operands))
    if name == FIND:
        found = symbols.records.lookup(tuple(operands))
        return NO_RECORD if found is None else found
    if name == FIELD:
        return symbols.records.field(operands[0], operands[1])
    return apply_with(name, symbols.resolve, symbols.intern, operands)


def apply_with(
    name: str,
    resolve: Callable[[int], str],
    encode: Callable[[str], int],
    operands: Sequence[int],
) -> int | None:
    """`name` (not `ord`) over numbered operands, symbols read by `resolve` and a symbol it
    makes numbered by `encode` (a query numbers without interning); None for no value."""
    signature = _USER[name] if name.startswith(USER_PREFIX) else SIGNATURES[name]
    values = [_decoded(signature.param(i), v, resolve) for i, v in enumerate(operands)]
    result = signature.scalar(*values)
    if result is None:
        return None
    if isinstance(result, float):
        return floats.to_bits(result)
    if isinstance(result, str):
        allocations.charge(SYMBOL_BYTES)
        return encode(result)
    return result


def _decoded(kind: ColumnType, value: int, resolve: Callable[[int], str]) -> Value:
    if kind == "symbol":
        return resolve(value)
    return floats.from_bits(value) if kind == "float" else value


def apply_arrays(
    name: str, symbols: SymbolTable, operands: Sequence[np.ndarray]
) -> np.ma.MaskedArray:
    """`name` over columns of interned operands (masked where it has no value), evaluated
    once per distinct combination of operands; a column of one value stands for a constant."""
    if name == "ord":
        return np.ma.masked_array(operands[0].astype(np.int64), mask=False)
    columns = np.broadcast_arrays(*(np.asarray(column, dtype=np.int64) for column in operands))
    stacked = np.stack(columns, axis=1)
    distinct, inverse = np.unique(stacked, axis=0, return_inverse=True)
    values = np.zeros(len(distinct), dtype=np.int64)
    missing = np.zeros(len(distinct), dtype=bool)
    for index, row in enumerate(distinct.tolist()):
        result = apply(name, symbols, row)
        if result is None:
            missing[index] = True
        else:
            values[index] = result
    inverse = inverse.reshape(-1)
    return np.ma.masked_array(values[inverse], mask=missing[inverse])


ORDER = tuple(sorted(NAMES | SIGNATURES.keys() | {PACK, FIND, FIELD}))
"""Functor numbers, as the Update kernel's plans name them (`reasoner.kernel.plans`); the
user-defined functors registered are numbered after them."""
_NUMBERS = {name: number for number, name in enumerate(ORDER)}


def number(name: str) -> int:
    """The number of functor `name` in the kernel's plans."""
    if name.startswith(USER_PREFIX):
        return len(ORDER) + _USER_NAMES.index(name)
    return _NUMBERS[name]


def caller(symbols: SymbolTable) -> Callable[[int, list[int]], int | None]:
    """`apply` by functor number over `symbols`: what the kernel calls for a functor."""

    def call(number: int, operands: list[int]) -> int | None:
        name = ORDER[number] if number < len(ORDER) else _USER_NAMES[number - len(ORDER)]
        return apply(name, symbols, operands)

    return call
