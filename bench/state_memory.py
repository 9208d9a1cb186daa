"""The live state's memory: resident growth over a Bootstrap against the tables' own accounting.

    .venv/bin/python bench/state_memory.py [PROGRAM] [-F FACTS] [--engine auto]

Default: `crdt_linear.dl` over ../shared/bench/crdt. The facts are loaded and Polars imported
before the first reading, so the growth is what the Bootstrap leaves behind: the state the
service holds (tables, Update plans and their indexes, symbols). The second reading is taken
once the allocators have returned what they can (`malloc_trim`, and a wait for Polars' allocator
to stop shrinking). The tables' accounting (`Table.layout`) is by component, from their sizes
alone: no `sys.getsizeof`, no walk over tuples.

Resident memory is read twice over: all of it, and its anonymous part (`RssAnon`). The
difference is file-backed pages, almost all of them the code of Polars' 100 MB library that a
first vectorized Bootstrap runs (26 MiB on crdt_linear): paged in once per process, shared
between processes, and not state.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import time
from pathlib import Path

from reasoner import EngineSettings, Materialization
from reasoner.analysis import check_program
from reasoner.executors.engines import ENGINES
from reasoner.io.facts import load_inputs

CRDT = Path(__file__).resolve().parents[2] / "shared" / "bench" / "crdt"
MIB = 1 << 20


def resident() -> tuple[int, int]:
    """(resident bytes, anonymous resident bytes) of this process."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon"):
                fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["RssAnon"]


def settled() -> tuple[int, int]:
    """`resident()` once freed memory went back: glibc's heap trimmed, then readings a second
    apart until two agree within 1 MiB (Polars' allocator returns pages on a timer)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    last = resident()
    for _ in range(30):
        time.sleep(1.0)
        now = resident()
        if abs(now[0] - last[0]) < MIB:
            return now
        last = now
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", nargs="?", default=str(CRDT / "crdt_linear.dl"))
    parser.add_argument("-F", "--facts", default=str(CRDT))
    parser.add_argument("--engine", choices=ENGINES, default="auto")
    parser.add_argument("--relations", action="store_true", help="a line per relation")
    args = parser.parse_args()

    import polars  # noqa: F401  (its import is part of the loaded process, not of the state)

    program = Path(args.program)
    analyzed = check_program(program.read_text(), program.name)
    m = Materialization(analyzed, engines=EngineSettings(engine=args.engine))
    m.load(load_inputs(analyzed, Path(args.facts)))
    before = settled()
    start = time.perf_counter()
    m.bootstrap()
    seconds = time.perf_counter() - start
    after = settled()

    components: dict[str, int] = {}
    tuples = 0
    rows = []
    for name, store in sorted(m.state.relations.items()):
        layout = store.table.layout
        for part, size in layout.items():
            components[part] = components.get(part, 0) + size
        tuples += len(store)
        rows.append((name, len(store), len(store.indexes), sum(layout.values())))
    tables = sum(components.values())
    growth, anonymous = after[0] - before[0], after[1] - before[1]
    print(f"{program.name}: {tuples:,} tuples, Bootstrap {seconds:.2f} s ({args.engine})")
    print(f"resident growth  {growth / MIB:8.1f} MiB ({growth / 1e6:.1f} MB)")
    print(f"  anonymous      {anonymous / MIB:8.1f} MiB ({anonymous / 1e6:.1f} MB)")
    print(f"tables           {tables / MIB:8.1f} MiB  {tables / tuples:5.1f} B/tuple")
    print(f"  tables / anonymous growth  {100 * tables / anonymous:.0f} %")
    for part, size in components.items():
        print(f"  {part:14s} {size / MIB:8.1f} MiB  {size / tuples:5.1f} B/tuple")
    if args.relations:
        for name, count, indexes, size in rows:
            if count:
                print(f"  {name:24s} {count:>10,} tuples {indexes} indexes {size / count:6.1f} B")


if __name__ == "__main__":
    main()
