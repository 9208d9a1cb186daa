"""`match` agrees with Soufflé's own answers: the table in `tests/golden/regex/table.json` was
written by `tests/golden/regex/generate.py` from the real Soufflé 2.5 (libstdc++'s
`std::regex_match`, ECMAScript grammar, over UTF-8 bytes), so this test needs no Soufflé.

Each row holds a pattern, a subject, and whether `match` and `!match` held; both false is an
invalid pattern. A construct the translator does not handle must be refused by name, never
answered.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from reasoner.errors import InvalidDelta
from reasoner.values import functors
from reasoner.values.ecmascript_regex import UnsupportedPattern, compiled, translate, unsupported

TABLE = json.loads(
    (Path(__file__).parents[2] / "golden" / "regex" / "table.json").read_text(encoding="utf-8")
)
UNTRANSLATED = {"[[.a.]]", "[[=a=]]"}
"""Collating elements and equivalence classes: refused by name."""


@pytest.mark.parametrize(
    "row", TABLE, ids=[f"{i}:{row['pattern']!r}~{row['subject']!r}" for i, row in enumerate(TABLE)]
)
def test_souffles_answer(row: dict) -> None:
    pattern, subject = row["pattern"], row["subject"]
    if pattern in UNTRANSLATED:
        assert unsupported(pattern) is not None
        with pytest.raises(UnsupportedPattern, match="collating"):
            compiled(pattern)
        with pytest.raises(InvalidDelta, match=r"unsupported_feature: `match` pattern .*collating"):
            functors.SIGNATURES["match"].scalar(pattern, subject)
        return
    matches = functors.SIGNATURES["match"].scalar(pattern, subject)
    if not row["match"] and not row["not_match"]:
        assert compiled(pattern) is None
        assert matches is None, "an invalid pattern makes both match and !match false"
    else:
        assert matches == int(row["match"])


def test_the_table_covers_the_differences_from_python() -> None:
    """Rows where Python's `re.fullmatch` over the text answers otherwise than Soufflé: the
    reason this module exists (the table must keep such rows)."""
    differing = 0
    for row in TABLE:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # Python's own set syntax
                python = re.compile(row["pattern"]).fullmatch(row["subject"]) is not None
        except re.error:
            python = None
        souffle = row["match"] if row["match"] or row["not_match"] else None
        differing += python != souffle
    assert len(TABLE) >= 300 and differing >= 100


def test_every_byte_is_escaped() -> None:
    """The translation leaves nothing to Python's reading: no literal byte but the syntax."""
    text = translate("[[:digit:]]+é\\w|a{2,3}?(x)\\1")
    assert "é" not in text and "digit" not in text
    assert text.isascii()


def test_large_repetitions_are_refused_by_name() -> None:
    assert unsupported("a{1,400}") is None
    assert unsupported("(?:a{100}){1000}") == "a repetition this large (std::regex's state limit)"
    assert unsupported("a{2147483648}") is not None
