"""A user-defined functor bound to its implementation: what every evaluator calls.

The implementation (`reasoner.values.functor_library`) works on plain values; the evaluators
hold values as the engine stores them (an unsigned as its 64-bit pattern, a float as a
Python float once decoded, a symbol as its text). `bind` wraps the one in the other and
registers it (`reasoner.values.functors.register`), so that the kernel, the vectorized
executor, queries and the fact folder apply it as they apply a built-in functor.

The wrapper checks what the implementation returns against the declared type: an `int` (a
`bool` is one) from -2^63 to 2^63 - 1 for a number, from 0 to 2^64 - 1 for an unsigned, a
`float` (or an `int` a double holds exactly) for a float, a `str` for a symbol. Anything else,
or an exception, is an evaluation error (`functor_error`, `InvalidDelta`): the epoch that meets
it changes nothing, and a fact that meets it is a program error at its place.

Layer: `values`; the analysis binds (`reasoner.analysis.user_functors`).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from reasoner.errors import FUNCTOR_ERROR, InvalidDelta
from reasoner.support import allocations
from reasoner.values import functors
from reasoner.values.arith import as_unsigned, wrap64
from reasoner.values.functor_library import Implementation
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType, Value

_SHOWN = 60
"""Characters of an argument or a result a message quotes at most."""


def bind(
    name: str, params: tuple[ColumnType, ...], result: ColumnType, implementation: Implementation
) -> str:
    """Register functor `name` (without its `@`) with these declared types and this
    implementation; the name its calls take from then on (`reasoner.values.functors`)."""
    written = functors.USER_PREFIX + name
    signature = functors.Signature(
        params, result, _checked(written, params, result, implementation)
    )
    return functors.register(written, signature, (written, params, result, implementation))


class Unavailable(Exception):
    """What calling a functor without an implementation raises (`unavailable`)."""


def unavailable(*_args: object) -> object:
    """What a declared functor without an implementation is bound to, so that the analysis
    checks its calls; the analysis refuses its program (`unknown_functor`), so only the fact
    folder may call it, and then leaves the fact be."""
    raise Unavailable("a functor without an implementation is never evaluated")


def _checked(
    written: str,
    params: tuple[ColumnType, ...],
    result: ColumnType,
    implementation: Implementation,
) -> Callable[..., Value]:
    unsigned = [kind == UNSIGNED for kind in params]

    def call(*stored: Value) -> Value:
        args = [
            as_unsigned(value) if flip else value  # type: ignore[arg-type]
            for value, flip in zip(stored, unsigned, strict=True)
        ]
        try:
            value = implementation(*args)
        except (MemoryError, Unavailable):  # the process's, not the functor's; or none
            raise
        except Exception as error:  # the implementation's own failure: the epoch's error
            raise InvalidDelta(
                FUNCTOR_ERROR, f"{_call_text(written, args)} raised {_error_text(error)}"
            ) from error
        checked = _result(value, result)
        if checked is None:
            raise InvalidDelta(
                FUNCTOR_ERROR,
                f"{_call_text(written, args)} returned {_shown(value)} "
                f"({type(value).__name__}), which is not {_kind_text(result)}",
            )
        return checked

    return call


def _result(value: object, kind: ColumnType) -> Value | None:
    """`value` as the engine stores a value of type `kind`; None when it is not one."""
    if kind == SYMBOL:
        if not isinstance(value, str):
            return None
        allocations.charge(len(value) if value.isascii() else functors.WIDE_CHAR_BYTES * len(value))
        return value
    if isinstance(value, float):
        return float(value) if kind == FLOAT else None
    if not isinstance(value, int):
        return None
    if kind == FLOAT:  # an int a double holds exactly
        try:
            return float(value) if float(value) == value else None
        except OverflowError:
            return None
    if kind == NUMBER:
        return int(value) if wrap64(value) == value else None
    return wrap64(int(value)) if 0 <= value < 1 << 64 else None


def _kind_text(kind: ColumnType) -> str:
    return {
        NUMBER: "a number (an int from -2^63 to 2^63 - 1)",
        UNSIGNED: "an unsigned (an int from 0 to 2^64 - 1)",
        FLOAT: "a float",
        SYMBOL: "a symbol (a str)",
    }[kind]


def _shown(value: object) -> str:
    """A value as a program writes it (a symbol in double quotes), or a result's `repr`."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _call_text(written: str, args: list[Value]) -> str:
    return f"`{written}({', '.join(map(_shown, args))})`"


def _error_text(error: Exception) -> str:
    message = str(error)
    if len(message) > 2 * _SHOWN:
        message = message[: 2 * _SHOWN - 1] + "…"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
