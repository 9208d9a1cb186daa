"""Token lookahead: whether the tokens from a position read as an aggregate's expression,
which the parser asks before it commits to reading one (`sum x : {...}` against `sum = x`).

Layer: `syntax`; used by the parser alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasoner.syntax.lexer import EOF, Token


def colon_ends_expression(tokens: Sequence[Token], index: int) -> bool:
    """Whether a `:` ends the expression starting at `index` (outside parentheses)."""
    depth = 0
    for at in range(index, len(tokens)):
        kind = tokens[at].kind
        depth += (kind == "(") - (kind == ")")
        if depth < 0 or (depth == 0 and kind in (",", ".", ";", "{", "}", EOF)):
            return False
        if depth == 0 and kind == ":":
            return True
    return False


def colon_after_parenthesis(tokens: Sequence[Token], index: int) -> bool:
    """Whether the parenthesis opening at `index` is closed and followed by `:`."""
    depth = 0
    for at in range(index, len(tokens)):
        kind = tokens[at].kind
        depth += (kind == "(") - (kind == ")")
        if depth == 0:
            return at + 1 < len(tokens) and tokens[at + 1].kind == ":"
        if kind in (".", EOF):
            return False
    return False
