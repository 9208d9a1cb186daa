"""Recursive-descent parser from tokens to the AST of `reasoner.syntax.ast`.

Errors are collected, not raised one at a time: when a clause fails to parse, the parser records
a `parse_error` diagnostic, skips to the `.` that ends the clause (or to the next directive) and
carries on, so that the user sees every syntax error of a file in one round trip.

Desugaring happens here so that later stages see only flat conjunctive rules: a rule with
several heads becomes one rule per head, and a body with `;` becomes one rule per disjunct of its
disjunctive normal form (`,` binds tighter than `;`). Every resulting rule keeps the span and the
text of the whole source clause, which is how the service identifies rules.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, cast

# `reasoner.errors` imports `reasoner.syntax.ast`, which runs this package's `__init__`, which
# imports this module: import the module (not its names) so that the cycle resolves lazily.
from reasoner import errors
from reasoner.errors import Span
from reasoner.syntax.ast import (
    AUTOINC,
    Aggregate,
    AggregateOp,
    ArithOp,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchDeclaration,
    BranchTerm,
    Cast,
    ChoiceKey,
    Column,
    CompareOp,
    Comparison,
    Declaration,
    Directive,
    Fact,
    Functor,
    FunctorDeclaration,
    Negation,
    NilConst,
    NumberConst,
    Pragma,
    Program,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    TypeDeclaration,
    Variable,
    Wildcard,
    negation,
)
from reasoner.syntax.components import (
    Body,
    ComponentDefinition,
    ComponentRef,
    Instantiation,
    Override,
    expand,
)
from reasoner.syntax.functor_declarations import DeclarationRefused, functor_declaration
from reasoner.syntax.lexer import (
    CONSTRUCTOR,
    EOF,
    ERROR,
    IDENT,
    NUMBER,
    STRING,
    USER_FUNCTOR,
    Token,
    tokenize,
)
from reasoner.syntax.lookahead import colon_after_parenthesis, colon_ends_expression
from reasoner.syntax.negation import Alternatives, negation_of
from reasoner.syntax.numbers import LiteralRefused, number_literal
from reasoner.values import functors

_COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^"})
_BINARY_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"lor"}),
    frozenset({"lxor"}),
    frozenset({"land"}),
    frozenset({"bor"}),
    frozenset({"bxor"}),
    frozenset({"band"}),
    frozenset({"bshl", "bshr", "bshru"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%"}),
)
"""Soufflé's binary operators from the loosest to the tightest; all associate to the left.
Tighter still: unary `-`, `bnot`, `lnot`, then `^` (to the right)."""
_LEVEL_OF = {operator: level for level, ops in enumerate(_BINARY_LEVELS) for operator in ops}
_WORD_OPERATORS = frozenset(_LEVEL_OF) - _ARITHMETIC
_UNARY_WORDS = frozenset({"bnot", "lnot"})
_VARIADIC = frozenset({"max", "min"})
"""Functors written as calls, `max(a, b, ...)`, folded into binary operations."""
_FLOAT_FUNCTORS = frozenset({"ftoi", "itof", "ftou", "utof"})
"""Soufflé's old names of its conversions to and from floats, which its scanner no longer
knows: refused by name, with the names to write."""
_AGGREGATES = frozenset({"count", "sum", "min", "max", "mean"})
"""Soufflé's aggregates (`x = count : { ... }`)."""
_IO_DIRECTIVES: dict[str, Literal["input", "output", "printsize"]] = {
    "input": "input",
    "output": "output",
    "printsize": "printsize",
}
_LEGACY_TYPES = {"number_type": "number", "symbol_type": "symbol"}
"""Soufflé's older subtype declarations: `.number_type Even` is `.type Even <: number`."""
_QUALIFIERS = frozenset(
    {
        "brie",
        "btree",
        "eqrel",
        "overridable",
        "btree_delete",
        "inline",
        "no_inline",
        "magic",
        "no_magic",
        "override",
    }
)
_MAX_DISJUNCTS = 4096
"""A body such as `(a;b), (c;d), ...` expands exponentially; refuse rather than hang."""
MAX_NESTING = 64
"""Deepest expression tree, and most parentheses open at once. Every later stage (analysis,
the generated Python, Polars and Spark expressions) walks terms recursively, and Python's own
parser refuses code nested 200 deep: a bound here keeps one small rule from failing there."""
MAX_BODY_LITERALS = 64
"""Literals in one rule body (after `;` is expanded): each becomes a nested join loop."""
MAX_CLAUSE_TOKENS = 10_000
"""Tokens in one rule: bounds the work and the code one clause can cost."""


class _Failure(Exception):
    """Abandons the current clause; caught by the statement loop, which then recovers."""

    def __init__(self, message: str, span: Span, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code or errors.PARSE_ERROR


def _check_depth(depth: int, span: Span) -> None:
    """Refuse a term nested past `MAX_NESTING`, which evaluators recurse into."""
    if depth > MAX_NESTING:
        raise _Failure(
            f"the expression is nested more than {MAX_NESTING} levels deep",
            span,
            errors.EXPRESSION_TOO_DEEP,
        )


def _describe(token: Token) -> str:
    if token.kind == EOF:
        return "end of input"
    return f"`{token.text}`"


class _Parser:
    def __init__(self, text: str, filename: str) -> None:
        lexed = tokenize(text)
        self.text = text
        self.filename = filename
        self.tokens = lexed.tokens
        self.pos = 0
        self._nesting = 0
        """Parentheses open at this point of the clause (see `MAX_NESTING`)."""
        self._lines: list[str] | None = None
        self.diagnostics: list[errors.Diagnostic] = [
            self._diagnostic(message, span) for message, span in lexed.problems
        ]
        self.declarations: list[Declaration] = []
        self.directives: list[Directive] = []
        self.rules: list[Rule] = []
        self.aggregates_allowed = True
        """False for a query, which is answered by a join, not evaluated as a program."""
        self.facts: list[Fact] = []
        self.types: list[TypeDeclaration] = []
        self.pragmas: list[Pragma] = []
        self.functors: list[FunctorDeclaration] = []
        self.components: list[ComponentDefinition] = []
        self.instances: list[Instantiation] = []
        self.overrides: list[Override] = []
        self._component_depth = 0

    # -- diagnostics ---------------------------------------------------------------------------

    def _diagnostic(self, message: str, span: Span, code: str | None = None) -> errors.Diagnostic:
        if self._lines is None:
            self._lines = self.text.split("\n")
        line = self._lines[span.line - 1].rstrip("\r") if span.line <= len(self._lines) else ""
        return errors.Diagnostic(code or errors.PARSE_ERROR, message, span, self.filename, line)

    def _failed(self, failure: _Failure) -> None:
        self.diagnostics.append(self._diagnostic(failure.message, failure.span, failure.code))

    def _raise_if_errors(self) -> None:
        if self.diagnostics:
            raise errors.ProgramError(self.diagnostics)

    # -- token access --------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> Token:
        index = self.pos + ahead
        if index < len(self.tokens):
            return self.tokens[index]
        return self.tokens[-1]

    def _advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != EOF:
            self.pos += 1
        return token

    def _fail(self, expected: str, token: Token | None = None) -> _Failure:
        token = token or self._peek()
        if token.kind == ERROR:
            return _Failure(token.value, token.span)
        return _Failure(f"expected {expected}, found {_describe(token)}", token.span)

    def _expect(self, kind: str, expected: str) -> Token:
        if self._peek().kind != kind:
            raise self._fail(expected)
        return self._advance()

    def _expect_ident(self, expected: str) -> Token:
        return self._expect(IDENT, expected)

    def _is_directive_start(self, index: int, *, after_gap: bool) -> bool:
        """A `.` glued to an identifier (`.decl`). During recovery (`after_gap`) it must also be
        separated from the previous token, so that `p(1).q(2).` still reads as two clauses."""
        tokens = self.tokens
        dot = tokens[index]
        if dot.kind != "." or index + 1 >= len(tokens):
            return False
        name = tokens[index + 1]
        if name.kind != IDENT or name.offset != dot.end_offset:
            return False
        return not after_gap or index == 0 or tokens[index - 1].end_offset < dot.offset

    # -- statements ----------------------------------------------------------------------------

    def program(self) -> Program:
        self._statements(EOF)
        self._raise_if_errors()
        body = expand(self._body(), self._expansion_error)
        self._raise_if_errors()
        return Program(
            body.declarations,
            body.directives,
            body.rules,
            body.facts,
            body.types,
            tuple(self.pragmas),
            tuple(self.functors),
        )

    def written(self) -> Program:
        """The program as written: see `parse_program(expand_components=False)`."""
        self._statements(EOF)
        self._raise_if_errors()
        rules = list(self.rules)
        definitions = list(self.components)
        while definitions:
            definition = definitions.pop()
            rules.extend(definition.body.rules)
            definitions.extend(definition.body.components)
        rules.sort(key=lambda rule: (rule.span.line, rule.span.column))
        return Program(
            tuple(self.declarations),
            tuple(self.directives),
            tuple(rules),
            tuple(self.facts),
            tuple(self.types),
            tuple(self.pragmas),
            tuple(self.functors),
        )

    def _statements(self, end: str) -> None:
        """Statements up to a token of kind `end` (the end of input, or a component's `}`)."""
        while self._peek().kind not in (end, EOF):
            start = self.pos
            self._nesting = 0
            is_directive = self._is_directive_start(start, after_gap=False)
            try:
                if is_directive:
                    self._directive()
                else:
                    self._clause()
            except _Failure as failure:
                self._failed(failure)
                self._recover(start, is_directive)

    def _body(self) -> Body:
        return Body(*map(tuple, self._collectors()))

    def _collectors(self) -> list[list]:
        """The lists the statements go into (a component's body has its own): one attribute
        per field of `Body`, of the same name."""
        return [getattr(self, field.name) for field in dataclasses.fields(Body)]

    def _set_collectors(self, lists: list[list]) -> None:
        for field, collected in zip(dataclasses.fields(Body), lists, strict=True):
            setattr(self, field.name, collected)

    def _expansion_error(self, message: str, span: Span) -> None:
        """An error of the expansion of components, once however many instances meet it."""
        diagnostic = self._diagnostic(message, span)
        if diagnostic not in self.diagnostics:
            self.diagnostics.append(diagnostic)

    def _recover(self, start: int, in_directive: bool) -> None:
        """Skip to the start of the next statement.

        A clause ends at its `.`. A directive has no terminator, so it also ends before the first
        token of a later line that is outside any parenthesis opened by the directive (a `.decl`
        may span lines). Either ends before a token that starts a directive.
        """
        tokens = self.tokens
        depth = braces = 0
        for index in range(start, self.pos):
            kind = tokens[index].kind
            depth += (kind == "(") - (kind == ")")
            braces += (kind == "{") - (kind == "}")
        index = self.pos
        while True:
            token = tokens[index]
            if token.kind == EOF:
                break
            braces += (token.kind == "{") - (token.kind == "}")
            if braces < 0 and self._component_depth and index > start:
                break  # the `}` that closes the component the statement is in
            if index > start and self._is_directive_start(index, after_gap=True):
                break
            if token.kind == ".":
                index += 1
                break
            if (
                in_directive
                and index > start
                and depth <= 0
                and token.line > tokens[index - 1].line
            ):
                break
            depth += (token.kind == "(") - (token.kind == ")")
            index += 1
        self.pos = index

    def _directive(self) -> None:
        dot = self._advance()
        keyword = self._advance()
        if keyword.text == "decl":
            self._declaration()
        elif keyword.text in _IO_DIRECTIVES:
            self._io_directive(_IO_DIRECTIVES[keyword.text])
        elif keyword.text == "type":
            self._type_declaration(dot)
        elif keyword.text in _LEGACY_TYPES:
            name = self._expect_ident(f"a type name after `.{keyword.text}`")
            span = dot.span.through(name.span)
            self.types.append(
                TypeDeclaration(name.text, "subtype", (_LEGACY_TYPES[keyword.text],), span)
            )
        elif keyword.text == "pragma":
            self._pragma(dot)
        elif keyword.text == "comp":
            self._component(dot)
        elif keyword.text == "init":
            name = self._expect_ident("an instance name after `.init`")
            self._expect("=", "`=` and a component after the instance name")
            component = self._component_ref("a component name after `=`")
            self.instances.append(
                Instantiation(name.text, component, dot.span.through(component.span))
            )
        elif keyword.text == "override":
            name = self._expect_ident("a relation name after `.override`")
            self.overrides.append(Override(name.text, dot.span.through(name.span)))
        elif keyword.text == "functor":
            self._functor_declaration(dot)
        else:
            raise _Failure(
                f"unsupported directive `.{keyword.text}`: only .decl, .type, .input, .output, "
                ".printsize, .pragma, .functor, .comp, .init and .override are supported",
                dot.span.through(keyword.span),
            )

    def _functor_declaration(self, dot: Token) -> None:
        """`.functor ...` (`reasoner.syntax.functor_declarations`), outside components only."""
        try:
            found, self.pos = functor_declaration(self.tokens, self.pos, dot, self.functors)
        except DeclarationRefused as refused:
            self.pos = refused.position
            raise _Failure(str(refused), refused.span) from None
        if self._component_depth:
            raise _Failure("`.functor` belongs outside components", found.span)
        self.functors.append(found)

    def _component(self, dot: Token) -> None:
        """`.comp Name<T, ...> : Base<...>, ... { statements }` (`reasoner.syntax.components`)."""
        name = self._expect_ident("a component name after `.comp`")
        parameters, _ = self._type_names("a type parameter", name)
        bases: list[ComponentRef] = []
        if self._peek().kind == ":":
            self._advance()
            bases.append(self._component_ref("a component to inherit from"))
            while self._peek().kind == ",":
                self._advance()
                bases.append(self._component_ref("a component to inherit from"))
        open_brace = self._expect("{", "`{` and the component's statements")
        if self._component_depth >= MAX_NESTING:
            raise _Failure(
                f"components nest more than {MAX_NESTING} deep",
                open_brace.span,
                errors.EXPRESSION_TOO_DEEP,
            )
        saved = self._collectors()
        outer_pragmas = len(self.pragmas)
        self._set_collectors([[] for _ in saved])
        self._component_depth += 1
        try:
            self._statements("}")
        finally:
            self._component_depth -= 1
            body = self._body()
            self._set_collectors(saved)
        close = self._expect("}", "`}` at the end of the component")
        if len(self.pragmas) > outer_pragmas:
            raise _Failure("`.pragma` belongs outside components", self.pragmas.pop().span)
        self.components.append(
            ComponentDefinition(
                name.text, tuple(parameters), tuple(bases), body, dot.span.through(close.span)
            )
        )

    def _component_ref(self, expected: str) -> ComponentRef:
        """`Name` or `Name<type, ...>`."""
        name = self._expect_ident(expected)
        arguments, last = self._type_names("a type argument", name)
        return ComponentRef(name.text, tuple(arguments), name.span.through(last.span))

    def _type_names(self, expected: str, before: Token) -> tuple[list[str], Token]:
        """`<A, B, ...>` after a component's name, if there: the names, and the last token
        (`>`, or `before` when there is none)."""
        if self._peek().kind != "<":
            return [], before
        self._advance()
        names = [self._expect_ident(expected).text]
        while self._peek().kind == ",":
            self._advance()
            names.append(self._expect_ident(expected).text)
        return names, self._expect(">", f"`,` or `>` after {expected}")

    def _type_declaration(self, dot: Token) -> None:
        name = self._expect_ident("a type name after `.type`")
        token = self._advance()
        if token.kind == "<:":
            base = self._expect_ident("the base type after `<:`")
            span = dot.span.through(base.span)
            self.types.append(TypeDeclaration(name.text, "subtype", (base.text,), span))
            return
        if token.kind != "=":
            raise self._fail("`<:` or `=` after the type name", token)
        first = self._peek()
        if first.kind == "[":
            fields, close = self._attributes("]")
            span = dot.span.through(close.span)
            self.types.append(TypeDeclaration(name.text, "record", (), span, fields=fields))
            return
        bases = [self._expect_ident("a type name after `=`")]
        if self._peek().kind == "{":
            self._adt(dot, name, bases[0])
            return
        while self._peek().kind == "|":
            self._advance()
            bases.append(self._expect_ident("a type name after `|`"))
            if self._peek().kind == "{":
                raise _Failure(
                    f"`{bases[-1].text} {{...}}` is a branch of an algebraic data type: a type "
                    "is either a union of types or branches, not both",
                    self._peek().span,
                )
        kind: Literal["alias", "union"] = "alias" if len(bases) == 1 else "union"
        span = dot.span.through(bases[-1].span)
        self.types.append(TypeDeclaration(name.text, kind, tuple(b.text for b in bases), span))

    def _adt(self, dot: Token, name: Token, first: Token) -> None:
        """`.type Name = A {x: T, ...} | B {}`, from the `{` after the first branch's name."""
        branches: list[BranchDeclaration] = []
        branch = first
        while True:
            fields, close = self._attributes("}")
            branches.append(BranchDeclaration(branch.text, fields, branch.span.through(close.span)))
            if self._peek().kind != "|":
                break
            self._advance()
            branch = self._expect_ident("a branch name after `|`")
            if self._peek().kind != "{":
                raise _Failure(
                    f"`{branch.text}` is no branch: a type is either a union of types or "
                    "branches (`Name {field: Type, ...}`), not both",
                    branch.span,
                )
        span = dot.span.through(close.span)
        self.types.append(TypeDeclaration(name.text, "adt", (), span, branches=tuple(branches)))

    def _attributes(self, closing: str) -> tuple[tuple[Column, ...], Token]:
        """`(name: Type, ...)`, `[...]` or `{...}` from the opening token at the cursor: a
        relation's columns, a record's fields or a branch's; and the closing token."""
        self._advance()
        columns: list[Column] = []
        seen: set[str] = set()
        if self._peek().kind != closing:
            while True:
                name = self._expect_ident("an attribute name")
                self._expect(":", "`:` and a type after the attribute name")
                type_token = self._expect_ident("a type (number, symbol or a .type name)")
                if name.text in seen:
                    raise _Failure(f"duplicate attribute `{name.text}`", name.span)
                seen.add(name.text)
                columns.append(Column(name.text, type_token.text, type_token.span))
                if self._peek().kind != ",":
                    break
                self._advance()
        close = self._expect(closing, f"`,` or `{closing}` after an attribute")
        return tuple(columns), close

    def _pragma(self, dot: Token) -> None:
        key = self._expect(STRING, 'the pragma\'s name as a string (`.pragma "key" "value"`)')
        last, value = key, ""
        if self._peek().kind == STRING:
            last = self._advance()
            value = last.value
        self.pragmas.append(Pragma(key.value, value, dot.span.through(last.span)))

    def _declaration(self) -> None:
        names = [self._expect_ident("a relation name after `.decl`")]
        while self._peek().kind == ",":
            self._advance()
            names.append(self._expect_ident("a relation name"))
        if self._peek().kind != "(":
            raise self._fail("`(` and the attributes of the relation")
        columns, close = self._attributes(")")
        qualifiers = set()
        while True:
            token = self._peek()
            if token.kind != IDENT or self._peek(1).kind == "(" or token.text not in _QUALIFIERS:
                break
            qualifiers.add(self._advance().text)
        eqrel, overridable = "eqrel" in qualifiers, "overridable" in qualifiers
        choice, inline = self._choice_domain(), "inline" in qualifiers
        magic = True if "magic" in qualifiers else False if "no_magic" in qualifiers else None
        for name in names:
            span = name.span.through(close.span)
            self.declarations.append(
                Declaration(
                    name.text, tuple(columns), span, eqrel, overridable, choice, inline, magic
                )
            )

    def _choice_domain(self) -> tuple[ChoiceKey, ...]:
        """`choice-domain x, (y, z)` after a declaration's attributes, as Soufflé's grammar."""
        token = self._peek()
        if token.kind != IDENT or token.text != "choice" or self._peek(1).kind != "-":
            return ()
        self._advance()
        self._advance()
        if self._expect_ident("`domain` after `choice-`").text != "domain":
            raise _Failure("expected `choice-domain`", token.span)
        keys = []
        while True:
            if self._peek().kind == "(":
                first = self._advance()
                names = [self._expect_ident("an attribute name")]
                while self._peek().kind == ",":
                    self._advance()
                    names.append(self._expect_ident("an attribute name"))
                last = self._expect(")", "`)` after the key's attributes")
                keys.append(ChoiceKey(tuple(n.text for n in names), first.span.through(last.span)))
            else:
                name = self._expect_ident("an attribute name or `(` after `choice-domain`")
                keys.append(ChoiceKey((name.text,), name.span))
            if self._peek().kind != ",":
                return tuple(keys)
            self._advance()

    def _io_directive(self, kind: Literal["input", "output", "printsize"]) -> None:
        while True:
            name = self._expect_ident(f"a relation name after `.{kind}`")
            last = name
            params: list[tuple[str, str]] = []
            if self._peek().kind == "(":
                self._advance()
                if self._peek().kind != ")":
                    while True:
                        key = self._expect_ident("a parameter name")
                        self._expect("=", "`=` after the parameter name")
                        value = self._peek()
                        if value.kind == STRING:
                            params.append((key.text, value.value))
                        elif value.kind in (IDENT, NUMBER):
                            params.append((key.text, value.text))
                        else:
                            raise self._fail("a parameter value")
                        self._advance()
                        if self._peek().kind != ",":
                            break
                        self._advance()
                last = self._expect(")", "`,` or `)` after a parameter")
            self.directives.append(
                Directive(kind, name.text, tuple(params), name.span.through(last.span))
            )
            if self._peek().kind != ",":
                return
            self._advance()

    def _clause(self) -> None:
        start = self.pos
        first = self._peek()
        if first.kind != IDENT:
            raise self._fail("a rule, a fact or a directive")
        heads = [self._atom()]
        while self._peek().kind == ",":
            self._advance()
            heads.append(self._atom())
        token = self._peek()
        if token.kind == ".":
            end = self._advance()
            span = first.span.through(end.span)
            self.facts.extend(Fact(head, span) for head in heads)
            return
        dominating = None
        if token.kind == "<=" and len(heads) == 1:
            self._advance()
            dominating = self._atom()
            if dominating.relation != heads[0].relation:
                raise _Failure("both atoms of a subsumption are of one relation", dominating.span)
            token = self._peek()
        if token.kind != ":-":
            raise self._fail("`:-` or `.` after the head")
        self._advance()
        alternatives = self._disjunction()
        end = self._expect(".", "`,`, `;` or `.` after a body literal")
        span = first.span.through(end.span)
        if self.pos - start > MAX_CLAUSE_TOKENS:
            raise _Failure(
                f"the rule has more than {MAX_CLAUSE_TOKENS} tokens",
                span,
                errors.RULE_TOO_LARGE,
            )
        text = self.text[first.offset : end.end_offset]
        for head in heads:
            for body in alternatives:
                self.rules.append(Rule(head, tuple(body), span, text, dominating))

    # -- bodies --------------------------------------------------------------------------------

    def _disjunction(self) -> Alternatives:
        alternatives = self._conjunction()
        while self._peek().kind == ";":
            self._advance()
            alternatives = alternatives + self._conjunction()
            self._check_size(alternatives)
        return alternatives

    def _conjunction(self) -> Alternatives:
        alternatives: Alternatives = [[]]
        while True:
            start = self._peek()
            options = self._literal()
            alternatives = [left + right for left in alternatives for right in options]
            self._check_size(alternatives, start)
            if any(len(body) > MAX_BODY_LITERALS for body in alternatives):
                raise _Failure(
                    f"the rule body has more than {MAX_BODY_LITERALS} literals",
                    start.span,
                    errors.RULE_TOO_LARGE,
                )
            if self._peek().kind != ",":
                return alternatives
            self._advance()

    def _check_size(self, alternatives: Alternatives, token: Token | None = None) -> None:
        if len(alternatives) > _MAX_DISJUNCTS:
            where = (token or self._peek()).span
            raise _Failure(f"the disjunction expands to more than {_MAX_DISJUNCTS} rules", where)

    def _literal(self) -> Alternatives:
        token = self._peek()
        negated = token.kind == "!" or (
            token.kind == IDENT and token.text == "not" and self._peek(1).kind == IDENT
        )
        if negated:
            self._advance()
            if self._constraint_follows():
                return [[self._constraint(negated=True, start=token.span)]]
            if self._peek().kind == IDENT and self._peek(1).kind == "(":
                atom = self._atom()
                return [[Negation(atom, token.span.through(atom.span))]]
            negation = negation_of(self._literal(), token.span)
            self._check_size(negation, token)
            return negation
        if self._constraint_follows():
            return [[self._constraint(negated=False, start=token.span)]]
        if token.kind == IDENT:
            following = self._peek(1).kind
            functor = token.text in functors.NAMES or (
                token.text in _VARIADIC | _UNARY_WORDS | {"as"} and self._parenthesis_opens_term()
            )
            if following == "(" and not functor:  # `max(x, 1) > y` is a term, `max(x)` an atom
                return [[self._atom()]]
        if token.kind == "(" and not self._parenthesis_opens_term():
            self._open(token)
            alternatives = self._disjunction()
            self._expect(")", "`,`, `;` or `)` in a parenthesised body")
            self._nesting -= 1
            return alternatives
        left = self._expression()
        operator = self._peek()
        if operator.kind not in _COMPARISONS:
            raise self._fail("a comparison operator (=, !=, <, <=, >, >=)")
        self._advance()
        right = self._expression()
        comparison = Comparison(
            cast(CompareOp, operator.kind),
            left,
            right,
            left.span.through(right.span),
        )
        return [[comparison]]

    def _constraint_follows(self) -> bool:
        token = self._peek()
        return (
            token.kind == IDENT and token.text in functors.CONSTRAINTS and self._peek(1).kind == "("
        )

    def _constraint(self, *, negated: bool, start: Span) -> Comparison:
        """`contains(a, b)`, `match(p, s)` and their negations: the functor's value (1 or 0)
        compared with 0."""
        call, _depth = self._functor()
        span = start.through(call.span)
        return Comparison("=" if negated else "!=", call, NumberConst(0, span), span)

    def _parenthesis_opens_term(self) -> bool:
        """Tell `(x + 1) < y` (a term) from `(a(x) ; b(x))` (a group of literals), and
        `max(x, 1) < y` from an atom of a relation named `max`: a term's closing parenthesis
        is followed by an arithmetic or comparison operator."""
        tokens = self.tokens
        depth = 0
        for index in range(self.pos, len(tokens)):
            kind = tokens[index].kind
            if kind == "(":
                depth += 1
            elif kind == ")":
                depth -= 1
                if depth == 0:
                    following = tokens[index + 1] if index + 1 < len(tokens) else None
                    if following is None:
                        return False
                    if following.kind == IDENT:
                        return following.text in _WORD_OPERATORS
                    return following.kind in _COMPARISONS or following.kind in _ARITHMETIC
            elif kind == "." or kind == EOF:
                return False
        return False

    def _atom(self) -> Atom:
        name = self._expect_ident("a relation name")
        if self._peek().kind != "(":
            raise self._fail(f"`(` after `{name.text}`")
        self._advance()
        args: list[Term] = []
        if self._peek().kind != ")":
            args.append(self._expression())
            while self._peek().kind == ",":
                self._advance()
                args.append(self._expression())
        close = self._expect(")", "`,` or `)` after an argument")
        return Atom(name.text, tuple(args), name.span.through(close.span))

    # -- terms ---------------------------------------------------------------------------------

    def _open(self, token: Token) -> None:
        """Enter a parenthesis (or a unary minus): refuse nesting past `MAX_NESTING` before
        the recursion that would follow it can exhaust the stack."""
        self._nesting += 1
        if self._nesting > MAX_NESTING:
            raise _Failure(
                f"the expression is nested more than {MAX_NESTING} levels deep",
                token.span,
                errors.EXPRESSION_TOO_DEEP,
            )
        self._advance()

    def _expression(self) -> Term:
        return self._level(0)[0]

    def _level(self, level: int) -> tuple[Term, int]:
        """An expression of the operators of `_BINARY_LEVELS[level]` and tighter ones, and
        the depth of its tree (a chain `x+1+...+1` nests to the left). Precedence climbing:
        a call per operator, not one per level and operand (a third of parsing's time)."""
        left, depth = self._unary()
        while (operator := self._operator(level)) is not None:
            self._advance()
            right, right_depth = self._level(_LEVEL_OF[operator] + 1)
            left, depth = self._binary(operator, left, right, max(depth, right_depth) + 1)
        return left, depth

    def _operator(self, level: int) -> str | None:
        """The next token's binary operator if it binds at `level` or tighter."""
        token = self._peek()
        name = token.text if token.kind == IDENT else token.kind
        return name if _LEVEL_OF.get(name, -1) >= level else None

    @staticmethod
    def _binary(operator: str, left: Term, right: Term, depth: int) -> tuple[Term, int]:
        span = left.span.through(right.span)
        _check_depth(depth, span)
        return BinaryOp(cast(ArithOp, operator), left, right, span), depth

    def _unary(self) -> tuple[Term, int]:
        """`-x` (`0 - x`), `bnot x` (`x bxor -1`) and `lnot x` (`1 - (x lor 0)`): exact
        rewrites into binary operations, so every evaluator has only those to know."""
        token = self._peek()
        word = token.kind == IDENT and token.text in _UNARY_WORDS
        if word and self._peek(1).kind in (IDENT, NUMBER, STRING, "(", "-"):
            self._open(token)
            operand, depth = self._unary()
            self._nesting -= 1
            if token.text == "bnot":
                return self._binary("bxor", operand, NumberConst(-1, token.span), depth + 1)
            truth, depth = self._binary("lor", operand, NumberConst(0, token.span), depth + 1)
            return self._binary("-", NumberConst(1, token.span), truth, depth + 1)
        if token.kind != "-":
            return self._power()
        if self._peek(1).kind == NUMBER and self._peek(2).kind != "^":
            self._advance()
            number = self._advance()
            span = token.span.through(number.span)
            return self._number(number, span, negate=True), 0
        self._open(token)
        operand, depth = self._unary()
        self._nesting -= 1
        span = token.span.through(operand.span)
        _check_depth(depth + 1, span)
        return negation(operand, token.span, span), depth + 1

    def _power(self) -> tuple[Term, int]:
        """`a ^ b`, tighter than unary minus and to the right: `-2 ^ 2` is -4, `2 ^ 3 ^ 2`
        is 2 ^ 9, as in Soufflé."""
        base, depth = self._primary()
        token = self._peek()
        if token.kind != "^":
            return base, depth
        self._open(token)
        exponent, exponent_depth = self._unary()
        self._nesting -= 1
        return self._binary("^", base, exponent, max(depth, exponent_depth) + 1)

    def _primary(self) -> tuple[Term, int]:  # noqa: C901
        token = self._peek()
        kind = token.kind
        if kind == NUMBER:
            self._advance()
            return self._number(token, token.span, negate=False), 0
        if kind == STRING:
            self._advance()
            return StringConst(token.value, token.span), 0
        if kind == IDENT and token.text in _AGGREGATES and self._aggregate_follows():
            if not self.aggregates_allowed:
                raise _Failure(
                    "aggregates are not supported in queries: query a relation that a rule "
                    "computes with it",
                    token.span,
                )
            return self._aggregate(), 0
        if kind == IDENT and token.text in _VARIADIC and self._peek(1).kind == "(":
            return self._variadic()
        if kind in ("[", CONSTRUCTOR):
            return self._record()
        if kind == IDENT and token.text == "nil":
            self._advance()
            return NilConst(token.span), 0
        if kind == IDENT and token.text == "as" and self._peek(1).kind == "(":
            return self._cast()
        if kind == USER_FUNCTOR:
            return self._functor()
        if kind == IDENT and token.text in functors.NAMES and self._peek(1).kind == "(":
            if token.text in functors.CONSTRAINTS:
                raise _Failure(
                    f"`{token.text}(...)` is a constraint: write it as a body literal",
                    token.span,
                )
            return self._functor()
        if kind == IDENT:
            self._advance()
            if self._peek().kind == "(":
                if token.text == AUTOINC:  # numbered by `reasoner.analysis.autoinc`
                    self._advance()
                    close = self._expect(")", "`)`: `autoinc()` takes no arguments")
                    return Functor(AUTOINC, (), token.span.through(close.span)), 0
                if token.text in _FLOAT_FUNCTORS:
                    raise _Failure(
                        f"`{token.text}` is an old name Soufflé no longer knows: convert "
                        "with `to_float`, `to_number` or `to_unsigned`",
                        token.span,
                    )
                known = ", ".join(sorted(functors.NAMES | _VARIADIC))
                raise _Failure(
                    f"unknown functor `{token.text}`: the functors are {known}", token.span
                )
            if token.text == "_":
                return Wildcard(token.span), 0
            return Variable(token.text, token.span), 0
        if kind == "(":
            self._open(token)
            inner, depth = self._level(0)
            close = self._expect(")", "`)` or an arithmetic operator")
            self._nesting -= 1
            return dataclasses.replace(inner, span=token.span.through(close.span)), depth
        raise self._fail("a term (a variable, `_`, a number, a string, a record or `(`)")

    def _aggregate_follows(self) -> bool:
        """Whether the aggregate's name at the cursor starts an aggregate (`sum x : ...`), not
        a variable of that name (`sum = x + y`) or a call (`max(a, b)`)."""
        following = self._peek(1)
        if following.kind == ":":
            return True
        if following.kind == "(":
            return self._peek().text not in _VARIADIC or colon_after_parenthesis(
                self.tokens, self.pos + 1
            )
        if self._peek().text == "count":  # no expression: `count - 1` is a variable's
            return following.kind == "{"
        if following.kind == IDENT:
            return following.text not in _WORD_OPERATORS
        if following.kind == "-":  # `sum -x : {...}`, or a variable: `sum - 1`
            return colon_ends_expression(self.tokens, self.pos + 1)
        return following.kind in (NUMBER, STRING, USER_FUNCTOR, "{")

    def _aggregate(self) -> Aggregate:
        """`count : { body }`, `sum expr : { body }`, ...; a body of one atom may go without
        braces (`count : edge(x, _)`), as in Soufflé."""
        name = self._advance()
        target = None if name.text == "count" else self._expression()
        self._expect(":", f"`:` after the {name.text} aggregate's expression")
        brace = self._peek()
        if brace.kind != "{":
            atom = self._atom()
            op = cast(AggregateOp, name.text)
            return Aggregate(op, target, (atom,), name.span.through(atom.span))
        self._open(brace)
        alternatives = self._conjunction()
        if self._peek().kind == ";" or len(alternatives) > 1:
            raise _Failure("an aggregate's body cannot hold a disjunction (`;`)", name.span)
        close = self._expect("}", "`,` or `}` after a literal of the aggregate")
        self._nesting -= 1
        span = name.span.through(close.span)
        return Aggregate(cast(AggregateOp, name.text), target, tuple(alternatives[0]), span)

    def _variadic(self) -> tuple[Term, int]:
        """`max(a, b, ...)` / `min(...)`: folded from the left into binary operations."""
        name = self._advance()
        self._open(self._peek())
        result, depth = self._level(0)
        count = 1
        while self._peek().kind == ",":
            self._advance()
            operand, operand_depth = self._level(0)
            result, depth = self._binary(name.text, result, operand, max(depth, operand_depth) + 1)
            count += 1
        close = self._expect(")", "`,` or `)` after an argument")
        self._nesting -= 1
        if count < 2:
            raise _Failure(f"`{name.text}` needs at least two arguments", name.span)
        return dataclasses.replace(result, span=name.span.through(close.span)), depth

    def _cast(self) -> tuple[Cast, int]:
        """`as(term, Type)`: Soufflé's type cast (`reasoner.syntax.ast.Cast`)."""
        name = self._advance()
        self._open(self._peek())
        inner, depth = self._level(0)
        self._expect(",", "`,` and a type after the term of `as(term, Type)`")
        type_name = self._expect_ident("a type name")
        close = self._expect(")", "`)` after the type of `as(term, Type)`")
        self._nesting -= 1
        span = name.span.through(close.span)
        _check_depth(depth + 1, span)
        return Cast(inner, type_name.text, span), depth + 1

    def _functor(self) -> tuple[Functor, int]:
        """`cat(a, b, ...)`, `strlen(s)`, ...: a string functor's call (`reasoner.values.functors`),
        its number of arguments checked here; or `@f(...)`, a user-defined functor's, which the
        analysis checks against its `.functor`."""
        name = self._advance()
        if name.kind == USER_FUNCTOR and self._peek().kind != "(":
            raise self._fail(f"`(` and the arguments of `{name.text}`")
        args, depth, close = self._arguments(")")
        signature = None if name.kind == USER_FUNCTOR else functors.signature(name.text)
        if signature is not None and not signature.accepts(len(args)):
            most = len(signature.params)
            if signature.variadic:
                wanted = "at least one argument"
            elif signature.optional:
                wanted = f"{most - signature.optional} to {most} arguments"
            else:
                wanted = f"{most} argument{'s' * (most > 1)}"
            raise _Failure(f"`{name.text}` takes {wanted}, not {len(args)}", name.span)
        span = name.span.through(close.span)
        _check_depth(depth, span)
        return Functor(name.text, tuple(args), span), depth

    def _arguments(self, closing: str) -> tuple[list[Term], int, Token]:
        """`(a, b, ...)` or `[a, b, ...]` from the opening token at the cursor: the terms (none
        is allowed), their nesting depth and the closing token."""
        self._open(self._peek())
        args: list[Term] = []
        depth = 0
        if self._peek().kind != closing:
            while True:
                arg, arg_depth = self._level(0)
                args.append(arg)
                depth = max(depth, arg_depth + len(args))
                if self._peek().kind != ",":
                    break
                self._advance()
        close = self._expect(closing, f"`,` or `{closing}` after an argument")
        self._nesting -= 1
        return args, depth, close

    def _record(self) -> tuple[Term, int]:
        """`[a, b, ...]`, `$Branch(a, ...)` or `$Branch`."""
        token = self._peek()
        if token.kind == "[":
            args, depth, close = self._arguments("]")
            span = token.span.through(close.span)
            _check_depth(depth + 1, span)
            return RecordTerm(tuple(args), span), depth + 1
        self._advance()
        if self._peek().kind != "(":
            return BranchTerm(token.value, (), token.span), 0
        args, depth, close = self._arguments(")")
        span = token.span.through(close.span)
        _check_depth(depth + 1, span)
        return BranchTerm(token.value, tuple(args), span), depth + 1

    @staticmethod
    def _number(token: Token, span: Span, *, negate: bool) -> NumberConst:
        try:
            return number_literal(token.text, span, negate=negate)
        except LiteralRefused as refused:
            raise _Failure(str(refused), span) from None


def parse_program(
    text: str, filename: str = "<input>", *, expand_components: bool = True
) -> Program:
    """Parse a whole program; raise `ProgramError` with every `parse_error` found.

    Components are expanded (`reasoner.syntax.components`). With `expand_components=False`
    the program is the text as written, which a piece of a program may be (its components
    defined elsewhere): every rule clause once, those inside components included, with their
    names as written, and the facts outside components; nothing is instantiated."""
    parser = _Parser(text, filename)
    return parser.program() if expand_components else parser.written()


def parse_body(text: str, filename: str = "<query>") -> tuple[BodyLiteral, ...]:
    """Parse a conjunctive query such as `tc("a", x), !edge("a", x), x < 3` (a final `.` is
    allowed). Disjunction is rejected: a query answers one conjunction."""
    parser = _Parser(text, filename)
    parser.aggregates_allowed = False
    parser._raise_if_errors()
    alternatives: Alternatives = []
    try:
        if parser._peek().kind == EOF:
            raise parser._fail("a query")
        alternatives = parser._disjunction()
        if parser._peek().kind == ".":
            parser._advance()
        if parser._peek().kind != EOF:
            raise parser._fail("`,` or the end of the query")
    except _Failure as failure:
        parser._failed(failure)
    parser._raise_if_errors()
    if len(alternatives) != 1:
        first, last = parser.tokens[0], parser.tokens[-1]
        span = Span(first.line, first.column, last.line, last.column)
        parser.diagnostics.append(
            parser._diagnostic("disjunction (`;`) is not supported in queries", span)
        )
        parser._raise_if_errors()
    return tuple(alternatives[0])
