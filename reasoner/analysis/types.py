"""Column-type inference by unification.

Every relation column, every variable (scoped to its clause) and every arithmetic expression
is a node of a union-find structure; each class carries at most one type of the lattice in
`reasoner.analysis.type_lattice` (a primitive, a record, or a vague type until the visit is
over). Constants, declarations, arithmetic and ordering comparisons pin types; using a
variable in two places merges classes. A numeric literal without a suffix takes its context's
type, as in Soufflé. A conflict is reported at the term that brought it, and the classes are
left apart, so one mistake yields one error. Columns (and expressions) that nothing constrains
are `number`s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from reasoner.analysis.named_types import PRIMITIVES, TypeSystem
from reasoner.analysis.relations import RelationTable, position
from reasoner.analysis.report import Reporter
from reasoner.analysis.terms import render
from reasoner.analysis.type_lattice import (
    NUMBERS,
    NUMERIC,
    ORDERED,
    SIGNED,
    SOME_RECORD,
    Known,
    overloaded,
    shown,
    storage,
    unify,
)
from reasoner.errors import TYPE_MISMATCH, UNKNOWN_TYPE, UNSUPPORTED_FEATURE
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
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
)
from reasoner.values import functors
from reasoner.values.records import AdtType, RecordType, ValueType
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType

Key = tuple[str, object, object]
"""`("c", relation, column)`, `("v", clause scope, variable name)` or `("e", clause scope,
id of an expression)`: an arithmetic expression is a class of its own, the type of all its
operands and of its value."""
Typed = Key | Known | None
"""What a term contributes: its class, a known type, or nothing (a wildcard)."""

_INTEGRAL = frozenset({"%", "band", "bor", "bxor", "bshl", "bshr", "bshru", "land", "lor", "lxor"})
"""Operations Soufflé defines on integers only."""
_ORDERING = frozenset({"<", "<=", ">", ">="})


class TypeInference:
    """Union-find over columns, variables and expressions, reporting conflicts as it merges.

    After the visit, `operation_type` tells the type each arithmetic expression and ordering
    comparison works in: the analysis gives those on `unsigned` values their unsigned forms."""

    def __init__(
        self,
        reporter: Reporter,
        bad_atoms: set[int] | None = None,
        named: TypeSystem | None = None,
        tied: Mapping[int, tuple[str, int]] | None = None,
    ) -> None:
        self.reporter = reporter
        self.tied = tied or {}
        """Number literals, by `id`, that have the type of a column (relation, column), as
        the 0 of an empty group's count or sum has its aggregate's."""
        self.bad_atoms = bad_atoms or set()
        self.named = named
        """The program's type names, for `as(term, Type)` (None: the primitive ones)."""
        self._casts: list[tuple[Key | Known, ColumnType, Cast]] = []
        self._overloaded: list[tuple[int, Key | Known, Functor]] = []
        self._conversions: dict[tuple[int, int], ColumnType] = {}
        """The argument's type of each call of a `to_number`, `to_unsigned` or `to_string`
        whose argument is a number or an unsigned, by clause and `id`."""
        self.scopes: dict[int, int] = {}
        """Each clause visited (a rule or a fact, by `id`) and its scope."""
        self._parent: dict[Key, Key] = {}
        self._type: dict[Key, Known] = {}
        self._operations: dict[tuple[int, int], Key] = {}
        """The class of each arithmetic expression and ordering comparison, by `id`."""
        self._integral: list[tuple[Key, BinaryOp]] = []
        self._ranges: list[tuple[Key, Functor]] = []
        """Each operation Soufflé defines on integers only, with its expression's class."""
        self._records: list[tuple[Key, RecordTerm, list[Typed]]] = []
        """Each `[a, b, ...]` visited: its class and its fields' types, matched with its
        record type's fields once that is known (`settle`)."""

    def _find(self, key: Key) -> Key:
        parent = self._parent
        root = parent.setdefault(key, key)
        while root != parent[root]:
            parent[root] = parent[parent[root]]
            root = parent[root]
        return root

    def _resolve(self, typed: Key | Known) -> tuple[Key | None, Known | None]:
        if isinstance(typed, tuple):
            root = self._find(typed)
            return root, self._type.get(root)
        return None, typed

    def _merge(self, a: Key | Known, b: Key | Known) -> tuple[bool, str, str]:
        """Unify two typed things; returns (ok, type of a, type of b) as they were before, as
        messages name them (`shown`)."""
        root_a, type_a = self._resolve(a)
        root_b, type_b = self._resolve(b)
        ok, known = unify(type_a, type_b)
        if not ok:
            return False, shown(type_a), shown(type_b)
        if root_a is not None and root_b is not None and root_a != root_b:
            self._parent[root_a] = root_b
        if known is not None:
            for root in (root_a, root_b):
                if root is not None:
                    self._type[self._find(root)] = known
        return True, shown(type_a), shown(type_b)

    def _class(self, scope: int, node: object, known: Known) -> Key:
        """A node's class in a clause, typed once: an inline clause substituted twice shares its
        nodes, which typed afresh would drop what the first fixed (`unsigned` turned `number`)."""
        key: Key = ("e", scope, id(node))
        if key not in self._parent:
            self._type[self._find(key)] = known
        return key

    def fix_column(self, relation: str, column: int, column_type: Known) -> None:
        self._type[self._find(("c", relation, column))] = column_type

    def _final(self, key: Key) -> ColumnType:
        return storage(self._type.get(self._find(key)))

    def column_type(self, relation: str, column: int) -> ColumnType:
        return self._final(("c", relation, column))

    def value_type(self, key: Key) -> ValueType:
        """A class's type as users see it: a record's descriptor, else its primitive."""
        known = self._type.get(self._find(key))
        return known if isinstance(known, RecordType | AdtType) else storage(known)

    def column_value_type(self, relation: str, column: int) -> ValueType:
        return self.value_type(("c", relation, column))

    def is_fixed(self, relation: str, column: int) -> bool:
        """Whether something gives the column its type (else it defaults to `number`)."""
        return self._find(("c", relation, column)) in self._type

    def operation_type(
        self, node: BinaryOp | Comparison | NumberConst | Functor, scope: int
    ) -> ColumnType:
        """The type an arithmetic expression or a comparison works in, or a numeric
        literal without a suffix has, in the clause of `scope`."""
        key = self._operations.get((scope, id(node)))
        return NUMBER if key is None else self._final(key)

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

    def visit_quietly(self, scope: int, head: Atom | None, body: tuple[BodyLiteral, ...]) -> None:
        """`visit_clause` without reporting: for a clause the analysis made only to carry
        types (an aggregate's result is its expression's), whose conflicts another check
        names in the user's terms."""
        reporter, self.reporter = self.reporter, Reporter("<typing>", "")
        try:
            self.visit_clause(scope, head, body)
        finally:
            self.reporter = reporter

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
                    f"argument {index + 1} of `{atom.relation}` is {column_type}, "
                    f"but `{render(arg)}` is {term_type}",
                    arg.span,
                )

    def _comparison(self, scope: int, comparison: Comparison) -> None:
        op = comparison.op
        left = self._term(scope, comparison.left)
        right = self._term(scope, comparison.right)
        if op in _ORDERING:
            key: Key = self._class(scope, comparison, ORDERED)
            self._operation(scope, comparison, key)
            numeric = True
            for side, typed in ((comparison.left, left), (comparison.right, right)):
                if typed is None:
                    continue
                ok, found, _ = self._merge(typed, ORDERED)
                if not ok:
                    numeric = False
                    self.reporter.error(
                        TYPE_MISMATCH,
                        f"`{op}` compares numbers or symbols, but `{render(side)}` is {found}",
                        side.span,
                    )
            if not numeric:
                return
            # The comparison's class takes both sides (a literal on either side too).
            left = key if left is None else left
            right = key if right is None else right
            self._merge(key, left)
            left = key
        if left is None or right is None:
            return
        if op not in _ORDERING:  # the type it compares in (a float's `=` is IEEE's)
            key = ("e", scope, id(comparison))
            self._merge(key, left)
            self._operation(scope, comparison, key)
        ok, left_type, right_type = self._merge(left, right)
        if not ok:
            self.reporter.error(
                TYPE_MISMATCH,
                f"`{op}` compares values of one type, but `{render(comparison.left)}` is "
                f"{left_type} and `{render(comparison.right)}` is {right_type}",
                comparison.right.span,
            )

    def _operation(
        self, scope: int, node: BinaryOp | Comparison | NumberConst | Functor, key: Key
    ) -> None:
        """Record the class of an operation in a clause. By clause and node: the clauses of
        a disjunction share their head's and their common literals' nodes, and each is typed
        on its own, as Soufflé types each clause."""
        self._operations[scope, id(node)] = key

    def _term(self, scope: int, term: Term) -> Typed:
        if isinstance(term, Variable):
            return ("v", scope, term.name)
        if isinstance(term, NumberConst):
            column = self.tied.get(id(term))
            if column is not None:
                return ("c", *column)
            if term.kind in (UNSIGNED, FLOAT):
                return term.kind
            # A class of its own: the rewrites read whether its context made it a float.
            literal: Key = self._class(scope, term, NUMERIC if term.kind is None else SIGNED)
            self._operation(scope, term, literal)
            return literal
        if isinstance(term, StringConst):
            return SYMBOL
        if isinstance(term, NilConst):
            return SOME_RECORD
        if isinstance(term, RecordTerm):
            key: Key = self._class(scope, term, SOME_RECORD)
            self._records.append((key, term, [self._term(scope, arg) for arg in term.args]))
            return key
        if isinstance(term, BranchTerm):
            return self._branch(scope, term)
        if isinstance(term, BinaryOp):
            return self._arithmetic(scope, term)
        if isinstance(term, Functor):
            return self._functor(scope, term)
        if isinstance(term, Cast):
            return self._cast(scope, term)
        return None

    def _range(self, scope: int, call: Functor) -> Key:
        """`range(a, b[, step])`: one class for its bounds, step and values, a number or an
        unsigned (`reasoner.analysis.numeric` rewrites an unsigned one)."""
        key: Key = self._class(scope, call, NUMERIC)
        self._operation(scope, call, key)
        self._ranges.append((key, call))
        for arg in call.args:
            typed = self._term(scope, arg)
            if typed is None:
                continue
            known = self._resolve(typed)[1]
            if known == FLOAT:
                self.reporter.error(
                    UNSUPPORTED_FEATURE,
                    f"`range` over floats is not supported: `{render(arg)}` is a float",
                    arg.span,
                )
                return key  # one error for the call
            ok, found, expected = self._merge(typed, key)
            if not ok:
                why = (
                    f"`range` takes values of one type, here {expected}"
                    if known in NUMBERS
                    else "`range` takes numbers or unsigned values"
                )
                self.reporter.error(
                    TYPE_MISMATCH, f"{why}, but `{render(arg)}` is {found}", arg.span
                )
        return key

    def _check_ranges(self) -> None:
        """An unsigned `range` runs over its bounds' flipped patterns (`reasoner.analysis.
        numeric`), where a step of 2^63 or more would count down (Soufflé's wraps around)."""
        for key, call in self._ranges:
            if self._final(key) != UNSIGNED or len(call.args) < 3:
                continue
            step = call.args[2]
            while isinstance(step, Cast):  # `as(4, unsigned)`
                step = step.term
            if not (isinstance(step, NumberConst) and 0 <= step.value < 1 << 63):
                self.reporter.error(
                    UNSUPPORTED_FEATURE,
                    f"`range` over unsigned values with the step `{render(call.args[2])}` is not "
                    "supported: give a constant step below 2^63",
                    step.span,
                )

    def _branch(self, scope: int, term: BranchTerm) -> Known | None:
        """`$Name(a, ...)`: its type is the algebraic data type of the branch, whose fields
        give its arguments' types."""
        branch = None if self.named is None else self.named.branches.get(term.name)
        args = [self._term(scope, arg) for arg in term.args]
        if branch is None:
            self.reporter.error(
                UNKNOWN_TYPE,
                f"unknown constructor `${term.name}`: no algebraic data type has a branch "
                f"`{term.name}`",
                term.span,
            )
            return None
        if len(args) != len(branch.fields):
            self.reporter.error(
                TYPE_MISMATCH,
                f"`${term.name}` takes {len(branch.fields)} argument"
                f"{'s' * (len(branch.fields) != 1)}, not {len(args)}",
                term.span,
            )
            return branch.adt
        for arg, typed, field_type, name in zip(
            term.args, args, branch.fields, branch.names, strict=True
        ):
            self._field(arg, typed, field_type, f"field `{name}` of `${term.name}`")
        return branch.adt

    def _field(self, arg: Term, typed: Typed, field_type: ValueType, what: str) -> None:
        if typed is None:
            return
        ok, _, found = self._merge(field_type, typed)
        if not ok:
            self.reporter.error(
                TYPE_MISMATCH,
                f"{what} is {shown(field_type)}, but `{render(arg)}` is {found}",
                arg.span,
            )

    def _settle_records(self) -> None:
        """Match each `[a, b, ...]` with the fields of the record type its place gives it,
        as long as that makes progress (a field's type may be what tells a nested record's)."""
        pending = self._records
        while pending:
            left = []
            for key, term, args in pending:
                _, known = self._resolve(key)
                if not isinstance(known, RecordType):
                    left.append((key, term, args))
                    continue
                if len(args) != len(known.fields):
                    self.reporter.error(
                        TYPE_MISMATCH,
                        f"a `{known.name}` record has {len(known.fields)} field"
                        f"{'s' * (len(known.fields) != 1)}, but `{render(term)}` has "
                        f"{len(args)}",
                        term.span,
                    )
                    continue
                for arg, typed, field_type, name in zip(
                    term.args, args, known.fields, known.names, strict=True
                ):
                    self._field(arg, typed, field_type, f"field `{name}` of `{known.name}`")
            if len(left) == len(pending):
                for _, term, _ in left:
                    self.reporter.error(
                        TYPE_MISMATCH,
                        f"cannot tell the record type of `{render(term)}`: use it where a "
                        "record type is declared (a relation's column, a field)",
                        term.span,
                    )
                left = []
            pending = left
        self._records = []

    def _cast(self, scope: int, node: Cast) -> Known | None:
        """`as(term, Type)`: `Type`'s primitive type, whatever `term`'s (checked once the
        classes are known, by `settle`)."""
        inner = self._term(scope, node.term)
        if self.named is not None:
            target = self.named.primitive(node.type)
        else:
            target = PRIMITIVES.get(node.type)
        if target is None:
            self.reporter.error(UNKNOWN_TYPE, f"unknown type `{node.type}` in `as`", node.span)
            return None
        if target == RECORD:
            self.reporter.error(
                TYPE_MISMATCH, f"`as` cannot convert to `{node.type}`, a record type", node.span
            )
            return None
        if inner is not None:
            if isinstance(node.term, NumberConst) and node.term.kind in (None, NUMBER):
                self._merge(inner, target)  # Soufflé types a constant by its cast: 2.0
            self._casts.append((inner, target, node))
        return target

    def settle(self) -> None:
        """After every clause is visited: the overloaded functors' argument types (a
        conversion's argument that nothing makes a number is a symbol, as it was before
        overloads), then the casts."""
        self._settle_records()
        for scope, typed, call in self._overloaded:
            _, known = self._resolve(typed)
            if known is None:
                self._merge(typed, SYMBOL)
            elif known != SYMBOL:
                self._conversions[scope, id(call)] = known if known in (UNSIGNED, FLOAT) else NUMBER
        self._check_casts()
        self._check_ranges()
        for key, node in self._integral:
            if self._final(key) == FLOAT:
                self.reporter.error(
                    TYPE_MISMATCH,
                    f"`{node.op}` works on integers, but `{render(node)}` is a float",
                    node.span,
                )

    def conversion(self, call: Functor, scope: int) -> ColumnType | None:
        """The numeric type `call`'s argument has in the clause of `scope`, for an overloaded
        functor (`settle`)."""
        return self._conversions.get((scope, id(call)))

    def variable_types(self) -> dict[int, dict[str, ValueType]]:
        """The type of each variable of each clause, by scope (a record's descriptor)."""
        found: dict[int, dict[str, ValueType]] = {}
        for key in self._parent:
            if key[0] == "v":
                found.setdefault(cast(int, key[1]), {})[str(key[2])] = self.value_type(key)
        return found

    def _check_casts(self) -> None:
        """A cast between a symbol and a number would read a symbol's place in the table as
        a value (Soufflé allows it; its numbers mean nothing here): refused. Between `number`
        and `unsigned` it reinterprets the 64 bits, as Soufflé's does."""
        for inner, target, node in self._casts:
            _, known = self._resolve(inner)
            if storage(known) == RECORD:
                self.reporter.error(
                    TYPE_MISMATCH,
                    f"`as` cannot convert a record: `{render(node.term)}` is {shown(known)}",
                    node.span,
                )
            elif known is not None and (known == SYMBOL) != (target == SYMBOL):
                self.reporter.error(
                    TYPE_MISMATCH,
                    f"`as` cannot read {shown(known)} as {shown(target)}: "
                    f"`{render(node.term)}` is {shown(known)}",
                    node.span,
                )

    def _arithmetic(self, scope: int, expression: BinaryOp) -> Key:
        """One class for the expression, its operations and its operands: Soufflé's arithmetic
        takes operands of one numeric type and gives that type. A conflict is reported at the
        operand that brings it."""
        key: Key = self._class(scope, expression, ORDERED if overloaded(expression) else NUMERIC)
        stack: list[Term] = [expression]
        while stack:
            node = stack.pop()
            if isinstance(node, BinaryOp):
                self._operation(scope, node, key)
                if node.op in _INTEGRAL:
                    self._integral.append((key, node))
                stack += [node.right, node.left]
                continue
            typed = self._term(scope, node)
            if typed is None:
                continue
            known = self._resolve(typed)[1]
            ok, expression_type, found = self._merge(key, typed)
            if not ok:
                why = (
                    f"arithmetic works on values of one type, here {expression_type}"
                    if known in NUMBERS or (known == SYMBOL and overloaded(expression))
                    else "`+`, `max` and `min` need numbers or symbols"
                    if overloaded(expression)
                    else "arithmetic needs numbers"
                )
                self.reporter.error(
                    TYPE_MISMATCH, f"{why}, but `{render(node)}` is {found}", node.span
                )
        return key

    def _functor(self, scope: int, call: Functor) -> Typed:
        if call.name == functors.GENERATOR:
            return self._range(scope, call)
        signature = functors.find(call.name)  # None: a user-defined call refused, reported
        for index, arg in enumerate(call.args):
            typed = self._term(scope, arg)
            if typed is None or signature is None:
                continue
            wanted: Known = signature.param(index)
            if call.name in functors.CONVERSIONS or call.name == "to_float":  # see `settle`
                self._overloaded.append((scope, typed, call))
                continue
            if call.name == "to_string":  # a number, an unsigned or a float
                wanted = NUMERIC
                self._overloaded.append((scope, typed, call))
            ok, found, _ = self._merge(typed, wanted)
            if not ok:
                self.reporter.error(
                    TYPE_MISMATCH,
                    f"`{functors.written_name(call.name)}` takes {shown(wanted)} as argument "
                    f"{index + 1}, but `{render(arg)}` is {found}",
                    arg.span,
                )
        return None if signature is None else signature.result


def infer_types(
    program: Program,
    table: RelationTable,
    named: TypeSystem,
    reporter: Reporter,
    fixed: Mapping[str, Mapping[int, Known]] | None = None,
    quiet: Sequence[Rule] = (),
    tied: Mapping[int, tuple[str, int]] | None = None,
) -> tuple[dict[str, tuple[ColumnType, ...]], dict[str, frozenset[int]], TypeInference]:
    """The final column types of every relation of `table` with a known arity, and the
    columns of each whose type nothing fixed. A declared column has its type's primitive
    type (`named`; one whose type is unknown is left to inference, its error reported), and
    so does each column of `fixed` (an aggregate's result: a mistake is then reported where
    the rule uses it, not in the relation the analysis made). `quiet`: rules visited first,
    without reporting (`TypeInference.visit_quietly`; those of `program` are not visited
    again); `tied`: as `TypeInference` takes it. Also the inference, which knows the type of
    each operation."""
    inference = TypeInference(reporter, table.bad_atoms, named, tied)
    for name, columns in (fixed or {}).items():
        for index, column_type in columns.items():
            inference.fix_column(name, index, column_type)
    for name, decl in table.declarations.items():
        for index, column in enumerate(decl.columns):
            value_type = named.value_type(column.type)
            if value_type is not None:
                inference.fix_column(name, index, value_type)
    silent = {id(rule) for rule in quiet}
    clauses: list[tuple[tuple[int, int], Rule | Fact, Atom, tuple[BodyLiteral, ...]]] = [
        (position(rule.span), rule, rule.head, rule.body)
        for rule in program.rules
        if id(rule) not in silent
    ]
    clauses.extend((position(fact.span), fact, fact.atom, ()) for fact in program.facts)
    clauses.sort(key=lambda clause: clause[0])
    for scope, rule in enumerate(quiet, start=len(clauses)):
        inference.visit_quietly(scope, rule.head, rule.body)
    for scope, (_, clause, head, body) in enumerate(clauses):
        inference.scopes[id(clause)] = scope
        inference.visit_clause(scope, head, body)
    inference.settle()
    names = [name for name in table.order if name in table.arity]
    types = {
        name: tuple(inference.column_type(name, i) for i in range(table.arity[name]))
        for name in names
    }
    unfixed = {
        name: frozenset(i for i in range(table.arity[name]) if not inference.is_fixed(name, i))
        for name in names
    }
    return types, unfixed, inference
