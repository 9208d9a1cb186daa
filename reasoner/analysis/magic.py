"""Soufflé's magic-set transformation: a relation read with bound arguments is computed only
for the arguments some rule asks for.

Asked for by `.pragma "magic-transform" "a,b"` (`"*"`: every relation), the `magic` qualifier
of a declaration or `reasoner run --magic-transform`; `.pragma "magic-transform-exclude"` and
`no_magic` take relations out. It is what makes a goal-directed program finish:
`query() :- samegen(16384, 32767).` over a binary tree of 32,767 nodes asks for one pair of a
relation of 358 million.

The rewrite is the textbook one, with Soufflé's choices (`ast/transform/MagicSet.cpp`):

- Sideways information passes left to right, as written. An argument of a body atom is bound
  ("b", else "f") when it is a constant or its variables are bound: by an atom to its left, by
  the bound arguments of the rule's head, or by an equality from bound ones. A variable that
  only the head binds binds others through a plain equality but not through arithmetic
  (`y = x - 1` with x from the head could make the asked-for values descend forever, where the
  original program stops).
- Each relation read with a pattern `p` that binds something gets an adorned copy `r!p`
  (rules of `r` with every body atom adorned in turn) guarded by the magic relation
  `r!magic!p` of the asked-for values of its bound columns; each occurrence of `r!p` in a body
  adds a magic rule: the asked-for values from the guard and the atoms to its left (and the
  equalities among them). `r` itself keeps only its facts (the program's, and any inserted),
  which `r!p(x..) :- r!magic!p(..), r(x..).` copies in.
- Relations are left as they are (computed in full, their rules' bodies adorned) when they
  are input, output or printed; are read by no rule (only a client of the service reads
  them: Soufflé would not compute them at all); have no rule reading an atom; are read under
  a negation, in an aggregate or by a subsumption, or depend on one that is (Soufflé "labels"
  these to keep the program stratified; computing the whole cone in full does the same); have a
  `choice-domain`, a subsumption, `eqrel` or `inline` (and their cones: their evaluation
  depends on the order of iterations, which adorned copies would change); or are read with
  nothing bound anywhere (then the full relation is what is asked for).

Every relation left as it was holds the same rows as without the rewrite; a transformed one
(`AnalyzedProgram.goal_directed`) holds only its facts.

Layer: `analysis`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from collections.abc import Collection, Iterable

from reasoner.analysis.safety import all_bound
from reasoner.analysis.terms import (
    aggregated_relations,
    atoms_of,
    leaves,
    render_atom,
    render_literal,
)
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Declaration,
    Fact,
    Functor,
    Negation,
    NilConst,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    Variable,
    rule_terms,
)
from reasoner.values.types import FLOAT

PRAGMA = "magic-transform"
EXCLUDE_PRAGMA = "magic-transform-exclude"
EVERY = "*"

Pattern = str
"""A binding pattern: one `b` (bound) or `f` (free) per column."""


def requested(program: Program, extra: Iterable[str] = ()) -> frozenset[str]:
    """The relations the program (and `extra`, the command line's) asks to transform, before
    the ones that cannot be are taken out."""
    names = set(extra)
    excluded: set[str] = set()
    for pragma in program.pragmas:
        if pragma.key in (PRAGMA, EXCLUDE_PRAGMA):
            values = {v.strip() for v in pragma.value.split(",") if v.strip()}
            (names if pragma.key == PRAGMA else excluded).update(values)
    declared = {d.name: d for d in program.declarations}
    names |= {name for name, d in declared.items() if d.magic}
    excluded |= {name for name, d in declared.items() if d.magic is False}
    if EVERY in names:
        names |= declared.keys()
    return frozenset((names & declared.keys()) - excluded)


def magic_transform(
    program: Program, extra: Iterable[str] = (), floats: Collection[str] = ()
) -> tuple[Program, frozenset[str]]:
    """`program` rewritten (see the module), and the relations it transformed. `floats`: the
    relations with a `float` column (the analysis of the program as written knows them)."""
    wanted = requested(program, extra)
    if not wanted:
        return program, frozenset()
    candidates = set(wanted - _left_alone(program, frozenset(floats)))
    while candidates:
        rewrite = _Rewrite(program, frozenset(candidates))
        rewrite.run()
        if not rewrite.unrestricted:
            return rewrite.program(), frozenset(candidates)
        candidates -= rewrite.unrestricted
    return program, frozenset()


def _left_alone(program: Program, floats: frozenset[str]) -> set[str]:
    """The relations computed in full whatever is asked (see the module)."""
    reads: dict[str, set[str]] = defaultdict(set)
    with_atoms: set[str] = set()
    cones = {d.name for d in program.declarations if d.choice_domain or d.eqrel or d.inline}
    alone = {d.relation for d in program.directives} | floats
    for rule in program.rules:
        head = rule.head.relation
        for literal in (rule.head, *rule.body):
            inner = set(aggregated_relations(literal))
            reads[head] |= inner
            cones |= inner
            if inner:  # an aggregate's domain would read the magic relations: Soufflé labels it
                alone.add(head)
            if isinstance(literal, Atom) and literal is not rule.head:
                reads[head].add(literal.relation)
                with_atoms.add(head)
                if literal.relation in floats:  # IEEE comparisons here, bit patterns there
                    alone.add(head)
            elif isinstance(literal, Negation):
                reads[head].add(literal.atom.relation)
                cones.add(literal.atom.relation)
        if any(isinstance(t, NumberConst) and t.kind == FLOAT for t in rule_terms([rule])):
            alone.add(head)
        if rule.dominating is not None:
            cones |= {head} | {atom.relation for atom, _ in atoms_of(rule.body)}
    full, todo = set[str](), list(cones)
    while todo:  # what those read, transitively
        name = todo.pop()
        if name not in full:
            full.add(name)
            todo += reads[name]
    alone |= full | {d.name for d in program.declarations if d.name not in with_atoms}
    read = set().union(*reads.values())
    return alone | {d.name for d in program.declarations if d.name not in read}


class _Rewrite:
    """One adornment of the program for a fixed set of relations to transform."""

    def __init__(self, program: Program, candidates: frozenset[str]) -> None:
        self.source = program
        self.candidates = candidates
        self.rules_of: dict[str, list[Rule]] = defaultdict(list)
        for rule in program.rules:
            if rule.dominating is None:
                self.rules_of[rule.head.relation].append(rule)
        self.rules: list[Rule] = []
        self.facts: list[Fact] = []
        self.adorned: dict[tuple[str, Pattern], None] = {}
        self.todo: list[tuple[str, Pattern]] = []
        self.unrestricted: set[str] = set()
        """Candidates some rule reads with nothing bound: they must be computed in full."""

    def run(self) -> None:
        for rule in self.source.rules:
            if rule.head.relation in self.candidates:
                continue
            if rule.dominating is not None:
                self.rules.append(rule)  # its relations are never candidates
            else:
                self.rules.append(self._adorn(rule, None))
        while self.todo:
            name, pattern = self.todo.pop()
            for rule in self.rules_of[name]:
                self.rules.append(self._adorn(rule, pattern))
            self.rules.append(self._copy_facts(name, pattern))

    def program(self) -> Program:
        declared = {d.name: d for d in self.source.declarations}
        added: list[Declaration] = []
        for name, pattern in self.adorned:
            decl = declared[name]
            bound = tuple(c for c, p in zip(decl.columns, pattern, strict=True) if p == "b")
            added.append(_declaration(decl, adorned_name(name, pattern), decl.columns))
            added.append(_declaration(decl, magic_name(name, pattern), bound))
        return dataclasses.replace(
            self.source,
            declarations=self.source.declarations + tuple(added),
            rules=tuple(self.rules),
            facts=self.source.facts + tuple(self.facts),
        )

    def _adorn(self, rule: Rule, pattern: Pattern | None) -> Rule:
        """`rule` with its body atoms adorned, guarded by the magic relation of `pattern` when
        it is an adorned copy's; adds the magic rules of its body atoms."""
        head, weak, strong = rule.head, set[str](), set[str]()
        left: list[BodyLiteral] = []
        after: list[BodyLiteral] = []
        if pattern is not None:
            guard_args: list[Term] = []
            for index, (arg, flag) in enumerate(zip(head.args, pattern, strict=True)):
                if flag != "b":
                    continue
                if isinstance(arg, Variable):
                    weak.add(arg.name)
                elif not _is_constant(arg):  # `r(x + 1, y)`: checked once the body binds x
                    fresh = Variable(f"magic!{index}", arg.span)
                    # A copy: the type inference knows a term by its identity.
                    after.append(Comparison("=", fresh, copy.deepcopy(arg), arg.span))
                    arg = fresh
                guard_args.append(arg)
            guard = Atom(magic_name(head.relation, pattern), tuple(guard_args), head.span)
            head = dataclasses.replace(head, relation=adorned_name(head.relation, pattern))
            left.append(guard)
        equalities = [
            literal
            for literal in rule.body
            if isinstance(literal, Comparison)
            and literal.op == "="
            and not set(aggregated_relations(literal))
        ]
        body: list[BodyLiteral] = list(left)
        for literal in rule.body:
            if not isinstance(literal, Atom):
                body.append(literal)
                continue
            if literal.relation in self.candidates:
                strongly, bound = _closure(strong, weak, equalities)
                flags = "".join(
                    "b" if _bound(arg, strongly, bound) else "f" for arg in literal.args
                )
                if "b" not in flags:
                    self.unrestricted.add(literal.relation)
                else:
                    self._ask(literal, flags, rule, left, equalities, bound)
                    literal = dataclasses.replace(
                        literal, relation=adorned_name(literal.relation, flags)
                    )
            left.append(literal)
            body.append(literal)
            strong |= _variables(literal.args)
        if pattern is None and head == rule.head and body == list(rule.body):
            return rule
        body += after
        return dataclasses.replace(rule, head=head, body=tuple(body), text=_text(head, body))

    def _ask(
        self,
        atom: Atom,
        pattern: Pattern,
        rule: Rule,
        left: list[BodyLiteral],
        equalities: list[Comparison],
        bound: set[str],
    ) -> None:
        """The magic rule of `atom` read with `pattern` after the literals `left`."""
        key = (atom.relation, pattern)
        if key not in self.adorned:
            self.adorned[key] = None
            self.todo.append(key)
        args = tuple(arg for arg, flag in zip(atom.args, pattern, strict=True) if flag == "b")
        head = Atom(magic_name(atom.relation, pattern), args, atom.span)
        filters = [e for e in equalities if _variables((e.left, e.right)) <= bound]
        body = tuple(left) + tuple(filters)
        if body == (head,):  # `r!magic!bf(x) :- r!magic!bf(x).`, from `r(x, z) :- r(x, y), ...`
            return
        if not _variables(args) and not any(isinstance(literal, Atom) for literal in body):
            self.facts.append(Fact(head, atom.span))
            return
        self.rules.append(Rule(head, body, rule.span, _text(head, body)))

    def _copy_facts(self, name: str, pattern: Pattern) -> Rule:
        """`r!p(x..) :- r!magic!p(..), r(x..).`: the facts of `r` (which keeps only those)
        that are asked for."""
        rule = self.rules_of[name][0]
        span = rule.span
        columns = tuple(Variable(f"magic!{i}", span) for i in range(len(pattern)))
        bound = tuple(v for v, flag in zip(columns, pattern, strict=True) if flag == "b")
        head = Atom(adorned_name(name, pattern), columns, span)
        body: tuple[BodyLiteral, ...] = (
            Atom(magic_name(name, pattern), bound, span),
            Atom(name, columns, span),
        )
        return Rule(head, body, span, _text(head, body))


def is_adorned(name: str, transformed: Collection[str]) -> bool:
    """Whether `name` is an adorned copy or a magic relation of one of `transformed`."""
    parts = name.split("!")
    if len(parts) == 3 and parts[1] == "magic":
        parts = [parts[0], parts[2]]
    return len(parts) == 2 and parts[0] in transformed and set(parts[1]) <= {"b", "f"}


def _text(head: Atom, body: Iterable[BodyLiteral]) -> str:
    return f"{render_atom(head)} :- {', '.join(map(render_literal, body))}."


def adorned_name(name: str, pattern: Pattern) -> str:
    return f"{name}!{pattern}"


def magic_name(name: str, pattern: Pattern) -> str:
    return f"{name}!magic!{pattern}"


def _declaration(like: Declaration, name: str, columns: tuple) -> Declaration:
    return Declaration(name, columns, like.span)


def _is_constant(term: Term) -> bool:
    return isinstance(term, NumberConst | StringConst | NilConst)


def _variables(terms: Collection[Term]) -> set[str]:
    return {leaf.name for term in terms for leaf in leaves(term) if isinstance(leaf, Variable)}


def _computed(term: Term) -> bool:
    """Whether `term` computes its value (arithmetic, a functor, a cast, a record or a branch)
    rather than being a variable or a constant. Soufflé binds through those only from
    variables the body binds: a record built around a value the head binds could make the
    asked-for values grow forever (`f(l) :- f([1, l]).`)."""
    return isinstance(term, BinaryOp | Functor | Cast | RecordTerm | BranchTerm)


def _bound(term: Term, strong: set[str], bound: set[str]) -> bool:
    """Whether an atom's argument is bound: computed ones only from variables the body binds,
    and only with some (a constant expression, `1 / 0` or `range(1, 3)`, would be a magic
    fact, which must have one value)."""
    if _computed(term):
        return bool(_variables((term,))) and all_bound(term, strong)
    return all_bound(term, bound)


def _closure(
    strong: set[str], weak: set[str], equalities: list[Comparison]
) -> tuple[set[str], set[str]]:
    """The variables bound strongly and in all once `strong` (by body atoms) and `weak` (by the
    head) are, through the equalities; a computed side binds only from strongly bound ones."""
    strong, bound = set(strong), set(strong) | weak
    changed = True
    while changed:
        changed = False
        for equality in equalities:
            for target, source in (
                (equality.left, equality.right),
                (equality.right, equality.left),
            ):
                if _computed(target):
                    continue
                names = _variables((target,))
                if all_bound(source, strong) and not names <= strong:
                    strong |= names
                    bound |= names
                    changed = True
                elif not _computed(source) and all_bound(source, bound) and not names <= bound:
                    bound |= names
                    changed = True
    return strong, bound
