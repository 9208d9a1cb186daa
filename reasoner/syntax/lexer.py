"""Tokenizer for the Datalog dialect.

One compiled master regular expression with a named group per token class does all the work:
`re.finditer` scans the whole text in C, and Python only looks at each match once. This keeps
parsing of the benchmark programs far below the service's latency budget.

The lexer never raises. Malformed input becomes an `error` token carrying a message; the parser
reports it when it reaches that token and then recovers at the next clause, so one bad character
does not hide the errors that follow. The one exception is an unterminated block comment, which
swallows the rest of the file: it is returned as a lexer problem and the token stream just ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reasoner.errors import Span

_DIRECTIVES = "decl|input|output|printsize|type|pragma|comp|init|override|number_type|symbol_type"
IDENTIFIER = re.compile(
    rf"[A-Za-z_][A-Za-z0-9_]*(?:\.(?!(?:{_DIRECTIVES}|functor|limitsize)\b)[A-Za-z_][A-Za-z0-9_]*)*"
)
"""A name: of a relation, a variable or a type; `g.edge` names a relation of an instance of a
component (a `.` glued to names on both sides: `p(x).q(y).` still ends clauses, and a directive
glued to a name, `.input a.output a`, is still a directive)."""

_MASTER = re.compile(
    rf"""
    (?P<ws>[ \t\r\f\v\ufeff]+)
  | (?P<nl>\n)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<badcomment>/\*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*")
  | (?P<badstring>"(?:[^"\\\n]|\\[^\n])*)
  | (?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?)
  | (?P<number>(?:0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)u?)
  | (?P<udf>@[A-Za-z_][A-Za-z0-9_]*)
  | (?P<constructor>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>{IDENTIFIER.pattern})
  | (?P<op>:-|<:|!=|<=|>=|[(),.;:!=<>+\-*/%|^\[\]{{}}])
  | (?P<error>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}

IDENT = "ident"
NUMBER = "number"
STRING = "string"
CONSTRUCTOR = "constructor"
"""`$Name`: a branch of an algebraic data type; `value` is the name."""
USER_FUNCTOR = "user_functor"
"""`@name`: a call of a user-defined functor (`.functor name(...)`); `value` is the name."""
ERROR = "error"
EOF = "eof"


@dataclass(slots=True)
class Token:
    """One token. `kind` is `ident`, `number`, `string`, `error`, `eof` or the operator itself
    (`":-"`, `"("`, `"."`...), so the parser can compare kinds without a second lookup table.

    `value` is the decoded content of a string literal, a constructor's name, or the message of
    an `error` token.
    """

    kind: str
    text: str
    offset: int
    line: int
    column: int
    value: str = ""

    @property
    def end_offset(self) -> int:
        return self.offset + len(self.text)

    @property
    def end_column(self) -> int:
        return self.column + len(self.text)

    @property
    def span(self) -> Span:
        return Span(self.line, self.column, self.line, self.column + len(self.text))


@dataclass(slots=True)
class LexResult:
    tokens: list[Token]
    """Always ends with one `eof` token."""
    problems: list[tuple[str, Span]]
    """Errors that are not attached to a token (an unterminated block comment)."""


def _decode_string(body: str) -> tuple[str, str | None]:
    """Decode the escapes of a string literal's body; returns (value, error message or None)."""
    if "\\" not in body:
        return body, None
    bad: list[str] = []

    def replace(match: re.Match[str]) -> str:
        char = match.group(1)
        decoded = _ESCAPES.get(char)
        if decoded is None:
            bad.append(char)
            return char
        return decoded

    value = _ESCAPE.sub(replace, body)
    if bad:
        return value, f"invalid escape sequence `\\{bad[0]}` in string literal"
    return value, None


def tokenize(text: str) -> LexResult:  # noqa: C901
    """Split `text` into tokens, tracking 1-based line and column of each."""
    tokens: list[Token] = []
    problems: list[tuple[str, Span]] = []
    append = tokens.append
    line = 1
    line_start = 0
    for match in _MASTER.finditer(text):
        kind = match.lastgroup
        if kind == "ws" or kind == "lcomment":
            continue
        start = match.start()
        if kind == "nl":
            line += 1
            line_start = start + 1
            continue
        if kind == "bcomment":
            chunk = match.group()
            newlines = chunk.count("\n")
            if newlines:
                line += newlines
                line_start = start + chunk.rfind("\n") + 1
            continue
        column = start - line_start + 1
        if kind == "badcomment":
            problems.append(("unterminated block comment", Span(line, column, line, column + 2)))
            break
        lexeme = match.group()
        if kind == "op":
            append(Token(lexeme, lexeme, start, line, column))
        elif kind in (IDENT, NUMBER):
            append(Token(kind, lexeme, start, line, column))
        elif kind == "float" and "e" not in lexeme.lower():
            append(Token(NUMBER, lexeme, start, line, column))
        elif kind == CONSTRUCTOR:
            append(Token(CONSTRUCTOR, lexeme, start, line, column, lexeme[1:]))
        elif kind == "udf":
            append(Token(USER_FUNCTOR, lexeme, start, line, column, lexeme[1:]))
        elif kind == STRING:
            value, error = _decode_string(lexeme[1:-1])
            if error is None:
                append(Token(STRING, lexeme, start, line, column, value))
            else:
                append(Token(ERROR, lexeme, start, line, column, error))
        elif kind == "badstring":
            append(Token(ERROR, lexeme, start, line, column, "unterminated string literal"))
        elif kind == "float":
            message = f"Soufflé's float literals have no exponent: `{lexeme}`"
            append(Token(ERROR, lexeme, start, line, column, message))
        else:
            message = f"unexpected character `{lexeme}`"
            append(Token(ERROR, lexeme, start, line, column, message))
    if tokens:
        last = tokens[-1]
        tokens.append(Token(EOF, "", last.end_offset, last.line, last.end_column))
    else:
        tokens.append(Token(EOF, "", 0, 1, 1))
    return LexResult(tokens, problems)
