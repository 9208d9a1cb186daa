"""Collects analysis diagnostics so that every check runs and all errors surface at once."""

from __future__ import annotations

from reasoner.errors import Diagnostic, ProgramError, Span


class Reporter:
    """Builds `Diagnostic`s with the offending source line filled in, and raises them together.

    Identical diagnostics are reported once: desugaring gives one rule per head and per
    disjunct, and those rules share literals, so a shared mistake would otherwise repeat.
    """

    def __init__(self, filename: str = "<input>", source: str = "") -> None:
        self.filename = filename
        self._lines = source.split("\n") if source else []
        self._diagnostics: dict[Diagnostic, None] = {}
        self._warnings: dict[Diagnostic, None] = {}

    def _diagnostic(self, code: str, message: str, span: Span) -> Diagnostic:
        line = ""
        if 0 < span.line <= len(self._lines):
            line = self._lines[span.line - 1].rstrip("\r")
        return Diagnostic(code, message, span, self.filename, line)

    def error(self, code: str, message: str, span: Span) -> None:
        self._diagnostics.setdefault(self._diagnostic(code, message, span), None)

    def warning(self, code: str, message: str, span: Span) -> None:
        """Something the program allows but its author may not mean (it is not refused)."""
        self._warnings.setdefault(self._diagnostic(code, message, span), None)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(sorted(self._warnings, key=lambda d: (d.span.line, d.span.column)))

    @property
    def has_errors(self) -> bool:
        return bool(self._diagnostics)

    def raise_if_errors(self) -> None:
        if self._diagnostics:
            raise ProgramError(self._diagnostics)
