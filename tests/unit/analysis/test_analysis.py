"""Unit tests of the static analysis: arities, types, safety, facts, strata and queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import AnalyzedProgram, analyze, check_program, check_query
from reasoner.errors import ProgramError
from reasoner.syntax import parse_body, parse_program
from reasoner.syntax.ast import Atom, Negation

BENCH = Path("/work/shared/bench")
BENCH_PROGRAMS = sorted(BENCH.glob("**/*.dl")) if BENCH.exists() else []
UNBOUND = "is not bound by a positive body atom"


def errors(text: str, **options: bool) -> list[tuple[int, int, str, str]]:
    """(line, column, code, message) of every diagnostic, in reported order."""
    with pytest.raises(ProgramError) as info:
        check_program(text, "t.dl", **options)
    return [(d.line, d.column, d.code, d.message) for d in info.value.diagnostics]


def codes(text: str, **options: bool) -> list[str]:
    return [code for _, _, code, _ in errors(text, **options)]


def strata_of(analyzed: AnalyzedProgram) -> list[tuple[list[str], bool]]:
    return [(sorted(s.relations), s.recursive) for s in analyzed.strata]


# -- relations and arities -------------------------------------------------------------------------


class TestRelations:
    def test_declared_relation_info(self) -> None:
        analyzed = check_program(
            '.decl edge(src: number, dst: symbol)\n.input edge(filename="e.tsv")\n.output edge\n'
        )
        info = analyzed.relations["edge"]
        assert info.types == ("number", "symbol")
        assert info.column_names == ("src", "dst")
        assert info.declared and info.is_input and info.is_output
        assert info.input_params == (("filename", "e.tsv"),)
        assert info.output_params == ()
        assert info.arity == 2

    def test_undeclared_relations_are_inferred(self) -> None:
        analyzed = check_program('p(x, y) :- q(x, y).\nq(1, "a").\n.output p')
        p = analyzed.relations["p"]
        assert (p.types, p.column_names, p.declared, p.is_output) == (
            ("number", "symbol"),
            ("x", "y"),  # the variables of the first rule deriving it
            False,
            True,
        )
        assert analyzed.relations["q"].column_names == ("c0", "c1")  # facts name nothing

    def test_columns_are_named_by_the_first_rule_only_with_distinct_variables(self) -> None:
        analyzed = check_program(
            "e(1, 2).\nd(x, x) :- e(x, _).\nw(x, y + 1) :- e(x, y).\nk(x, 1) :- e(x, _).\n"
            "t(a, b) :- e(b, a).\nt(x, y) :- e(x, y)."
        )
        names = {n: analyzed.relations[n].column_names for n in ("d", "w", "k", "t")}
        assert names == {
            "d": ("c0", "c1"),
            "w": ("c0", "c1"),
            "k": ("c0", "c1"),
            "t": ("a", "b"),
        }

    def test_relations_are_listed_by_first_mention(self) -> None:
        analyzed = check_program("b(x) :- a(x).\na(1).\n.decl c(x: number)")
        assert list(analyzed.relations) == ["b", "a", "c"]

    def test_arity_mismatch_against_declaration(self) -> None:
        found = errors(".decl e(x: number, y: number)\ne(1, 2, 3).\np(x) :- e(x).")
        assert found == [
            (
                2,
                1,
                "arity_mismatch",
                "relation `e` is declared with 2 columns, but this atom has 3 arguments",
            ),
            (
                3,
                9,
                "arity_mismatch",
                "relation `e` is declared with 2 columns, but this atom has 1 argument",
            ),
        ]

    def test_arity_mismatch_against_first_use(self) -> None:
        found = errors("q(1).\np(x) :- q(x, x).\nq(2, 3).")
        assert [(line, column) for line, column, _, _ in found] == [(2, 9), (3, 1)]
        assert found[0][3] == "relation `q` is used with 1 argument at line 1, but with 2 here"

    def test_conflicting_declarations(self) -> None:
        found = errors(".decl p(x: number)\n.decl p(x: number, y: number)\n.decl p(y: symbol)")
        assert [(line, code) for line, _, code, _ in found] == [
            (2, "arity_mismatch"),
            (3, "type_mismatch"),
        ]
        assert found[0][3] == (
            "relation `p` is declared again with 2 columns; its declaration at line 1 has 1"
        )

    def test_identical_redeclaration_is_accepted(self) -> None:
        analyzed = check_program(".decl p(x: number)\n.decl p(y: number)\np(1).")
        assert analyzed.relations["p"].column_names == ("x",)

    def test_unknown_relation_once_per_relation(self) -> None:
        found = errors("p(x) :- q(x).\nr(x) :- q(x), !s(x), p(x).", allow_undefined=False)
        assert found == [
            (
                1,
                9,
                "unknown_relation",
                "relation `q` is not defined: it has no .decl, rule, fact or .input",
            ),
            (
                2,
                16,
                "unknown_relation",
                "relation `s` is not defined: it has no .decl, rule, fact or .input",
            ),
        ]

    def test_undefined_relations_are_empty_with_a_warning(self) -> None:
        analyzed = check_program('p(x) :- q(x, y), y = "a".\nr(x) :- q(x, _).', "t.dl")
        assert analyzed.relations["q"].types == ("number", "symbol")
        assert "q" not in analyzed.stratum_of
        ((warning),) = analyzed.warnings  # once per relation, at its first use
        assert (warning.code, warning.line, warning.column) == ("unknown_relation", 1, 9)
        assert "empty until facts for it arrive" in warning.message

    def test_defined_by_declaration_fact_or_input(self) -> None:
        check_program(".decl a(x: number)\nb(1).\n.input c\np(x) :- a(x), b(x), c(x).")

    def test_directive_of_unknown_relation(self) -> None:
        found = errors(".input ghost\n.output p, phantom(IO=file)\np(1).", allow_undefined=True)
        assert found == [
            (
                1,
                8,
                "unknown_relation",
                "`.input` of relation `ghost`, which is never declared or used",
            ),
            (
                2,
                12,
                "unknown_relation",
                "`.output` of relation `phantom`, which is never declared or used",
            ),
        ]


# -- types -----------------------------------------------------------------------------------------


class TestTypes:
    def types(self, text: str, relation: str) -> tuple[str, ...]:
        return check_program(text, allow_undefined=True).relations[relation].types

    def test_unconstrained_columns_default_to_number(self) -> None:
        assert self.types("p(x, y) :- q(x, y).", "p") == ("number", "number")

    def test_constants_flow_through_variables_and_rules(self) -> None:
        text = 'a(x, y) :- b(y, x).\nb(y, z) :- c(z, y).\nc("s", 1).'
        assert self.types(text, "a") == ("symbol", "number")
        assert self.types(text, "b") == ("number", "symbol")

    def test_declared_types_propagate_to_undeclared(self) -> None:
        text = ".decl e(x: symbol)\np(x) :- e(x).\nq(y) :- p(y)."
        assert self.types(text, "q") == ("symbol",)

    def test_same_variable_links_columns(self) -> None:
        assert self.types("p(x, x) :- q(x).\np(1, 2).", "p") == ("number", "number")
        assert self.types('p(x, x) :- q(x).\np("a", "b").', "q") == ("symbol",)
        assert codes('p(x, x) :- q(x).\np(1, "a").', allow_undefined=True) == ["type_mismatch"]

    def test_arithmetic_and_ordering_need_numbers_or_symbols(self) -> None:
        assert self.types("p(x) :- q(x, y), y < 3.\nr(z + 1) :- q(z, _).", "q") == (
            "number",
            "number",
        )
        found = errors('.decl s(x: symbol)\np(x) :- s(x), x > 1.\nq(y + 1) :- s(y).\nr("a" * 2).')
        assert [(line, column, message) for line, column, _, message in found] == [
            (2, 19, "`>` compares values of one type, but `x` is a symbol and `1` is a number"),
            (3, 7, "arithmetic works on values of one type, here a symbol, but `1` is a number"),
            (4, 3, 'arithmetic needs numbers, but `"a"` is a symbol'),
        ]
        accepted = '.decl s(x: symbol)\np(x) :- s(x), x > "m".\nq(y + "!") :- s(y).'
        assert check_program(accepted).relations["q"].types == ("symbol",)

    def test_equality_needs_one_type(self) -> None:
        assert self.types('p(x) :- q(x), x != "b".', "q") == ("symbol",)
        found = errors('.decl n(x: number)\np(x) :- n(x), x = "a".\nq(1) :- 1 = "a".')
        assert [(line, column) for line, column, _, _ in found] == [(2, 19), (3, 13)]
        assert found[0][3] == (
            '`=` compares values of one type, but `x` is a number and `"a"` is a symbol'
        )

    def test_mismatch_reported_at_the_offending_term(self) -> None:
        text = '.decl e(x: number, y: number)\ne(1, "two").\np(x) :- e(x, _), q(x).\n'
        found = errors(text + ".decl q(x: symbol)")
        assert found == [
            (2, 6, "type_mismatch", 'argument 2 of `e` is a number, but `"two"` is a symbol'),
            (3, 20, "type_mismatch", "argument 1 of `q` is a symbol, but `x` is a number"),
        ]

    def test_head_arithmetic_type(self) -> None:
        found = errors(".decl p(x: symbol)\np(x + 1) :- q(x).\nq(1).")
        assert found == [
            (2, 3, "type_mismatch", "argument 1 of `p` is a symbol, but `x + 1` is a number")
        ]

    def test_atoms_with_wrong_arity_do_not_cascade(self) -> None:
        assert codes('.decl e(x: number)\np(x) :- e(x, "a").\nq(y) :- e(y).') == ["arity_mismatch"]

    @pytest.mark.parametrize("op", ["min", "max", "sum", "mean"])
    def test_an_aggregate_over_a_column_its_source_lacks_is_an_arity_error(self, op: str) -> None:
        # Found by the parser fuzz: the aggregate's type checks read past the source's columns.
        assert codes(f"d(1).\nb(m) :- m = {op} x : {{ d(_, x) }}.") == ["arity_mismatch"]
        assert codes(f".decl d(x: number)\nb(m) :- m = {op} x : d(_, x).") == ["arity_mismatch"]


# -- safety ----------------------------------------------------------------------------------------


class TestSafety:
    def test_unbound_head_variable(self) -> None:
        assert errors(".decl e(x: number, y: number)\np(x, y) :- e(x, z).") == [
            (
                2,
                6,
                "unsafe_rule",
                "variable `y` in the head is not bound by a positive body atom",
            )
        ]

    def test_equality_binds_to_a_fixpoint(self) -> None:
        check_program(
            ".decl e(x: number)\n"
            "p(x, y, z, w) :- e(x), z = y * 2, y = x + 1, w = 3.\n"
            "q(a) :- a = 7.\n"
            "r(b) :- e(c), b + 0 = c, b = c."
        )

    def test_equality_between_unbound_variables_binds_nothing(self) -> None:
        found = errors("p(x) :- x = y.")
        assert [message for _, _, _, message in found] == [
            "variable `x` in the head is not bound by a positive body atom",
            "variable `y` in a comparison is not bound by a positive body atom",
        ]

    def test_negation_comparison_and_arithmetic_need_bound_variables(self) -> None:
        text = (
            ".decl e(x: number, y: number)\n"
            "p(x) :- e(x, _), !e(x, y), !e(y, x).\n"  # y in two negations: not local to one
            "q(x) :- e(x, _), x < z.\n"
            "r(x) :- e(x, _), e(x + w, _).\n"
            "s(x) :- e(x, _), !e(x + v, _)."
        )
        found = errors(text)
        assert [(line, column, message) for line, column, _, message in found] == [
            (2, 24, f"variable `y` in a negated atom {UNBOUND}"),
            (3, 22, f"variable `z` in a comparison {UNBOUND}"),
            (4, 24, f"variable `w` in an arithmetic expression {UNBOUND}"),
            (5, 25, f"variable `v` in an arithmetic expression {UNBOUND}"),
        ]

    def test_wildcards(self) -> None:
        check_program(".decl e(x: number, y: number)\np(x) :- e(x, _), !e(_, x).")
        text = ".decl e(x: number, y: number)\np(_) :- e(_, _).\nq(x) :- e(x, _), _ < x."
        found = errors(text)
        assert [(line, column, message) for line, column, _, message in found] == [
            (2, 3, "wildcard `_` is not allowed in the head"),
            (3, 18, "wildcard `_` is not allowed in a comparison"),
        ]

    def test_each_variable_reported_once_per_rule(self) -> None:
        found = errors("p(y, y) :- q(1), y > 1, !q(y).\nq(1).")
        assert [(line, column) for line, column, _, _ in found] == [(1, 3)]

    def test_facts_must_be_ground(self) -> None:
        found = errors("p(x).\nq(1, _).")
        assert [(line, column, code) for line, column, code, _ in found] == [
            (1, 3, "unsafe_rule"),
            (2, 6, "unsafe_rule"),
        ]
        assert found[0][3] == "variable `x` in a fact: facts must be ground"

    def test_rules_without_positive_atoms(self) -> None:
        analyzed = check_program(".decl q(x: number)\np(1) :- !q(1).\nok() :- 1 < 2.")
        assert {r.head.relation for s in analyzed.strata for r in s.rules} == {"p", "ok"}
        assert errors("p(x) :- !q(x).\nq(1).") == [
            (1, 3, "unsafe_rule", "variable `x` in the head is not bound by a positive body atom")
        ]


# -- facts -----------------------------------------------------------------------------------------


class TestFacts:
    def test_facts_are_evaluated_deduplicated_and_ordered(self) -> None:
        analyzed = check_program(
            'e(2, "b").\ne(1, "a").\ne(2, "b").\nn(1 + 2 * 3).\nn(-7 / 2).\nn(-7 % 2).\n'
            "n(9223372036854775807 + 1).\nok()."
        )
        assert analyzed.facts == {
            "e": ((2, "b"), (1, "a")),
            "n": ((7,), (-3,), (-1,), (-(2**63),)),
            "ok": ((),),
        }

    def test_relation_with_facts_and_rules(self) -> None:
        analyzed = check_program("p(1).\np(x) :- q(x).\nq(2).")
        assert analyzed.facts == {"p": ((1,),), "q": ((2,),)}
        assert analyzed.stratum_of == {"p": 0}

    def test_division_by_zero_in_a_fact_is_a_parse_error(self) -> None:
        """Documented choice: a fact whose constant arithmetic fails has no value at all; it is
        reported as `parse_error` with an "arithmetic error in fact" message at the operation."""
        found = errors("p(1 / 0).\np(5 % (2 - 2)).\np(1).")
        assert found == [
            (1, 3, "parse_error", "arithmetic error in fact: division by zero"),
            (2, 3, "parse_error", "arithmetic error in fact: remainder by zero"),
        ]

    def test_division_by_zero_in_a_rule_is_not_a_static_error(self) -> None:
        check_program("p(x / 0) :- q(x).\nq(1).")


# -- stratification --------------------------------------------------------------------------------


class TestStratify:
    def test_topological_order_with_ties_by_first_appearance(self) -> None:
        analyzed = check_program(
            ".decl e(x: number)\n.input e\n"
            "c(x) :- b(x), a(x).\nb(x) :- e(x).\nd(x) :- e(x).\na(x) :- e(x).\n"
        )
        # first mentions: e, c, b, a, d. b, a and d are ready at once and go in that order, but
        # c, mentioned before d, is emitted as soon as it is ready.
        assert [sorted(s.relations) for s in analyzed.strata] == [["b"], ["a"], ["c"], ["d"]]
        assert analyzed.stratum_of == {"b": 0, "a": 1, "c": 2, "d": 3}
        assert [s.index for s in analyzed.strata] == [0, 1, 2, 3]

    def test_recursive_flag_and_components(self) -> None:
        analyzed = check_program(
            ".decl e(x: number, y: number)\n.input e\n"
            "tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).\n"
            "even(x, y) :- e(x, y).\neven(x, z) :- odd(x, y), e(y, z).\n"
            "odd(x, z) :- even(x, y), e(y, z).\n"
            "copy(x, y) :- tc(x, y).\n"
        )
        assert strata_of(analyzed) == [
            (["tc"], True),
            (["even", "odd"], True),
            (["copy"], False),
        ]

    def test_rules_of_a_stratum_in_program_order(self) -> None:
        analyzed = check_program(
            "a(x) :- b(x).\nb(x) :- e(x).\nb(x) :- a(x).\na(x) :- e(x), x > 1.\ne(1)."
        )
        (stratum,) = analyzed.strata
        assert [r.text for r in stratum.rules] == [r.text for r in analyzed.program.rules]

    def test_negation_only_looks_down(self) -> None:
        analyzed = check_program(
            ".decl e(x: number)\n.input e\nq(x) :- e(x), !p(x).\np(x) :- e(x), x > 3."
        )
        assert analyzed.stratum_of == {"p": 0, "q": 1}
        negation = analyzed.strata[1].rules[0].body[1]
        assert isinstance(negation, Negation)

    def test_relations_without_rules_have_no_stratum(self) -> None:
        analyzed = check_program(".decl e(x: number)\n.input e\np(1).\nq(x) :- e(x), p(x).")
        assert analyzed.stratum_of == {"q": 0}
        assert len(analyzed.strata) == 1

    def test_cyclic_negation_messages(self) -> None:
        found = errors(
            "e(1).\np(x) :- e(x), !p(x).\na(x) :- e(x), !c(x).\nc(x) :- d(x).\nd(x) :- a(x).\n"
        )
        assert found == [
            (2, 15, "cyclic_negation", "negation of `p` is part of a cycle: p -> !p"),
            (
                3,
                15,
                "cyclic_negation",
                "negation of `c` is part of a cycle: c -> d -> a -> !c",
            ),
        ]

    def test_cycle_path_marks_every_negative_step(self) -> None:
        found = errors("e(1).\na(x) :- e(x), !b(x).\nb(x) :- e(x), !a(x).")
        assert [message for _, _, _, message in found] == [
            "negation of `b` is part of a cycle: b -> !a -> !b",
            "negation of `a` is part of a cycle: a -> !b -> !a",
        ]

    def test_long_cycles_are_elided(self) -> None:
        lines = ["r0(1)."] + [f"r{i + 1}(x) :- r{i}(x)." for i in range(30)]
        lines.append("r0(x) :- r30(x), !r25(x).")
        ((_, _, code, message),) = errors("\n".join(lines))
        assert code == "cyclic_negation"
        assert message == (
            "negation of `r25` is part of a cycle: "
            "r25 -> r24 -> r23 -> r22 -> r21 -> r20 -> ... -> r5 -> r4 -> r3 -> r2 -> r1 -> r0 "
            "-> !r25"
        )

    def test_many_negation_errors_in_one_component_are_each_reported(self) -> None:
        count = 2000
        lines = [f"r{i}(x) :- r{(i - 1) % count}(x), !s{i}(x).\ns{i}(x) :- r{(i * 7) % count}(x)."
                 for i in range(count)]  # fmt: skip
        found = errors("r0(1).\n" + "\n".join(lines))
        assert len(found) == count
        assert {code for _, _, code, _ in found} == {"cyclic_negation"}

    def test_thousands_of_relations_without_recursion_limit(self) -> None:
        count = 5000
        lines = ["r0(1)."] + [f"r{i + 1}(x) :- r{i}(x)." for i in range(count)]
        lines.append(f"r0(x) :- r{count}(x).")
        analyzed = check_program("\n".join(lines))
        (stratum,) = analyzed.strata
        assert stratum.recursive and len(stratum.relations) == count + 1

    def test_long_chain_is_ordered(self) -> None:
        count = 3000
        lines = ["r0(1)."] + [f"r{i + 1}(x) :- r{i}(x)." for i in range(count)]
        analyzed = check_program("\n".join(reversed(lines)))
        assert [next(iter(s.relations)) for s in analyzed.strata] == [
            f"r{i + 1}" for i in range(count)
        ]


# -- everything together ---------------------------------------------------------------------------


class TestCollection:
    def test_all_errors_sorted_by_location(self) -> None:
        text = (
            ".decl e(x: number, y: number)\n"
            "p(x, y) :- e(x, _).\n"  # unsafe
            'e(1, "a").\n'  # type
            "q(x) :- f(x).\n"  # unknown
            "r(x) :- e(x, _), !s(x).\ns(x) :- r(x).\n"  # cyclic negation
            "e(1).\n"  # arity
        )
        assert [(line, code) for line, _, code, _ in errors(text, allow_undefined=False)] == [
            (2, "unsafe_rule"),
            (3, "type_mismatch"),
            (4, "unknown_relation"),
            (5, "cyclic_negation"),
            (7, "arity_mismatch"),
        ]

    def test_duplicates_from_desugaring_are_reported_once(self) -> None:
        found = errors("e(1).\na(y), b(y) :- e(x) ; e(x), x > 0.")
        assert [(line, column) for line, column, _, _ in found] == [(2, 3), (2, 9)]

    def test_parse_errors_come_alone(self) -> None:
        assert codes("p(x) :- q(x).\nr(1") == ["parse_error"]

    def test_analyze_with_and_without_source(self) -> None:
        text = "p(x) :- q(1).\nq(1)."
        with pytest.raises(ProgramError) as info:
            analyze(parse_program(text), filename="a.dl")
        assert info.value.diagnostics[0].source_line == ""
        assert info.value.format().startswith("a.dl:1:3: unsafe_rule:")
        with pytest.raises(ProgramError) as info:
            analyze(parse_program(text), source=text, filename="a.dl")
        assert info.value.format().endswith("\np(x) :- q(1).\n  ^")

    def test_analyzed_program_keeps_the_program(self) -> None:
        program = parse_program("p(1).")
        assert analyze(program).program is program


# -- queries ---------------------------------------------------------------------------------------


class TestCheckQuery:
    @pytest.fixture
    def analyzed(self) -> AnalyzedProgram:
        return check_program(
            ".decl edge(x: symbol, y: symbol)\n.input edge\ntc(x, y) :- edge(x, y).\n"
            "tc(x, z) :- tc(x, y), edge(y, z).\nn(1)."
        )

    def query_errors(self, text: str, analyzed: AnalyzedProgram) -> list[tuple[int, str, str]]:
        with pytest.raises(ProgramError) as info:
            check_query(parse_body(text), analyzed, source=text)
        assert all(d.filename == "<query>" for d in info.value.diagnostics)
        return [(d.column, d.code, d.message) for d in info.value.diagnostics]

    def test_valid_queries(self, analyzed: AnalyzedProgram) -> None:
        for text in [
            'tc("a", x), !edge("a", x)',
            "tc(x, y), x != y",
            "n(k), k < 3, j = k + 1",
            'edge("a", _)',
            "!n(1)",
        ]:
            body = parse_body(text)
            assert check_query(body, analyzed)[0] == body  # no unsigned operation to rewrite

    def test_unknown_relation_and_arity(self, analyzed: AnalyzedProgram) -> None:
        assert self.query_errors("nope(x), tc(x)", analyzed) == [
            (1, "unknown_relation", "relation `nope` is not in the program"),
            (10, "arity_mismatch", "relation `tc` has 2 columns, but this atom has 1 argument"),
        ]

    def test_unsafe_and_mistyped_queries(self, analyzed: AnalyzedProgram) -> None:
        assert self.query_errors("tc(x, y), !edge(y, z), w > 1, x < 2", analyzed) == [
            (20, "unsafe_rule", f"variable `z` in a negated atom {UNBOUND}"),
            (24, "unsafe_rule", f"variable `w` in a comparison {UNBOUND}"),
            (
                35,
                "type_mismatch",
                "`<` compares values of one type, but `x` is a symbol and `2` is a number",
            ),
        ]
        assert self.query_errors("tc(1, y)", analyzed)[0][1] == "type_mismatch"


# -- benchmark programs ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", BENCH_PROGRAMS, ids=lambda p: str(p.relative_to(BENCH)))
def test_bench_programs_analyze(path: Path) -> None:
    analyzed = check_program(path.read_text(), path.name)
    assert analyzed.strata
    position = analyzed.stratum_of
    rules = [rule for stratum in analyzed.strata for rule in stratum.rules]
    assert sorted(map(id, rules)) == sorted(map(id, analyzed.program.rules))
    for stratum in analyzed.strata:
        for rule in stratum.rules:
            assert position[rule.head.relation] == stratum.index
            for literal in rule.body:
                atom = literal.atom if isinstance(literal, Negation) else literal
                if isinstance(atom, Atom) and atom.relation in position:
                    limit = stratum.index - 1 if isinstance(literal, Negation) else stratum.index
                    assert position[atom.relation] <= limit
    for name in position:
        assert name in analyzed.relations


def bench(*parts: str) -> Path:
    path = BENCH.joinpath(*parts)
    if not path.exists():
        pytest.skip("benchmark programs not available")
    return path


def test_crdt_linear_strata() -> None:
    analyzed = check_program(bench("crdt", "crdt_linear.dl").read_text())
    recursive = {name for s in analyzed.strata if s.recursive for name in s.relations}
    assert recursive == {"nextSiblingAnc", "nextVis"}
    assert len(analyzed.strata) == 18
    assert analyzed.relations["assign"].types[-1] == "symbol"
    order = analyzed.stratum_of
    assert order["hasNextSibling"] < order["nextSiblingAnc"] < order["nextElem"]
    assert order["hasValue"] < order["nextVis"] < order["nextVisible"] < order["result"]


def test_transitive_closure_strata() -> None:
    analyzed = check_program(bench("graph1000-rand1k", "program.dl").read_text())
    assert strata_of(analyzed) == [(["tc"], True)]
    assert analyzed.relations["edge"].is_input and analyzed.relations["tc"].is_output


def test_owl2rl_strata() -> None:
    text = bench("lubm1-owl2rl", "program.dl").read_text()
    analyzed = check_program(text)
    assert sum(len(s.rules) for s in analyzed.strata) == 98
    people = next(s for s in analyzed.strata if "Person" in s.relations)
    assert people.recursive and {"Employee", "Faculty", "Professor"} <= people.relations


class TestAnalysisOfRewrites:
    """What the analysis adds (a negation's auxiliary relation, eqrel's rules) is checked as
    the user wrote it, and reported in the user's names."""

    def test_a_negations_local_variables_are_checked_as_written(self) -> None:
        decls = ".decl s(a: number, b: number, c: Ev)\n.type Ev <: number\n.type Od <: number\n"
        found = errors(decls + ".decl e(y: symbol)\nr(y) :- e(y), !s(p, p, y).")
        assert [message for *_, message in found] == [
            "argument 3 of `s` is a number, but `y` is a symbol"
        ]
        found = errors(decls + ".decl e(y: Od)\nr(y) :- e(y), !s(p, p, y).")
        assert "is a `Ev` here but a `Od`" in found[0][3]

    def test_eqrel_compares_primitive_types_and_unsigned_is_its_own(self) -> None:
        analyzed = check_program(
            ".type Id = number\n.decl same(x: Id, y: number) eqrel\nsame(1, 2).\n"
            ".decl b(x: number)\nb(x) :- same(x, _)."
        )
        assert analyzed.relations["b"].types == ("number",)
        with pytest.raises(ProgramError, match="is an unsigned, but `x` is a number"):
            check_program(".decl a(x: unsigned)\n.decl b(x: number)\na(x) :- b(x).")
