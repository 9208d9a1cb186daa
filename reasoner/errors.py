"""Diagnostics shared by every stage of the engine and by the service.

A program error is never a bare string: it has a stable machine-readable `code` (clients and
the HTTP API rely on it), a human message, and a source location. All errors found in one
program are collected and reported together, sorted by location, so a user fixes a whole file
in one round trip instead of one error per run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reasoner.syntax.ast import Span

# The stable codes; the service maps each to a 4xx response.
PARSE_ERROR = "parse_error"
UNSAFE_RULE = "unsafe_rule"
ARITY_MISMATCH = "arity_mismatch"
TYPE_MISMATCH = "type_mismatch"
CYCLIC_NEGATION = "cyclic_negation"
UNKNOWN_RELATION = "unknown_relation"

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
    UNKNOWN_RELATION,
)


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

    def format(self) -> str:
        """`file:line:col: code: message`, then the source line and a caret under the span."""
        head = f"{self.filename}:{self.span.line}:{self.span.column}: {self.code}: {self.message}"
        if not self.source_line:
            return head
        if self.span.end_line == self.span.line:
            width = max(1, self.span.end_column - self.span.column)
        else:
            width = max(1, len(self.source_line) - self.span.column + 1)
        caret = " " * (self.span.column - 1) + "^" * width
        return f"{head}\n{self.source_line}\n{caret}"


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
