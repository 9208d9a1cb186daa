"""Checks of the rule texts a write sends, made before the engine parses them.

Two things are refused here, over HTTP only (the command line takes both):

- A directive parameter that names a file, a database or an I/O channel. The service reads
  its inputs from requests and writes its outputs to answers; it keeps `.input`/`.output`
  lines as written and honours none of their parameters. A parameter that could make some
  later code path open `/etc/passwd`, write a file or attach the service's own database
  (`IO=sqlite, dbname=...`) is refused with `file_parameter_refused`, naming it with its line
  and column. Only the parameters that shape text, `delimiter` and `headers`, pass: everything
  else (`filename`, `IO` of any value, `dbname`, `fact-dir`, `output-dir`, a name Soufflé
  may add later) is refused, an allow-list rather than a deny-list.
- A body holding more rule clauses than the program may hold rules (`too_many_rules`),
  counted by one regular-expression pass that stops at the limit + 1: a body of 20,000 rules
  is refused in milliseconds instead of after seconds of parsing. Every clause outside a
  component is at least one rule (disjunctions and several heads give more), so the count
  is a lower bound of what the engine counts; it differs only for a body that repeats its
  own clauses past the limit, which the engine would count once each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoner import IDENT, RULES_FILENAME, Token, tokenize
from reasoner.errors import Diagnostic, ProgramError, Span
from service.problems import TOO_MANY_RULES, Problem, program_error_problem

FILE_PARAMETER_REFUSED = "file_parameter_refused"
HARMLESS_PARAMETERS = frozenset({"delimiter", "headers"})
"""Directive parameters accepted over HTTP: they only say how text is laid out."""
_IO_KEYWORDS = frozenset({"input", "output", "printsize"})
_MAYBE_IO = re.compile(r"\.(?:input|output|printsize)\b")

_CLAUSE_SCAN = re.compile(
    r"""
      "(?:[^"\\\n]|\\[^\n])*"      # a string literal: skipped
    | //[^\n]*                      # a line comment: skipped
    | /\*.*?(?:\*/|\Z)              # a block comment (unterminated: the rest): skipped
    | (?P<brace>[{}])               # a component's body (or an ADT's fields)
    | (?P<clause>:-)                # a rule clause
    """,
    re.VERBOSE | re.DOTALL,
)


def text_names(count: int) -> list[str]:
    """How diagnostics name the added texts of one write (as `ProgramText.changed` does)."""
    return [RULES_FILENAME] if count == 1 else [f"<rules {n + 1}>" for n in range(count)]


def check_rule_texts(texts: Sequence[str], max_rules: int) -> None:
    """Refuse the texts (a `Problem`) if they hold more clauses than `max_rules`, or a
    directive parameter that is not harmless (see the module docstring)."""
    clauses = 0
    for text in texts:
        clauses += _clauses(text, max_rules + 1 - clauses)
        if clauses > max_rules:
            raise Problem(
                400,
                TOO_MANY_RULES,
                f"the rules sent hold more than {max_rules} rules, the limit: nothing changed",
                limit=max_rules,
            )
    for name, text in zip(text_names(len(texts)), texts, strict=True):
        if _MAYBE_IO.search(text) is None:
            continue  # no directive can have parameters: not worth lexing
        for key, directive in _io_parameters(tokenize(text).tokens):
            if key.text in HARMLESS_PARAMETERS:
                continue
            lines = text.splitlines() or [""]
            diagnostic = Diagnostic(
                FILE_PARAMETER_REFUSED,
                f"`.{directive}` parameter `{key.text}` may name a file, a database or an I/O "
                "channel, which the service never opens: over HTTP a directive takes only "
                f"{' and '.join(sorted(HARMLESS_PARAMETERS))} (the command line takes "
                f"`{key.text}`)",
                Span(key.line, key.column, key.line, key.end_column),
                name,
                lines[key.line - 1] if key.line <= len(lines) else "",
            )
            problem = program_error_problem(ProgramError([diagnostic]))
            problem.extra["parameter"] = key.text
            raise problem


def _clauses(text: str, most: int) -> int:
    """Rule clauses outside braces (so outside components, whose rules count per instance),
    counted up to `most`."""
    found = depth = 0
    for match in _CLAUSE_SCAN.finditer(text):
        brace = match.group("brace")
        if brace is not None:
            depth = depth + 1 if brace == "{" else max(depth - 1, 0)
        elif match.group("clause") is not None and depth == 0:
            found += 1
            if found >= most:
                break
    return found


def _io_parameters(tokens: list[Token]) -> list[tuple[Token, str]]:
    """The parameter names of every `.input`/`.output`/`.printsize` directive, with the
    directive's keyword: `.input a(k=v, ...), b(k=v)` as the parser reads it (a `.` glued to
    the keyword, then relation names, each with an optional parenthesized list)."""
    found: list[tuple[Token, str]] = []
    for index, dot in enumerate(tokens[:-1]):
        keyword = tokens[index + 1]
        if (
            dot.kind != "."
            or keyword.kind != IDENT
            or keyword.text not in _IO_KEYWORDS
            or keyword.offset != dot.end_offset
        ):
            continue
        depth = 0
        for position in range(index + 2, len(tokens) - 1):
            token = tokens[position]
            if token.kind == "(":
                depth += 1
            elif token.kind == ")":
                depth -= 1
            elif depth == 0 and token.kind not in (IDENT, ","):
                break  # the directive's end (the next statement starts)
            elif depth == 1 and token.kind == IDENT and tokens[position + 1].kind == "=":
                found.append((token, keyword.text))
            if depth < 0:
                break
    return found
