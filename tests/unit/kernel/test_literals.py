"""Cython types an integer literal that does not fit a C `int` as a Python int, even beside
C variables: `key & 0xFFFFFFFF` on an int64 compiled to two Python int allocations and a
Python `&`, a row at a time, in the kernel's commit of staged heads and its Update's
settling (both hot), and in the hand-over of an Update's record. Cast such a literal
(`<int64_t>0xFFFFFFFF`); a key's row or a word's low half is `_low` in
reasoner/kernel/buffers.pxd."""

from __future__ import annotations

import re
from pathlib import Path

COMPILED = Path(__file__).resolve().parents[3] / "reasoner"
LITERAL = re.compile(r"(?<![\w.])(0[xX][0-9A-Fa-f]+|\d+)(?![\w.])")
C_INT_MAX = 2**31 - 1


def _uncast_wide_literals(text: str) -> list[str]:
    """`line: literal` for each literal past a C int (-2147483648 is one) not written right
    after a cast."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for match in LITERAL.finditer(code):
            literal = match.group(1)
            value = int(literal, 16) if literal[:2] in ("0x", "0X") else int(literal)
            before = code[: match.start()].rstrip()
            if value > C_INT_MAX + before.endswith("-") and not before.endswith(">"):
                found.append(f"{number}: {literal}")
    return found


def test_the_scan_finds_an_uncast_literal_and_passes_a_cast_one() -> None:
    assert _uncast_wide_literals("row = key & 0xFFFFFFFF\nx = 2147483648  # 4294967296") == [
        "1: 0xFFFFFFFF",
        "2: 2147483648",
    ]
    assert _uncast_wide_literals("key & <int64_t>0xFFFFFFFF\n0x7FFFFFFF\nx < -2147483648") == []


def test_no_compiled_source_has_an_uncast_literal_past_a_c_int() -> None:
    sources = sorted(COMPILED.rglob("*.pyx")) + sorted(COMPILED.rglob("*.pxd"))
    assert sources, COMPILED
    found = {
        str(path.relative_to(COMPILED.parent)): hits
        for path in sources
        if (hits := _uncast_wide_literals(path.read_text()))
    }
    assert found == {}
