"""The functors of unknown_functor_declared.dl: `half` and `initial` are missing."""


def twice(x: int) -> int:
    return 2 * x
