"""Short content digests: the names the analysis gives the relations it introduces (an
aggregate's, an `autoinc`'s, a binding's), a loaded functor module's, a rule's id.

`hashlib` loads OpenSSL, 3-5 ms of a start; it is imported at the first digest, which most
programs never ask for."""

from __future__ import annotations


def short_digest(text: str, length: int = 12) -> str:
    """The first `length` hexadecimal digits of `text`'s SHA-256: stable across runs and
    machines, as names kept in a store must be."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:length]
