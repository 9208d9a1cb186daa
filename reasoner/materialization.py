"""A live materialization: a checked program, its input facts and the derived proof-count state.

This is the engine's front door for the CLI and the service. It owns the symbol table (so that
values cross its boundary as the user's ints and strings) and the state; the elastic machinery
(Bootstrap per stratum now, Update later) works on interned tuples inside it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram, Value
from reasoner.elastic.bootstrap import StratumBootstrap, StratumRun
from reasoner.executors.local.codegen import PlanCompiler
from reasoner.state import State
from reasoner.symbols import SymbolTable


@dataclass(frozen=True, slots=True)
class BootstrapReport:
    strata: tuple[StratumRun, ...]
    seconds: float


class Materialization:
    """The program, the facts given to it, and everything they derive."""

    def __init__(self, analyzed: AnalyzedProgram) -> None:
        self.analyzed = analyzed
        self.symbols = SymbolTable()
        self.state = State()
        arities = {name: info.arity for name, info in analyzed.relations.items()}
        for name, arity in arities.items():
            self.state.relation(name, arity)
        self.compiler = PlanCompiler(self.state, self.symbols, arities)
        for name, rows in analyzed.facts.items():
            self._load(name, rows)

    @classmethod
    def from_text(cls, text: str, filename: str = "<input>") -> Materialization:
        return cls(check_program(text, filename))

    def _load(self, name: str, rows: Iterable[Sequence[Value]]) -> None:
        info = self.analyzed.relations[name]
        encode = self.symbols.encoder(info.types)
        self.state.load_facts(name, info.arity, (encode(r) for r in rows))

    def load(self, inputs: Mapping[str, Iterable[Sequence[Value]]]) -> None:
        """Add input facts (iteration 0, count 1) before the first Bootstrap."""
        for name, rows in inputs.items():
            self._load(name, rows)

    def bootstrap(self) -> BootstrapReport:
        """Evaluate every stratum from its inputs, in topological order."""
        start = time.perf_counter()
        runs = tuple(
            StratumBootstrap(stratum, self.state, self.compiler).run()
            for stratum in self.analyzed.strata
        )
        return BootstrapReport(runs, time.perf_counter() - start)

    def relation_names(self) -> list[str]:
        return list(self.analyzed.relations)

    def rows(self, name: str) -> list[tuple[Value, ...]]:
        """Every tuple of a relation, as user values."""
        decode = self.symbols.decoder(self.analyzed.relations[name].types)
        return [decode(t) for t in self.state[name]]

    def size(self, name: str) -> int:
        return len(self.state[name])

    def encode(self, name: str, row: Sequence[Value]) -> tuple[int, ...] | None:
        """The engine tuple for a row, or None if it names a symbol never seen (so is absent)."""
        info = self.analyzed.relations[name]
        out = []
        for value, kind in zip(row, info.types, strict=True):
            if kind == "symbol":
                ident = self.symbols.lookup(value)  # type: ignore[arg-type]
                if ident is None:
                    return None
                out.append(ident)
            else:
                out.append(value)
        return tuple(out)  # type: ignore[arg-type]

    def lookup(self, name: str, row: Sequence[Value]) -> tuple[int, int] | None:
        """(iteration, count) of a tuple, or None when it is not in the materialization."""
        t = self.encode(name, row)
        return None if t is None else self.state[name].get(t)

    def snapshot(self) -> dict[str, dict[tuple[Value, ...], tuple[int, int]]]:
        """Every relation as {row: (iteration, count)} in user values, for comparing states."""
        result = {}
        for name, info in self.analyzed.relations.items():
            decode = self.symbols.decoder(info.types)
            result[name] = {decode(t): v for t, v in self.state[name].snapshot().items()}
        return result
