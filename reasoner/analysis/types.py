"""Column-type inference by unification.

Every relation column and every variable (scoped to its clause) is a node of a union-find
structure; each class carries at most one type, `number` or `symbol`. Constants, declarations,
arithmetic and ordering comparisons pin types; using a variable in two places merges classes.
A conflict is reported at the term that brought it, and the classes are left apart, so one
mistake yields one error. Columns that nothing constrains default to `number`.
"""

from __future__ import annotations

from collections.abc import Mapping

from reasoner import functors
from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.relations import RelationTable, position
from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import render
from reasoner.errors import TYPE_MISMATCH
from reasoner.syntax.ast import (
    NUMBER,
    SYMBOL,
    Atom,
    BinaryOp,
    BodyLiteral,
    ColumnType,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    StringConst,
    Term,
    Variable,
)

Key = tuple[str, object, object]
"""`("c", relation, column)` or `("v", clause scope, variable name)`."""
Typed = Key | ColumnType | None
"""What a term contributes: its variable's class, a known type, or nothing (a wildcard)."""

_ORDERING = frozenset({"<", "<=", ">", ">="})


class TypeInference:
    """Union-find over columns and variables, reporting conflicts as it merges."""

    def __init__(self, reporter: Reporter, bad_atoms: set[int] | None = None) -> None:
        self.reporter = reporter
        self.bad_atoms = bad_atoms or set()
        self._parent: dict[Key, Key] = {}
        self._type: dict[Key, ColumnType] = {}

    # -- union-find ----------------------------------------------------------------------------

    def _find(self, key: Key) -> Key:
        parent = self._parent
        root = parent.setdefault(key, key)
        while root != parent[root]:
            parent[root] = parent[parent[root]]
            root = parent[root]
        return root

    def _resolve(self, typed: Key | ColumnType) -> tuple[Key | None, ColumnType | None]:
        if isinstance(typed, tuple):
            root = self._find(typed)
            return root, self._type.get(root)
        return None, typed

    def _merge(
        self, a: Key | ColumnType, b: Key | ColumnType
    ) -> tuple[bool, ColumnType | None, ColumnType | None]:
        """Unify two typed things; returns (ok, type of a, type of b) as they were before."""
        root_a, type_a = self._resolve(a)
        root_b, type_b = self._resolve(b)
        if type_a is not None and type_b is not None and type_a != type_b:
            return False, type_a, type_b
        if root_a is not None and root_b is not None and root_a != root_b:
            self._parent[root_a] = root_b
        known = type_a or type_b
        if known is not None:
            for root in (root_a, root_b):
                if root is not None:
                    self._type[self._find(root)] = known
        return True, type_a, type_b

    def fix_column(self, relation: str, column: int, column_type: ColumnType) -> None:
        self._type[self._find(("c", relation, column))] = column_type

    def column_type(self, relation: str, column: int) -> ColumnType:
        return self._type.get(self._find(("c", relation, column)), NUMBER)

    def is_fixed(self, relation: str, column: int) -> bool:
        """Whether something gives the column its type (else it defaults to `number`)."""
        return self._find(("c", relation, column)) in self._type

    # -- visiting ------------------------------------------------------------------------------

    def visit_clause(self, scope: int, head: Atom | None, body: tuple[BodyLiteral, ...]) -> None:
        """Positive atoms first, as they are where values (and so types) come from; then
        negations and comparisons; the head last. A conflict is thus blamed on the use that
        disagrees with the data, e.g. on `x + 1` rather than on the atom that binds `x`."""
        for literal in body:
            if isinstance(literal, Atom):
                self._atom(scope, literal)
        for literal in body:
            if isinstance(literal, Negation):
                self._atom(scope, literal.atom)
            elif isinstance(literal, Comparison):
                self._comparison(scope, literal)
        if head is not None:
            self._atom(scope, head)

    def _atom(self, scope: int, atom: Atom) -> None:
        skip_columns = id(atom) in self.bad_atoms
        for index, arg in enumerate(atom.args):
            typed = self._term(scope, arg)
            if typed is None or skip_columns:
                continue
            ok, column_type, term_type = self._merge(("c", atom.relation, index), typed)
            if not ok:
                self.reporter.error(
                    TYPE_MISMATCH,
                    f"argument {index + 1} of `{atom.relation}` is a {column_type}, "
                    f"but `{render(arg)}` is a {term_type}",
                    arg.span,
                )

    def _comparison(self, scope: int, comparison: Comparison) -> None:
        op = comparison.op
        if op in _ORDERING:
            for side in (comparison.left, comparison.right):
                why = (
                    "arithmetic needs numbers"
                    if isinstance(side, BinaryOp)
                    else f"`{op}` compares numbers"
                )
                self._require(scope, side, NUMBER, why)
            return
        left = self._term(scope, comparison.left)
        right = self._term(scope, comparison.right)
        if left is None or right is None:
            return
        ok, left_type, right_type = self._merge(left, right)
        if not ok:
            self.reporter.error(
                TYPE_MISMATCH,
                f"`{op}` compares values of one type, but `{render(comparison.left)}` is a "
                f"{left_type} and `{render(comparison.right)}` is a {right_type}",
                comparison.right.span,
            )

    def _term(self, scope: int, term: Term) -> Typed:
        if isinstance(term, Variable):
            return ("v", scope, term.name)
        if isinstance(term, NumberConst):
            return NUMBER
        if isinstance(term, StringConst):
            return SYMBOL
        if isinstance(term, BinaryOp):
            self._require(scope, term, NUMBER, "arithmetic needs numbers")
            return NUMBER
        if isinstance(term, Functor):
            return self._functor(scope, term)
        return None

    def _require(self, scope: int, term: Term, wanted: ColumnType, why: str) -> None:
        """Report where `term` is not of type `wanted` (a variable's class takes it): every
        operand of arithmetic is a number, and a functor's operands are its parameters'."""
        stack = [term]
        while stack:
            node = stack.pop()
            if isinstance(node, Variable):
                ok, found, _ = self._merge(("v", scope, node.name), wanted)
                if not ok:
                    self.reporter.error(
                        TYPE_MISMATCH, f"{why}, but `{node.name}` is a {found}", node.span
                    )
                continue
            if isinstance(node, BinaryOp) and wanted == NUMBER:
                stack += [node.right, node.left]
                continue
            typed = self._term(scope, node)
            if isinstance(typed, str) and typed != wanted:
                self.reporter.error(
                    TYPE_MISMATCH, f"{why}, but `{render(node)}` is a {typed}", node.span
                )

    def _functor(self, scope: int, call: Functor) -> ColumnType:
        signature = functors.signature(call.name)
        for index, arg in enumerate(call.args):
            wanted = signature.param(index)
            why = f"`{call.name}` takes a {wanted} as argument {index + 1}"
            self._require(scope, arg, wanted, why)
        return signature.result


def infer_types(
    program: Program,
    table: RelationTable,
    named: TypeSystem,
    reporter: Reporter,
    fixed: Mapping[str, Mapping[int, ColumnType]] | None = None,
) -> tuple[dict[str, tuple[ColumnType, ...]], dict[str, frozenset[int]]]:
    """The final column types of every relation of `table` with a known arity, and the
    columns of each whose type nothing fixed. A declared column has its type's primitive
    type (`named`; one whose type is unknown is left to inference, its error reported), and
    so does each column of `fixed` (an aggregate's result: a mistake is then reported where
    the rule uses it, not in the relation the analysis made)."""
    inference = TypeInference(reporter, table.bad_atoms)
    for name, columns in (fixed or {}).items():
        for index, column_type in columns.items():
            inference.fix_column(name, index, column_type)
    for name, decl in table.declarations.items():
        for index, column in enumerate(decl.columns):
            primitive = named.primitive(column.type)
            if primitive is not None:
                inference.fix_column(name, index, primitive)
    clauses: list[tuple[tuple[int, int], Atom, tuple[BodyLiteral, ...]]] = [
        (position(rule.span), rule.head, rule.body) for rule in program.rules
    ]
    clauses.extend((position(fact.span), fact.atom, ()) for fact in program.facts)
    clauses.sort(key=lambda clause: clause[0])
    for scope, (_, head, body) in enumerate(clauses):
        inference.visit_clause(scope, head, body)
    names = [name for name in table.order if name in table.arity]
    types = {
        name: tuple(inference.column_type(name, i) for i in range(table.arity[name]))
        for name in names
    }
    unfixed = {
        name: frozenset(i for i in range(table.arity[name]) if not inference.is_fixed(name, i))
        for name in names
    }
    return types, unfixed
