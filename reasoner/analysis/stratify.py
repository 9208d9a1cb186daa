"""Stratification: the evaluation order of rules, and the check that negation looks down.

The dependency graph has an edge from each body relation to the head relation of its rule,
marked negative for a negated atom. Its strongly connected components, in topological order,
are the strata; a negative edge inside a component would make a relation depend on its own
absence, which has no stratified meaning (`cyclic_negation`).

Programs may have thousands of relations, so Tarjan's algorithm runs with an explicit stack.
The topological order is made deterministic by always emitting, among the components that are
ready, the one whose relation appears first in the program.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from reasoner.analysis.model import AggregateDefinition, Stratum
from reasoner.analysis.negation_locals import is_internal
from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import atoms_of
from reasoner.errors import CYCLIC_AGGREGATION, CYCLIC_NEGATION, UNSUPPORTED_FEATURE, Span
from reasoner.syntax.ast import Negation, Program, Rule


def strongly_connected_components(successors: list[list[int]]) -> list[int]:
    """Tarjan's algorithm without recursion; returns the component number of every node."""
    count = len(successors)
    index = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    component = [-1] * count
    stack: list[int] = []
    counter = 0
    components = 0
    for root in range(count):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, next_edge = work[-1]
            edges = successors[node]
            if next_edge < len(edges):
                work[-1] = (node, next_edge + 1)
                target = edges[next_edge]
                if index[target] == -1:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack[target] = True
                    work.append((target, 0))
                elif on_stack[target]:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = components
                    if member == node:
                        break
                components += 1
    return component


def _topological(component: list[int], successors: list[list[int]]) -> list[int]:
    """Components in dependency order, ties broken by their earliest node (= first mention)."""
    total = max(component, default=-1) + 1
    first = [len(component)] * total
    for node, comp in enumerate(component):
        first[comp] = min(first[comp], node)
    edges: list[set[int]] = [set() for _ in range(total)]
    indegree = [0] * total
    for node, targets in enumerate(successors):
        for target in targets:
            source, sink = component[node], component[target]
            if source != sink and sink not in edges[source]:
                edges[source].add(sink)
                indegree[sink] += 1
    ready = [(first[comp], comp) for comp in range(total) if indegree[comp] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, comp = heapq.heappop(ready)
        order.append(comp)
        for sink in edges[comp]:
            indegree[sink] -= 1
            if indegree[sink] == 0:
                heapq.heappush(ready, (first[sink], sink))
    return order


_MAX_SHOWN_STEPS = 12
"""Longer cycles are shown with their middle elided."""

_Tree = dict[int, tuple[int, bool]]
"""A BFS tree: each node mapped to (its neighbour towards the root, is that edge negative)."""


class _CycleExplainer:
    """Finds, for a negation inside a component, a dependency cycle to show the user.

    Per component it builds two BFS trees rooted at the head of the first offending rule: one
    towards the root, one away from it. A path `negated -> ... -> root -> ... -> head` then
    costs no search, so a component with thousands of bad negations is explained in linear
    time; for the common single error the root is the head and the path is a shortest one.
    """

    def __init__(
        self,
        component: list[int],
        depends: list[list[tuple[int, bool]]],
        dependents: list[list[tuple[int, bool]]],
    ) -> None:
        self._component = component
        self._depends = depends
        self._dependents = dependents
        self._trees: dict[int, tuple[int, _Tree, _Tree]] = {}

    def _tree(self, root: int, edges: list[list[tuple[int, bool]]]) -> _Tree:
        """BFS from `root` along `edges`, staying inside root's component."""
        comp = self._component[root]
        parent: _Tree = {}
        seen = {root}
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for target, negated in edges[node]:
                if target not in seen and self._component[target] == comp:
                    seen.add(target)
                    parent[target] = (node, negated)
                    queue.append(target)
        return parent

    def path(self, negated: int, head: int) -> list[tuple[int, bool]]:
        """Nodes from `negated` to `head`, each step meaning "depends on", with its polarity."""
        comp = self._component[head]
        if comp not in self._trees:
            towards = self._tree(head, self._dependents)
            away = self._tree(head, self._depends)
            self._trees[comp] = (head, towards, away)
        root, towards, away = self._trees[comp]
        steps = [(negated, False)]
        node = negated
        while node != root:
            node, polarity = towards[node]
            steps.append((node, polarity))
        tail: list[tuple[int, bool]] = []
        node = head
        while node != root:
            previous, polarity = away[node]
            tail.append((node, polarity))
            node = previous
        steps.extend(reversed(tail))
        return steps


def stratify(  # noqa: C901
    program: Program,
    order: list[str],
    reporter: Reporter,
    aggregates: tuple[AggregateDefinition, ...] = (),
    subsumed: Mapping[str, Sequence[tuple[str, bool, Span]]] = MappingProxyType({}),
) -> tuple[tuple[Stratum, ...], dict[str, int]]:
    """Strata in evaluation order and the stratum of every head relation (and aggregate
    relation); reports negation inside a cycle at the negated literal, and an aggregate
    whose source depends on its result at the aggregate. `subsumed`: each relation with a
    subsumption and the relations its subsumptions read (negated?, where), which come first;
    such a relation has a stratum even without rules (it removes dominated facts)."""
    ids = {name: i for i, name in enumerate(order)}
    for name, reads in subsumed.items():
        for read in (name, *(r for r, _, _ in reads)):
            ids.setdefault(read, len(ids))
    for rule in program.rules:
        for name in (rule.head.relation, *(a.relation for a, _ in atoms_of(rule.body))):
            ids.setdefault(name, len(ids))
    for aggregate in aggregates:
        ids.setdefault(aggregate.source, len(ids))
        ids.setdefault(aggregate.name, len(ids))
    names = list(ids)
    successors: list[list[int]] = [[] for _ in names]
    depends: list[list[tuple[int, bool]]] = [[] for _ in names]
    dependents: list[list[tuple[int, bool]]] = [[] for _ in names]
    seen_edges: set[tuple[int, int]] = set()
    seen_depends: set[tuple[int, int, bool]] = set()
    for rule in program.rules:
        head = ids[rule.head.relation]
        for atom, positive in atoms_of(rule.body):
            body = ids[atom.relation]
            if (body, head) not in seen_edges:
                seen_edges.add((body, head))
                successors[body].append(head)
            if (head, body, not positive) not in seen_depends:
                seen_depends.add((head, body, not positive))
                depends[head].append((body, not positive))
                dependents[body].append((head, not positive))
    for aggregate in aggregates:
        source, head = ids[aggregate.source], ids[aggregate.name]
        successors[source].append(head)
        depends[head].append((source, True))
        dependents[source].append((head, True))
    for name, reads in subsumed.items():
        for read, negated, _span in reads:
            successors[ids[read]].append(ids[name])
            depends[ids[name]].append((ids[read], negated))
            dependents[ids[read]].append((ids[name], negated))
    component = strongly_connected_components(successors)
    for name, reads in subsumed.items():
        for read, negated, span in reads:
            if negated and component[ids[read]] == component[ids[name]]:
                reporter.error(
                    CYCLIC_NEGATION,
                    f"the subsumption of `{name}` negates `{read}`, which depends on `{name}`",
                    span,
                )

    explainer = _CycleExplainer(component, depends, dependents)
    aggregated = {aggregate.name for aggregate in aggregates}
    for rule in program.rules:
        _check_negation(rule, ids, names, component, explainer, reporter, aggregated)
    for aggregate in aggregates:
        source, head = ids[aggregate.source], ids[aggregate.name]
        if component[source] == component[head]:
            # The cycle through the relations the rewrite made, named as the user wrote it.
            steps = [names[node] for node, _ in explainer.path(source, head)]
            _report_cycle(aggregate, steps, reporter)

    rules_of: dict[int, list[Rule]] = {}
    for rule in program.rules:
        rules_of.setdefault(component[ids[rule.head.relation]], []).append(rule)
    strata: list[Stratum] = []
    stratum_of: dict[str, int] = {}
    aggregate_of = {component[ids[a.name]]: a for a in aggregates}
    for comp in _topological(component, successors):
        rules = rules_of.get(comp)
        grouped = aggregate_of.get(comp)
        if grouped is not None and not rules:
            index = len(strata)
            strata.append(Stratum(index, frozenset({grouped.name}), (), False, grouped))
            stratum_of[grouped.name] = index
            continue
        standing = frozenset(n for n in subsumed if component[ids[n]] == comp)
        if not rules and not standing:
            continue
        relations = frozenset(rule.head.relation for rule in rules or ()) | standing
        recursive = any(
            positive and atom.relation in relations
            for rule in rules or ()
            for atom, positive in atoms_of(rule.body)
        )
        index = len(strata)
        strata.append(Stratum(index, relations, tuple(rules or ()), recursive))
        for name in sorted(relations, key=ids.__getitem__):
            stratum_of[name] = index
    return tuple(strata), stratum_of


def _report_cycle(aggregate: AggregateDefinition, steps: list[str], reporter: Reporter) -> None:
    """An aggregate whose source depends on its result, through the relations `steps`."""
    shown = " -> ".join(dict.fromkeys(n for n in steps if not is_internal(n)))
    if aggregate.op == "autoinc":
        reporter.error(
            UNSUPPORTED_FEATURE,
            f"`autoinc()` in a recursive rule ({shown}): its numbers would follow the order of "
            "Soufflé's iterations",
            aggregate.span,
        )
    else:
        reporter.error(
            CYCLIC_AGGREGATION,
            f"the {aggregate.op} aggregate depends on its own result through {shown}",
            aggregate.span,
        )


def _check_negation(
    rule: Rule,
    ids: dict[str, int],
    names: list[str],
    component: list[int],
    explainer: _CycleExplainer,
    reporter: Reporter,
    aggregated: set[str],
) -> None:
    head = ids[rule.head.relation]
    for literal in rule.body:
        if not isinstance(literal, Negation):
            continue
        negated = ids[literal.atom.relation]
        if component[negated] != component[head] or literal.atom.relation in aggregated:
            continue  # (a cycle through an aggregate is reported at the aggregate)
        cycle = _cycle(explainer.path(negated, head), names, negated)
        reporter.error(
            CYCLIC_NEGATION,
            f"negation of `{names[negated]}` is part of a cycle: {cycle}",
            literal.span,
        )


def _cycle(path: list[tuple[int, bool]], names: list[str], negated: int) -> str:
    """A dependency cycle for a message, `!` marking the edges through negation or an
    aggregate, the middle of a long one elided."""
    steps = [("!" if neg else "") + names[node] for node, neg in path]
    if len(steps) > _MAX_SHOWN_STEPS:
        keep = _MAX_SHOWN_STEPS // 2
        steps = [*steps[:keep], "...", *steps[-keep:]]
    return " -> ".join([*steps, "!" + names[negated]])
