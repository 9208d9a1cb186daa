"""Same-process A/B of the Update code: `reasoner/elastic/update.py` at a git revision (A)
against the working tree's (B), on CRDT's random 10-tuple update sets.

Machines of this type drift by about 8 % in speed from one process to the next, which hides
the few per cent most changes to Update's generated code are worth when two versions run in
separate processes. Here both versions maintain the same materialization in one process:
each has its own compiled plans, swapped in before its epochs, and the (delete, re-insert)
pairs alternate A-B and B-A over the sets and rounds. With `--base` at the working tree's
content (an A/A run) the ratio comes out within 1-2 % of 1 (1.002 with the default 4 rounds).

Only `update.py` is taken from the base revision; everything it imports comes from the
working tree, so the two must agree on those interfaces.

    .venv/bin/python bench/update_ab.py [--base HEAD] [--rounds 4] [--sets 5] [--size 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from reasoner import materialization
from reasoner.analysis import check_program
from reasoner.elastic import update as working_update
from reasoner.elastic.epoch import Delta
from reasoner.io.facts import load_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from update_crdt import CRDT, pick

REPO = Path(__file__).resolve().parents[1]
MODULE = "reasoner/elastic/update.py"


def load_revision(revision: str, directory: Path) -> ModuleType:
    """`update.py` as of `revision`, imported under a name of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{MODULE}"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = directory / "update_base.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("update_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["update_base"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="git revision of version A")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--program", default="crdt_linear.dl")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        versions = {"A": load_revision(args.base, Path(directory)), "B": working_update}
    analyzed = check_program((CRDT / args.program).read_text(), args.program)
    m = materialization.Materialization(analyzed)
    m.load(load_inputs(analyzed, CRDT))
    m.bootstrap()
    plans: dict[str, dict] = {name: {} for name in versions}

    def use(name: str) -> None:
        materialization.StratumUpdatePlans = versions[name].StratumUpdatePlans  # type: ignore[misc]
        materialization.StratumUpdate = versions[name].StratumUpdate  # type: ignore[misc]
        m._plans = plans[name]

    def pair(rows: dict[str, list[tuple]]) -> float:
        start = time.process_time()
        m.apply(Delta(retract=rows), strategy="update")
        m.apply(Delta(insert=rows), strategy="update")
        return time.process_time() - start

    warm_up = pick(m, random.Random(1000), args.size)
    for name in versions:  # compile each version's plans outside the measurement
        use(name)
        pair(warm_up)
    sets = [pick(m, random.Random(seed), args.size) for seed in range(args.sets)]
    seconds: dict[str, list[float]] = {name: [] for name in versions}
    for round_ in range(args.rounds):
        for i, rows in enumerate(sets):
            order = ("A", "B") if (round_ + i) % 2 == 0 else ("B", "A")
            for name in order:
                use(name)
                seconds[name].append(pair(rows))
    a, b = seconds["A"], seconds["B"]
    print(f"A = {args.base}:{MODULE}, B = working tree; CPU seconds of a (delete, re-insert) pair")
    print(f"A total {sum(a):.3f} s, B total {sum(b):.3f} s, B/A {sum(b) / sum(a):.3f}")
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    print(f"median of the per-pair ratios B/A: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
