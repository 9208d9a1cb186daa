"""The C preprocessor that Soufflé runs every program through: `#include`, `#define` with and
without arguments, `#if`/`#ifdef`/`#else`, `#undef`, `#error`.

Soufflé pipes a program through `mcpp` or `gcc -E` and predefines `RAM_DOMAIN_SIZE` (64 in the
64-bit build we follow). We use `pcpp`, a C99 preprocessor in pure Python: the same language,
no compiler on the machine, and control over every file it opens, so that a program posted
over HTTP can never name a file of the server (`files`).

A text is preprocessed only when it holds a directive (a line starting with `#`) or names a
macro that is defined without one (`RAM_DOMAIN_SIZE`, the command line's `-M`); any other
text is what the preprocessor would give back apart from its comments, and it is not copied.

Diagnostics point into the files as written: the preprocessor's output carries line markers
(`#line N "file"`), read here into the origin of every line (`Preprocessed.origins`), and
`remap` moves a diagnostic of the output to its file, line and source line. A column is exact
on every line that no macro changed.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reasoner.errors import Diagnostic, ProgramError, Span

RAM_DOMAIN_SIZE = 64
"""What Soufflé's 64-bit build defines `RAM_DOMAIN_SIZE` as."""
_DIRECTIVE = re.compile(r"^[ \t]*#", re.MULTILINE)
_LINE_MARKER = re.compile(r'#line (\d+)(?: "((?:[^"\\]|\\.)*)")?$')
_PREDEFINED = ("RAM_DOMAIN_SIZE", "__FILE__", "__LINE__")


@dataclass(frozen=True, slots=True)
class Preprocessed:
    """A program after the preprocessor, and where each of its lines came from."""

    text: str
    origins: tuple[tuple[str, int], ...] = ()
    """Per line of `text`, its file and line there; empty: `text` is the source itself."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """The text of every file read, by the name diagnostics give it."""

    def remap(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """`diagnostics` of `text`, moved to the files and lines they come from."""
        if not self.origins:
            return list(diagnostics)
        return [self._remapped(d) for d in diagnostics]

    def _remapped(self, diagnostic: Diagnostic) -> Diagnostic:
        span = diagnostic.span
        filename, line = self._origin(span.line)
        end_file, end_line = self._origin(span.end_line)
        if end_file != filename or end_line < line:
            end_line, end_column = line, span.column + 1
        else:
            end_column = span.end_column
        lines = self.sources.get(filename, "").split("\n")
        source_line = lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else ""
        return replace(
            diagnostic,
            span=Span(line, span.column, end_line, end_column),
            filename=filename,
            source_line=source_line,
        )

    def _origin(self, line: int) -> tuple[str, int]:
        return self.origins[min(max(line, 1), len(self.origins)) - 1]


def needs_preprocessing(text: str, macros: Mapping[str, str] | None = None) -> bool:
    """Whether the preprocessor could change `text` beyond its comments."""
    if _DIRECTIVE.search(text):
        return True
    return any(name in text for name in (*_PREDEFINED, *(macros or ())))


def parse_macros(definitions: Sequence[str]) -> dict[str, str]:
    """`-M` values as Soufflé reads them (space-separated `NAME` or `NAME=VALUE`, each a `-D`
    of the C preprocessor: a bare name is defined as 1)."""
    macros: dict[str, str] = {}
    for definition in definitions:
        for item in definition.split():
            name, _, value = item.partition("=")
            macros[name] = value if "=" in item else "1"
    return macros


def preprocess(
    text: str,
    filename: str,
    *,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    macros: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> Preprocessed:
    """`text` (the file `filename`) through the C preprocessor, or as it is when it needs none.

    `#include "f"` is looked up beside the including file, then in `include_dirs`; with
    `files`, only among those texts (by name), and the file system is never read (a program
    posted over HTTP: `files` is then what was posted with it). Raises `ProgramError`
    (`preprocessor_error`) at the directive for a missing file, `#error`, or a malformed
    directive."""
    if not needs_preprocessing(text, macros):
        return Preprocessed(text)
    from reasoner.syntax.preprocessor_hooks import HookedPreprocessor  # pcpp: only here

    preprocessor = HookedPreprocessor(files)
    preprocessor.define(f"RAM_DOMAIN_SIZE {RAM_DOMAIN_SIZE}")
    for name, value in (macros or {}).items():
        preprocessor.define(f"{name} {value}")
    for directory in include_dirs:
        preprocessor.add_path(os.fspath(directory))
    preprocessor.sources[filename] = text
    preprocessor.parse(text, filename)
    out = io.StringIO()
    preprocessor.write(out)
    if preprocessor.errors:
        raise ProgramError(preprocessor.errors)
    lines: list[str] = []
    origins: list[tuple[str, int]] = []
    current, number = filename, 1
    for line in out.getvalue().split("\n"):
        marker = _LINE_MARKER.match(line)
        if marker:
            number = int(marker.group(1))
            if marker.group(2) is not None:
                current = marker.group(2).replace('\\"', '"').replace("\\\\", "\\")
            continue
        lines.append(line)
        origins.append((current, number))
        number += 1
    sources = preprocessor.sources
    named = {name: sources.get(name, sources.get(os.path.abspath(name), "")) for name, _ in origins}
    return Preprocessed("\n".join(lines), tuple(origins), named)
