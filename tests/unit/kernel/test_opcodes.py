"""The plan words are written by `reasoner.kernel.plans` (Python) and read by the compiled
interpreter (`plan_words.pxd`, Cython enums): two spellings of one list. A word that changes
on one side only would make the kernel run another plan than the one compiled, so every
constant the plans write is checked against the interpreter's enum of the same meaning."""

from __future__ import annotations

import re

from reasoner.kernel import plans
from tests.conftest import REPO_ROOT

SYMBOLS = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD", "^": "POW"}
COMPARISONS = {"=": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
PREFIXES = ("DRIVE_", "ROWS_", "STEP_", "MODE_", "NEG_", "TERM_", "OP_", "CMP_")


def _interpreter_enums() -> dict[str, int]:
    text = (REPO_ROOT / "reasoner" / "kernel" / "plan_words.pxd").read_text(encoding="utf-8")
    words: dict[str, int] = {}
    for block in re.findall(r"^cdef enum:\n((?:    .*\n)+)", text, re.MULTILINE):
        for name, value in re.findall(r"^    (\w+) = (\d+)", block, re.MULTILINE):
            words[name] = int(value)
    return words


def _plan_words() -> dict[str, int]:
    words = {
        name: value
        for name, value in vars(plans).items()
        if name.startswith(PREFIXES) and isinstance(value, int)
    }
    for op, value in plans.OPERATORS.items():
        words["OP_" + SYMBOLS.get(op, op.upper())] = value
    for op, value in plans.COMPARISONS.items():
        words["CMP_" + COMPARISONS[op]] = value
    return words


def test_the_plans_write_the_words_the_interpreter_reads() -> None:
    kernel = _interpreter_enums()
    written = _plan_words()
    assert len(written) >= 40
    assert {name: kernel.get(name) for name in written} == written


def test_every_operator_the_interpreter_knows_can_be_written() -> None:
    kernel = _interpreter_enums()
    written = _plan_words()
    expected = {name for name in kernel if name.startswith(PREFIXES)}
    assert expected - set(written) == set()
