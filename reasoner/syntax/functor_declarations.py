"""Soufflé's `.functor` declarations: `.functor name(a: Type, ...): Type [stateful]`.

A parameter is written `name: Type` or as its type alone (`.functor f(number, symbol):
number`); `stateful` after the result type marks a functor Soufflé hands its symbol and record
tables (`reasoner.values.functor_library` says what it means here). The types are names as
written: the analysis resolves them (`reasoner.analysis.user_functors`).

Layer: `syntax`; used by the parser alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasoner.errors import Span
from reasoner.syntax.ast import Column, FunctorDeclaration
from reasoner.syntax.lexer import EOF, ERROR, IDENT, Token

STATEFUL = "stateful"


class DeclarationRefused(ValueError):
    """A `.functor` the parser reports (`parse_error`): the message, where, and the position
    of the token it stopped at (where the parser's recovery starts)."""

    def __init__(self, message: str, span: Span, position: int) -> None:
        super().__init__(message)
        self.span = span
        self.position = position


class _Cursor:
    def __init__(self, tokens: Sequence[Token], position: int) -> None:
        self.tokens = tokens
        self.position = position

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        if token.kind != EOF:
            self.position += 1
        return token

    def expect(self, kind: str, expected: str) -> Token:
        token = self.peek()
        if token.kind == kind:
            return self.advance()
        if token.kind == ERROR:
            raise DeclarationRefused(token.value, token.span, self.position)
        found = "end of input" if token.kind == EOF else f"`{token.text}`"
        raise DeclarationRefused(f"expected {expected}, found {found}", token.span, self.position)


def functor_declaration(
    tokens: Sequence[Token],
    position: int,
    dot: Token,
    declared: Sequence[FunctorDeclaration],
) -> tuple[FunctorDeclaration, int]:
    """The declaration whose name is at `position` (after `.functor`, whose `.` is `dot`), and
    the position after it. `declared`: the declarations before it, which it may not repeat
    (Soufflé refuses a functor defined twice)."""
    cursor = _Cursor(tokens, position)
    name = cursor.expect(IDENT, "a functor name after `.functor`")
    if "." in name.text:
        raise DeclarationRefused(
            f"a functor's name is one identifier, not `{name.text}`", name.span, cursor.position
        )
    for earlier in declared:
        if earlier.name == name.text:
            raise DeclarationRefused(
                f"functor `{name.text}` is declared twice (first at line {earlier.span.line})",
                name.span,
                cursor.position,
            )
    cursor.expect("(", f"`(` and the parameter types of `{name.text}`")
    params: list[Column] = []
    if cursor.peek().kind != ")":
        while True:
            params.append(_parameter(cursor))
            if cursor.peek().kind != ",":
                break
            cursor.advance()
    cursor.expect(")", "`,` or `)` after a parameter type")
    cursor.expect(":", f"`:` and the result type of `{name.text}`")
    result = cursor.expect(IDENT, "a result type (number, unsigned, float, symbol or a .type name)")
    last = result
    following = cursor.peek()
    stateful = following.kind == IDENT and following.text == STATEFUL
    if stateful and cursor.peek(1).kind != "(":  # `stateful(x) :- ...` is a rule
        last = cursor.advance()
    else:
        stateful = False
    declaration = FunctorDeclaration(
        name.text,
        tuple(params),
        Column("", result.text, result.span),
        stateful,
        dot.span.through(last.span),
    )
    return declaration, cursor.position


def _parameter(cursor: _Cursor) -> Column:
    """`name: Type` or `Type`."""
    first = cursor.expect(IDENT, "a parameter type (`Type` or `name: Type`)")
    if cursor.peek().kind != ":":
        return Column("", first.text, first.span)
    cursor.advance()
    type_token = cursor.expect(IDENT, "a type after the parameter's name")
    return Column(first.text, type_token.text, type_token.span)
