"""clingo, recomputing every epoch: a fresh `clingo.Control` grounds and solves the translated
program over the epoch's current facts (what a clingo user without an incremental setup does).

    python -m bench.runners.clingo_run SPEC.json OUT_DIR

An epoch's seconds cover building the facts text, parsing, grounding and solving; reading the
epoch files and extracting the answer set afterwards are not timed (as for every system).
"""

from __future__ import annotations

import sys
import time

import clingo

from bench.runners.common import Facts, Spec, apply_epoch, emit_epoch, finish, read_epochs

INT32 = (-(1 << 31), (1 << 31) - 1)


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _value(value: object) -> str:
    if isinstance(value, int):
        if not INT32[0] <= value <= INT32[1]:
            raise OverflowError(f"number {value} is outside clingo's 32-bit integers")
        return str(value)
    return _string(value)  # type: ignore[arg-type]


def facts_text(facts: Facts) -> str:
    parts = []
    for name, rows in facts.items():
        pred = f"r_{name}"
        for row in rows:
            if row:
                parts.append(f"{pred}({','.join(map(_value, row))}).")
            else:
                parts.append(f"{pred}.")
    return "\n".join(parts)


def _python_value(symbol: clingo.Symbol) -> object:
    if symbol.type == clingo.SymbolType.Number:
        return symbol.number
    if symbol.type == clingo.SymbolType.String:
        return symbol.string
    return str(symbol)


def solve(program: str, facts: Facts) -> tuple[float, list[clingo.Symbol]]:
    start = time.perf_counter()
    control = clingo.Control(["--warn=none"])
    control.add("base", [], program)
    control.add("base", [], facts_text(facts))
    control.ground([("base", [])])
    symbols: list[clingo.Symbol] = []
    with control.solve(yield_=True) as handle:
        models = 0
        for model in handle:
            models += 1
            symbols = model.symbols(shown=True)
    seconds = time.perf_counter() - start
    if models != 1:
        raise RuntimeError(f"expected exactly one answer set, got {models}")
    return seconds, symbols


def relations_of(symbols: list[clingo.Symbol], wanted: list[str]) -> dict[str, set[tuple]]:
    out: dict[str, set[tuple]] = {name: set() for name in wanted}
    for symbol in symbols:
        name = symbol.name[2:]
        if name in out:
            out[name].add(tuple(_python_value(a) for a in symbol.arguments))
    return out


def main(argv: list[str]) -> int:
    spec = Spec.load(argv[0])
    out_dir = argv[1]
    program = spec.data["translations"]["clingo"]
    current, epochs = read_epochs(spec)
    for number in range(len(epochs) + 1):
        if number:
            apply_epoch(current, epochs[number - 1])
        seconds, symbols = solve(program, current)
        relations = relations_of(symbols, spec.data["derived"])
        emit_epoch(spec, number, seconds, "recompute", relations)
    finish(spec, relations, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
