"""Digests name relations that a store keeps across restarts: they must not change."""

import hashlib

from reasoner.support.digest import short_digest


def test_a_digest_is_the_prefix_of_the_texts_sha256() -> None:
    text = "count!{x} :- e(x, _)."
    assert short_digest(text) == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert short_digest(text, 16) == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_digests_of_different_texts_differ() -> None:
    assert short_digest("a") != short_digest("b")
