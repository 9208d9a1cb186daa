"""Evaluation of the facts written in the program text.

Fact arguments may be constant arithmetic (`p(1 + 2).`), string functors
(`p(cat("a", "b")).`) and records (`p([1, $A(2)]).`); they are folded here with Soufflé's
64-bit semantics (`reasoner.values.arith`) so that the engine only ever sees plain values (a record:
its canonical text, `reasoner.values.records`). A failing
operation (division by zero) is reported with code `parse_error` and a message starting with
"arithmetic error in fact": such a fact has no value at all, which is a defect of the text
rather than of typing or safety.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import render
from reasoner.errors import PARSE_ERROR, UNSUPPORTED_FEATURE, InvalidDelta, Span
from reasoner.syntax.ast import (
    BinaryOp,
    BranchTerm,
    Functor,
    NilConst,
    NumberConst,
    Program,
    RecordTerm,
    StringConst,
    Term,
)
from reasoner.values import floats, functors
from reasoner.values.arith import ARITH
from reasoner.values.records import AdtType, Nested, RecordType, ValueType, fits, nested_text
from reasoner.values.types import FLOAT, SYMBOL, Value
from reasoner.values.user_functors import Unavailable


class _NotFoldable(Exception):
    """The term has a variable, or mixes strings into arithmetic: reported elsewhere."""


class _FoldError(Exception):
    def __init__(self, message: str, span: Span, code: str = PARSE_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code


def evaluate(term: Term) -> Nested:
    """The value of a ground term (post-order walk with an explicit stack); a record's as a
    tree (`reasoner.values.records.Nested`)."""
    stack: list[tuple[Term, bool]] = [(term, False)]
    values: list[Nested] = []
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
        elif isinstance(node, Functor):
            if not operands_done:
                stack.append((node, True))
                stack.extend((arg, False) for arg in reversed(node.args))
                continue
            args = values[len(values) - len(node.args) :]
            del values[len(values) - len(node.args) :]
            if not all(isinstance(arg, int | str) for arg in args):
                raise _NotFoldable
            values.append(_call(node, args))  # type: ignore[arg-type]  # checked above
        elif isinstance(node, RecordTerm | BranchTerm):
            if not operands_done:
                stack.append((node, True))
                stack.extend((arg, False) for arg in reversed(node.args))
                continue
            fields = tuple(values[len(values) - len(node.args) :])
            del values[len(values) - len(node.args) :]
            values.append((node.name if isinstance(node, BranchTerm) else None, fields))
        elif isinstance(node, NilConst):
            values.append(None)
        elif isinstance(node, NumberConst | StringConst):
            values.append(node.value)
        else:
            raise _NotFoldable
    return values[0]


def _user_value(value: Nested, kind: ValueType) -> Value:
    if kind == FLOAT and isinstance(value, int):  # an IEEE pattern
        return floats.FloatValue(floats.from_bits(value))
    if not fits(value, kind):
        raise _NotFoldable  # a value of another shape: a type error, reported
    if isinstance(kind, RecordType | AdtType):
        return nested_text(value, kind)
    return cast(Value, value)


def _call(call: Functor, args: list[Value]) -> Value:
    if call.name == functors.GENERATOR:
        raise _FoldError(
            "`range` in a fact is not supported: write a rule, `r(x) :- x = range(a, b).`",
            call.span,
            UNSUPPORTED_FEATURE,
        )
    if call.name == "ord":
        raise _FoldError(
            "`ord` in a fact is not supported: a symbol's number is known once the program "
            "runs; use it in a rule",
            call.span,
            UNSUPPORTED_FEATURE,
        )
    signature = functors.find(call.name)
    if signature is None:  # a user-defined functor's call refused (reported)
        raise _NotFoldable
    for index, arg in enumerate(args):
        if isinstance(arg, str) != (signature.param(index) == SYMBOL):
            raise _NotFoldable
    operands = [
        floats.from_bits(cast(int, arg)) if signature.param(index) == FLOAT else arg
        for index, arg in enumerate(args)
    ]
    try:
        value = signature.scalar(*operands)
    except InvalidDelta as refused:  # a functor refusing operands (`substr` cutting é)
        raise _FoldError(refused.message, call.span, refused.code) from None
    except Unavailable:  # a user-defined functor without an implementation (reported)
        raise _NotFoldable from None
    if value is None:
        raise _FoldError(f"functor error in fact: `{render(call)}` has no value", call.span)
    return floats.to_bits(value) if isinstance(value, float) else value


def fold_facts(
    program: Program, reporter: Reporter, value_type: Callable[[str, int], ValueType]
) -> dict[str, tuple[tuple[Value, ...], ...]]:
    """Per relation, the distinct fact tuples in order of first appearance; `value_type`
    gives a column's type (a record's is written as its text)."""
    folded: dict[str, dict[tuple[Value, ...], None]] = {}
    for fact in program.facts:
        relation = fact.atom.relation
        try:
            row = tuple(
                _user_value(evaluate(arg), value_type(relation, index))
                for index, arg in enumerate(fact.atom.args)
            )
        except _NotFoldable:
            continue
        except _FoldError as error:
            reporter.error(error.code, error.message, error.span)
            continue
        folded.setdefault(relation, {})[row] = None
    return {name: tuple(rows) for name, rows in folded.items()}
