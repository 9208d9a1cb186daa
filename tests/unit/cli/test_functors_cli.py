"""`reasoner run` with user-defined functors: `--functors FILE.py`, Soufflé's `-l NAME -L DIR`
(and its default `libfunctors.so`), byte for byte what Soufflé wrote for the golden program;
load errors and evaluation errors exit 2 with their reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reasoner.cli.main import main
from tests.c_functors import build_library
from tests.souffle_golden import GOLDEN

FUNCTORS = GOLDEN / "user_functors"
OUTPUTS = sorted(path.name for path in FUNCTORS.glob("*.csv"))


def _assert_souffles_files(out: Path) -> None:
    for name in OUTPUTS:
        written = sorted((out / name).read_text(encoding="utf-8").splitlines())
        expected = sorted((FUNCTORS / name).read_text(encoding="utf-8").splitlines())
        assert written == expected, name


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_python_module_gives_souffles_files(tmp_path: Path, engine: str) -> None:
    arguments = ["run", str(FUNCTORS / "program.dl"), "-D", str(tmp_path), "--engine", engine]
    assert main([*arguments, "--functors", str(FUNCTORS / "functors.py")]) == 0
    _assert_souffles_files(tmp_path)


def test_a_c_library_gives_souffles_files(tmp_path: Path) -> None:
    build_library(FUNCTORS / "functors.c", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    program = str(FUNCTORS / "program.dl")
    assert main(["run", program, "-D", str(out), "-l", "functors", "-L", str(tmp_path)]) == 0
    _assert_souffles_files(out)


def test_libfunctors_in_the_working_directory_is_soufflés_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_library(FUNCTORS / "functors.c", tmp_path)
    shutil.copy(FUNCTORS / "program.dl", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "program.dl", "-D", "."]) == 0
    _assert_souffles_files(tmp_path)


def test_what_cannot_be_loaded_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = str(FUNCTORS / "program.dl")
    assert main(["run", program, "-D", str(tmp_path), "-l", "nothing", "-L", str(tmp_path)]) == 2
    assert "cannot find the functor library libnothing.so" in capsys.readouterr().err
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    assert main(["run", program, "-D", str(tmp_path), "--functors", str(broken)]) == 2
    assert "cannot load functors from" in capsys.readouterr().err
    assert main(["run", program, "-D", str(tmp_path), "-L", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown_functor: functor `foo` is declared, but no implementation" in err


def test_a_functor_that_raises_exits_2_naming_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f.py").write_text("def parse(s):\n    return int(s)\n")
    (tmp_path / "p.dl").write_text(
        ".functor parse(s: symbol): number\n.decl t(s: symbol)\n.input t\n"
        ".decl n(x: number)\n.output n\nn(@parse(s)) :- t(s).\n"
    )
    (tmp_path / "t.facts").write_text("12\nx\n")
    arguments = ["run", str(tmp_path / "p.dl"), "-F", str(tmp_path), "-D", str(tmp_path)]
    assert main([*arguments, "--functors", str(tmp_path / "f.py")]) == 2
    err = capsys.readouterr().err
    assert 'functor_error: `@parse("x")` raised ValueError' in err
    assert not (tmp_path / "n.csv").exists()
