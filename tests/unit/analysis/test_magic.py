"""The magic-set transformation (`reasoner.analysis.magic`). `tests/golden/magic/` holds a
program with `.pragma "magic-transform" "*"` and what the 64-bit Soufflé 2.5 wrote for it; the
Update cases check the transformed state against a fresh Bootstrap and the oracle (which reads
the program as written, untransformed)."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.analysis.magic import requested
from reasoner.cli.main import main
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.syntax.parser import parse_program
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("magic")
PROGRAM = GOLDEN.program
OUTPUTS = (
    "cousins",
    "pair",
    "reduced_zero",
    "from_a",
    "into_d",
    "gen_zero",
    "open_from_a",
    "fan",
    "from_one",
)


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_the_transformed_program_gives_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)
    assert m.analyzed.goal_directed == {"parent", "path_r", "reach", "reduced", "samegen", "valid"}


def test_what_is_left_alone() -> None:
    """Read under a negation or in an aggregate (and what those read), input or output, only
    facts, or asked for with nothing bound: computed in full, as without the pragma."""
    text = """
    .pragma "magic-transform" "*"
    .decl e(x: number, y: number)
    .input e
    .decl p(x: number, y: number)
    p(x, y) :- e(x, y).
    p(x, z) :- e(x, y), p(y, z).
    .decl neg(x: number, y: number)
    neg(x, y) :- e(x, y).
    .decl agg(x: number, y: number)
    agg(x, y) :- e(x, y).
    .decl free(x: number, y: number)
    free(x, y) :- e(x, y).
    .decl facts(x: number)
    facts(1).
    .decl out(y: number)
    .output out
    out(y) :- free(_, y), p(1, y), !neg(y, 1), n = count : { agg(y, _) }, n >= 0, facts(y).
    """
    assert check_program(text).goal_directed == {"p"}


def test_a_variable_bound_only_by_the_head_binds_nothing_through_arithmetic() -> None:
    """`gen(x) :- gen(y), x = y - 1.` asked for `gen(0)`: binding y = x + 1 from the head would
    ask for 1, 2, 3, ... forever; `gen` is computed in full instead, as Soufflé does."""
    text = """
    .pragma "magic-transform" "*"
    .decl seed(x: number)
    seed(5).
    .decl gen(x: number)
    gen(x) :- seed(x).
    gen(x) :- gen(y), x = y - 1, x >= 0.
    .decl zero()
    .output zero
    zero() :- gen(0).
    """
    m = Materialization.from_text(text)
    m.bootstrap()
    assert m.analyzed.goal_directed == frozenset()
    assert m.rows("zero") == [()]


def test_the_relations_asked_for() -> None:
    """The pragma's list (`*`: all), `magic` and `no_magic`, the exclusion pragma, and the
    command line's, as Soufflé's `--magic-transform`."""
    text = """
    .pragma "magic-transform" "a, b"
    .pragma "magic-transform-exclude" "b"
    .decl a(x: number)
    .decl b(x: number)
    .decl c(x: number) magic
    .decl d(x: number) no_magic
    .decl e(x: number)
    """
    program = parse_program(text)
    assert requested(program) == {"a", "c"}
    assert requested(program, ["e", "d"]) == {"a", "c", "e"}
    assert requested(parse_program(text.replace('"a, b"', '"*"'))) == {"a", "c", "e"}


def test_the_magic_pragma_is_applied_without_a_warning() -> None:
    analyzed = check_program('.pragma "magic-transform" "*"\n.decl a(x: number)\na(1).')
    assert analyzed.warnings == ()


GRAPH = """
.pragma "magic-transform" "*"
.decl edge(x: number, y: number)
.decl reach(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
.decl from_one(y: number)
.output from_one
from_one(y) :- reach(1, y).
.decl back(x: number)
.output back
back(x) :- edge(x, _), reach(x, x).
"""
EDGES = [(1, 2), (2, 3), (3, 1), (4, 5), (5, 6)]
STEPS = [
    Delta(insert={"edge": [(3, 4)]}),
    Delta(retract={"edge": [(2, 3)]}),
    Delta(insert={"edge": [(6, 1), (2, 3)]}, retract={"edge": [(1, 2)]}),
    Delta(insert={"reach": [(1, 9)]}),
    Delta(retract={"edge": [*EDGES, (3, 4), (6, 1), (2, 3)], "reach": [(1, 9)]}),
]


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(GRAPH)
    m.load(facts)
    m.bootstrap()
    return m


def test_updates_of_a_transformed_program_equal_a_fresh_bootstrap() -> None:
    """Facts of the base relations and of the transformed one itself (which keeps them, and
    its adorned copies read them): each Update's state is a fresh Bootstrap's, the outputs
    the untransformed program's."""
    m = _built({"edge": EDGES})
    assert m.analyzed.goal_directed == {"reach"}
    assert sorted(m.rows("from_one")) == [(1,), (2,), (3,)]
    check_updates(m, {"edge": EDGES}, STEPS, _built)


def test_a_rule_change_can_make_a_relation_wanted_in_full() -> None:
    """A rule that reads `reach` with nothing bound: `reach` is then computed in full, by its
    own rules, and reads as such."""
    m = _built({"edge": EDGES})
    m.apply(
        Delta(add_rules=[".decl all(x: number, y: number)\n.output all\nall(x, y) :- reach(x, y)."])
    )
    assert m.analyzed.goal_directed == frozenset()
    assert len(m.rows("reach")) == 9 + 3
    assert m.snapshot() == _rebuilt(m).snapshot()


def _rebuilt(m: Materialization) -> Materialization:
    fresh = Materialization(m.analyzed)
    fresh.load({"edge": EDGES})
    fresh.bootstrap()
    return fresh


def test_same_generation_over_a_tree_of_32767_nodes(tmp_path) -> None:
    """Soufflé's `magic_samegen`: without the transformation the relation holds every pair of
    nodes of one depth (358 million), with it the ancestors' generations (about 32,000)."""
    nodes = range(1, 32768)
    (tmp_path / "node.facts").write_text("".join(f"{x}\n" for x in nodes))
    (tmp_path / "parent.facts").write_text("".join(f"{x}\t{x // 2}\n" for x in nodes[1:]))
    program = tmp_path / "samegen.dl"
    program.write_text(
        """
        .decl node(x: number)
        .input node
        .decl parent(x: number, y: number)
        .input parent
        .decl samegen(x: number, y: number)
        samegen(x, x) :- node(x).
        samegen(x, y) :- parent(x, a), samegen(a, b), parent(y, b).
        .decl query()
        .output query
        query() :- samegen(16384, 32767).
        """
    )
    args = ["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path)]
    assert main([*args, "--magic-transform", "*"]) == 0
    assert (tmp_path / "query.csv").read_text() == "()\n"


@pytest.mark.parametrize(
    ("name", "text", "output", "rows"),
    [
        (  # read inside an aggregate in a head: whole
            "head aggregate",
            """
            .decl e(x: number, y: number)
            e(1, 2). e(2, 3). e(3, 4).
            .decl c(x: number, y: number)
            c(x, y) :- e(x, y).
            c(x, y) :- c(x, z), e(z, y).
            .decl out(x: number, n: number)
            .output out
            out(x, count : { c(x, _) }) :- e(x, _).
            .decl o2(y: number)
            .output o2
            o2(y) :- c(1, y).
            """,
            "out",
            [(1, 3), (2, 2), (3, 1)],
        ),
        (  # 0.0 asks for -0.0 too (IEEE), where a magic seed would match bits: left alone
            "float constant",
            """
            .decl s(x: float, y: number)
            s(-0.0, 5). s(1.0, 6).
            .decl r(x: float, y: number)
            r(x, y) :- s(x, y).
            .decl out(y: number)
            .output out
            out(y) :- r(0.0, y).
            """,
            "out",
            [(5,)],
        ),
        (  # a record built around what the head binds: Soufflé binds nothing through it
            "record around a head variable",
            """
            .type L = [h: number, t: L]
            .decl base(l: L)
            base([1, [1, nil]]).
            .decl f(l: L, n: number)
            f(l, 0) :- base(l).
            f(l, n + 1) :- f([1, l], n).
            .decl out(n: number)
            .output out
            out(n) :- f(nil, n).
            """,
            "out",
            [(2,)],
        ),
    ],
)
def test_the_review_cases_give_the_untransformed_rows(
    name: str, text: str, output: str, rows: list[tuple]
) -> None:
    for pragma in ('.pragma "magic-transform" "*"\n', ""):
        m = Materialization.from_text(pragma + text)
        m.bootstrap()
        assert sorted(m.rows(output)) == rows, (name, pragma)


def test_a_rewrite_the_analysis_refuses_is_not_applied() -> None:
    """A constant expression asked for (`r(1 / 0, y)`) has no value: without the
    transformation the rule derives nothing, and with it the program must not be refused."""
    text = """
    .pragma "magic-transform" "*"
    .decl e(x: number, y: number)
    e(1, 2).
    .decl r(x: number, y: number)
    r(x, y) :- e(x, y).
    .decl out(y: number)
    .output out
    out(y) :- r(1 / 0, y).
    out(y) :- r(1, y).
    """
    m = Materialization.from_text(text)
    m.bootstrap()
    assert m.rows("out") == [(2,)]


def test_explain_refuses_a_goal_directed_relation(tmp_path, capsys) -> None:
    program = tmp_path / "p.dl"
    program.write_text(GRAPH)
    (tmp_path / "edge.facts").write_text("1\t2\n2\t3\n")
    args = ["explain", str(program), "-F", str(tmp_path), "--why", "reach(1, 3)"]
    assert main(args) == 1  # an input error, as a --why of a relation the program lacks
    assert "magic-set transformation" in capsys.readouterr().err
