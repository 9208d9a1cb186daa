"""Soufflé's `match`: C++ `std::regex` (ECMAScript grammar, as libstdc++ reads it) with
`std::regex_match`, translated into an exactly equivalent Python `re` pattern over bytes.

Soufflé compares the UTF-8 bytes of its strings, so `.` is one byte, `é+` repeats é's last
byte, and a bracket class holds bytes; Python's `re` over `str` would see characters, and its
grammar differs in many places (`[[:digit:]]`, `\\A`, `a**`, `[]`, `(?<=...)`, `$` before a
final newline...). Rather than patching Python's reading of the text, this module parses the
pattern as libstdc++ does and writes a Python bytes pattern in which every byte is an escape
and every class an explicit set, so nothing is left to Python's own reading. The table of
Soufflé's real answers in `tests/golden/regex/table.json` is what it is checked against.

A pattern libstdc++ rejects is `InvalidPattern` (Soufflé then makes `match` and `!match` both
false); a construct this module cannot translate exactly is `UnsupportedPattern`, named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

STATE_BUDGET = 20_000
"""libstdc++ unrolls counted repeats into its automaton and rejects a pattern past 100,000
states; a pattern this module's (generous) estimate puts above this budget is refused rather
than guessed at."""


class InvalidPattern(ValueError):
    """libstdc++ throws `regex_error` for this pattern."""


class UnsupportedPattern(ValueError):
    """A valid pattern with a construct that is not translated (its name is the message)."""


def _span(first: str, last: str) -> frozenset[int]:
    return frozenset(range(ord(first), ord(last) + 1))


_DIGIT = _span("0", "9")
_UPPER = _span("A", "Z")
_LOWER = _span("a", "z")
_ALPHA = _UPPER | _LOWER
_ALNUM = _ALPHA | _DIGIT
_SPACE = frozenset(b" \t\n\v\f\r")
_GRAPH = frozenset(range(0x21, 0x7F))
_WORD = _ALNUM | {ord("_")}
_CLASSES: dict[str, frozenset[int]] = {
    "alnum": _ALNUM,
    "alpha": _ALPHA,
    "blank": frozenset(b" \t"),
    "cntrl": frozenset(range(0x20)) | {0x7F},
    "digit": _DIGIT,
    "d": _DIGIT,
    "graph": _GRAPH,
    "lower": _LOWER,
    "print": _GRAPH | {0x20},
    "punct": _GRAPH - _ALNUM,
    "space": _SPACE,
    "s": _SPACE,
    "upper": _UPPER,
    "w": _WORD,
    "xdigit": _DIGIT | _span("a", "f") | _span("A", "F"),
}
"""The C locale's `ctype` classes, by the names `regex_traits::lookup_classname` knows (it
lowercases the name first)."""
_ESCAPE_CLASSES = {"d": _DIGIT, "s": _SPACE, "w": _WORD}
_ALL = frozenset(range(256))
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B, "0": 0x00}
"""libstdc++'s ECMAScript escape table (`\\b`, backspace, only inside a bracket)."""
_QUANTIFIERS = b"*+?{"


def _signed(byte: int) -> int:
    """`char` is signed here: libstdc++ orders a bracket range's ends as signed chars."""
    return byte - 256 if byte >= 0x80 else byte


def _class_text(members: frozenset[int]) -> str:
    if not members:
        return "(?!)"
    ordered = sorted(members)
    parts: list[str] = []
    start = previous = ordered[0]
    for byte in [*ordered[1:], -1]:
        if byte == previous + 1:
            previous = byte
            continue
        parts.append(
            f"\\x{start:02x}" if start == previous else f"\\x{start:02x}-\\x{previous:02x}"
        )
        start = previous = byte
    return "[" + "".join(parts) + "]"


@dataclass
class _Parser:
    """A recursive descent over the pattern's bytes, following libstdc++'s `_Compiler`."""

    data: bytes
    pos: int = 0
    groups: int = 0
    open_groups: list[int] = field(default_factory=list)

    def peek(self, offset: int = 0) -> int | None:
        index = self.pos + offset
        return self.data[index] if index < len(self.data) else None

    def take(self) -> int:
        byte = self.peek()
        if byte is None:
            raise InvalidPattern("the pattern ends too early")
        self.pos += 1
        return byte

    def disjunction(self) -> tuple[str, int]:
        text, size = self.alternative()
        alternatives = [text]
        while self.peek() == ord("|"):
            self.pos += 1
            more, more_size = self.alternative()
            alternatives.append(more)
            size += more_size + 2
        return "|".join(alternatives), size

    def alternative(self) -> tuple[str, int]:
        parts: list[str] = []
        size = 0
        while (term := self.term()) is not None:
            parts.append(term[0])
            size += term[1]
        return "".join(parts), size

    def term(self) -> tuple[str, int] | None:
        byte = self.peek()
        if byte is None or byte in b"|)":
            return None
        assertion = self.assertion()
        if assertion is not None:
            if self.quantifier_follows():
                raise InvalidPattern("an assertion cannot be repeated")
            return assertion
        text, size = self.atom()
        while self.quantifier_follows():
            text, size = self.quantified(text, size)
        return text, size

    def quantifier_follows(self) -> bool:
        byte = self.peek()
        return byte is not None and byte in _QUANTIFIERS

    def assertion(self) -> tuple[str, int] | None:
        byte = self.peek()
        if byte == ord("^"):
            self.pos += 1
            return r"\A", 1
        if byte == ord("$"):
            self.pos += 1
            return r"\Z", 1
        if byte == ord("\\") and self.peek(1) in (ord("b"), ord("B")):
            self.pos += 2
            return "\\" + chr(self.data[self.pos - 1]), 1
        if byte == ord("(") and self.peek(1) == ord("?") and self.peek(2) in (ord("="), ord("!")):
            kind = chr(self.data[self.pos + 2])
            self.pos += 3
            inner, size = self.disjunction()
            self.close()
            return f"(?{kind}{inner})", size + 2
        return None

    def close(self) -> None:
        if self.peek() != ord(")"):
            raise InvalidPattern("a `(` is not closed")
        self.pos += 1

    def atom(self) -> tuple[str, int]:
        byte = self.take()
        if byte == ord("."):
            return _class_text(_ALL - {0x0A, 0x0D}), 1
        if byte == ord("("):
            return self.group()
        if byte == ord("["):
            return _class_text(self.bracket()), 1
        if byte == ord("\\"):
            return self.escape()
        if byte in b"*+?{":
            raise InvalidPattern("nothing to repeat")
        return f"\\x{byte:02x}", 1

    def group(self) -> tuple[str, int]:
        if self.peek() == ord("?"):
            self.pos += 1
            if self.peek() != ord(":"):
                raise InvalidPattern("`(?` other than `(?:`, `(?=` or `(?!`")
            self.pos += 1
            inner, size = self.disjunction()
            self.close()
            return f"(?:{inner})", size
        self.groups += 1
        number = self.groups
        self.open_groups.append(number)
        inner, size = self.disjunction()
        self.close()
        self.open_groups.pop()
        return f"(?P<g{number}>{inner})", size + 2

    def escape(self) -> tuple[str, int]:
        byte = self.take()
        letter = chr(byte)
        if letter in "123456789":
            digits = letter
            while self.peek() is not None and chr(self.data[self.pos]).isdigit():
                digits += chr(self.take())
            number = int(digits)
            if number > self.groups or number in self.open_groups:
                raise InvalidPattern(f"back-reference \\{number} to no closed group")
            return f"(?P=g{number})", 1
        if letter.lower() in _ESCAPE_CLASSES:
            members = _ESCAPE_CLASSES[letter.lower()]
            return _class_text(_ALL - members if letter.isupper() else members), 1
        return f"\\x{self.character(byte):02x}", 1

    def character(self, byte: int) -> int:
        """The byte an escape (past its `\\`) stands for, in or out of a bracket."""
        letter = chr(byte)
        if letter in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[letter]
        if letter == "c":  # libstdc++ takes the next character as it is
            return self.take()
        if letter in "xu":
            digits = bytes(self.take() for _ in range(2 if letter == "x" else 4))
            if not all(chr(d) in "0123456789abcdefABCDEF" for d in digits):
                raise InvalidPattern(f"\\{letter} needs hexadecimal digits")
            return int(digits, 16) & 0xFF  # a `char`: \u keeps its low byte
        return byte

    def quantified(self, text: str, size: int) -> tuple[str, int]:
        byte = self.take()
        if byte == ord("{"):
            low, high = self.counts()
            suffix = f"{{{low}}}" if low == high else f"{{{low},{'' if high is None else high}}}"
            size = size * max(low, 1 if high is None else high) * 2 + 2
        else:
            suffix = chr(byte)
            size = size * 2 + 2
        if self.peek() == ord("?"):
            self.pos += 1
            suffix += "?"
        if size > STATE_BUDGET:
            raise UnsupportedPattern("a repetition this large (std::regex's state limit)")
        return f"(?:{text}){suffix}", size

    def counts(self) -> tuple[int, int | None]:
        low = self.number()
        if low is None:
            raise InvalidPattern("`{` needs a count")
        high: int | None = low
        if self.peek() == ord(","):
            self.pos += 1
            high = self.number()
        if self.peek() != ord("}"):
            raise InvalidPattern("a `{` count is not closed")
        self.pos += 1
        if high is not None and high < low:
            raise InvalidPattern("a `{n,m}` count with m below n")
        return low, high

    def number(self) -> int | None:
        start = self.pos
        while self.peek() is not None and ord("0") <= self.data[self.pos] <= ord("9"):
            self.pos += 1
        if self.pos == start:
            return None
        if self.pos - start > 9:
            raise UnsupportedPattern("a repetition this large (std::regex's state limit)")
        return int(self.data[start : self.pos])

    def bracket(self) -> frozenset[int]:
        """`[...]` as libstdc++'s `_M_expression_term` reads it: the set of bytes it matches.
        `last` is the pending single byte (a possible range start), or a class marker."""
        negated = self.peek() == ord("^")
        if negated:
            self.pos += 1
        members: set[int] = set()
        last: int | str | None = None  # a byte, "class", or nothing
        first = True
        while True:
            byte = self.take()
            if byte == ord("]"):
                break
            if byte == ord("-"):
                if first:
                    last = byte
                elif self.peek() == ord("]"):
                    self.pos += 1
                    if isinstance(last, int):
                        members.add(last)
                    members.add(byte)
                    last = None
                    break
                elif last == "class":
                    raise InvalidPattern("a range cannot start at a class")
                elif isinstance(last, int):
                    end = self.range_end()
                    if _signed(last) > _signed(end):
                        raise InvalidPattern("a range whose end is below its start")
                    members.update(b for b in _ALL if _signed(last) <= _signed(b) <= _signed(end))
                    last = None
                else:
                    last = byte
                first = False
                continue
            first = False
            item = self.bracket_item(byte)
            if isinstance(last, int):
                members.add(last)
            if isinstance(item, frozenset):
                members.update(item)
                last = "class"
            else:
                last = item
        if isinstance(last, int):
            members.add(last)
        return _ALL - members if negated else frozenset(members)

    def range_end(self) -> int:
        byte = self.take()
        if byte == ord("-"):
            return byte
        item = self.bracket_item(byte)
        if isinstance(item, frozenset):
            raise InvalidPattern("a range cannot end at a class")
        return item

    def bracket_item(self, byte: int) -> int | frozenset[int]:
        """One byte or one class of a bracket, from its first byte (not `]` nor `-`)."""
        if byte == ord("]"):
            raise InvalidPattern("a range cannot end at `]`")
        if byte == ord("[") and self.peek() in (ord(":"), ord("."), ord("=")):
            kind = chr(self.take())
            end = self.data.find(f"{kind}]".encode(), self.pos)
            if end < 0:
                raise InvalidPattern(f"`[{kind}` is not closed")
            name = self.data[self.pos : end].decode(errors="replace")
            self.pos = end + 2
            if kind != ":":
                raise UnsupportedPattern(
                    "collating elements `[.x.]` and equivalence classes `[=x=]` in a bracket"
                )
            members = _CLASSES.get(name.lower())
            if members is None:
                raise InvalidPattern(f"unknown character class `[:{name}:]`")
            return members
        if byte != ord("\\"):
            return byte
        escaped = self.take()
        letter = chr(escaped)
        if letter == "b":
            return 0x08
        if letter.lower() in _ESCAPE_CLASSES:
            members = _ESCAPE_CLASSES[letter.lower()]
            return _ALL - members if letter.isupper() else members
        if letter == "B" or letter in "123456789":
            raise InvalidPattern(f"`\\{letter}` in a bracket")
        return self.character(escaped)


def translate(pattern: str) -> str:
    """The Python bytes pattern (as text of escapes) equivalent to `pattern` under
    `std::regex_match`; raises `InvalidPattern` or `UnsupportedPattern`."""
    parser = _Parser(pattern.encode())
    try:
        text, size = parser.disjunction()
    except RecursionError:
        raise UnsupportedPattern("groups nested this deep") from None
    if parser.pos != len(parser.data):
        raise InvalidPattern("an unmatched `)`")
    if size > STATE_BUDGET:
        raise UnsupportedPattern("a repetition this large (std::regex's state limit)")
    return text


@lru_cache(maxsize=256)
def compiled(pattern: str) -> re.Pattern[bytes] | None:
    """`pattern` compiled for `fullmatch` over UTF-8 bytes, None when libstdc++ rejects it;
    raises `UnsupportedPattern`."""
    try:
        text = translate(pattern)
    except InvalidPattern:
        return None
    try:
        return re.compile(text.encode("ascii"))
    except (re.error, OverflowError, RecursionError) as error:  # a limit of Python's engine
        raise UnsupportedPattern(f"a pattern Python's re cannot run ({error})") from None


def unsupported(pattern: str) -> str | None:
    """The untranslated construct `pattern` uses, if any (for a refusal before running)."""
    try:
        compiled(pattern)
    except UnsupportedPattern as error:
        return str(error)
    return None
