"""The benchmark harness: translators, generators, and a small run of `python -m bench --quick`
(every system installed here; the quick mode is a correctness check, not a measurement)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import generate
from bench.runners.common import parse_rows
from bench.translate import Unsupported, to_clingo, to_pydbsp, transitive_closure
from reasoner.analysis import check_program
from reasoner.io.facts import parse_facts_text
from tests.conftest import examples

REPO = Path(__file__).resolve().parents[2]


def analyzed(text: str):  # type: ignore[no-untyped-def]
    return check_program(text, "t.dl")


def test_clingo_translation_names_negation_comparisons() -> None:
    program = analyzed(
        ".decl E(x: number, y: number)\n.input E\n.decl R(x: number, s: symbol)\n.output R\n"
        'R(x, "a\\"b") :- E(x, y), !E(y, x), x < y + 1.\n'
    )
    text = to_clingo(program)
    assert 'r_R(V_x,"a\\"b") :- r_E(V_x,V_y), not r_E(V_y,V_x), V_x<(V_y+1).' in text
    assert "#show r_R/2." in text


def test_pydbsp_rejects_comparisons() -> None:
    program = analyzed(".decl E(x: number)\n.input E\n.decl R(x: number)\nR(x) :- E(x), x > 1.\n")
    with pytest.raises(Unsupported):
        to_pydbsp(program)


@pytest.mark.parametrize(
    ("rule", "left"),
    [("tc(x, z) :- tc(x, y), edge(y, z).", True), ("tc(x, z) :- edge(x, y), tc(y, z).", False)],
)
def test_transitive_closure_shapes(rule: str, left: bool) -> None:
    program = analyzed(
        f".decl edge(x: number, y: number)\n.input edge\ntc(x, y) :- edge(x, y).\n{rule}\n"
    )
    assert transitive_closure(program).left_linear is left


def test_not_transitive_closure() -> None:
    program = analyzed(
        ".decl edge(x: number, y: number)\n.input edge\ntc(x, y) :- edge(x, y).\n"
        "tc(x, z) :- tc(x, y), tc(y, z).\n"
    )
    with pytest.raises(Unsupported):
        transitive_closure(program)


def test_graph_generators() -> None:
    uniform = generate.uniform_edges(100, 150, seed=1)
    assert len(uniform) == len(set(uniform)) == 150
    assert all(1 <= x <= 100 and 1 <= y <= 100 and x != y for x, y in uniform)
    rmat = generate.rmat_edges(1000, 5000, seed=1)
    assert len(rmat) == len(set(rmat)) <= 5000
    assert max(max(e) for e in rmat) <= 1024
    degrees: dict[int, int] = {}
    for x, _ in rmat:
        degrees[x] = degrees.get(x, 0) + 1
    assert max(degrees.values()) > 4 * len(rmat) / len(degrees)  # skewed, unlike uniform


def test_lubm_generator_formats(tmp_path: Path) -> None:
    count = generate.write_lubm(tmp_path, universities=1, departments=1, seed=0)
    triples = (tmp_path / "triples" / "triple.facts").read_text().splitlines()
    assert len(triples) == count + len(
        generate.DATA.joinpath("univ-bench-tbox.facts").read_text().splitlines()
    )
    assert all(len(line.split("\t")) == 3 for line in triples)
    owl = {p.stem: p.read_text().splitlines() for p in (tmp_path / "owl2rl").iterdir()}
    assert set(owl) == set(generate.OWL2RL_INPUTS)
    assert len(owl["headOf"]) == 1 and len(owl["Department"]) == 1
    assert all(len(row.split("\t")) == 2 for row in owl["takesCourse"])


def test_quick_run_agrees(tmp_path: Path) -> None:
    """A small quick run: every installed system on a graph and a CRDT prefix, checked equal."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--quick",
            "--workloads",
            "graph1000-rand1k",
            "crdt_linear-2k",
            "--out",
            str(tmp_path / "report"),
            "--work",
            str(tmp_path / "work"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    for workload in results["workloads"].values():
        for name, system in workload["systems"].items():
            assert system["status"] in ("ok", "n/a"), (name, system)
            assert system["check"] in ("reference", "equal", "n/a"), (name, system)
    assert (tmp_path / "report" / "README.md").exists()


VALID_FIELDS = {
    "number": st.integers(-(2**63), 2**63 - 1).map(str),
    "symbol": st.text(st.characters(exclude_characters="\t,\n\r\x00"), max_size=6),
}


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_the_runners_read_fact_text_as_the_engine_reads_it(data: st.DataObject) -> None:
    """The runners keep a reader of their own (they import nothing from `reasoner`), kept
    minimal because their inputs were checked by the engine first: on such text it must give
    the engine's rows."""
    types = data.draw(st.lists(st.sampled_from(["number", "symbol"]), min_size=1, max_size=3))
    delimiter = data.draw(st.sampled_from(["\t", ","]))
    lines = data.draw(st.lists(st.tuples(*(VALID_FIELDS[kind] for kind in types)), max_size=5))
    text = "".join(delimiter.join(fields) + "\n" for fields in lines)
    assert parse_rows(text, types, delimiter) == parse_facts_text(text, types, "f", delimiter)
