"""Update (Algorithm 3 of the elastic paper, with §3.3 negation), event-driven.

This module is the algorithm's reference implementation as generated Python code. Epochs run
the same algorithm, term for term, on the compiled kernel (`reasoner.update`);
`EngineSettings(update="python")` selects this one, which the property tests and
`bench/update_ab.py` hold the kernel against. The description below is the algorithm's for
both.

Algorithm 3 walks the iterations 1, 2, ... of a stratum and at each iteration k adjusts the
counts N#_k by three terms (DESIGN.md, "The elastic algorithm"):

- Del: old derivations (body in I°_{k-1}, some atom in N°_{k-1}, head not in I°_{k-1}) with a
  positive atom in I⁻_{k-1} or a negated atom inserted (I⁺_0): subtract;
- Ins: new derivations (body in I_{k-1}, some atom in N_{k-1}, head not in I_{k-1}) with a
  positive atom in I⁺_{k-1} or a negated atom deleted (I⁻_0): add;
- Red: derivations valid in both epochs with some atom in N_{k-1} whose head is in I⁻_{k-1}: add;

then drops from N#_k the tuples already in I⁺_{k-1}. In terms of a derivation d, "body in I_{k-1}
with some atom in N_{k-1}" says exactly that d fires at k = 1 + max over its positive atoms of
their iteration: every derivation fires in one iteration per epoch, f°(d) in the old and f(d) in
the new. So the terms at k only ever contain derivations that contain a *changed* tuple (o != n)
or whose head was deleted, and that fire at k in one of the epochs. With f° = k, "a positive atom
in I⁻_{k-1}" is "f > k"; with f = k, "a positive atom in I⁺_{k-1}" is "f° > k".

That is how this implementation avoids walking CRDT's 8,282 iterations for a 10-tuple change:
whenever tuples change status (input facts flip, a count drops to zero, a tuple gets a new
iteration) every derivation containing them is enumerated once through the hash indexes, and
scheduled at the iterations where it can count: at f° if it can be in Del there, at the current
estimate of f if it can be in Ins or Red there. For a deleted tuple, the derivations of it as a
head are enumerated too (re-discovery, the paper's provenance idea). Iterations are then
processed in order from a heap, each candidate re-classified against the final statuses,
deduplicated by identity, and counted in at most one of the three terms.

Why an estimate is good enough: at iteration k every tuple whose new iteration is below k is
decided, and a tuple changes status only at its old or its new iteration, re-enumerating every
derivation it is in (with the current iteration as the floor of what it schedules). So the last
enumeration of a derivation before k saw the final answer to "is this atom's n below k" for every
atom, which is all that f = k and the terms depend on, except the head's n, which the classifier
reads at k. Cost is proportional to the changed tuples and their derivations, never to the depth
of the recursion; "early exit" is the heap running empty.

Everything per candidate is generated code, like the Bootstrap plans (`codegen.py`): the
enumerators decide where a derivation can count and push it onto the schedule in the innermost
loop of the join, and one `drain` function per stratum pops the iterations, classifies their
candidates (every rule's Del/Ins/Red test inlined), applies the count changes and fires the
events. The statuses live in dicts the generated code reads as globals: `R_*` the committed
iterations (o) and, for the stratum's own relations, `CH_*` the overlay's record of the tuples
whose status changed in this epoch (their n; any other tuple has n = o). For a relation of a
lower stratum only presence counts, final when the stratum starts: o and n are 0 (present) or
INF, and `N_*` holds the tuples whose presence flipped; a tuple a join found (in the union of
both epochs) and not in `N_*` is present in both, with no lookup. Changed own tuples travel to
the enumerators with their o and n, and the head's o is looked up once, when a decision first
needs it.
"""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from reasoner.analysis.model import Stratum
from reasoner.elastic.overlay import INF, Overlay
from reasoner.executors.local.codegen import CHECK_EVERY, EmitContext, PlanCompiler
from reasoner.gc_pause import collector_paused
from reasoner.plan.joins import Driver, JoinPlan, head_is_invertible, plan_rule, positive_atoms
from reasoner.state import State, Tuple
from reasoner.syntax.ast import Negation, Rule, Wildcard


class DeadlineExceeded(Exception):
    """Update ran past `switching_parameter × last Bootstrap time`; the overlay is to be dropped."""


@dataclass(slots=True)
class Deadline:
    at: float | None = None

    def check(self) -> None:
        if self.at is not None and time.perf_counter() > self.at:
            raise DeadlineExceeded


@dataclass(frozen=True, slots=True)
class StratumUpdateRun:
    index: int
    relations: tuple[str, ...]
    iterations: int
    """How many distinct iterations had work; the stratum's depth is not walked."""
    seconds: float


Candidate = tuple
"""What the enumerators schedule, flat: (rule number, identity, head, f°, o of the head or -1
when not looked up yet, max n over the lower-stratum atoms, o of each own-stratum atom..., and
for a rule with negated atoms: whether the negations hold in the old epoch, in the new one,
whether a negated tuple was inserted, whether one was deleted).

The identity is the positive body tuples (a tuple of them in body order, the tuple itself for one
atom): with the rule, it determines the derivation. Everything but the n of the own-stratum
atoms and of the head is final when the candidate is made: old statuses never change, and the
lower strata are done."""

Enumerator = Callable[[list, int], None]
"""(driving tuples, current iteration): schedule every derivation they take part in."""

DriverStatus = Literal["changed", "inserted", "deleted"]
"""What an enumerator's code may assume of its driving tuples: any change, or for changed own
tuples, absent from the old epoch (o = INF) or from the new one (n = INF). The drain knows
which when it settles a tuple, and most of a deep recursion's changes are one or the other."""

Epoch = Literal["old", "new"]


@dataclass(slots=True)
class _RuleInfo:
    rule: Rule
    head: str
    positive: list[tuple[str, bool]]
    """(relation, is a relation of a lower stratum) per positive atom, in body order."""
    negated: list[tuple[str, str, tuple[int, ...]]] = field(default_factory=list)
    """(relation, key kind, key columns) per negated atom, in body order."""

    @property
    def own(self) -> list[int]:
        """Positions (among the positive atoms) of the atoms over the stratum's own relations."""
        return [j for j, (_rel, lower) in enumerate(self.positive) if not lower]


@dataclass(frozen=True, slots=True)
class _Calls:
    """The global names the drain calls one relation's settled tuples' enumerators by."""

    moved: list[str]
    """As body atoms, for a tuple with a new finite iteration (any change, in `_run`)."""
    inserted: list[str]
    """As body atoms, for a tuple absent from the old epoch."""
    deleted: list[str]
    """As body atoms, for a tuple absent from the new epoch."""
    heads: list[str]
    """As heads (re-discovery), for a deleted tuple."""

    @property
    def gone(self) -> list[str]:
        """Everything a deleted tuple is handed to, in order."""
        return [*self.deleted, *self.heads]


def _tuple_expr(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _max_expr(items: list[str]) -> str:
    if not items:
        return "0"
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        a, b = items
        return f"({a} if {a} > {b} else {b})"
    return f"max({', '.join(items)})"


def _or(terms: list[str]) -> str:
    terms = [t for t in terms if t != "False"]
    if "True" in terms:
        return "True"
    if not terms:
        return "False"
    return terms[0] if len(terms) == 1 else f"({' or '.join(terms)})"


def _and(terms: list[str]) -> str:
    terms = [t for t in terms if t != "True"]
    if "False" in terms:
        return "False"
    if not terms:
        return "True"
    return " and ".join(terms)  # `_or` parenthesizes every disjunction of several terms


def _schedule(at: str, candidate: str) -> str:
    """A statement scheduling `candidate` at iteration `at` (`_bucket` makes a new one)."""
    return f"(S.get({at}) or _bucket({at})).append({candidate})"


def _function_name(number: int, driver: Driver, full: bool, status: DriverStatus) -> str:
    index = "" if driver.index is None else str(driver.index)
    suffix = "" if status == "changed" else f"_{status}"
    return f"rule{number}_{driver.kind}{index}{'_full' if full else ''}{suffix}"


def _index_present_old(bucket, iters) -> bool:
    return any(t in iters for t in bucket)


def _index_present_new(bucket, iters, new) -> bool:
    return any(new.get(t, 0 if t in iters else INF) == 0 for t in bucket)


_CHEAP = re.compile(r"\w+(\[\d+\])?")
"""A local, or an item of one: cheap enough to evaluate as a `dict.get` default."""

_BUCKET = compile(
    "def _bucket(k):\n    S[k] = b = []\n    _push(H, k)\n    return b\n",
    "<update schedule>",
    "exec",
)
"""`_bucket(k)`: a new (empty) list of the candidates scheduled at k, in the globals' `S`/`H`."""


_TICK = ["_ticks -= 1", "if not _ticks:", f"    _ticks = {CHECK_EVERY}", "    check()"]
"""The top of a drain loop over candidates or heads: one iteration (a bulk change puts millions
of candidates in one bucket) counts towards the next `check`."""


def _unchecked() -> None:
    """The enumerators' `_check` between Updates: they only run during one."""


def _negative(relation: str, t: Tuple, k: int) -> None:
    raise AssertionError(f"negative derivation count for {relation}{t} at {k}")


class _Lazy:
    """An enumerator whose code is generated and compiled when it is first called. `rebind`:
    the (globals, name) the drain code calls it by, pointed at the compiled function then."""

    __slots__ = ("build", "function", "rebind")

    def __init__(self, build: Callable[[], Enumerator]) -> None:
        self.build = build
        self.function: Enumerator | None = None
        self.rebind: tuple[dict, str] | None = None

    def __call__(self, rows, cur: int) -> None:
        function = self.function
        if function is None:
            function = self.function = self.build()
            if self.rebind is not None:
                namespace, name = self.rebind
                namespace[name] = function
        function(rows, cur)


class StratumUpdatePlans:
    """The enumeration and classification code of one stratum, reused by every Update (the
    per-epoch dicts it reads are bound into its globals when an Update starts).

    The plans and the hash indexes they probe are made here; the code of an enumerator is
    generated and compiled on its first use (most are never used in a given epoch, and a
    Materialization makes the plans of every stratum at each Bootstrap)."""

    def __init__(self, stratum: Stratum, state: State, compiler: PlanCompiler) -> None:
        self.stratum = stratum
        self.state = state
        self.compiler = compiler
        self.rules: list[_RuleInfo] = []
        self.by_atom: dict[str, list[Enumerator]] = {}
        self.by_atom_inserted: dict[str, list[Enumerator]] = {}
        """`by_atom` for the atoms over own relations, for driving tuples absent from the old
        epoch (o = INF): their derivations can only be in Ins, so the code tests nothing else
        and drops a derivation as soon as it is found invalid in the new epoch."""
        self.by_atom_deleted: dict[str, list[Enumerator]] = {}
        """The same for driving tuples absent from the new epoch (n = INF): Del only."""
        self.by_negation: dict[str, list[Enumerator]] = {}
        self.by_head: dict[str, list[Enumerator]] = {}
        self.by_head_later: dict[str, list[Enumerator]] = {}
        """`by_head` restricted to the rules with an atom over an own relation. A rule without
        one fires at iteration 1 or never, so it can re-derive (Red) a head deleted at k only
        if 1 > k, i.e. for a fact retracted at iteration 0."""
        self.inputs: set[str] = set()
        self.namespace: dict = {
            "INF": INF,
            "_push": heapq.heappush,
            "_pop": heapq.heappop,
            "_EMPTY": (),
            "_index_old": _index_present_old,
            "_index_new": _index_present_new,
            "_negative": _negative,
            "_check": _unchecked,
        }
        """Globals of every generated function of the stratum. Per Update: `_check` (the
        deadline's, which the enumerators call as they loop), `S` (iteration -> candidates) and
        `H` (heap of those iterations); for an own relation `CH_*` (the overlay's
        dict of its changes: tuple -> n), `CC_*` (the overlay's new counts other than 1) and `O_*`
        (the o of every tuple in `CH_*`, in the same order); for an input `N_*` (n of the tuples
        whose presence flipped) and `AO_*`/`AN_*` (presence, for a relation negated with only
        wildcards)."""
        self.new_names: dict[str, str] = {}
        """Input relation -> the global holding its flipped tuples' n for this epoch."""
        self.any_negated: dict[str, tuple[str, str]] = {}
        """Relation negated with only wildcards -> the globals (present before, present after)."""
        self.present_names: dict[str, str] = {}
        """Relation negated with every column bound -> the global mapping its flipped tuples
        to their presence in the new epoch (a negation asks only that)."""
        self.sources: list[str] = []
        """Generated source, for debugging."""
        self.own = sorted(stratum.relations)
        for name in self.own:
            ident = self.ident(name)
            store = state[name]
            self.namespace[f"D_{ident}"] = {}
            self.namespace[f"CH_{ident}"] = {}
            self.namespace[f"CC_{ident}"] = {}
            self.namespace[f"O_{ident}"] = {}
            self.namespace[f"CNT_{ident}"] = store.counts
            self.namespace[f"STAGE_{ident}"] = store.stage_new
        for number, rule in enumerate(stratum.rules):
            self._compile_rule(number, rule)
        exec(_BUCKET, self.namespace)
        self._drain: Callable[[Callable[[], None]], int] | None = None

    def release(self) -> None:
        """Drop the globals' references to this Update's records (the overlay's dicts, the olds,
        the flipped inputs, the schedule): the overlay frees them when it is committed or
        discarded, instead of their living on in the plans until the next Update."""
        namespace = self.namespace
        namespace["_check"] = _unchecked
        namespace["S"] = {}
        namespace["H"] = []
        namespace["W"] = set()
        for name in self.own:
            ident = self.ident(name)
            namespace[f"CH_{ident}"] = {}
            namespace[f"CC_{ident}"] = {}
            namespace[f"O_{ident}"] = {}
        for name in (*self.new_names.values(), *self.present_names.values()):
            namespace[name] = {}

    def update(
        self,
        overlay: Overlay,
        deadline: Deadline,
        retracted_facts: dict[str, set[Tuple]],
        asserted_facts: dict[str, set[Tuple]],
    ) -> StratumUpdateRun:
        """Bring the stratum up to date in `overlay` (see `StratumUpdate.run`)."""
        return StratumUpdate(self, overlay, deadline).run(retracted_facts, asserted_facts)

    def drain(self, deadline: Deadline) -> int:
        """Process the scheduled iterations (see `_compile_drain`)."""
        if self._drain is None:
            self._drain = self._compile_drain()
        return self._drain(deadline.check)

    # -- names ------------------------------------------------------------------------------------

    def ident(self, relation: str) -> int:
        """The number in the names of a relation's globals (`N_3`, `CH_3`, ...): the
        compiler's, so that these names and the ones the compiler puts in the same globals
        (`R_3`, `X_3_0`) share one numbering and cannot collide (see `PlanCompiler.number`)."""
        if relation not in self.state:
            self.state.relation(relation, self.compiler.arities[relation])
        return self.compiler.number(relation)

    def _new_name(self, relation: str) -> str:
        """The `N_*` global of an input relation."""
        name = self.new_names.get(relation)
        if name is None:
            name = self.new_names[relation] = f"N_{self.ident(relation)}"
            self.namespace[name] = {}
        return name

    def _committed(self, relation: str) -> str:
        return self.compiler.relation_dict(self.namespace, relation)

    def _own_new(self, relation: str, t: str, old: str) -> str:
        """An expression: n of the own-relation tuple `t` whose o is `old`. A local or an
        item of one is passed as the default; anything else (the head's o, a lookup on first
        use) is evaluated only when the tuple did not change."""
        changes = f"CH_{self.ident(relation)}"
        if _CHEAP.fullmatch(old):
            return f"{changes}.get({t}, {old})"
        return f"({old} if (_x := {changes}.get({t})) is None else _x)"

    def _register(self, prefix: str, function: Enumerator) -> str:
        """A global name for an enumerator, for the drain code to call it by."""
        name = f"{prefix}{len(self.namespace)}"
        if isinstance(function, _Lazy):
            function.rebind = (self.namespace, name)
            function = function.function or function
        self.namespace[name] = function
        return name

    # -- enumerators ------------------------------------------------------------------------------

    def _compile_rule(self, number: int, rule: Rule) -> None:
        relations = self.stratum.relations
        info = _RuleInfo(
            rule,
            rule.head.relation,
            [
                (rule.body[i].relation, rule.body[i].relation not in relations)  # type: ignore[union-attr]
                for i in positive_atoms(rule)
            ],
        )
        for lit in rule.body:
            if isinstance(lit, Negation):
                cols = tuple(c for c, a in enumerate(lit.atom.args) if not isinstance(a, Wildcard))
                if not lit.atom.args or len(cols) == len(lit.atom.args):
                    kind = "tuple"
                    # Named now: `StratumUpdate` fills it before any enumerator is compiled.
                    present = f"P_{self.ident(lit.atom.relation)}"
                    self.present_names[lit.atom.relation] = present
                    self.namespace[present] = {}
                elif cols:
                    kind = "index"
                    self.state[lit.atom.relation].index(cols)
                else:
                    kind = "any"
                self._new_name(lit.atom.relation)
                if kind == "any":
                    ident = self.ident(lit.atom.relation)
                    self.any_negated[lit.atom.relation] = (f"AO_{ident}", f"AN_{ident}")
                info.negated.append((lit.atom.relation, kind, cols))
                self.inputs.add(lit.atom.relation)
        self.rules.append(info)
        for rel, lower in info.positive:
            if lower:
                self._new_name(rel)
                self.inputs.add(rel)

        for i in positive_atoms(rule):
            name = rule.body[i].relation  # type: ignore[union-attr]
            if name in relations:
                fn, inserted, deleted = self._enumerators(
                    number, info, Driver("atom", i), ("changed", "inserted", "deleted")
                )
                self.by_atom_inserted.setdefault(name, []).append(inserted)
                self.by_atom_deleted.setdefault(name, []).append(deleted)
            else:
                (fn,) = self._enumerators(number, info, Driver("atom", i))
            self.by_atom.setdefault(name, []).append(fn)
        for i, lit in enumerate(rule.body):
            if isinstance(lit, Negation):
                (fn,) = self._enumerators(number, info, Driver("negation", i))
                self.by_negation.setdefault(lit.atom.relation, []).append(fn)
        driver = Driver("head") if head_is_invertible(rule) else None
        (fn,) = self._enumerators(number, info, driver)
        self.by_head.setdefault(rule.head.relation, []).append(fn)
        if info.own:
            self.by_head_later.setdefault(rule.head.relation, []).append(fn)

    def _negation_status(self, info: _RuleInfo, j: int, key: str, only: Epoch | None) -> list[str]:
        """Lines binding `_bJ` / `_aJ` (the J-th negated tuple is present in the old / the new
        epoch), dropping the candidate when it is present in both: the rule's body is then
        false in both epochs (`only`: when it is present in that epoch). Put where the key is
        bound, so a join skips the atoms after it."""
        relation, kind, cols = info.negated[j]
        committed = self._committed(relation)
        new = self._new_name(relation)
        if kind == "tuple":
            present = self.present_names[relation]
            lines = [
                f"_b{j} = {key} in {committed}",
                f"_a{j} = {present}.get({key}, _b{j}) if {present} else _b{j}",
            ]
        elif kind == "index":
            index = self.compiler.index_dict(self.namespace, relation, cols)
            lines = [
                f"_x = {index}.get({key}, _EMPTY)",
                f"_b{j} = _index_old(_x, {committed})",
                f"_a{j} = _index_new(_x, {committed}, {new}) if {new} else _b{j}",
            ]
        else:
            was, now = self.any_negated[relation]
            lines = [f"_b{j} = {was}", f"_a{j} = {now}"]
        drop = {"new": f"_a{j}", "old": f"_b{j}", None: f"_b{j} and _a{j}"}[only]
        return [*lines, f"if {drop}: continue"]

    @staticmethod
    def _negations(count: int) -> list[str]:
        """Lines binding, for a rule with `count` negated atoms (their `_bJ`, `_aJ` bound),
        `_no` / `_nn` (every negation holds in the old / the new epoch) and `_ni` / `_nd` (some
        negated tuple was inserted / deleted). No negated tuple is present in both epochs
        (`_negation_status` dropped those derivations), so one present now was inserted and
        one present before was deleted."""
        lines = [
            f"_ni = {_or([f'_a{j}' for j in range(count)])}",
            f"_nd = {_or([f'_b{j}' for j in range(count)])}",
            "_no = not _nd",
            "_nn = not _ni",
        ]
        if count > 1:
            lines.append("if not (_no or _nn): continue")  # never valid
        return lines

    def _statuses(
        self,
        info: _RuleInfo,
        tvars: list[str],
        driver: int | None,
        known: set[str],
        only: Epoch | None,
        status: DriverStatus,
    ) -> list[str]:
        """Lines binding `_oJ`, `_nJ` of every positive atom (its tuple found in the union of
        both epochs), then `_fo`, `_fn`. `driver`: the position of the atom driving the
        evaluation when its rows are changed own tuples, which come with their o and n;
        `known`: tuple variables whose o the membership test bound (`_m_<variable>`).
        `only`: only derivations valid in that epoch count (see `_build_enumerator`), so the
        first atom found absent from it drops the derivation; the own atoms, whose n is one
        lookup in the overlay, are tested first. A driver's status leaves out what its code
        never reads: f° for an inserted driver, f and the own atoms' n for a deleted one."""
        own: list[str] = []
        lower_lines: list[str] = []
        for j, ((relation, lower), tvar) in enumerate(zip(info.positive, tvars, strict=True)):
            lines = lower_lines if lower else own
            if j == driver:
                lines.append(f"_o{j} = _ro")
                if status != "deleted":
                    lines.append(f"_n{j} = _rn")
                continue  # valid in the epoch its status says
            if tvar in known:
                lines.append(f"_o{j} = _m_{tvar}")
                if only != "old":  # for "new", the membership test did the filtering
                    lines.append(f"_n{j} = _w_{tvar}")
                    continue
            elif lower:
                new = self._new_name(relation)
                lines += [
                    f"_o{j} = _n{j} = 0",
                    f"if {new} and {tvar} in {new}: _n{j} = {new}[{tvar}]; _o{j} = INF - _n{j}",
                ]
            else:
                lines.append(f"_o{j} = {self._committed(relation)}.get({tvar}, INF)")
            if only == "old":
                lines.append(f"if _o{j} >= INF: continue")
                continue
            if not lower:
                lines.append(f"_n{j} = {self._own_new(relation, tvar, f'_o{j}')}")
            if only == "new":
                lines.append(f"if _n{j} >= INF: continue")
        lines = own + lower_lines
        count = len(info.positive)
        if status != "inserted":
            lines.append(f"_fo = {_max_expr([f'_o{j}' for j in range(count)])} + 1")
        if status != "deleted":
            lines.append(f"_fn = {_max_expr([f'_n{j}' for j in range(count)])} + 1")
        return lines

    def _enumerators(
        self,
        number: int,
        info: _RuleInfo,
        driver: Driver | None,
        statuses: tuple[DriverStatus, ...] = ("changed",),
    ) -> list[Enumerator]:
        """Code that schedules the derivations of rule `number` the driving tuples take part in:
        at f° when it can be in Del there, at f when it can be in Ins or Red there (later than
        the current iteration, and finite). Without a driver, the rule is evaluated in full and
        the derivations whose head is one of the driving tuples are kept (a head with arithmetic
        on variables cannot be inverted).

        Rows: tuples whose presence flipped, for an input relation's atom or negation; for an
        own relation's atom or for its heads, (tuple, o, n) of its changed tuples. One
        enumerator per status the driving tuples may be known to have (`DriverStatus`), all on
        one plan."""
        sizes = {name: len(rel) for name, rel in self.state.relations.items()}
        plan = plan_rule(info.rule, driver, sizes)
        # The hash indexes are built now, with the plans; the code on first use.
        for relation, columns in plan.index_needs():
            self.state[relation].index(columns)
        return [
            _Lazy(partial(self._build_enumerator, number, info, driver, plan, status))
            for status in statuses
        ]

    def _build_enumerator(
        self,
        number: int,
        info: _RuleInfo,
        driver: Driver | None,
        plan: JoinPlan,
        status: DriverStatus,
    ) -> Enumerator:
        rule = info.rule
        wanted = driver is None
        negated = bool(info.negated)
        head_committed = self._committed(info.head)
        own_driver = None
        if driver is not None and driver.kind == "atom":
            position = positive_atoms(rule).index(driver.index)  # type: ignore[arg-type]
            if not info.positive[position][1]:
                own_driver = position
        known_head = driver is not None and driver.kind == "head"
        with_status = own_driver is not None or known_head
        # Enumerating a head's derivations is re-discovery: the head was deleted at its old
        # iteration, the current one, so none of them can be in Del later (Del at f° needs
        # the head's o to be f° > cur); only derivations valid in the new epoch matter.
        rediscovery = driver is None or known_head
        only: Epoch | None = None
        if rediscovery or status == "inserted":
            only = "new"
        elif status == "deleted":
            only = "old"
        own_relations = self.stratum.relations
        known: set[str] = set()

        def membership(step, tvar: str, committed: str, staged: str | None) -> list[str] | None:
            """For an own relation, the membership test also gives the atom's o (`_m_*`) and
            n (`_w_*`). The overlay's dicts of this epoch's changes are asked first: they are
            small, and a changed tuple's o is in `O_*`, which spares a probe of the large
            committed dict (a deleted head's re-discovery finds mostly tuples deleted just
            before it). A tuple in neither is absent from both epochs: whoever stages a
            tuple records its change."""
            if step.relation not in own_relations or staged is None:
                return None
            known.add(tvar)
            ident = self.ident(step.relation)
            changed, o, n = f"_c_{tvar}", f"_m_{tvar}", f"_w_{tvar}"
            return [
                f"{changed} = CH_{ident}.get({tvar})",
                f"if {changed} is None:",
                f"    {o} = {n} = {committed}.get({tvar}, INF)",
                f"    if {o} == INF: continue",
                "else:",
                *([f"    if {changed} >= INF: continue"] if only == "new" else []),
                f"    {o} = O_{ident}.get({tvar})",
                f"    if {o} is None: {o} = {committed}.get({tvar}, INF)",
                f"    {n} = {changed}",
            ]

        positions = [i for i, lit in enumerate(rule.body) if isinstance(lit, Negation)]
        placed: set[int] = set()

        def negation_status(step, key: str, _kind: str) -> list[str]:
            """The status of a negated atom, where the join binds its key; with the last one,
            what they say together (once per binding of the keys, not per inner row)."""
            j = positions.index(step.body_index)
            placed.add(j)
            lines = self._negation_status(info, j, key, only)
            if len(placed) == len(positions):
                lines += self._negations(len(positions))
            return lines

        def emit(ctx: EmitContext) -> list[str]:
            tvars = [ctx.positive[i] for i in sorted(ctx.positive)]
            h = ctx.head
            lines = [f"if {h} not in W: continue"] if wanted else []
            if negated:
                if len(placed) < len(positions):
                    for j, i in enumerate(positions):  # a driving negation has no step of its own
                        if j not in placed:
                            kind, key = ctx.negated[i]
                            lines += self._negation_status(
                                info, j, "None" if kind == "any" else key, only
                            )
                    lines += self._negations(len(positions))
                no, nn, ni, nd = "_no", "_nn", "_ni", "_nd"
            else:
                no, nn, ni, nd = "True", "True", "False", "False"
            lines += self._statuses(info, tvars, own_driver, known, only, status)
            # The head's o, looked up only when a decision needs it.
            ho = f"(_ho if _ho >= 0 else (_ho := {head_committed}.get({h}, INF)))"
            # Ins at f: an atom is in I⁺ (f° > f) or a negated tuple went; Red at f: valid in
            # both epochs (f° <= f) and the head was deleted before f.
            adding = _and(
                ["cur < _fn < INF", nn, _or(["_fo > _fn", nd, _and([no, f"{ho} < _fn"])])]
            )
            lower_n = [f"_n{j}" for j, (_rel, lower) in enumerate(info.positive) if lower]
            fields = [
                str(number),
                tvars[0] if len(tvars) == 1 else _tuple_expr(tvars),
                h,
                "INF" if status == "inserted" else "_fo",  # any f° >= INF says "not old"
                "_ho",
                _max_expr(lower_n),
                *(f"_o{j}" for j in info.own),
            ]
            if negated:
                fields += ["_no", "_nn", "_ni", "_nd"]
            lines.append("_ho = _ro" if known_head else "_ho = -1")
            candidate = _tuple_expr(fields)
            if status == "inserted":  # f° > f: in Ins wherever it fires in the new epoch
                test, at = _and(["cur < _fn < INF", nn]), "_fn"
            elif status == "deleted":  # f > f°: in Del at f° if the head was first derived there
                test, at = _and(["cur < _fo < INF", no, f"{ho} == _fo"]), "_fo"
            elif rediscovery:
                test, at = adding, "_fn"
            else:
                # Del at f°: the head was first derived there, and an atom is in I⁻ (f > f°)
                # or a negated tuple appeared.
                deleting = _and(["cur < _fo < INF", no, _or(["_fn > _fo", ni]), f"{ho} == _fo"])
                return [
                    *lines,
                    f"_sf = {deleting}",
                    f"_sn = {adding}",
                    "if _sf or _sn:",
                    f"    _cd = {candidate}",
                    f"    if _sf: {_schedule('_fo', '_cd')}",
                    f"    if _sn and (_fn != _fo or not _sf): {_schedule('_fn', '_cd')}",
                ]
            return [*lines, f"if {test}:", f"    {_schedule(at, candidate)}"]

        compiled = self.compiler.compile(
            plan,
            params=("cur",),
            atom_filter=lambda _step, _t: None,
            negation_present=negation_status,
            emit=emit,
            namespace=self.namespace,
            name=_function_name(number, plan.driver, wanted, status),
            union=True,
            row_fields=("_ro", "_rn") if with_status else (),
            membership=membership,
            check="_check",
        )
        self.sources.append(compiled.source)
        if not wanted:
            return compiled.function
        rule_plan = compiled.plan
        relation = (
            rule.body[rule_plan.driver.index].relation  # type: ignore[union-attr,index]
            if rule_plan.driver.kind == "atom"
            else None
        )
        store = None if relation is None else self.state[relation]
        namespace = self.namespace
        function = compiled.function

        def full(rows: list, cur: int) -> None:
            namespace["W"] = {row[0] for row in rows}
            function([] if store is None else [*store.iters, *store.extra], cur)

        return full

    # -- the iterations ---------------------------------------------------------------------------

    def _compile_drain(self) -> Callable[[Callable[[], None]], int]:
        """`drain(check)`: process the scheduled iterations in order until none is left;
        returns how many there were. `check` (the deadline's) is called every 64 iterations,
        and within one every `CHECK_EVERY` candidates or settled heads: a bulk change can put
        millions of candidates at one iteration.

        At iteration k: every candidate's contribution (Del -1, Ins +1, Red +1, or nothing) is
        added to its head's entry [change, o] in `D_*` (a derivation scheduled more than once at
        k, from several events, counts once); then each head's count at k is settled: its new
        status written to the overlay, and the tuples whose iteration changed or that were
        deleted are handed to the enumerators (as body atoms, and deleted ones as heads).

        Most iterations of a deep recursion hold one candidate, or two with different heads
        (CRDT: nearly all of them), so that case has code of its own: each candidate's
        contribution is settled at once, with no `D_*` entry, no deduplication sets and
        one-row calls of the enumerators. That is the same result: whether a candidate counts
        at k depends only on statuses a settlement at k cannot change (iterations below k, and
        whether one is at least k), and any enumeration a settlement triggers schedules at
        later iterations only, where every tuple's later change re-enumerates it again."""
        calls = {
            relation: _Calls(
                [self._register("A_", fn) for fn in self.by_atom.get(relation, [])],
                [self._register("AI_", fn) for fn in self.by_atom_inserted.get(relation, [])],
                [self._register("AD_", fn) for fn in self.by_atom_deleted.get(relation, [])],
                [self._register("HD_", fn) for fn in self.by_head_later.get(relation, [])],
            )
            for relation in self.own
        }
        lines = [
            "def drain(check):",
            "    iterations = 0",
            f"    _ticks = {CHECK_EVERY}",
            "    while H:",
            "        if not iterations & 63:",  # the deadline (and a caller's cancellation)
            "            check()",
            "        k = _pop(H)",
            "        bucket = S.pop(k)",
            "        iterations += 1",
            "        km1 = k - 1",
            "        _n = len(bucket)",
            "        _direct = _n == 1",
            "        if _n == 2:",  # the other common case: dedup by comparing the two
            "            _a, _b = bucket",
            "            if _a[0] == _b[0] and _a[1] == _b[1]:",
            "                del bucket[1]",
            "                _direct = True",
            "            else:",
            "                _direct = _a[2] != _b[2]",
            "        if _direct:",
            "            for _cd in bucket:",
            "                _r = _cd[0]",
            *_indented(16, self._classify(calls, single=True)),
            "            continue",
            "        _many = _n > 2",
            "        if _many:",
            *(f"            _s{r} = set()" for r in range(len(self.rules))),
            "        for _cd in bucket:",
            *_indented(12, _TICK),
            "            _r = _cd[0]",
            *_indented(12, self._classify(calls, single=False)),
        ]
        for relation in self.own:
            lines += _indented(8, self._settle(relation, calls[relation]))
        lines.append("    return iterations")
        source = "\n".join(lines) + "\n"
        self.sources.append(source)
        label = f"<update drain, stratum {self.stratum.index}>"
        exec(compile(source, label, "exec"), self.namespace)
        return self.namespace["drain"]

    def _classify(self, calls: dict[str, _Calls], single: bool) -> list[str]:
        lines = []
        for r, info in enumerate(self.rules):
            lines.append(f"{'if' if r == 0 else 'elif'} _r == {r}:")
            body = self._classify_rule(r, info, calls[info.head] if single else None)
            lines += _indented(4, body)
        return lines

    def _classify_rule(self, r: int, info: _RuleInfo, single: _Calls | None) -> list[str]:
        """The terms at k, as in `_enumerator` with f° = k (Del) or f = k (Ins, Red).
        `single`: the candidate is alone at k (the enumerators of its head's relation, as
        body atoms and as heads): its contribution is settled right away."""
        count = len(info.positive)
        own = info.own
        lines = []
        if single is None:
            lines += [
                "_p = _cd[1]",
                "if _many:",
                f"    if _p in _s{r}: continue",
                f"    _s{r}.add(_p)",
            ]
        elif own:
            lines.append("_p = _cd[1]")
        if own:
            lines.append(
                "_t0 = _p" if count == 1 else f"{', '.join(f'_t{j}' for j in range(count))} = _p"
            )
        news = ["_cd[5]"]
        for i, j in enumerate(own):
            relation = info.positive[j][0]
            lines.append(f"_n{j} = {self._own_new(relation, f'_t{j}', f'_cd[{6 + i}]')}")
            news.append(f"_n{j}")
        lines.append(f"_fn = {_max_expr(news)} + 1")
        lines.append("_fo = _cd[3]")
        lines.append("if _fo != k and _fn != k: continue")
        if info.negated:
            base = 6 + len(own)
            no, nn, ni, nd = (f"_cd[{base + i}]" for i in range(4))
        else:
            no, nn, ni, nd = "True", "True", "False", "False"
        ident = self.ident(info.head)
        ho = f"(_ho if _ho >= 0 else (_ho := {self._committed(info.head)}.get(_h, INF)))"
        deleting = _and(["_fo == k", no, _or(["_fn > k", ni]), f"{ho} == k"])
        adding_terms = [
            "_fn == k",
            nn,
            _or(["_fo > k", nd, _and(["_fo <= k", no, f"{ho} < k"])]),
            f"{self._own_new(info.head, '_h', ho)} > km1",
        ]
        adding = _and(adding_terms)
        lines += ["_h = _cd[2]", "_ho = _cd[4]"]
        if single is not None:
            # The last term of `adding` (the head is not derived before k in the new epoch)
            # is the settling step's first test: it is left to that step.
            return [
                *lines,
                f"if {deleting}: _c = -1",
                f"elif {_and(adding_terms[:-1])}: _c = 1",
                "else: continue",
                f"_o = {ho}",
                *self._settle_head(info.head, single, "_h", single=True),
            ]
        for condition, sign in ((deleting, "-"), (adding, "+")):
            lines += [
                f"{'if' if sign == '-' else 'elif'} {condition}:",
                f"    _e = D_{ident}.get(_h)",
                f"    if _e is None: D_{ident}[_h] = [{sign}1, {ho}]",
                f"    else: _e[0] {sign}= 1",
            ]
        return lines

    def _settle(self, relation: str, calls: _Calls) -> list[str]:
        """Lines applying the count changes `D_*` of one relation's heads at iteration k."""
        ident = self.ident(relation)
        lists = [("_ch", calls.moved), ("_ci", calls.inserted), ("_dl", calls.gone)]
        lines = [
            f"if D_{ident}:",
            *(f"    {name} = []" for name, enumerators in lists if enumerators),
            f"    for _t, (_c, _o) in D_{ident}.items():",
            *_indented(8, _TICK),
            *_indented(8, self._settle_head(relation, calls, "_t", single=False)),
            f"    D_{ident}.clear()",
        ]
        for name, enumerators in lists:
            if enumerators:
                lines += [f"    if {name}:", *(f"        {fn}({name}, k)" for fn in enumerators)]
        return lines

    def _settle_head(self, relation: str, calls: _Calls, t: str, single: bool) -> list[str]:
        """Lines settling head `t` (o `_o`, count change `_c`) at k: `continue` when its
        status does not change. `single`: call the enumerators with it at once, else it goes
        to the lists `_settle` hands them (`_ch` moved, `_ci` inserted, `_dl` deleted)."""
        ident = self.ident(relation)
        changes, counts, old = f"CH_{ident}", f"CC_{ident}", f"O_{ident}"

        def handed(row: str, name: str, enumerators: list[str]) -> list[str]:
            if not enumerators:
                return []
            if not single:
                return [f"{name}.append({row})"]
            return [f"_g = [{row}]", *(f"{fn}(_g, k)" for fn in enumerators)]

        inserted = handed(f"({t}, INF, k)", "_ci", calls.inserted)
        moved = handed(f"({t}, _o, k)", "_ch", calls.moved)
        deleted = handed(f"({t}, _o, INF)", "_dl", calls.gone)
        return [
            f"_x = {changes}.get({t})",
            "if _x is None:",
            "    if _o < k: continue",
            "elif _x < k:",
            "    continue",  # derived earlier in the new epoch (line 10)
            f"if _o == k: _c += CNT_{ident}.get({t}, 1)",
            "if _c > 0:",
            f"    if _x is None: {old}[{t}] = _o",
            f"    {changes}[{t}] = k",
            f"    if _c != 1: {counts}[{t}] = _c",
            f"    elif {counts}: {counts}.pop({t}, None)",
            "    if _o == INF:",
            f"        STAGE_{ident}({t})",
            *_indented(8, inserted),
            *(["    elif _o != k:", *_indented(8, moved)] if moved else []),
            "elif _c == 0:",
            "    if _o == k:",
            f"        if _x is None: {old}[{t}] = _o",
            f"        {changes}[{t}] = INF",
            *_indented(8, deleted),
            "else:",
            f"    _negative({relation!r}, {t}, k)",
        ]


def _indented(spaces: int, lines: list[str]) -> list[str]:
    return [" " * spaces + line for line in lines]


class StratumUpdate:
    """One Update of one stratum, writing into the epoch's overlay."""

    def __init__(
        self,
        plans: StratumUpdatePlans,
        overlay: Overlay,
        deadline: Deadline,
    ) -> None:
        self.plans = plans
        self.overlay = overlay
        self.state = overlay.state
        self.deadline = deadline
        self.relations = plans.stratum.relations

    def run(
        self,
        retracted_facts: dict[str, set[Tuple]],
        asserted_facts: dict[str, set[Tuple]],
    ) -> StratumUpdateRun:
        """Bring the stratum up to date with its inputs' changes, already in the overlay for the
        lower strata, and with facts asserted on / retracted from its own relations."""
        # A collection of the (large) state in the middle of the run costs more than the
        # Update itself (see `reasoner.gc_pause`; Materialization pauses it for the whole epoch).
        with collector_paused():
            try:
                return self._run(retracted_facts, asserted_facts)
            except BaseException:
                for relation in self.relations:
                    self.overlay.changed(relation)
                raise
            finally:
                self.plans.release()

    def _run(
        self,
        retracted_facts: dict[str, set[Tuple]],
        asserted_facts: dict[str, set[Tuple]],
    ) -> StratumUpdateRun:
        start = time.perf_counter()
        plans = self.plans
        namespace = plans.namespace
        overlay = self.overlay
        state = self.state
        namespace["_check"] = self.deadline.check
        namespace["S"] = {}
        namespace["H"] = []

        # Inputs: only their presence matters here, final since their strata are done.
        flipped: dict[str, list[Tuple]] = {}
        for relation in plans.inputs:
            deleted, inserted = overlay.presence_diff(relation)
            new = dict.fromkeys(deleted, INF)
            new.update(dict.fromkeys(inserted, 0))
            namespace[plans.new_names[relation]] = new
            if relation in plans.present_names:
                present = dict.fromkeys(deleted, False)
                present.update(dict.fromkeys(inserted, True))
                namespace[plans.present_names[relation]] = present
            if relation in plans.any_negated:
                before, after = plans.any_negated[relation]
                size = len(state[relation].iters)
                namespace[before] = size > 0
                namespace[after] = size - len(deleted) + len(inserted) > 0
            if new:
                flipped[relation] = list(new)

        # Own relations: facts retracted from or asserted on them change status at iteration 0.
        # Changed tuples are handed to the enumerators as (tuple, o, n).
        moved: dict[str, list[tuple[Tuple, int, int]]] = {}
        gone: dict[str, list[tuple[Tuple, int, int]]] = {}
        olds: dict[str, dict[Tuple, int]] = {}
        aligned: dict[str, bool] = {}
        for relation in plans.own:
            ident = plans.ident(relation)
            store = state[relation]
            changes = overlay.relation_changes(relation)
            counts = overlay.relation_counts(relation)
            aligned[relation] = not changes  # then `old` lists o in the order of `changes`
            old = olds[relation] = {}
            namespace[f"CH_{ident}"] = changes
            namespace[f"CC_{ident}"] = counts
            namespace[f"O_{ident}"] = old
            namespace[f"D_{ident}"].clear()
            iters = store.iters
            for t in retracted_facts.get(relation, ()):
                x = changes.get(t)
                if iters.get(t) == 0 and (x is None or x == 0):
                    if x is None:
                        old[t] = 0
                    changes[t] = INF
                    moved.setdefault(relation, []).append((t, 0, INF))
                    gone.setdefault(relation, []).append((t, 0, INF))
            for t in asserted_facts.get(relation, ()):
                o = iters.get(t, INF)
                x = changes.get(t)
                if (o if x is None else x) != 0:
                    if x is None:
                        old[t] = o
                    changes[t] = 0
                    counts.pop(t, None)
                    store.stage(t)
                    moved.setdefault(relation, []).append((t, o, 0))

        for relation, rows in flipped.items():
            for fn in (*plans.by_atom.get(relation, ()), *plans.by_negation.get(relation, ())):
                fn(rows, 0)
        for relation, changed in moved.items():
            for fn in plans.by_atom.get(relation, ()):
                fn(changed, 0)
        for relation, deleted_facts in gone.items():
            for fn in plans.by_head.get(relation, ()):
                fn(deleted_facts, 0)

        iterations = plans.drain(self.deadline)

        # The presence diffs of the own relations, for the strata above and the epoch's report.
        for relation in plans.own:
            changes = namespace[f"CH_{plans.ident(relation)}"]
            old = olds[relation]
            if aligned[relation]:
                olds_in_order = old.values()
            else:
                iters = state[relation].iters
                olds_in_order = [old.get(t, iters.get(t, INF)) for t in changes]
            deleted, inserted = set(), set()
            for (t, n), o in zip(changes.items(), olds_in_order, strict=True):
                if n >= INF:
                    if o < INF:
                        deleted.add(t)
                elif o >= INF:
                    inserted.add(t)
            overlay.known_diff(relation, deleted, inserted)
        return StratumUpdateRun(
            plans.stratum.index,
            tuple(sorted(self.relations)),
            iterations,
            time.perf_counter() - start,
        )
