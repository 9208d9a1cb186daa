"""The functors of arity_mismatch_functors.dl."""


def twice(x: int) -> int:
    return 2 * x


def zero() -> int:
    return 0
