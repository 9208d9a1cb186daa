"""Update on CRDT: retract 10 random input tuples in one epoch, re-insert them in the next.

The acceptance target: each such epoch takes at most 5% of Bootstrap's time and at most 1.6 s,
median over 5 random update sets (different seeds). The first Update epoch of a materialization
may pay one-off costs (plan compilation, index building), so a warm-up set runs first and is
reported on its own; the medians are over the steady-state sets that follow.

After every epoch the state is compared with a fresh Bootstrap of the current facts
(`differences(rebuilt())`, every tuple with its iteration and count) unless `--no-check`.

    .venv/bin/python bench/update_crdt.py [--sets 5] [--size 10] [--no-check] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

from reasoner import Delta, Materialization
from reasoner.analysis import check_program
from reasoner.io.facts import load_inputs

BENCH = Path(os.environ.get("REASONER_BENCH_DIR", Path(__file__).resolve().parents[2] / "shared"))
BENCH = BENCH / "bench" if (BENCH / "bench").is_dir() else BENCH
CRDT = BENCH / "crdt"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pick(m: Materialization, rng: random.Random, size: int) -> dict[str, list[tuple]]:
    """`size` distinct input facts drawn uniformly from every input relation together."""
    pool = [
        (name, row)
        for name in sorted(m.analyzed.relations)
        if m.analyzed.relations[name].is_input
        for row in sorted(m.facts[name])
    ]
    chosen: dict[str, list[tuple]] = {}
    for name, row in rng.sample(pool, size):
        decode = m.symbols.decoder(m.analyzed.relations[name].types)
        chosen.setdefault(name, []).append(decode(row))
    return chosen


def check(m: Materialization, label: str) -> None:
    start = time.perf_counter()
    diff = m.differences(m.rebuilt())
    status = "ok" if not diff else f"DIFFERS {diff}"
    print(f"    check after {label}: {status} ({time.perf_counter() - start:.1f} s)", flush=True)
    if diff:
        sys.exit(1)


class Clock:
    """Wall-clock and CPU seconds of a block: on a shared machine the CPU time of this process
    is the steadier number (the wall clock also counts the time other processes held the
    cores); the acceptance target is about the wall clock of an idle machine."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def epoch(m: Materialization, delta: Delta, profiler: cProfile.Profile | None) -> Clock:
    if profiler is not None:
        profiler.enable()
    with Clock() as clock:
        report = m.apply(delta, strategy="update")
    if profiler is not None:
        profiler.disable()
    assert report.strategy == "update", report
    return clock


def summary(label: str, boot: Clock, first: tuple[Clock, Clock], steady, attr: str) -> bool:
    """Print one clock's summary; whether the medians meet the target."""
    base = getattr(boot, attr)
    med_del = statistics.median(getattr(r[0], attr) for r in steady)
    med_ins = statistics.median(getattr(r[1], attr) for r in steady)
    target = min(0.05 * base, 1.6)
    met = max(med_del, med_ins) <= target
    print(f"{label}:")
    print(f"  bootstrap                 {base:.3f} s")
    print(
        f"  first epochs (warm-up)    delete {getattr(first[0], attr):.3f} s, "
        f"re-insert {getattr(first[1], attr):.3f} s"
    )
    print(
        f"  median over {len(steady)} sets       delete {med_del:.3f} s, re-insert {med_ins:.3f} s"
    )
    print(
        f"  ratio to bootstrap        delete {100 * med_del / base:.2f} %, "
        f"re-insert {100 * med_ins / base:.2f} %"
    )
    print(
        f"  target <= {target:.3f} s (5% of bootstrap, at most 1.6 s): {'PASS' if met else 'FAIL'}"
    )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=5, help="measured update sets (seeds)")
    parser.add_argument("--size", type=int, default=10, help="tuples per update set")
    parser.add_argument("--program", default="crdt_linear.dl")
    parser.add_argument("--no-check", action="store_true", help="skip the fresh-Bootstrap check")
    parser.add_argument("--profile", help="write a cProfile of the measured epochs to this file")
    args = parser.parse_args()

    analyzed = check_program((CRDT / args.program).read_text(), args.program)
    start = time.perf_counter()
    inputs = load_inputs(analyzed, CRDT)
    m = Materialization(analyzed)
    m.load(inputs)
    del inputs
    load_seconds = time.perf_counter() - start
    with Clock() as boot:
        m.bootstrap()
    print(
        f"program {args.program}: load {load_seconds:.2f} s, "
        f"bootstrap {boot.wall:.2f} s (CPU {boot.cpu:.2f} s); load average {os.getloadavg()[0]:.1f}"
        f" on {os.cpu_count()} CPUs",
        flush=True,
    )
    print(f"peak RSS after bootstrap: {peak_rss_mb():.0f} MB", flush=True)

    profiler = cProfile.Profile() if args.profile else None
    results: list[tuple[Clock, Clock]] = []
    rss_engine = 0.0
    for label, seed in [("warm-up", 1000), *((f"seed {s}", s) for s in range(args.sets))]:
        chosen = pick(m, random.Random(seed), args.size)
        sizes = ", ".join(f"{n}: {len(r)}" for n, r in sorted(chosen.items()))
        measured = profiler if label != "warm-up" else None
        gone = epoch(m, Delta(retract=chosen), measured)
        rss_engine = rss_engine or peak_rss_mb()
        if not args.no_check:
            check(m, f"{label} delete")
        back = epoch(m, Delta(insert=chosen), measured)
        if not args.no_check:
            check(m, f"{label} re-insert")
        print(
            f"  {label:8} ({sizes}): delete {gone.wall:.3f} s (CPU {gone.cpu:.3f}), "
            f"re-insert {back.wall:.3f} s (CPU {back.cpu:.3f})",
            flush=True,
        )
        results.append((gone, back))

    print()
    wall = summary("wall clock", boot, results[0], results[1:], "wall")
    cpu = summary("CPU time of this process", boot, results[0], results[1:], "cpu")
    verdicts = f"wall clock {'PASS' if wall else 'FAIL'}, CPU {'PASS' if cpu else 'FAIL'}"
    print(f"load average now {os.getloadavg()[0]:.1f} ({verdicts})")
    print(
        f"peak RSS: {rss_engine:.0f} MB after the first Update epoch, "
        f"{peak_rss_mb():.0f} MB overall (with --no-check: the engine's own peak)"
    )
    if profiler is not None:
        profiler.dump_stats(args.profile)
        print(f"profile of the measured epochs written to {args.profile}")


if __name__ == "__main__":
    main()
