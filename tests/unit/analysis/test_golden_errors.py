"""Golden tests of the diagnostics users see: the exact `ProgramError.format()` text.

Each `tests/golden/errors/<case>.dl` is checked with its base name as filename, through the C
preprocessor as a posted program is (no file may be included), with the functors of
`<case>.py` if there is one, and must fail with exactly the text of `<case>.expected`. A `.dl`
without `.expected` fails the suite, so a new case cannot pass silently. After a deliberate
change of messages, regenerate with
`REASONER_UPDATE_GOLDEN=1 pytest tests/unit/analysis/test_golden_errors.py` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasoner.analysis import check_preprocessed, check_program
from reasoner.errors import (
    FUNCTOR_ERROR,
    LIMIT_ERROR_CODES,
    PREPROCESSOR_ERROR,
    PROGRAM_ERROR_CODES,
    ProgramError,
)
from reasoner.syntax.preprocess import preprocess
from reasoner.values.functor_library import FunctorLibrary

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "errors"
CASES = sorted(GOLDEN.glob("*.dl"))
UPDATE = os.environ.get("REASONER_UPDATE_GOLDEN") == "1"


def _check(path: Path) -> None:
    module = path.with_suffix(".py")
    library = FunctorLibrary.python_module(module) if module.exists() else None
    check_preprocessed(preprocess(path.read_text(), path.name, files={}), path.name, library)


def formatted_errors(path: Path) -> str:
    with pytest.raises(ProgramError) as info:
        _check(path)
    return info.value.format()


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_golden_error_output(path: Path) -> None:
    actual = formatted_errors(path)
    expected_path = path.with_suffix(".expected")
    if UPDATE:
        expected_path.write_text(actual + "\n")
    assert expected_path.exists(), f"{path.name} has no {expected_path.name}"
    assert actual == expected_path.read_text().removesuffix("\n")


def test_every_expected_file_has_a_program() -> None:
    orphans = [p.name for p in GOLDEN.glob("*.expected") if not p.with_suffix(".dl").exists()]
    orphans += [p.name for p in GOLDEN.glob("*.py") if not p.with_suffix(".dl").exists()]
    assert not orphans


def test_each_code_has_at_least_two_cases() -> None:
    codes = (*PROGRAM_ERROR_CODES, *LIMIT_ERROR_CODES, PREPROCESSOR_ERROR, FUNCTOR_ERROR)
    cases_per_code = dict.fromkeys(codes, 0)
    for path in CASES:
        with pytest.raises(ProgramError) as info:
            _check(path)
        for code in {d.code for d in info.value.diagnostics}:
            cases_per_code[code] += 1
    assert all(count >= 2 for count in cases_per_code.values()), cases_per_code


def test_a_case_mixes_every_analysis_code_in_order() -> None:
    with pytest.raises(ProgramError) as info:
        check_program((GOLDEN / "several_errors.dl").read_text(), filename="several_errors.dl")
    diagnostics = info.value.diagnostics
    assert set(PROGRAM_ERROR_CODES) <= {d.code for d in diagnostics}
    locations = [(d.line, d.column) for d in diagnostics]
    assert locations == sorted(locations)
