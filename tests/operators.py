"""One program over Soufflé's operators beyond + - * / %, with edge values, for every executor.

Each executor's state is compared with the reference's, and the reference's with the values
the naive oracle's independent arithmetic gives (`tests.oracle.arithmetic`)."""

from __future__ import annotations

OPERATORS_PROGRAM = """
.decl n(x: number, y: number)
.decl zero(x: number)
.input n
.input zero
bits(x, y, x band y, x bor y, x bxor y, bnot x) :- n(x, y).
shifts(x, y, x bshl y, x bshr y, x bshru y) :- n(x, y).
logic(x, y, x land y, x lor y, x lxor y, lnot x) :- n(x, y).
extremes(x, y, max(x, y), min(x, y, 0)) :- n(x, y).
power(x, y, x ^ y) :- n(x, y).
odd_power(x) :- n(x, y), x ^ y band 1 = 1.
not_zero_power(x, y) :- n(x, y), !zero(y ^ x).
absent(x, y, max(x / y, 5), (x / y) lor 1, min(x / y, 0), 1 ^ (x / y)) :- n(x, y).
absent_too(x, y, (x / y) ^ 0, (x / y) land 0, (x / y) lxor 1, (x % y) bor 0) :- n(x, y).
compared(x, y) :- n(x, y), max(x / y, 5) > 3, lnot(x / y) = 0.
"""
"""`absent*` and `compared`: an operand without a value (a division by zero) leaves none."""

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
OPERATORS_INPUTS = {
    "n": [
        (3, 4),
        (-5, 2),
        (2, 70),
        (-2, 63),
        (0, -1),
        (1, -3),
        (-1, -3),
        (-1, 4),
        (7, -2),
        (0, 0),
        (INT64_MIN, 1),
        (INT64_MAX, 65),
        (3, -1),
        (-3, 5),
        (12, 3),
    ],
    "zero": [(0,)],
}
