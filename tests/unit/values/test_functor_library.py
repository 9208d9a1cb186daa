"""Implementations of user-defined functors (`reasoner.values.functor_library`) and what the
engine makes of what they return (`reasoner.values.user_functors`): Python modules, C
libraries through ctypes with Soufflé's 64-bit types, results checked against the declared
type, several bindings of one name in one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.errors import FUNCTOR_ERROR, UNKNOWN_FUNCTOR, InvalidDelta
from reasoner.materialization import Materialization
from reasoner.values import functors, user_functors
from reasoner.values.arith import wrap64
from reasoner.values.functor_library import (
    FunctorLibrary,
    FunctorLoadError,
    FunctorUnavailable,
)
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType
from tests.c_functors import build_library


def _bound(
    implementation: object, params: tuple[ColumnType, ...], result: ColumnType
) -> functors.Signature:
    name = user_functors.bind("probe", params, result, implementation)  # type: ignore[arg-type]
    return functors.signature(name)


def test_a_python_module_gives_its_public_callables(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text("import math\n\ndef f(x):\n    return x\n\ndef _g():\n    pass\n\nN = 3\n")
    library = FunctorLibrary.python_module(path)
    assert set(library.functions) == {"f"}
    assert library.describe() == "the functors loaded are those of mine.py"
    with pytest.raises(FunctorUnavailable) as missing:
        library.implementation("_g", (), NUMBER, False)
    assert missing.value.code == UNKNOWN_FUNCTOR


@pytest.mark.parametrize(
    ("text", "reason"),
    [(None, "no such Python file"), ("raise KeyError('x')", "KeyError: 'x'")],
)
def test_a_module_that_cannot_be_loaded_says_why(
    tmp_path: Path, text: str | None, reason: str
) -> None:
    path = tmp_path / "broken.py"
    if text is not None:
        path.write_text(text)
    with pytest.raises(FunctorLoadError, match=reason):
        FunctorLibrary.python_module(path)


def test_the_python_functions_come_before_the_libraries() -> None:
    first = FunctorLibrary(functions={"f": lambda: 1}, sources=("a.py",))
    second = FunctorLibrary(functions={"f": lambda: 2, "g": lambda: 3}, sources=("b.py",))
    merged = FunctorLibrary.merged(first, None, second)
    assert merged.implementation("f", (), NUMBER, False)() == 1
    assert merged.implementation("g", (), NUMBER, True)() == 3  # stateful: plain values too
    assert merged.sources == ("a.py", "b.py")


@pytest.mark.parametrize(
    ("result", "value", "stored"),
    [
        (NUMBER, -(1 << 63), -(1 << 63)),
        (NUMBER, True, 1),
        (UNSIGNED, (1 << 64) - 1, -1),
        (UNSIGNED, 5, 5),
        (FLOAT, 2, 2.0),
        (FLOAT, 0.5, 0.5),
        (SYMBOL, "é", "é"),
    ],
)
def test_a_result_of_the_declared_type_is_stored_as_the_engine_stores_it(
    result: ColumnType, value: object, stored: object
) -> None:
    assert _bound(lambda: value, (), result).scalar() == stored


@pytest.mark.parametrize(
    ("result", "value"),
    [
        (NUMBER, 1 << 63),
        (NUMBER, 1.0),
        (NUMBER, "1"),
        (UNSIGNED, -1),
        (UNSIGNED, 1 << 64),
        (FLOAT, (1 << 53) + 1),
        (FLOAT, "0.5"),
        (SYMBOL, b"bytes"),
        (SYMBOL, None),
    ],
)
def test_any_other_result_is_a_functor_error(result: ColumnType, value: object) -> None:
    with pytest.raises(InvalidDelta) as raised:
        _bound(lambda: value, (), result).scalar()
    assert raised.value.code == FUNCTOR_ERROR
    assert "`@probe()` returned" in raised.value.message


def test_an_unsigned_argument_is_its_natural_value() -> None:
    seen = []
    signature = _bound(lambda u, n: seen.append((u, n)) or 0, (UNSIGNED, NUMBER), NUMBER)
    signature.scalar(wrap64((1 << 64) - 1), -1)
    assert seen == [((1 << 64) - 1, -1)]


def test_one_name_bound_twice_in_one_process_keeps_both() -> None:
    """Two programs may give `@f` two implementations: each keeps its own."""
    text = ".functor f(x: number): number\n.decl n(x: number)\nn(1).\nm(@f(x)) :- n(x).\n"
    doubled = FunctorLibrary(functions={"f": lambda x: 2 * x})
    negated = FunctorLibrary(functions={"f": lambda x: -x})
    first = Materialization.from_text(text, user_functors=doubled)
    second = Materialization.from_text(text, user_functors=negated)
    again = Materialization.from_text(text, user_functors=doubled)
    for m in (first, second, again):
        m.bootstrap()
    assert (first.rows("m"), second.rows("m"), again.rows("m")) == ([(2,)], [(-1,)], [(2,)])
    assert check_program(text, user_functors=doubled).user_functors == {
        "@f": first.analyzed.user_functors["@f"]
    }


C_SOURCE = r"""
#include <stdint.h>
#include <string.h>
const char *nothing(int64_t x) { (void)x; return 0; }
uint64_t top(uint64_t x) { return x - 1; }
double half(double x) { return x / 2; }
int64_t bytes(const char *s) { return (int64_t)strlen(s); }
const char *latin(void) { return "\xe9t\xe9"; }
"""


@pytest.fixture(scope="module")
def c_probe(tmp_path_factory: pytest.TempPathFactory) -> FunctorLibrary:
    directory = tmp_path_factory.mktemp("probe")
    source = directory / "probe.c"
    source.write_text(C_SOURCE)
    build_library(source, directory, "probe")
    return FunctorLibrary.shared_libraries(["probe"], [str(directory)])


def test_c_functions_take_and_give_soufflés_64_bit_types(c_probe: FunctorLibrary) -> None:
    top = c_probe.implementation("top", (UNSIGNED,), UNSIGNED, False)
    assert top(0) == (1 << 64) - 1
    assert c_probe.implementation("half", (FLOAT,), FLOAT, False)(3.0) == 1.5
    assert c_probe.implementation("bytes", (SYMBOL,), NUMBER, False)("héllo") == 6
    assert c_probe.implementation("top", (UNSIGNED,), UNSIGNED, False) is top  # one binding


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("nothing", (NUMBER,), "returned a null pointer"),
        ("latin", (), "UnicodeDecodeError"),
    ],
)
def test_a_c_symbol_that_is_no_text_is_a_functor_error(
    c_probe: FunctorLibrary, name: str, params: tuple[ColumnType, ...], message: str
) -> None:
    implementation = c_probe.implementation(name, params, SYMBOL, False)
    signature = _bound(implementation, params, SYMBOL)
    with pytest.raises(InvalidDelta, match=message):
        signature.scalar(*(1 for _ in params))


def test_a_library_that_is_not_there_is_named(tmp_path: Path) -> None:
    with pytest.raises(FunctorLoadError, match=r"libabsent\.so"):
        FunctorLibrary.shared_libraries(["absent"], [str(tmp_path)])
    deferred = FunctorLibrary.shared_libraries(["absent"], [str(tmp_path)], required=False)
    with pytest.raises(FunctorUnavailable, match="no functors are loaded"):
        deferred.implementation("f", (), NUMBER, False)
