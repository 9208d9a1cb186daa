"""The functors of functor_error_results.dl: `label` returns None for a negative number, `big`
and `huge` numbers past 64 bits, `half` a fraction as text."""


def label(x: int) -> str | None:
    return None if x < 0 else f"#{x}"


def big() -> int:
    return 1 << 64


def huge() -> int:
    return -(1 << 63) - 1


def half(x: int) -> float | str:
    return x / 2 if x % 2 == 0 else f"{x}/2"
