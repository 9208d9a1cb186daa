"""The C preprocessor, as Soufflé runs programs through it (`gcc -E` or `mcpp`, with
`-DRAM_DOMAIN_SIZE=64` in the 64-bit build): what it expands, what it reads, and where its
diagnostics point. The expected outputs were checked against the 64-bit Soufflé 2.5
(`souffle -I inc -M "EXTRA=42"`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import check_preprocessed
from reasoner.cli.main import main
from reasoner.elastic.epoch import Delta
from reasoner.errors import PREPROCESSOR_ERROR, ProgramError
from reasoner.materialization import Materialization
from reasoner.syntax.preprocess import needs_preprocessing, parse_macros, preprocess

MAIN = """#include "defs.dl"
#include "lib.dl"
.decl a(x: number)
a(N).
a(SQ(N)).
a(RAM_DOMAIN_SIZE).
#ifdef EXTRA
a(EXTRA).
#endif
#ifndef EXTRA
a(-1).
#else
a(-2).
#endif
#undef N
#define N 4
a(N).
.output a
"""
DEFS = "#define N 3\n#define SQ(x) ((x) * (x))\n"
LIB = ".decl b(x: number)\nb(1).\n.output b\n"


def _files(tmp_path: Path) -> Path:
    (tmp_path / "inc").mkdir()
    (tmp_path / "main.dl").write_text(MAIN)
    (tmp_path / "defs.dl").write_text(DEFS)
    (tmp_path / "inc" / "lib.dl").write_text(LIB)
    return tmp_path / "main.dl"


def test_directives_expand_as_souffles_preprocessor_does(tmp_path: Path) -> None:
    main_dl = _files(tmp_path)
    source = preprocess(
        main_dl.read_text(), str(main_dl), include_dirs=[tmp_path / "inc"], macros={"EXTRA": "42"}
    )
    m = Materialization(check_preprocessed(source, str(main_dl)))
    m.bootstrap()
    assert sorted(m.rows("a")) == [(-2,), (3,), (4,), (9,), (42,), (64,)]
    assert sorted(m.rows("b")) == [(1,)]
    without = preprocess(main_dl.read_text(), str(main_dl), include_dirs=[tmp_path / "inc"])
    assert "a(-1)." in without.text and "EXTRA" not in without.text


def test_the_command_line_takes_include_dirs_and_macros(tmp_path: Path) -> None:
    main_dl = _files(tmp_path)
    out = tmp_path / "out"
    command = ["run", str(main_dl), "-D", str(out), "-I", str(tmp_path / "inc")]
    assert main([*command, "-M", "EXTRA=42 OTHER"]) == 0
    assert sorted(map(int, (out / "a.csv").read_text().split())) == [-2, 3, 4, 9, 42, 64]
    assert main(["run", str(main_dl), "-D", str(out)]) == 2  # lib.dl is only in inc/


def test_strings_keep_their_trigraphs_as_gcc_leaves_them() -> None:
    source = preprocess('#define X 1\ns("a??=b", X).\n', "p.dl")
    assert source.text.strip() == 's("a??=b", 1).'


def test_macros_are_read_as_souffles_dash_m() -> None:
    assert parse_macros(["A=1 B", "C=x=y"]) == {"A": "1", "B": "1", "C": "x=y"}


def test_a_text_without_directives_is_not_preprocessed() -> None:
    text = '.decl a(x: symbol)\na("#define N").\n// #include "x"\n'
    assert not needs_preprocessing(text)
    assert preprocess(text, "p.dl", files={}).text is text
    assert needs_preprocessing("a(RAM_DOMAIN_SIZE).")
    assert needs_preprocessing("a(N).", {"N": "1"})
    assert needs_preprocessing("  #define N 1\n")


def test_diagnostics_point_into_the_files_as_written(tmp_path: Path) -> None:
    (tmp_path / "bad.dl").write_text('.decl b(x: number)\nb("s").\n')
    text = '#define N 3\n#include "bad.dl"\n.decl a(x: number)\n\n  a(N, N).\n'
    source = preprocess(text, "main.dl", include_dirs=[tmp_path])
    with pytest.raises(ProgramError) as info:
        check_preprocessed(source, "main.dl")
    found = {
        (Path(d.filename).name, d.line, d.column, d.source_line) for d in info.value.diagnostics
    }
    assert found == {("bad.dl", 2, 3, 'b("s").'), ("main.dl", 5, 3, "  a(N, N).")}


def test_a_posted_program_reads_no_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.dl"
    secret.write_text("a(1).\n")
    for name in (str(secret), "secret.dl", "../secret.dl"):
        with pytest.raises(ProgramError) as info:
            preprocess(f'.decl a(x: number)\n#include "{name}"\n', "<rules>", files={})
        (diagnostic,) = info.value.diagnostics
        assert (diagnostic.code, diagnostic.line) == (PREPROCESSOR_ERROR, 2)
        assert "never reads the server's files" in diagnostic.message
    posted = preprocess('#include "lib.dl"\n', "<rules>", files={"lib.dl": "a(1).\n"})
    assert posted.text.strip() == "a(1)."


def test_errors_are_refusals_at_their_directive(tmp_path: Path) -> None:
    (tmp_path / "self.dl").write_text('#include "self.dl"\n')
    cases = {
        "#if 1\n#error stop here\n#endif\n": (2, "#error stop here"),
        '#include "missing.dl"\n': (1, "missing.dl"),
        "#frobnicate\n": (1, "#frobnicate"),
    }
    for text, (line, words) in cases.items():
        with pytest.raises(ProgramError) as info:
            preprocess(text, "p.dl", include_dirs=[tmp_path])
        first = info.value.diagnostics[0]
        assert (first.code, first.line) == (PREPROCESSOR_ERROR, line) and words in first.message
    with pytest.raises(ProgramError) as info:
        preprocess('#include "self.dl"\n', str(tmp_path / "main.dl"), include_dirs=[tmp_path])
    assert info.value.diagnostics[0].code == PREPROCESSOR_ERROR


def test_added_rules_are_preprocessed_and_their_errors_point_into_them() -> None:
    m = Materialization.from_text("#define BASE 10\n.decl e(x: number)\ne(BASE).\n")
    m.bootstrap()
    assert sorted(m.rows("e")) == [(10,)]
    m.apply(Delta(add_rules=["#define STEP 2\nf(x + STEP) :- e(x).\n"]))
    assert sorted(m.rows("f")) == [(12,)]
    with pytest.raises(ProgramError) as info:
        m.apply(Delta(add_rules=['#define K 1\n\ng(x, K) :- e(x).\nh(x) :- e(x), x < "s".\n']))
    (diagnostic,) = info.value.diagnostics
    assert (diagnostic.filename, diagnostic.line) == ("<rules>", 4)
    assert diagnostic.source_line == 'h(x) :- e(x), x < "s".'
