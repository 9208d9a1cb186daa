"""Integer arithmetic at the edges gives what the 64-bit Soufflé 2.5 gives (we emulate its
64-bit build: `number` is a 64-bit two's-complement integer that wraps around).

Each expected value was read from `souffle -F. -D-` running `PROGRAM` over `OPERANDS` (the
operands come from a relation, so Soufflé's own constant folding plays no part): C's
truncating division and remainder of negatives, wrap-around of `+`, `-`, `*` and negation,
shift amounts taken modulo 64, and `^` where it is exact.
"""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization

INT64_MAX, INT64_MIN = (1 << 63) - 1, -(1 << 63)

PROGRAM = """
.decl v(i: number, a: number, b: number)
.input v
n(i, a + b) :- v(i, a, b), i = 1.
n(i, a - b) :- v(i, a, b), i = 2.
n(i, a * b) :- v(i, a, b), (i = 3 ; i = 28).
n(i, a / b) :- v(i, a, b), (i = 4 ; i = 6).
n(i, a % b) :- v(i, a, b), (i = 5 ; i = 7 ; i = 8).
n(i, a ^ b) :- v(i, a, b), (i = 11 ; i = 20 ; i = 21 ; i = 22).
n(i, -a) :- v(i, a, _), i = 14.
n(i, a bshl b) :- v(i, a, b), (i = 15 ; i = 16 ; i = 23 ; i = 24).
n(i, a bshr b) :- v(i, a, b), i = 17.
n(i, a bshru b) :- v(i, a, b), i = 18.
"""

OPERANDS = [
    (1, INT64_MAX, 1),
    (2, INT64_MIN, 1),
    (3, INT64_MAX, 2),
    (4, -7, 2),
    (5, -7, 2),
    (6, 7, -2),
    (7, 7, -2),
    (8, -7, -2),
    (11, 2, 63),
    (14, INT64_MIN, 0),
    (15, 1, 64),
    (16, 1, 63),
    (17, -1, 1),
    (18, -1, 1),
    (20, 2, -1),
    (21, 0, 0),
    (22, -2, 3),
    (23, 1, -1),
    (24, 1, 65),
    (28, 1 << 32, 1 << 32),
]

SOUFFLE = {
    1: INT64_MIN,
    2: INT64_MAX,
    3: -2,
    4: -3,
    5: -1,
    6: -3,
    7: 1,
    8: -1,
    11: INT64_MIN,
    14: INT64_MIN,
    15: 1,
    16: INT64_MIN,
    17: -1,
    18: INT64_MAX,
    20: 0,
    21: 1,
    22: -8,
    23: INT64_MIN,
    24: 2,
    28: 0,
}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_edges_of_64_bit_arithmetic(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load({"v": OPERANDS})
    m.bootstrap()
    assert dict(m.rows("n")) == SOUFFLE


# `^` goes through the C library's `pow` on doubles in Soufflé, so its results are rounded to 53
# bits and a power past the range is x86-64's conversion of it. Read from the 64-bit Soufflé 2.5
# (`../shared/tools/souffle64`) running POWER_PROGRAM over these operands.
POWER_PROGRAM = """
.decl n(a: number, b: number)
.input n
.decl u(a: unsigned, b: unsigned)
.input u
r(a, b, a ^ b) :- n(a, b).
ru(a, b, a ^ b) :- u(a, b).
q(a, b, a ^ b) :- n(a, b), a ^ b != 12345.
"""
NUMBER_POWERS = {
    (3, 39): 4052555153018976256,
    (3, 34): 16677181699666570,  # glibc's `pow`; rounded exactly it would be ...568
    (-3, 34): 16677181699666570,
    (-9, 17): -16677181699666570,
    (3, 40): INT64_MIN,
    (2, 62): 4611686018427387904,
    (2, 63): INT64_MIN,
    (2, 64): INT64_MIN,
    (-2, 63): INT64_MIN,
    (-3, 41): INT64_MIN,
    (7, 22): 3909821048582988288,
    (7, 23): INT64_MIN,
    (10, 18): 1000000000000000000,
    (10, 19): INT64_MIN,
    (3037000499, 2): 9223372030926248960,
    (3037000500, 2): INT64_MIN,
    (INT64_MAX, 1): INT64_MIN,
    (-INT64_MAX, 1): INT64_MIN,
    (0, -1): INT64_MIN,
    (0, 0): 1,
    (2, -1): 0,
    (-2, -1): 0,
    (3, -2): 0,
    (1, -5): 1,
    (-1, -5): -1,
    (-1, -4): 1,
    (-7, 3): -343,
}
UNSIGNED_POWERS = {
    (3, 39): 4052555153018976256,
    (3, 40): 12157665459056928768,
    (3, 41): 0,
    (2, 63): 1 << 63,
    (2, 64): 0,
    (10, 19): 10000000000000000000,
    (10, 20): 0,
    (7, 23): 0,
    (4294967296, 2): 0,
    ((1 << 64) - 1, 1): 0,
    (0, 0): 1,
}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_powers_are_souffles_through_pow(engine: str) -> None:
    m = Materialization.from_text(POWER_PROGRAM, engines=EngineSettings(engine))
    m.load({"n": list(NUMBER_POWERS), "u": list(UNSIGNED_POWERS)})
    m.bootstrap()
    assert {(a, b): c for a, b, c in m.rows("r")} == NUMBER_POWERS
    assert {(a, b): c for a, b, c in m.rows("ru")} == UNSIGNED_POWERS
    assert {(a, b): c for a, b, c in m.rows("q")} == NUMBER_POWERS


def test_powers_in_update_are_souffles() -> None:
    """The Update kernel computes `^` itself (`reasoner.kernel.interpreter`)."""
    m = Materialization.from_text(POWER_PROGRAM)
    m.load({"n": [(1, 1)], "u": [(1, 1)]})
    m.bootstrap()
    report = m.apply(
        Delta(insert={"n": list(NUMBER_POWERS), "u": list(UNSIGNED_POWERS)}), strategy="update"
    )
    assert report.strategy == "update"
    assert {(a, b): c for a, b, c in m.rows("r") if (a, b) != (1, 1)} == NUMBER_POWERS
    assert {(a, b): c for a, b, c in m.rows("ru") if (a, b) != (1, 1)} == UNSIGNED_POWERS
