"""How long a proof takes (`reasoner.reads.proofs`), by its depth, on the bench programs.

    .venv/bin/python bench/explain_latency.py [--out FILE]

For each program: a Bootstrap, then proofs of tuples first derived at growing iterations (the
deepest proofs each relation has), each with a fresh `Explainer` (so every request pays for its
plans and the indexes it builds), timed, with the proof's depth and size or the error it met.
Prints a Markdown table (and writes it to `--out`). The goals (issue 26): TC and LUBM within
50 ms; `crdt_linear`'s `nextVis` at depth > 1,000 within 1 s, or a depth error.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from reasoner import Materialization
from reasoner.analysis import check_program
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs
from reasoner.reads.proofs import Explainer, ExplainError

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
CASES = (
    ("graph10000-rmat1k", "program.dl", "tc", (1, 3, 5)),
    ("lubm1", "program.dl", "t", (1, 2, 3)),
    ("crdt", "crdt_linear.dl", "nextVis", (1, 100, 1_000, 2_000, 5_000, 14_000)),
)


def _built(directory: str, program: str) -> Materialization:
    path = BENCH / directory / program
    analyzed = check_program(path.read_text(encoding="utf-8"), str(path))
    m = Materialization(analyzed, maintained=False)
    m.load(load_inputs(analyzed, BENCH / directory, read=read_facts_batch))
    m.bootstrap()
    return m


def measure() -> list[tuple[str, str, int, str, str, float]]:
    rows = []
    for directory, program, relation, iterations in CASES:
        m = _built(directory, program)
        store = m.state[relation]
        by_iteration: dict[int, tuple] = {}
        for t in store:
            by_iteration.setdefault(store.get(t)[0], t)  # type: ignore[index]
        for wanted in iterations:
            found = min((k for k in by_iteration if k >= wanted), default=None)
            if found is None:
                continue
            explainer = Explainer(m.analyzed, m.state, m.symbols)
            start = time.perf_counter()
            try:
                proof = explainer.explain(relation, by_iteration[found])
                outcome, size = f"depth {proof.depth}", f"{len(proof.nodes)} tuples"
            except ExplainError as error:
                outcome, size = error.code, ""
            seconds = time.perf_counter() - start
            rows.append((directory, relation, found, outcome, size, seconds))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    lines = [
        "| program | relation | iteration | proof | size | ms |",
        "| --- | --- | ---: | --- | ---: | ---: |",
    ]
    for directory, relation, iteration, outcome, size, seconds in measure():
        cells = (directory, relation, iteration, outcome, size, f"{seconds * 1000:.1f}")
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    if args.out:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
