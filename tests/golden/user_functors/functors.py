"""The functors of program.dl in Python, with the results of functors.c (which Soufflé ran to
write the .csv files beside them): `reasoner run --functors functors.py`."""

from __future__ import annotations

import math


def foo(n: int, s: str) -> int:
    return n + len(s.encode())  # C's strlen counts bytes


def hoo() -> str:
    return "Hello world!"


def sign(n: int) -> str:
    return "NEG" if n < 0 else "ZERO" if n == 0 else "POS"


def factorial(x: int) -> int:
    accum = 1
    while x > 1:
        accum = accum * x % 2**64  # uint64_t wraps around
        x -= 1
    return accum


def rnd(x: float) -> int:
    """C's `round`: halves away from zero."""
    whole = math.trunc(x)
    if x - whole >= 0.5:
        return whole + 1
    if whole - x >= 0.5:
        return whole - 1
    return whole


def incr(x: float) -> float:
    return x + 1.0


def succ(x: int) -> int:
    return x + 1


def concat(f: float, i: int, u: int, s: str) -> str:
    return f"{f:f}{i}{u}{s}"


def shout(s: str) -> str:
    return "".join(c.upper() if "a" <= c <= "z" else c for c in s) + "!"


def weight(x: int, y: int) -> int:
    return x * 10 + y
