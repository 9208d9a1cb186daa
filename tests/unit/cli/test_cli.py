"""`reasoner run`: exit statuses, diagnostics on stderr, outputs and statistics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoner.cli import main as cli_main
from reasoner.cli.main import main

TC = """
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_run_writes_outputs_and_stats(tmp_path: Path) -> None:
    program = _write(tmp_path, "tc.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n2\t3\n3\t1\n")
    out = tmp_path / "out"
    stats = tmp_path / "stats.json"
    assert (
        main(["run", str(program), "-F", str(tmp_path), "-D", str(out), "--stats", str(stats)]) == 0
    )
    rows = set((out / "tc.csv").read_text().splitlines())
    assert rows == {f"{a}\t{b}" for a in (1, 2, 3) for b in (1, 2, 3)}
    report = json.loads(stats.read_text())
    assert report["relations"] == {"edge": 3, "tc": 9}
    (stratum,) = report["strata"]
    assert stratum["relations"] == ["tc"]
    assert stratum["iterations"] == 3
    assert stratum["derived"] == 9
    assert report["peak_memory_bytes"] > report["state_bytes"] > 0
    assert report["seconds"] >= report["bootstrap_seconds"] > 0


def test_a_command_of_the_engine_reads_no_other_parts_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding other parts' commands reads every installed distribution's metadata: `run`
    does without; a command that is not the engine's still finds them."""
    looked: list[str] = []

    def entry_points(group: str) -> list:
        looked.append(group)
        return []

    monkeypatch.setattr(cli_main, "entry_points", entry_points)
    program = _write(tmp_path, "tc.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n")
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path / "out")]) == 0
    assert looked == []
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert looked == ["reasoner.commands"]


NOT_IMPORTED_BY_A_RUN = (
    "polars",
    "importlib.metadata",
    "numpy.ma",
    "ctypes.util",
    "hashlib",
    "logging",
    "fractions",
    "reasoner.cli.replay",
    "reasoner.cli.workload",
)
"""What a start pays for and a `run` of numbers on the kernel never uses: Polars (75 ms, 36 MiB,
`reasoner.support.polars_on_demand`), other parts' commands' metadata, and modules of 2-12 ms
each that only rarer paths call."""


def test_a_run_of_numbers_on_the_kernel_never_imports_polars(tmp_path: Path) -> None:
    """Facts read and outputs written in C, every iteration on the kernel: none of
    `NOT_IMPORTED_BY_A_RUN` is imported. In a process of its own, since this one has imported
    them already."""
    program = _write(tmp_path, "tc.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n2\t3\n3\t1\n")
    out = tmp_path / "out"
    script = (
        "import sys; from reasoner.cli.main import main; "
        f"code = main(['run', {str(program)!r}, '-F', {str(tmp_path)!r}, '-D', {str(out)!r}]); "
        f"print(code, *[m for m in {NOT_IMPORTED_BY_A_RUN!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["0"], done.stderr
    assert len((out / "tc.csv").read_text().splitlines()) == 9


def test_program_error_exits_2_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "bad.dl", "p(x) :- q(y).\n.decl q(a: number)\n")
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{program}:1:3: unsafe_rule:" in err
    assert "^" in err


def test_malformed_facts_exit_1_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "tc.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n2\tthree\n")
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "edge.facts:2" in err


def test_a_byte_order_mark_is_not_data(tmp_path: Path) -> None:
    """Files saved by an editor that writes a byte-order mark: the mark starts neither the
    program's first token nor the first field of a fact file (`\ufeff1` is no number)."""
    program = tmp_path / "tc.dl"
    program.write_text(
        "\ufeff"
        + TC.replace(".decl edge", ".decl name(s: symbol)\n.input name\n.output name\n.decl edge"),
        encoding="utf-8",
    )
    _write(tmp_path, "edge.facts", "\ufeff1\t2\n2\t3\n")
    _write(tmp_path, "name.facts", "\ufeffalice\n")
    out = tmp_path / "out"
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(out)]) == 0
    assert (out / "tc.csv").read_text() == "1\t2\n1\t3\n2\t3\n"
    assert (out / "name.csv").read_text() == "alice\n"


def test_missing_facts_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = _write(tmp_path, "tc.dl", TC)
    assert main(["run", str(program), "-F", str(tmp_path / "nowhere"), "-D", str(tmp_path)]) == 1
    assert "edge" in capsys.readouterr().err


def test_unreadable_program_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "absent.dl")]) == 1
    assert "cannot read program" in capsys.readouterr().err


@pytest.mark.parametrize("params", ['IO="sqlite"', "headers=yes", 'rfc4180="true"'])
def test_unsupported_output_parameter_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], params: str
) -> None:
    program = _write(tmp_path, "tc.dl", TC.replace(".output tc", f".output tc({params})"))
    _write(tmp_path, "edge.facts", "1\t2\n")
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "relation tc: unsupported I/O parameter" in err
    assert "Traceback" not in err


def test_unwritable_output_directory_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "tc.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n")
    not_a_directory = _write(tmp_path, "taken", "")
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(not_a_directory)]) == 1
    assert "cannot write outputs" in capsys.readouterr().err


def test_explain_prints_every_stratums_update_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(
        tmp_path,
        "p.dl",
        TC
        + ".decl far(x: number, y: number)\n"
        + "far(x, y) :- tc(x, y), !edge(x, y).\n"
        + ".decl shift(z: number)\nshift(x + y) :- edge(x, y).\n",
    )
    assert main(["explain", str(program)]) == 0
    out = capsys.readouterr().out
    assert "stratum 0 {tc} (recursive)\n" in out
    # tc(x, z) :- tc(x, y), edge(y, z): a changed tc tuple probes edge by its first column.
    assert (
        "    from a changed tc(x, y)\n      probe edge(y, z)  [index on columns (0,)]  -> z" in out
    )
    assert "      not edge(x, y)  [tuple lookup]" in out
    # A head whose variables occur only inside arithmetic cannot be inverted: its deleted
    # tuples are re-discovered by evaluating the whole rule.
    assert "{shift}\n" in out
    assert "    from a deleted shift(x + y): the whole rule, scanning edge(x, y)\n" in out


def test_explain_why_prints_a_proof_or_why_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "p.dl", TC)
    _write(tmp_path, "edge.facts", "1\t2\n2\t3\n5\t6\n")
    argv = ["explain", str(program), "-F", str(tmp_path)]
    assert main([*argv, "--why", "tc(1, 3)", "--why", "tc(5, 1)"]) == 0
    assert capsys.readouterr().out == (
        "tc(1, 3)  #0  [iteration 2, 1 derivation]\n"
        "  by tc(x, z) :- tc(x, y), edge(y, z).\n"
        "  tc(1, 2)  #1  [iteration 1, 1 derivation]\n"
        "    by tc(x, y) :- edge(x, y).\n"
        "    edge(1, 2)  #3  [fact]\n"
        "  edge(2, 3)  #2  [fact]\n"
        "\n"
        "tc(5, 1) does not hold\n"
        "  tc(x, y) :- edge(x, y).\n"
        "    edge(x, y): no tuple matches (with x = 5, y = 1)\n"
        "  tc(x, z) :- tc(x, y), edge(y, z).\n"
        "    edge(y, z): no tuple matches (with x = 5, z = 1, y = 6)\n"
    )
    assert main([*argv, "--why", "tc(5, 6)", "--json"]) == 0
    (answer,) = json.loads(capsys.readouterr().out)
    assert answer["holds"] and answer["proof"]["nodes"][1]["row"] == [5, 6]
    assert main([*argv, "--why", "tc(x, 6)"]) == 1
    assert "is not a tuple" in capsys.readouterr().err
    assert main([*argv, "--why", "tc(1)"]) == 2  # a program error (README's exit statuses)
    assert "arity_mismatch" in capsys.readouterr().err
    assert main([*argv, "--why", "nosuch(1)"]) == 2
    assert "unknown_relation" in capsys.readouterr().err


def test_explain_why_takes_records_as_they_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(
        tmp_path,
        "p.dl",
        ".type Point = [x: number, name: symbol]\n.decl p(a: Point)\n.input p\n"
        ".decl Swap(a: Point)\nSwap([x + 1, n]) :- p([x, n]).\n",
    )
    _write(tmp_path, "p.facts", "[1, a]\n")
    argv = ["explain", str(program), "-F", str(tmp_path), "--json"]
    assert main([*argv, "--why", "Swap([2, x])"]) == 1
    assert "is not a tuple" in capsys.readouterr().err
    assert main([*argv, "--why", 'Swap([2, "a"])', "--why", 'Swap([5, "a"])']) == 0
    held, missing = json.loads(capsys.readouterr().out)
    assert held["holds"] and held["proof"]["nodes"][1]["row"] == ["[1, a]"]
    assert missing["why_not"][0]["reason"] == "every instance gives another tuple"
    assert main([*argv[:-1], "--why", 'Swap([2, "a"])']) == 0
    assert capsys.readouterr().out.splitlines()[:3] == [
        "Swap([2, a])  #0  [iteration 1, 1 derivation]",  # a record as written, a symbol quoted
        "  by Swap([x + 1, n]) :- p([x, n]).",
        "  p([1, a])  #1  [fact]",
    ]


TYPED = """
// As Soufflé's documentation writes it: named types, a legacy subtype, tuning pragmas.
.pragma "legacy"
.pragma "jobs" "4"
.type Person = symbol
.type Age <: number
.number_type Year
.type Key = Age | Year
.decl person(name: Person, age: Age)
.input person
.decl born(name: Person, year: Year)
.decl key(k: Key)
.output born
.output key
born(n, 2026 - a) :- person(n, a).
key(a) :- person(_, a).
key(y) :- born(_, y).
"""


def test_soufflé_types_and_pragmas_run_with_warnings_for_the_pragmas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "typed.dl", TYPED)
    _write(tmp_path, "person.facts", "ann\t42\nbob\t7\n")
    out = tmp_path / "out"
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(out)]) == 0
    assert set((out / "born.csv").read_text().splitlines()) == {"ann\t1984", "bob\t2019"}
    assert set((out / "key.csv").read_text().splitlines()) == {"42", "7", "1984", "2019"}
    err = capsys.readouterr().err
    assert err.count("ignored_pragma") == 2
    assert '`.pragma "jobs"` only tunes' in err


def test_printsize_stdout_and_headers_as_souffle_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Soufflé's formats: `name<TAB>size` for `.printsize`, a framed block for `IO=stdout`
    (the column names after the name with `headers=true`), a header line in a file."""
    program = _write(
        tmp_path,
        "tc.dl",
        TC.replace(".output tc", ".output tc(IO=stdout, headers=true)\n.printsize tc, edge")
        + '.output edge(IO="stdout")\n.output tc(filename="tc.txt", headers=true, delimiter=",")\n'
        + ".decl nothing()\n.output nothing(IO=stdout)\n.printsize nothing\n",
    )
    _write(tmp_path, "edge.facts", "1\t2\n2\t3\n")
    out = tmp_path / "out"
    assert main(["run", str(program), "-F", str(tmp_path), "-D", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == (
        "---------------\nedge\n===============\n1\t2\n2\t3\n===============\n"
        "edge\t2\n"
        "---------------\ntc\nx\ty\n===============\n1\t2\n1\t3\n2\t3\n===============\n"
        "tc\t3\n"
        "---------------\nnothing\n===============\n===============\n"
        "nothing\t0\n"
    )
    assert (out / "tc.txt").read_text() == "x,y\n1,2\n1,3\n2,3\n"
    assert not (out / "tc.csv").exists()


def test_the_executable_exits_with_its_outputs_whole_and_its_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The executable skips the interpreter's teardown after an engine command
    (`reasoner.cli.main.command`): what it printed to a pipe, which Python buffers (unless
    PYTHONUNBUFFERED, as in the image), is whole, and the status is the command's."""
    program = _write(
        tmp_path, "tc.dl", TC.replace(".output tc", ".output tc(IO=stdout)\n.printsize tc")
    )
    _write(tmp_path, "edge.facts", "1\t2\n2\t3\n")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "reasoner.cli.main", "run", str(program), "-F", str(tmp_path)]
    done = subprocess.run([*command, "-D", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "---------------\ntc\n===============\n1\t2\n1\t3\n2\t3\n===============\ntc\t3\n"
    )
    assert main(["explain", str(program)]) == 0
    plans = capsys.readouterr().out
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    explained = subprocess.run(
        [sys.executable, "-m", "reasoner.cli.main", "explain", str(program)],
        capture_output=True,
        text=True,
        env=buffered,
    )
    assert (explained.returncode, explained.stdout) == (0, plans)
    bad = _write(tmp_path, "bad.dl", "p(x) :- q(y).\n.decl q(a: number)\n")
    refused = subprocess.run(
        [sys.executable, "-m", "reasoner.cli.main", "run", str(bad)], capture_output=True, text=True
    )
    assert refused.returncode == 2
    assert f"{bad}:1:3: unsafe_rule:" in refused.stderr


def test_explain_reads_unsigned_literals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--why` takes an unsigned as written (`5u`, or a decimal past 2^63 - 1) and proofs show
    unsigned values as such."""
    top = 2**64 - 1
    program = _write(tmp_path, "p.dl", ".decl a(x: unsigned)\n.input a\nb(x - 1) :- a(x).\n")
    _write(tmp_path, "a.facts", f"{top}\n1\n")
    argv = ["explain", str(program), "-F", str(tmp_path), "--json"]
    assert main([*argv, "--why", f"b({top - 1})", "--why", "b(0u)"]) == 0
    first, second = json.loads(capsys.readouterr().out)
    assert first["holds"] and first["proof"]["nodes"][1]["row"] == [top]
    assert second["holds"] and second["proof"]["nodes"][1]["row"] == [1]


def test_a_pattern_refused_while_evaluating_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `match` pattern known only from the data is refused by name, not with a traceback."""
    program = _write(
        tmp_path,
        "p.dl",
        '.decl p(s: symbol)\np("[[.a.]]").\n.decl q(s: symbol)\n'
        'q(s) :- p(s), match(s, "a").\n.output q\n',
    )
    assert main(["run", str(program), "-D", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "unsupported_feature: `match` pattern '[[.a.]]'" in err
    assert "Traceback" not in err
