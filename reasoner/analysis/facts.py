"""Evaluation of the facts written in the program text.

Fact arguments may be constant arithmetic (`p(1 + 2).`); they are folded here with Soufflé's
64-bit semantics (`reasoner.arith`) so that the engine only ever sees plain values. A failing
operation (division by zero) is reported with code `parse_error` and a message starting with
"arithmetic error in fact": such a fact has no value at all, which is a defect of the text
rather than of typing or safety.
"""

from __future__ import annotations

from reasoner.analysis.model import Value
from reasoner.analysis.report import Reporter
from reasoner.arith import ARITH
from reasoner.errors import PARSE_ERROR
from reasoner.syntax.ast import BinaryOp, NumberConst, Program, Span, StringConst, Term


class _NotFoldable(Exception):
    """The term has a variable, or mixes strings into arithmetic: reported elsewhere."""


class _FoldError(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def evaluate(term: Term) -> Value:
    """The value of a ground term (post-order walk with an explicit stack)."""
    stack: list[tuple[Term, bool]] = [(term, False)]
    values: list[Value] = []
    while stack:
        node, operands_done = stack.pop()
        if isinstance(node, BinaryOp):
            if not operands_done:
                stack.append((node, True))
                stack.append((node.right, False))
                stack.append((node.left, False))
                continue
            right = values.pop()
            left = values.pop()
            if not isinstance(left, int) or not isinstance(right, int):
                raise _NotFoldable
            try:
                values.append(ARITH[node.op](left, right))
            except ArithmeticError as error:
                raise _FoldError(f"arithmetic error in fact: {error}", node.span) from None
        elif isinstance(node, NumberConst | StringConst):
            values.append(node.value)
        else:
            raise _NotFoldable
    return values[0]


def fold_facts(program: Program, reporter: Reporter) -> dict[str, tuple[tuple[Value, ...], ...]]:
    """Per relation, the distinct fact tuples in order of first appearance."""
    folded: dict[str, dict[tuple[Value, ...], None]] = {}
    for fact in program.facts:
        try:
            row = tuple(evaluate(arg) for arg in fact.atom.args)
        except _NotFoldable:
            continue
        except _FoldError as error:
            reporter.error(PARSE_ERROR, error.message, error.span)
            continue
        folded.setdefault(fact.atom.relation, {})[row] = None
    return {name: tuple(rows) for name, rows in folded.items()}
