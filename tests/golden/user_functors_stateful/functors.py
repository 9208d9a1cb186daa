"""The stateful functors of program.dl in Python: where functors.cpp reads and makes symbols
through Soufflé's symbol table, these take and return the text itself."""

from __future__ import annotations


def mycat(a: str, b: str) -> str:
    return a + b


def twice(x: int) -> int:
    return 2 * x


def one() -> int:
    return 1


def initial(s: str) -> str:
    return s.encode()[:1].decode()  # std::string::substr(0, 1): the first byte
