"""`reasoner workload`: the elastic paper's 13-epoch pattern, and the epochs directory format."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.cli.main import main
from reasoner.cli.workload import (
    PATTERN,
    Epoch,
    Facts,
    Workload,
    elastic_pattern,
    read_workload,
    write_workload,
)
from reasoner.errors import InputDataError
from reasoner.io.batch import FactBatch
from reasoner.io.facts import Row

PROGRAM = """
.decl edge(x: number, y: number)
.input edge
.decl label(x: number, l: symbol)
.input label(delimiter=",")
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""

INPUTS: dict[str, list[Row]] = {
    "edge": [(i, i + 1) for i in range(60)],
    "label": [(i, f"node {i}") for i in range(40)],
}


def _as_set(facts: Facts) -> set[tuple[str, Row]]:
    return {(name, row) for name, rows in facts.items() for row in rows}


def _replayed(initial: Facts, epochs: Iterable[Epoch]) -> list[set[tuple[str, Row]]]:
    """The facts present after each epoch, starting from `initial`."""
    present = _as_set(initial)
    history = []
    for epoch in epochs:
        present = (present - _as_set(epoch.retract)) | _as_set(epoch.insert)
        history.append(present)
    return history


def test_pattern_shape_small_pairs_then_large() -> None:
    workload = elastic_pattern(INPUTS, small=10, large_fraction=0.1, seed=1)
    assert len(workload.epochs) == len(PATTERN) == 12
    assert workload.holdback == {}
    sizes = [(len(_as_set(e.insert)), len(_as_set(e.retract))) for e in workload.epochs]
    retract, insert = (0, 10), (10, 0)  # 10 small tuples; the large set is 10% of 100 tuples
    assert sizes == [retract, insert] * 3 + [retract] + [retract, insert] * 2 + [insert]
    epochs = workload.epochs
    for retracting, inserting in [(0, 1), (2, 3), (4, 5), (6, 11), (7, 8), (9, 10)]:
        assert _as_set(epochs[inserting].insert) == _as_set(epochs[retracting].retract)


def test_every_change_is_effective_and_the_last_epoch_restores_the_input() -> None:
    workload = elastic_pattern(INPUTS, small=10, large_fraction=0.3, seed=7)
    everything = _as_set(INPUTS)
    present = everything
    for epoch, after in zip(workload.epochs, _replayed(INPUTS, workload.epochs), strict=True):
        assert _as_set(epoch.retract) <= present, "a retraction of an absent fact"
        assert not _as_set(epoch.insert) & present, "an insertion of a present fact"
        present = after
    assert present == everything


def test_deterministic_for_a_seed_and_samples_across_relations() -> None:
    first = elastic_pattern(INPUTS, small=30, seed=3)
    assert first == elastic_pattern(INPUTS, small=30, seed=3)
    assert first != elastic_pattern(INPUTS, small=30, seed=4)
    touched = {name for epoch in first.epochs for name in epoch.retract}
    assert touched == {"edge", "label"}


def test_duplicate_input_rows_count_once() -> None:
    workload = elastic_pattern({"edge": [(1, 2), (1, 2)]}, small=5, large_fraction=0.0)
    assert workload.epochs[0].retract == {"edge": [(1, 2)]}


@pytest.mark.parametrize(
    ("inputs", "small", "fraction"),
    [
        ({"edge": [(1, 2), (2, 3)]}, 10, 0.1),  # fewer tuples than K; the large set is 1 tuple
        ({"edge": [(1, 2), (2, 3)]}, 10, 1.0),  # everything retracted: later small sets empty
        ({"edge": []}, 10, 0.5),  # no input at all
        ({"edge": [(1, 2)]}, 0, 0.0),  # nothing changes
    ],
)
def test_edge_cases_still_end_at_the_input(
    inputs: dict[str, list[Row]], small: int, fraction: float
) -> None:
    workload = elastic_pattern(inputs, small=small, large_fraction=fraction)
    assert len(workload.epochs) == 12
    assert _replayed(inputs, workload.epochs)[-1] == _as_set(inputs)
    total = len(_as_set(inputs))
    assert len(_as_set(workload.epochs[0].retract)) == min(small, total)
    expected_large = max(1, round(fraction * total)) if fraction and total else 0
    assert len(_as_set(workload.epochs[6].retract)) == expected_large


def test_fraction_and_size_are_validated() -> None:
    with pytest.raises(ValueError, match="fraction"):
        elastic_pattern(INPUTS, large_fraction=1.5)
    with pytest.raises(ValueError, match="small"):
        elastic_pattern(INPUTS, small=-1)


def test_written_workload_reads_back(tmp_path: Path) -> None:
    analyzed = check_program(PROGRAM)
    workload = elastic_pattern(INPUTS, small=4, seed=2)
    write_workload(analyzed, workload, tmp_path / "epochs", {"seed": 2})
    # Rows come back sorted (fact files are written deterministically): compare as sets.
    back = read_workload(analyzed, tmp_path / "epochs")
    assert back.holdback == {}
    assert len(back.epochs) == 12
    for written, read in zip(workload.epochs, back.epochs, strict=True):
        assert _as_set(read.insert) == _as_set(written.insert)
        assert _as_set(read.retract) == _as_set(written.retract)
    manifest = json.loads((tmp_path / "epochs" / "workload.json").read_text())
    assert manifest["seed"] == 2
    assert [e["retract"] for e in manifest["epochs"]][:2] == [4, 0]


def test_files_use_the_relation_delimiter(tmp_path: Path) -> None:
    """So that any row readable from FACTS_DIR (here a symbol with a tab) can be written back."""
    analyzed = check_program(PROGRAM)
    workload = Workload((Epoch(retract={"label": [(1, "a\tb")]}),))
    write_workload(analyzed, workload, tmp_path / "epochs", {})
    written = tmp_path / "epochs" / "0001" / "retract" / "label.facts"
    assert written.read_text() == "1,a\tb\n"
    assert _as_lists(read_workload(analyzed, tmp_path / "epochs")) == workload


def test_writing_into_a_non_empty_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "0013").mkdir()
    with pytest.raises(InputDataError, match="not an empty directory"):
        write_workload(check_program(PROGRAM), Workload(()), tmp_path / "old", {})


def test_holdback_reads_back(tmp_path: Path) -> None:
    analyzed = check_program(PROGRAM)
    workload = Workload((Epoch(insert={"edge": [(1, 2)]}),), holdback={"edge": [(1, 2)]})
    write_workload(analyzed, workload, tmp_path / "epochs", {})
    back = read_workload(analyzed, tmp_path / "epochs")
    assert all(isinstance(rows, FactBatch) for rows in back.holdback.values())  # columns
    assert _as_lists(back) == workload


def test_cli_writes_the_pattern(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "p.dl"
    program.write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "edge.facts").write_text("1\t2\n2\t3\n3\t4\n", encoding="utf-8")
    (tmp_path / "label.facts").write_text("1,one\n", encoding="utf-8")
    out = tmp_path / "epochs"
    args = ["workload", str(program), "-F", str(tmp_path), "--out", str(out), "--small", "2"]
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        *(f"{n:04d}" for n in range(1, 13)),
        "holdback",
        "workload.json",
    ]
    manifest = json.loads((out / "workload.json").read_text())
    assert manifest["input_tuples"] == 4
    assert (manifest["small"], manifest["large_fraction"], manifest["seed"]) == (2, 0.1, 0)
    assert main(args) == 1, "a second run must not write over the first"
    assert "not an empty directory" in capsys.readouterr().err


def test_cli_reports_bad_facts_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "p.dl"
    program.write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "edge.facts").write_text("1\tx\n", encoding="utf-8")
    (tmp_path / "label.facts").write_text("", encoding="utf-8")
    assert main(["workload", str(program), "-F", str(tmp_path), "--out", str(tmp_path / "e")]) == 1
    assert "edge.facts:1" in capsys.readouterr().err


def _as_lists(workload: Workload) -> Workload:
    """A workload read back (batches of columns) with its rows as lists, to compare."""

    def rows(facts: Facts) -> Facts:
        return {name: list(batch) for name, batch in facts.items()}

    epochs = tuple(Epoch(rows(e.insert), rows(e.retract)) for e in workload.epochs)
    return Workload(epochs, rows(workload.holdback))
