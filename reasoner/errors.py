"""Diagnostics shared by every stage of the engine and by the service.

A program error is never a bare string: it has a stable machine-readable `code` (clients and
the HTTP API rely on it), a human message, and a source location. All errors found in one
program are collected and reported together, sorted by location, so a user fixes a whole file
in one round trip instead of one error per run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A source range; lines and columns are 1-based, `end_*` is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def through(self, last: Span) -> Span:
        """The span from this one's start to the end of `last`."""
        return Span(self.line, self.column, last.end_line, last.end_column)


# The stable codes; the service maps each to a 4xx response.
PARSE_ERROR = "parse_error"
UNSAFE_RULE = "unsafe_rule"
ARITY_MISMATCH = "arity_mismatch"
TYPE_MISMATCH = "type_mismatch"
CYCLIC_NEGATION = "cyclic_negation"
CYCLIC_AGGREGATION = "cyclic_aggregation"
"""An aggregate over a relation that depends on the aggregate's own result."""
UNSUPPORTED_FEATURE = "unsupported_feature"
"""A Soufflé feature the engine cannot run exactly (it is named in the message)."""
UNKNOWN_RELATION = "unknown_relation"
UNKNOWN_TYPE = "unknown_type"
"""A column or `.type` of a type that is neither built in nor declared (or not supported)."""
UNKNOWN_ATTRIBUTE = "unknown_attribute"
"""A `choice-domain` key that names no attribute of its relation."""
UNKNOWN_FUNCTOR = "unknown_functor"
"""A call of a user-defined functor (`@f(...)`) that no `.functor` declares, or a declared
functor that none of the implementations loaded provides (`reasoner.values.functor_library`)."""
FUNCTOR_ERROR = "functor_error"
"""A user-defined functor that raised, or returned no value of its declared type, while a fact
was folded or an epoch evaluated (the epoch changes nothing)."""
UNSUPPORTED_PRAGMA = "unsupported_pragma"
"""A `.pragma` that would change what the program means, or that Soufflé does not know."""
IGNORED_PRAGMA = "ignored_pragma"
"""A warning: a `.pragma` that only tunes Soufflé's own evaluation, which has no effect here."""

EXPRESSION_TOO_DEEP = "expression_too_deep"
"""An expression nested past the parser's bound (`reasoner.syntax.parser.MAX_NESTING`)."""
RULE_TOO_LARGE = "rule_too_large"
"""A rule with more body literals or tokens than the parser allows."""

PROGRAM_FACT = "program_fact"
"""A warning: a retracted fact that the program text asserts stays (it is part of the
program, not data)."""

PREPROCESSOR_ERROR = "preprocessor_error"
"""The C preprocessor refused the program: an `#include` of a file it may not or cannot read,
`#error`, a malformed directive."""

UNKNOWN_RULE = "unknown_rule"
"""A rule id to remove that the program does not have."""
RULES_UNAVAILABLE = "rules_unavailable"
"""Rules listed or changed on a materialization built without its program text."""

PROGRAM_ERROR_CODES = (
    PARSE_ERROR,
    UNSAFE_RULE,
    ARITY_MISMATCH,
    TYPE_MISMATCH,
    CYCLIC_NEGATION,
    CYCLIC_AGGREGATION,
    UNSUPPORTED_FEATURE,
    UNKNOWN_RELATION,
    UNKNOWN_TYPE,
    UNKNOWN_ATTRIBUTE,
    UNKNOWN_FUNCTOR,
    UNSUPPORTED_PRAGMA,
)
LIMIT_ERROR_CODES = (EXPRESSION_TOO_DEEP, RULE_TOO_LARGE)
"""Codes of the parser's size limits: found before any analysis, like `parse_error`."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    filename: str = "<input>"
    source_line: str = ""

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def format(self, max_width: int | None = None) -> str:
        """`file:line:col: code: message`, then the source line and a caret under the span.

        With `max_width`, a longer source line is cut to that many characters around the span's
        start (`…` marks each cut) and the caret to what is shown: the service answers with
        this, so that one 200 KB line is not echoed whole; the command line shows whole lines.
        """
        head = f"{self.filename}:{self.span.line}:{self.span.column}: {self.code}: {self.message}"
        line = self.source_line
        if not line:
            return head
        start = self.span.column - 1
        if self.span.end_line == self.span.line:
            end = max(start + 1, self.span.end_column - 1)
        else:
            end = max(start + 1, len(line))
        if max_width is not None and len(line) > max_width:
            low = max(0, min(start - max_width // 2, len(line) - max_width))
            high = low + max_width
            marked = "…" if low else ""
            line = marked + line[low:high] + ("…" if high < len(line) else "")
            start += len(marked) - low
            end = min(end + len(marked) - low, len(line))
        caret = " " * start + "^" * max(1, end - start)
        return f"{head}\n{line}\n{caret}"


@dataclass(frozen=True, slots=True)
class Notice:
    """A warning about a write: it was applied, but not everything happened as one may expect
    (a body relation defined nowhere is empty; a retracted fact the program asserts stays)."""

    code: str
    message: str
    line: int | None = None
    column: int | None = None
    filename: str | None = None

    @classmethod
    def of(cls, diagnostic: Diagnostic) -> Notice:
        return cls(
            diagnostic.code,
            diagnostic.message,
            diagnostic.line,
            diagnostic.column,
            diagnostic.filename,
        )


class ProgramError(Exception):
    """One or more diagnostics about a program; `diagnostics` is sorted by location."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        ordered = sorted(diagnostics, key=lambda d: (d.span.line, d.span.column, d.code))
        if not ordered:
            raise ValueError("ProgramError needs at least one diagnostic")
        self.diagnostics: tuple[Diagnostic, ...] = tuple(ordered)
        super().__init__(self.format())

    @property
    def code(self) -> str:
        """The code of the first error, for callers that report a single code."""
        return self.diagnostics[0].code

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)


class InputDataError(Exception):
    """A malformed input row (wrong column count, a non-integer in a number column...)."""

    def __init__(self, message: str, filename: str = "<input>", line: int = 0) -> None:
        self.filename = filename
        self.line = line
        self.message = message
        where = f"{filename}:{line}: " if line else f"{filename}: "
        super().__init__(f"{where}{message}")


class InvalidDelta(Exception):
    """A delta that cannot be applied (unknown relation, wrong arity or value type); nothing
    of it was applied. `code` is one of the stable codes above."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class FloatRefused(InvalidDelta):
    """A float computation whose result Soufflé leaves to the order it meets rows in
    (`reasoner.values.floats`): the epoch that needs it changes nothing."""

    def __init__(self, message: str) -> None:
        super().__init__(UNSUPPORTED_FEATURE, message)
