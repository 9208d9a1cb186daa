"""The functors of type_mismatch_user_functors.dl."""


def size(s: str) -> int:
    return len(s.encode())


def scale(x: float, n: int) -> float:
    return x * n


def bad(x: int) -> int:
    return x


def where(p: object) -> int:
    return 0
