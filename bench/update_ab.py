"""Same-process A/B of the two Update engines: the generated Python code (A) against the
compiled kernel (B), on CRDT's random 10-tuple update sets.

Machines of this type drift by about 8 % in speed from one process to the next, which hides
the few per cent many changes are worth when two versions run in separate processes. Here both
engines maintain the same materialization in one process: each has its own plans, swapped in
before its epochs, and the (delete, re-insert) pairs alternate A-B and B-A over the sets and
rounds. `--a compiled` makes it an A/A run (the ratio then comes out within a few per cent of
1).

    .venv/bin/python bench/update_ab.py [--a python] [--rounds 4] [--sets 5] [--size 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from reasoner import materialization
from reasoner.analysis import check_program
from reasoner.elastic.engines import UPDATE_ENGINES, EngineSettings
from reasoner.elastic.epoch import Delta
from reasoner.io.facts import load_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from update_crdt import CRDT, pick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", choices=UPDATE_ENGINES, default="python", help="engine A")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--program", default="crdt_linear.dl")
    args = parser.parse_args()

    engines = {"A": args.a, "B": "compiled"}
    analyzed = check_program((CRDT / args.program).read_text(), args.program)
    m = materialization.Materialization(analyzed)
    m.load(load_inputs(analyzed, CRDT))
    m.bootstrap()
    plans: dict[str, dict] = {name: {} for name in engines}

    def use(name: str) -> None:
        m.engines = EngineSettings(update=engines[name])
        m._plans = plans[name]

    def pair(rows: dict[str, list[tuple]]) -> float:
        start = time.process_time()
        m.apply(Delta(retract=rows), strategy="update")
        m.apply(Delta(insert=rows), strategy="update")
        return time.process_time() - start

    warm_up = pick(m, random.Random(1000), args.size)
    for name in engines:  # make each engine's plans outside the measurement
        use(name)
        pair(warm_up)
    sets = [pick(m, random.Random(seed), args.size) for seed in range(args.sets)]
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    for round_ in range(args.rounds):
        for i, rows in enumerate(sets):
            order = ("A", "B") if (round_ + i) % 2 == 0 else ("B", "A")
            for name in order:
                use(name)
                seconds[name].append(pair(rows))
    a, b = seconds["A"], seconds["B"]
    print(f"A = {args.a}, B = compiled; CPU seconds of a (delete, re-insert) pair")
    print(f"A total {sum(a):.3f} s, B total {sum(b):.3f} s, B/A {sum(b) / sum(a):.3f}")
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    print(f"median of the per-pair ratios B/A: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
