"""pydbsp (DBSP in pure Python), incremental: every epoch pushes its delta (-1 per retracted
fact, +1 per inserted one) into one persistent circuit and drives the inner fixpoint.

    bench/.venv312/bin/python -m bench.runners.pydbsp_run SPEC.json OUT_DIR

Needs Python >= 3.12 and `pydbsp` (its own virtualenv, made by `bench.setup`). Three circuits,
picked from the program:

- transitive closure (`bench.translate.transitive_closure` recognized it): pydbsp's
  `IndexedIncrementalReachabilityBody`, the sort-merge-indexed reachability circuit (its fastest
  path; the right-linear form is the same closure with the edges reversed);
- a positive program: `IndexedIncrementalDatalogBody`, the indexed Datalog interpreter;
- a program with negation: `IncrementalDatalogStratified`, its stratified interpreter.

An epoch's seconds cover building the delta Z-set, pushing it and saturating; Python's own
garbage of the circuit's caches is compacted after every epoch, outside the timed part.
"""

from __future__ import annotations

import sys
import time

from pydbsp import datalog as dlg
from pydbsp.circuit import Circuit
from pydbsp.compute import ComputeCtx
from pydbsp.core import Antichain, dbsp_time
from pydbsp.datalog_stratified import IncrementalDatalogStratified
from pydbsp.evaluate import Evaluator
from pydbsp.indexed_relational_operators import (
    IndexedIncrementalDatalogBody,
    IndexedIncrementalReachabilityBody,
)
from pydbsp.operator import Input, LiftStreamIntroduction
from pydbsp.storage import DictStorage
from pydbsp.zset import ZSet, ZSetAddition

from bench.runners.common import (
    Epoch,
    Facts,
    Spec,
    effective,
    emit_epoch,
    finish,
    read_epochs,
)

MAX_INNER = 1 << 20


def _encode(value: object) -> object:
    # pydbsp takes any string starting with "?" for a variable.
    if isinstance(value, str) and value[:1] in ("?", "\x01"):
        return "\x01" + value
    return value


def _decode(value: object) -> object:
    if isinstance(value, str) and value[:1] == "\x01":
        return value[1:]
    return value


def _accumulate(cumulative: dict, diff: ZSet) -> None:
    for item, weight in diff.inner.items():
        total = cumulative.get(item, 0) + weight
        if total:
            cumulative[item] = total
        else:
            del cumulative[item]


class Reachability:
    """Transitive closure through the indexed reachability circuit."""

    def __init__(self, edge: str, closure: str, left_linear: bool) -> None:
        self.edge, self.closure, self.reverse = edge, closure, not left_linear
        group = ZSetAddition()
        self.e = Evaluator(
            circuit=Circuit(),
            storage=DictStorage(),
            ctx=ComputeCtx(lattice=dbsp_time(2)),
            group=group,
        )
        self.edges = Input(frontier=Antichain(dbsp_time(1))).connect(self.e.circuit, ())
        self.state = Input(frontier=Antichain(dbsp_time(2))).connect(self.e.circuit, ())
        self.body = IndexedIncrementalReachabilityBody(edge_group=group).connect(
            self.e.circuit, (self.edges, self.state)
        )
        self.tick = 0
        self.depth = -1
        self.cumulative: dict = {}

    def _edge(self, row: tuple) -> tuple:
        return (row[1], row[0]) if self.reverse else row

    def step(self, insert: Facts, retract: Facts) -> None:
        delta = {self._edge(row): -1 for row in retract.get(self.edge, ())}
        for row in insert.get(self.edge, ()):
            delta[self._edge(row)] = delta.get(self._edge(row), 0) + 1
        self.e.push(self.edges, ZSet({k: w for k, w in delta.items() if w}), t=(self.tick,))
        k = -1
        for k, diff in self.e.saturate_inner(
            self.body, self.tick, lambda z: not z.inner, min_inner=self.depth
        ):
            self.e.push(self.state, diff, t=(self.tick, k))
            _accumulate(self.cumulative, diff)
        self.depth = max(self.depth, k)
        self.tick += 1

    def compact(self) -> None:
        self.e.compact()

    def relations(self, names: list[str]) -> dict[str, set[tuple]]:
        rows = {(y, x) if self.reverse else (x, y) for (x, y) in self.cumulative}
        return {name: rows if name == self.closure else set() for name in names}


def _rules(translated: list[list]) -> ZSet:
    rules = {}
    for atoms in translated:
        rule = []
        for relation, negated, terms in atoms:
            args = tuple(dlg.Variable("?" + t["v"]) if "v" in t else _encode(t["c"]) for t in terms)
            rule.append((("!" if negated else "") + relation, args))
        rules[tuple(rule)] = 1
    return ZSet(rules)


def _fact_delta(insert: Facts, retract: Facts) -> ZSet:
    delta: dict = {}
    for name, rows in retract.items():
        for row in rows:
            key = (name, tuple(map(_encode, row)))
            delta[key] = delta.get(key, 0) - 1
    for name, rows in insert.items():
        for row in rows:
            key = (name, tuple(map(_encode, row)))
            delta[key] = delta.get(key, 0) + 1
    return ZSet({k: w for k, w in delta.items() if w})


class IndexedDatalog:
    """A positive program through the indexed incremental Datalog body."""

    def __init__(self, rules: ZSet) -> None:
        fg, rg, rwg = ZSetAddition(), ZSetAddition(), ZSetAddition()
        self.e = Evaluator(
            circuit=Circuit(), storage=DictStorage(), ctx=ComputeCtx(lattice=dbsp_time(2)), group=fg
        )
        c = self.e.circuit
        self.edb = Input(frontier=Antichain(dbsp_time(1))).connect(c, ())
        self.program = Input(frontier=Antichain(dbsp_time(1))).connect(c, ())
        program_2d = LiftStreamIntroduction(group=rg).connect(c, (self.program,))
        self.state_facts = Input(frontier=Antichain(dbsp_time(2))).connect(c, ())
        self.state_rewrites = Input(frontier=Antichain(dbsp_time(2))).connect(c, ())
        self.seed = Input(frontier=Antichain(dbsp_time(1))).connect(c, ())
        self.body = IndexedIncrementalDatalogBody(
            fact_group=fg,
            rule_group=rg,
            rewrite_group=rwg,
            signal_group=ZSetAddition(),
            ext_dir_group=ZSetAddition(),
            jorder_group=ZSetAddition(),
            gatekeep_group=ZSetAddition(),
            indexed_fact_group=ZSetAddition(),
        ).connect(c, (self.edb, program_2d, self.state_facts, self.state_rewrites, self.seed))
        self.e.push(self.seed, ZSet({(0, dlg._rewrite_monoid.identity()): 1}), t=(0,))
        self.e.push(self.program, rules, t=(0,))
        self.tick = 0
        self.depth = -1
        self.cumulative: dict = {}

    def step(self, insert: Facts, retract: Facts) -> None:
        t = self.tick
        self.e.push(self.edb, _fact_delta(insert, retract), t=(t,))
        if t:
            self.e.push(self.program, ZSet({}), t=(t,))
            self.e.push(self.seed, ZSet({}), t=(t,))
        k = -1
        for k, (facts, rewrites) in self.e.saturate_inner(
            self.body, t, lambda p: not p[0].inner and not p[1].inner, min_inner=self.depth
        ):
            self.e.push(self.state_facts, facts, t=(t, k))
            self.e.push(self.state_rewrites, rewrites, t=(t, k))
            _accumulate(self.cumulative, facts)
        self.depth = max(self.depth, k)
        self.tick += 1

    def compact(self) -> None:
        self.e.compact()

    def relations(self, names: list[str]) -> dict[str, set[tuple]]:
        return _split(self.cumulative, names)


class Stratified:
    """A program with negation through pydbsp's stratified interpreter."""

    def __init__(self, rules: ZSet) -> None:
        self.d = IncrementalDatalogStratified(max_inner=MAX_INNER)
        self.d.push_rules(rules)
        self.cumulative: dict = {}

    def step(self, insert: Facts, retract: Facts) -> None:
        self.d.push_facts(_fact_delta(insert, retract))
        self.cumulative = self.d.saturate().inner

    def compact(self) -> None:
        pass

    def relations(self, names: list[str]) -> dict[str, set[tuple]]:
        return _split(self.cumulative, names)


def _split(cumulative: dict, names: list[str]) -> dict[str, set[tuple]]:
    out: dict[str, set[tuple]] = {name: set() for name in names}
    for (name, args), weight in cumulative.items():
        if weight > 0 and name in out:
            out[name].add(tuple(map(_decode, args)))
    return out


def main(argv: list[str]) -> int:
    spec = Spec.load(argv[0])
    out_dir = argv[1]
    translations = spec.data["translations"]
    if "tc" in translations:
        tc = translations["tc"]
        system = Reachability(tc["edge"], tc["closure"], tc["left_linear"])
        variant = "indexed reachability"
    else:
        rules = _rules(translations["pydbsp"])
        negated = any(neg for atoms in translations["pydbsp"] for _, neg, _ in atoms)
        system = Stratified(rules) if negated else IndexedDatalog(rules)
        variant = "stratified Datalog" if negated else "indexed Datalog"
    initial, epochs = read_epochs(spec)
    current: Facts = {}
    for number, change in enumerate([Epoch(initial, {}), *epochs]):
        epoch = effective(current, change)
        start = time.perf_counter()
        system.step(epoch.insert, epoch.retract)
        seconds = time.perf_counter() - start
        system.compact()
        relations = system.relations(spec.data["derived"])
        strategy = "incremental" if number else "initial"
        emit_epoch(spec, number, seconds, strategy, relations, variant=variant)
    finish(spec, relations, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
