"""Soufflé's components: `.comp`, `.init`, type parameters, inheritance, `.override`, expanded
into plain declarations and rules before any analysis.

    .comp Graph<N> {                        .init g = Graph<number>
        .decl edge(u: N, v: N)        =>    .decl g.edge(u: number, v: number)
        .decl reach(u: N, v: N)             .decl g.reach(u: number, v: number)
        reach(x, y) :- edge(x, y).          g.reach(x, y) :- g.edge(x, y).
    }

An instance named `g` declares each relation and type of its component (and of the components
it inherits from) as `g.name`; inside it, a name the component declares means the instance's,
a nested instance's relations are `inner.name` (so `g.inner.name` outside), and any other
name is looked up in the enclosing instance, then globally. Type parameters are replaced by
the instance's arguments. A component that inherits (`.comp B : A<number>`) holds A's
declarations, rules and facts as well as its own; `.override r` drops A's rules for `r`, so
B's rules define it alone.

The expansion keeps every node's span: an error in an instance's rule points at the line of
the component where the rule is written (with the instance's names in the message).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from reasoner.errors import Span
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Column,
    Comparison,
    Declaration,
    Directive,
    Fact,
    Functor,
    Negation,
    RecordTerm,
    Rule,
    Term,
    TypeDeclaration,
)

MAX_DEPTH = 32
"""Instances nested deeper than this are refused: a component that instantiates itself."""
MAX_INSTANCES = 4096
"""Instances in one program: a component that makes two instances of one that makes two...
would otherwise expand exponentially before its depth is reached."""


@dataclass(frozen=True, slots=True)
class ComponentRef:
    """A component named with its type arguments: `Graph<number>`."""

    name: str
    arguments: tuple[str, ...]
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Instantiation:
    """`.init name = Component<arguments>`."""

    name: str
    component: ComponentRef
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Override:
    """`.override relation`: the inherited rules for `relation` are dropped."""

    relation: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Body:
    """The statements of a component, or of the program itself (its top level)."""

    declarations: tuple[Declaration, ...] = ()
    directives: tuple[Directive, ...] = ()
    rules: tuple[Rule, ...] = ()
    facts: tuple[Fact, ...] = ()
    types: tuple[TypeDeclaration, ...] = ()
    components: tuple[ComponentDefinition, ...] = ()
    instances: tuple[Instantiation, ...] = ()
    overrides: tuple[Override, ...] = ()

    def __add__(self, other: Body) -> Body:
        return Body(
            *(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(Body))
        )


@dataclass(frozen=True, slots=True)
class ComponentDefinition:
    """`.comp Name<parameters> : Base<arguments>, ... { body }`."""

    name: str
    parameters: tuple[str, ...]
    bases: tuple[ComponentRef, ...]
    body: Body
    span: Span = field(compare=False)


Report = Callable[[str, Span], None]
"""Reports an error of the expansion at a place of the source."""


class _Scope:
    """The names an instance (or the top level) gives meaning to, and its enclosing scope."""

    def __init__(
        self,
        prefix: str,
        relations: set[str],
        types: set[str],
        instances: set[str],
        definitions: dict[str, ComponentDefinition],
        outer: _Scope | None,
    ) -> None:
        self.prefix = prefix
        self.relations = relations
        """Relation names declared here."""
        self.types = types
        self.instances = instances
        """Names of the instances made here: `inner.r` and `inner.T` are theirs."""
        self.definitions = definitions
        self.outer = outer

    def _here(self, name: str, declared: set[str]) -> bool:
        """Whether `name` is one this scope declares, or one of an instance made here."""
        return name in declared or ("." in name and name.split(".", 1)[0] in self.instances)

    def relation(self, name: str) -> str:
        if self._here(name, self.relations):
            return self.prefix + name
        return self.outer.relation(name) if self.outer is not None else name

    def type(self, name: str) -> str:
        if self._here(name, self.types):
            return self.prefix + name
        return self.outer.type(name) if self.outer is not None else name

    def definition(self, name: str) -> ComponentDefinition | None:
        found = self.definitions.get(name)
        if found is None and self.outer is not None:
            return self.outer.definition(name)
        return found


def expand(top: Body, report: Report) -> Body:
    """The program's statements with every instance expanded and no component left."""
    if not top.components and not top.instances and not top.overrides:
        return top
    for override in top.overrides:
        report("`.override` belongs in a component that inherits the relation", override.span)
    _check_instance_names(top.instances, report)
    scope = _Scope("", set(), set(), set(), {c.name: c for c in top.components}, None)
    out = _Output(budget=MAX_INSTANCES)
    out.add(top, scope)
    for instance in top.instances:
        _instantiate(instance, scope, out, report, 1)
    return Body(
        tuple(out.declarations),
        tuple(out.directives),
        tuple(out.rules),
        tuple(out.facts),
        tuple(out.types),
    )


@dataclass
class _Output:
    declarations: list[Declaration] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    types: list[TypeDeclaration] = field(default_factory=list)
    budget: int = 0
    """Instances that may still be made (`MAX_INSTANCES`)."""

    def add(self, body: Body, scope: _Scope) -> None:
        """`body`'s own statements with their names resolved in `scope`."""
        prefix = scope.prefix
        for declaration in body.declarations:
            columns = tuple(
                dataclasses.replace(column, type=scope.type(column.type))
                for column in declaration.columns
            )
            self.declarations.append(
                dataclasses.replace(declaration, name=prefix + declaration.name, columns=columns)
            )
        for directive in body.directives:
            relation = scope.relation(directive.relation)
            self.directives.append(dataclasses.replace(directive, relation=relation))
        for declared in body.types:
            retyped = _retyped(declared, scope.type)
            self.types.append(dataclasses.replace(retyped, name=prefix + declared.name))
        names = _Names(scope.relation, scope.type)
        self.rules.extend(_rename_rule(rule, names) for rule in body.rules)
        for fact in body.facts:
            self.facts.append(dataclasses.replace(fact, atom=_rename_atom(fact.atom, names)))


def _retyped(declared: TypeDeclaration, rename: Callable[[str], str]) -> TypeDeclaration:
    """`declared` with the type names it uses (bases, record and branch fields) renamed."""

    def fields(columns: tuple[Column, ...]) -> tuple[Column, ...]:
        return tuple(dataclasses.replace(c, type=rename(c.type)) for c in columns)

    return dataclasses.replace(
        declared,
        bases=tuple(rename(b) for b in declared.bases),
        fields=fields(declared.fields),
        branches=tuple(dataclasses.replace(b, fields=fields(b.fields)) for b in declared.branches),
    )


def _instantiate(
    instance: Instantiation, scope: _Scope, out: _Output, report: Report, depth: int
) -> None:
    """Expand `.init` `instance`, made in `scope`, into `out`."""
    if depth > MAX_DEPTH:
        report(
            f"instances nest more than {MAX_DEPTH} deep: a component instantiates itself",
            instance.span,
        )
        return
    if out.budget <= 0:
        if out.budget == 0:  # reported once
            report(f"the program makes more than {MAX_INSTANCES} instances", instance.span)
            out.budget -= 1
        return
    out.budget -= 1
    arguments = tuple(scope.type(a) for a in instance.component.arguments)
    body = _content(instance.component, arguments, scope, report, set(), set())
    if body is None:
        return
    _check_instance_names(body.instances, report)
    inner = _Scope(
        scope.prefix + instance.name + ".",
        {d.name for d in body.declarations},
        {t.name for t in body.types},
        {i.name for i in body.instances},
        {c.name: c for c in body.components},
        scope,
    )
    out.add(body, inner)
    for nested in body.instances:
        _instantiate(nested, inner, out, report, depth + 1)


def _check_instance_names(instances: tuple[Instantiation, ...], report: Report) -> None:
    """Two instances of one name in one scope would merge their relations: refused."""
    seen: set[str] = set()
    for instance in instances:
        if instance.name in seen:
            report(f"instance `{instance.name}` is defined twice", instance.span)
        seen.add(instance.name)


def _content(
    ref: ComponentRef,
    arguments: tuple[str, ...],
    scope: _Scope,
    report: Report,
    seen: set[str],
    included: set[str],
) -> Body | None:
    """The statements of component `ref` with `arguments` for its type parameters: those it
    inherits first (their rules and facts for an overridden relation dropped), then its own.
    None after reporting why there are none. `seen`: the components on the way from the
    instance (a cycle); `included`: every component the instance holds so far (a component
    inherited twice would declare its relations twice, and a chain of such could expand
    exponentially)."""
    definition = scope.definition(ref.name)
    if definition is None:
        report(f"no component `{ref.name}` is defined here", ref.span)
        return None
    if len(arguments) != len(definition.parameters):
        wanted = len(definition.parameters)
        report(
            f"component `{ref.name}` takes {wanted} type argument{'s' * (wanted != 1)}, "
            f"not {len(arguments)}",
            ref.span,
        )
        return None
    if ref.name in seen:
        report(f"component `{ref.name}` inherits from itself", ref.span)
        return None
    if ref.name in included:
        report(f"component `{ref.name}` is inherited twice", ref.span)
        return None
    included.add(ref.name)
    parameters = dict(zip(definition.parameters, arguments, strict=True))
    own = _with_parameters(definition.body, parameters)
    inherited = Body()
    for base in definition.bases:
        base_arguments = tuple(parameters.get(a, a) for a in base.arguments)
        content = _content(base, base_arguments, scope, report, seen | {ref.name}, included)
        if content is not None:
            inherited = inherited + content
    declared = {d.name: d for d in inherited.declarations}
    dropped = set()
    for override in own.overrides:
        relation = override.relation
        if relation not in declared:
            report(
                f"`.override {relation}`: no component that `{ref.name}` inherits from "
                f"declares `{relation}`",
                override.span,
            )
        elif not declared[relation].overridable:
            report(
                f"`.override {relation}`: `{relation}` is not declared `overridable`",
                override.span,
            )
        dropped.add(relation)
    kept = tuple(rule for rule in inherited.rules if rule.head.relation not in dropped)
    facts = tuple(fact for fact in inherited.facts if fact.atom.relation not in dropped)
    return dataclasses.replace(
        inherited, rules=kept, facts=facts, overrides=()
    ) + dataclasses.replace(own, overrides=())


def _with_parameters(body: Body, parameters: dict[str, str]) -> Body:
    """`body` with its type parameters replaced in column types and type declarations (the
    rest of the names are resolved when an instance places the body)."""
    if not parameters:
        return body

    def typed(name: str) -> str:
        return parameters.get(name, name)

    declarations = tuple(
        dataclasses.replace(
            d, columns=tuple(dataclasses.replace(c, type=typed(c.type)) for c in d.columns)
        )
        for d in body.declarations
    )
    types = tuple(_retyped(t, typed) for t in body.types)
    instances = tuple(
        dataclasses.replace(
            i,
            component=dataclasses.replace(
                i.component, arguments=tuple(typed(a) for a in i.component.arguments)
            ),
        )
        for i in body.instances
    )
    # Types are named in rules too, by casts (`as(x, N)`).
    names = _Names(lambda relation: relation, typed)
    rules = tuple(_rename_rule(rule, names) for rule in body.rules)
    facts = tuple(
        dataclasses.replace(fact, atom=_rename_atom(fact.atom, names)) for fact in body.facts
    )
    return dataclasses.replace(
        body,
        declarations=declarations,
        types=types,
        instances=instances,
        rules=rules,
        facts=facts,
    )


@dataclass(frozen=True, slots=True)
class _Names:
    """How a body's names read where it is placed: relations', and types' (in casts)."""

    relation: Callable[[str], str]
    type: Callable[[str], str]


def _rename_rule(rule: Rule, names: _Names) -> Rule:
    return dataclasses.replace(
        rule,
        head=_rename_atom(rule.head, names),
        body=tuple(_rename_literal(literal, names) for literal in rule.body),
        dominating=rule.dominating and _rename_atom(rule.dominating, names),
    )


def _rename_literal(literal: BodyLiteral, names: _Names) -> BodyLiteral:
    if isinstance(literal, Atom):
        return _rename_atom(literal, names)
    if isinstance(literal, Negation):
        return dataclasses.replace(literal, atom=_rename_atom(literal.atom, names))
    assert isinstance(literal, Comparison)
    return dataclasses.replace(
        literal, left=_rename_term(literal.left, names), right=_rename_term(literal.right, names)
    )


def _rename_atom(atom: Atom, names: _Names) -> Atom:
    args = tuple(_rename_term(arg, names) for arg in atom.args)
    return dataclasses.replace(atom, relation=names.relation(atom.relation), args=args)


def _rename_term(term: Term, names: _Names) -> Term:
    """Relations are named inside aggregates' bodies too (at any depth of a term), and types
    in casts."""
    if isinstance(term, Aggregate):
        target = None if term.target is None else _rename_term(term.target, names)
        body = tuple(_rename_literal(literal, names) for literal in term.body)
        return dataclasses.replace(term, target=target, body=body)
    if isinstance(term, BinaryOp):
        return dataclasses.replace(
            term, left=_rename_term(term.left, names), right=_rename_term(term.right, names)
        )
    if isinstance(term, Functor | RecordTerm | BranchTerm):
        return dataclasses.replace(term, args=tuple(_rename_term(a, names) for a in term.args))
    if isinstance(term, Cast):
        inner = _rename_term(term.term, names)
        return dataclasses.replace(term, term=inner, type=names.type(term.type))
    return term
