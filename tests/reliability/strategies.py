"""Hypothesis strategies shared by the harnesses: inputs that once took the service down."""

from __future__ import annotations

from hypothesis import strategies as st

from reasoner.syntax.parser import MAX_NESTING


@st.composite
def deep_terms(draw: st.DrawFn, variable: str = "x") -> str:
    """An arithmetic term nested about as deep as the parser allows (`MAX_NESTING`), on
    either side of it: a left chain, a right-nested one, parentheses, unary minus, or a number
    literal of thousands of digits. Each shape once failed in a later stage (Python's own
    parser, the recursion limit, `int` of a long string) when it got past the parser."""
    depth = draw(st.integers(MAX_NESTING - 2, MAX_NESTING + 2))
    shape = draw(st.sampled_from(("chain", "right", "parentheses", "unary", "long-number")))
    operator = draw(st.sampled_from("+-*"))
    if shape == "chain":
        return variable + f" {operator} 1" * depth
    if shape == "right":
        return f"1 {operator} (" * (depth - 1) + variable + ")" * (depth - 1)
    if shape == "parentheses":
        return "(" * depth + variable + ")" * depth
    if shape == "unary":
        return "-" * depth + variable
    return variable + " + " + draw(st.sampled_from("19")) * draw(st.integers(19, 5000))


RUNAWAY_RULES = st.sampled_from(
    [
        "n(x) :- label(x, _).\nn(x + 1) :- n(x).",
        "k(0) :- edge(_, _).\nk(x + 1) :- k(x), x != -1.",
        "m(x, y) :- edge(x, y).\nm(y, x - 1) :- m(x, y).",
    ]
)
"""Recursions that never terminate once they have a seed (the seed is in the data)."""
