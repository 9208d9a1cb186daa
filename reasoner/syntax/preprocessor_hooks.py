"""pcpp, the C preprocessor of `reasoner.syntax.preprocess`, with its hooks: files read only
where allowed, errors collected as diagnostics, line markers in the output. A module of its
own so that pcpp is imported only by a program that needs preprocessing (a few milliseconds of
every start otherwise).

Layer: `syntax`; used by `reasoner.syntax.preprocess` alone.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reasoner.errors import PREPROCESSOR_ERROR, Diagnostic, Span

MAX_INCLUDE_DEPTH = 40
"""Nested `#include`s past which the program is refused (a file including itself)."""


def _preprocessor_base() -> type:
    """`pcpp.Preprocessor`, without trigraphs: `gcc -E` (what Soufflé runs here) leaves `??=`
    in a string as it is, and so does mcpp by default."""
    import pcpp.preprocessor
    from pcpp import Preprocessor

    pcpp.preprocessor.trigraph = lambda text: text
    return Preprocessor


class HookedPreprocessor(_preprocessor_base()):  # type: ignore[misc]
    """pcpp with its hooks set: files read only where allowed, errors collected as
    diagnostics, line markers in the output."""

    def __init__(self, files: Mapping[str, str] | None) -> None:
        super().__init__()
        self.line_directive = "#line"
        self.compress = 0
        self.files = files
        self.sources: dict[str, str] = {}
        self.errors: list[Diagnostic] = []

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.return_code += 1
        lines = self.sources.get(file, "").split("\n")
        source_line = lines[line - 1] if 0 < line <= len(lines) else ""
        span = Span(line, 1, line, max(2, len(source_line) + 1))
        self.errors.append(Diagnostic(PREPROCESSOR_ERROR, msg, span, file, source_line))

    def on_file_open(self, is_system_include: bool, includepath: str) -> Any:
        if self.include_depth >= MAX_INCLUDE_DEPTH:
            raise OSError(f"more than {MAX_INCLUDE_DEPTH} nested #include")
        if self.files is not None:
            # pcpp names an include by its absolute path under the working directory: what
            # was posted is named relative to the program, so a path that leaves it (or is
            # absolute) names nothing posted.
            name = os.path.relpath(includepath)
            if name not in self.files:
                raise FileNotFoundError(includepath)
            text = self.files[name]
        else:
            text = Path(includepath).read_text(encoding="utf-8-sig")
        self.sources[os.path.abspath(includepath)] = text
        return io.StringIO(text)

    def on_include_not_found(
        self, is_malformed: bool, is_system: bool, curdir: str, includepath: str
    ) -> Any:
        if self.files is None or is_malformed:
            return super().on_include_not_found(is_malformed, is_system, curdir, includepath)
        from pcpp.parser import Action, OutputDirective

        posted = ", ".join(sorted(self.files)) or "none"
        self.on_error(
            self.lastdirective.source,
            self.lastdirective.lineno,
            f'`#include "{includepath}"` names no file posted with the program (posted: '
            f"{posted}): a posted program never reads the server's files",
        )
        raise OutputDirective(Action.IgnoreAndPassThrough)

    def on_directive_unknown(
        self, directive: Any, toks: Any, ifpassthru: bool, precedingtoks: Any
    ) -> bool | None:
        if directive.value == "error":
            message = "".join(tok.value for tok in toks).strip()
            self.on_error(directive.source, directive.lineno, f"#error {message}".strip())
            return True
        if directive.value == "warning":
            return True
        self.on_error(
            directive.source,
            directive.lineno,
            f"unknown preprocessor directive `#{directive.value}`",
        )
        return True
