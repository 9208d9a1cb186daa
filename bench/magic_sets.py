"""The magic-set transformation on same-generation over a binary tree (Soufflé's `magic_samegen`).

    .venv/bin/python -m bench.magic_sets [--depth 15] [--time-cap 120] [--out FILE]

A complete binary tree of 2^depth - 1 nodes (depth 15: 32,767), node x's parent x / 2. The
program asks `samegen(16384, 32767)`: without the transformation, `samegen` holds every pair
of nodes of one depth (358 million at depth 15); with it, the generations of the two nodes'
ancestors. Run side by side in one run, each as a whole process: `reasoner run` with and
without `-m '*'`, and Soufflé 2.5 (the 64-bit build, interpreted) with and without
`--magic-transform='*'`, each under the time cap. Then the service: `reasoner serve` on a fresh
SQLite database with the same program (no output asking for `samegen`: it is goal-directed),
the tree posted as facts, and `POST /v1/query` with a bound argument (`samegen(16384, y)`,
and another node), each asked five times, timed at the client. Prints a Markdown table (and
writes it to `--out`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import publish
from bench.served import served

SOUFFLE = Path(__file__).resolve().parents[2] / "shared" / "tools" / "souffle64" / "bin" / "souffle"
PROGRAM = """
.decl node(x: number)
.input node
.decl parent(x: number, p: number)
.input parent
.decl samegen(x: number, y: number)
samegen(x, x) :- node(x).
samegen(x, y) :- parent(x, a), samegen(a, b), parent(y, b).
.decl query()
.output query
query() :- samegen({left}, {right}).
"""
SERVED = """
.pragma "magic-transform" "*"
.decl node(x: number)
.decl parent(x: number, p: number)
.decl samegen(x: number, y: number)
samegen(x, x) :- node(x).
samegen(x, y) :- parent(x, a), samegen(a, b), parent(y, b).
"""


def _tree(directory: Path, depth: int) -> tuple[int, int]:
    """The tree's facts in `directory`; its leftmost and rightmost leaves."""
    nodes = range(1, 2**depth)
    (directory / "node.facts").write_text("".join(f"{x}\n" for x in nodes))
    (directory / "parent.facts").write_text("".join(f"{x}\t{x // 2}\n" for x in nodes[1:]))
    return 2 ** (depth - 1), 2**depth - 1


def _timed(command: list[str], cap: float) -> str:
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=cap, check=False)
    except subprocess.TimeoutExpired:
        return f"not done in {cap:.0f} s"
    seconds = time.perf_counter() - start
    return f"{seconds:.2f} s" if done.returncode == 0 else f"exit {done.returncode}"


def _processes(work: Path, depth: int, cap: float) -> list[tuple[str, str]]:
    left, right = _tree(work, depth)
    program = work / "samegen.dl"
    program.write_text(PROGRAM.format(left=left, right=right))
    reasoner = [str(Path(sys.executable).parent / "reasoner"), "run", str(program)]
    reasoner += ["-F", str(work), "-D", str(work), "-q"]
    souffle = [str(SOUFFLE), "-F", str(work), "-D", str(work), str(program)]
    return [
        ("ours, `reasoner run -m '*'`", _timed([*reasoner, "-m", "*"], cap)),
        ("ours, `reasoner run` (no transformation)", _timed(reasoner, cap)),
        ("Soufflé 2.5 interpreted, `--magic-transform='*'`", _timed([*souffle, "-m", "*"], cap)),
        ("Soufflé 2.5 interpreted (no transformation)", _timed(souffle, cap)),
    ]


def _service(work: Path, depth: int) -> list[tuple[str, str]]:
    rows = []
    # Each query is evaluated each time (kept answers would time the cache: bench.query_pages).
    settings = {
        "REASONER_DATABASE_URL": f"sqlite:///{work / 'magic.db'}",
        "REASONER_QUERY_CACHE_ROWS": "0",
    }
    with served(settings) as server:
        client = server.client
        text = {"content-type": "text/plain"}
        client.post("/v1/rules", content=SERVED, headers=text).raise_for_status()
        nodes = range(1, 2**depth)
        facts = {"node": [[x] for x in nodes], "parent": [[x, x // 2] for x in nodes[1:]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        for query in (f"samegen({2 ** (depth - 1)}, y)", f"samegen({2**depth - 1}, y)"):
            times, answers = [], 0
            for _ in range(5):
                start = time.perf_counter()
                body = client.post("/v1/query", json={"query": query, "limit": 1})
                times.append(time.perf_counter() - start)
                answers = body.raise_for_status().json()
            first, rest = times[0], sorted(times[1:])[len(times[1:]) // 2]
            count = f"{len(answers['rows'])} row shown"
            rows.append(
                (
                    f"service `POST /v1/query` `{query}`",
                    f"first {first * 1000:.0f} ms, then median {rest * 1000:.0f} ms ({count})",
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=15)
    parser.add_argument("--time-cap", type=float, default=120.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        rows = _processes(work, args.depth, args.time_cap) + _service(work, args.depth)
    nodes = 2**args.depth - 1
    lines = [f"Same generation, a binary tree of {nodes:,} nodes", "", "| what | time |"]
    lines += ["| --- | ---: |"] + [f"| {what} | {time_taken} |" for what, time_taken in rows]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
