"""`reasoner replay`: epochs through one materialization, `--check`, the report, exit codes."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.cli.main import main
from reasoner.cli.replay import initial_facts, replay
from reasoner.cli.workload import Epoch, Workload, elastic_pattern
from reasoner.io.batch import FactBatch, parse_facts_batch
from reasoner.materialization import Materialization

PROGRAM = """
.decl edge(x: number, y: number)
.input edge
.decl tc(x: number, y: number)
.output tc
.decl unreached(x: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
unreached(y) :- edge(_, y), !tc(1, y).
"""

EDGES = [(i, i + 1) for i in range(1, 30)] + [(30, 1), (40, 41)]


@pytest.fixture
def workload_dir(tmp_path: Path) -> Path:
    """A directory holding the program `tc.dl`, `facts/` and the elastic workload `epochs/`."""
    program = tmp_path / "tc.dl"
    program.write_text(PROGRAM, encoding="utf-8")
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "edge.facts").write_text("".join(f"{a}\t{b}\n" for a, b in EDGES), encoding="utf-8")
    assert (
        main(["workload", str(program), "-F", str(facts), "--out", str(tmp_path / "epochs")]) == 0
    )
    return tmp_path


def _replay_args(directory: Path, *extra: str) -> list[str]:
    return [
        "replay",
        str(directory / "tc.dl"),
        "-F",
        str(directory / "facts"),
        "--epochs",
        str(directory / "epochs"),
        *extra,
    ]


@pytest.mark.parametrize(
    ("flags", "strategies"),
    [
        ([], {"update"}),  # tiny program: always under the 0.5 s deadline floor
        (["--switching-parameter", "0.5"], {"update"}),
        (["--always-update"], {"update"}),
        (["--always-bootstrap"], {"bootstrap"}),
    ],
)
def test_check_passes_and_report_has_every_epoch(
    workload_dir: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    strategies: set[str],
) -> None:
    report_path = workload_dir / "report.json"
    assert main(_replay_args(workload_dir, "--check", "--report", str(report_path), *flags)) == 0
    report = json.loads(report_path.read_text())
    epochs = report["epochs"]
    assert [e["epoch"] for e in epochs] == list(range(13))
    assert epochs[0]["strategy"] == "bootstrap"
    assert {e["strategy"] for e in epochs[1:]} == strategies
    assert report["peak_memory_bytes"] > 0
    assert report["seconds"] == pytest.approx(sum(e["seconds"] for e in epochs))
    for epoch in epochs:
        assert epoch["differences"] == {}
        assert epoch["check_seconds"] >= 0 and epoch["seconds"] >= 0
        assert epoch["state_bytes"] > 0 and epoch["peak_memory_bytes"] > 0
        assert [s["index"] for s in epoch["strata"]] == [0, 1]
        assert {s["strategy"] for s in epoch["strata"]} <= {"bootstrap", "update", "unchanged"}
    assert epochs[0]["inserted"] == 900 + 1 + 1  # tc on the 30-cycle, tc(40, 41), unreached(41)
    assert epochs[0]["facts_inserted"] == len(EDGES)
    assert epochs[1]["facts_retracted"] == 10 and epochs[2]["facts_inserted"] == 10
    assert epochs[2]["inserted"] == epochs[1]["retracted"]
    err = capsys.readouterr().err
    assert err.count("check ok") == 13


def test_without_check_nothing_is_checked(
    workload_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = workload_dir / "report.json"
    assert main(_replay_args(workload_dir, "--report", str(report_path))) == 0
    epoch = json.loads(report_path.read_text())["epochs"][5]
    assert epoch["check_seconds"] is None and epoch["differences"] is None
    assert "check" not in capsys.readouterr().err


def test_a_failed_check_exits_3_naming_the_relation(
    workload_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Materialization, "differences", lambda self, other: {"tc": 2})
    report_path = workload_dir / "report.json"
    assert main(_replay_args(workload_dir, "--check", "--report", str(report_path))) == 3
    assert "epoch 0: the state differs from a fresh Bootstrap in tc (2 tuples)" in (
        capsys.readouterr().err
    )
    assert [e["differences"] for e in json.loads(report_path.read_text())["epochs"]] == [{"tc": 2}]


def test_every_epoch_equals_a_fresh_bootstrap_for_each_strategy() -> None:
    analyzed = check_program(PROGRAM)
    inputs = {"edge": EDGES}
    workload = elastic_pattern(inputs, small=3, large_fraction=0.5, seed=5)
    for strategy in ("auto", "update", "bootstrap"):
        records = list(replay(analyzed, inputs, workload, strategy=strategy, check=True))
        assert [r.differences for r in records] == [{}] * 13, strategy


def test_holdback_is_left_out_of_epoch_0() -> None:
    analyzed = check_program(PROGRAM)
    workload = Workload((Epoch(insert={"edge": [(40, 41)]}),), holdback={"edge": [(40, 41)]})
    first, second = replay(analyzed, {"edge": EDGES}, workload)
    assert first.facts_inserted == len(EDGES) - 1
    assert (second.report.inserted, second.facts_inserted) == (2, 1)  # tc(40, 41), unreached(41)
    assert initial_facts({"edge": [(1, 2), (3, 4)]}, {"edge": [(3, 4), (5, 6)]}) == {
        "edge": [(1, 2)]
    }


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({"0001/insert/edge.facts": "1\tx\n"}, "0001/insert/edge.facts:1: column 2"),
        ({"0001/insert/nope.facts": "1\n"}, "unknown relation `nope`"),
        ({"0001/inserts/edge.facts": "1\t2\n"}, "unexpected entry in an epoch"),
        ({"0001/insert/edge.csv": "1\t2\n"}, "expected <relation>.facts"),
        ({"0002/insert/edge.facts": "1\t2\n"}, "numbered 1..n without gaps, found [2]"),
        ({"0001/retract/edge.facts": "", "1/retract/edge.facts": ""}, "appears twice"),
        ({"epoch1/insert/edge.facts": "1\t2\n"}, "unexpected directory"),
        ({"holdback/edge.facts": "1\t2\t3\n"}, "holdback/edge.facts:1: expected 2 field(s)"),
    ],
)
def test_malformed_epochs_exit_1_with_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    layout: dict[str, str],
    message: str,
) -> None:
    (tmp_path / "tc.dl").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "edge.facts").write_text("1\t2\n", encoding="utf-8")
    for relative, text in layout.items():
        path = tmp_path / "epochs" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert main(_replay_args(tmp_path)) == 1
    assert message in capsys.readouterr().err


def test_missing_epochs_directory_exits_1(
    workload_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _replay_args(workload_dir)
    args[args.index("--epochs") + 1] = str(workload_dir / "absent")
    assert main(args) == 1
    assert "not a directory of epochs" in capsys.readouterr().err


def test_program_error_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tc.dl").write_text("p(x) :- q(y).\n", encoding="utf-8")
    assert main(_replay_args(tmp_path)) == 2
    assert "unsafe_rule" in capsys.readouterr().err


def test_strategy_flags_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "p.dl", "--epochs", "e", "--always-update", "--always-bootstrap"])
    assert "not allowed with" in capsys.readouterr().err


def test_epoch_0_counts_every_tuple_of_the_derived_relations() -> None:
    """Facts of a relation that also has rules count, as they do in later epochs' diffs, so
    epoch 0 plus each later epoch's inserted minus retracted is the derived state's size."""
    analyzed = check_program(
        ".decl e(x: number, y: number)\n.input e\n.input f\ne(x, y) :- f(x, y)."
    )
    workload = Workload(
        (Epoch(insert={"e": [(9, 9)]}), Epoch(retract={"e": [(1, 2)]})), holdback={}
    )
    inputs = {"e": [(1, 2), (3, 4)], "f": [(5, 6)]}
    records = list(replay(analyzed, inputs, workload))
    assert [(r.report.inserted, r.report.retracted) for r in records] == [(3, 0), (1, 0), (0, 1)]


def test_columns_read_as_a_batch_stay_columns_and_go_once_loaded() -> None:
    """`reasoner replay` reads its inputs as columns: epoch 0 takes them as they are (or
    filtered, as columns, when rows are held back), and the replay lets them go once the state
    holds them (crdt_linear's rows as tuples were 56 MB for the whole replay)."""
    analyzed = check_program(PROGRAM)
    text = "".join(f"{a}\t{b}\n" for a, b in [*EDGES, EDGES[0]])  # one row twice
    batch = parse_facts_batch(text, analyzed.relations["edge"].value_types)
    assert isinstance(batch, FactBatch) and batch.encoded is not None
    held = {"edge": [(40, 41), (7, 7)]}
    filtered = initial_facts({"edge": batch}, held)["edge"]
    assert isinstance(filtered, FactBatch) and filtered.encoded is not None
    assert list(filtered) == [row for row in [*EDGES, EDGES[0]] if row != (40, 41)]
    assert initial_facts({"edge": batch}, {})["edge"] is batch
    column = weakref.ref(batch.encoded[0])
    workload = Workload((Epoch(insert={"edge": [(40, 41)]}),), holdback={})
    records = replay(analyzed, {"edge": batch}, workload)
    del batch, filtered
    first = next(records)
    gc.collect()
    assert column() is None
    assert first.facts_inserted == len(EDGES)  # distinct rows
    assert [r.report.inserted for r in records] == [0]
