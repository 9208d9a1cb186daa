"""The functors of functor_error_raised.dl: `parse` raises on text that is no number, `ratio`
on a zero divisor."""


def parse(s: str) -> int:
    return int(s)


def ratio(x: int, y: int) -> float:
    return x / y
