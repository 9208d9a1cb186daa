"""Rules added and removed at runtime: what is accepted, what is refused, and that a refusal
changes nothing."""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.elastic.program_text import rule_id
from reasoner.errors import InvalidDelta, ProgramError
from reasoner.materialization import Materialization

BASE = """\
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.decl blocked(x: number)
.input edge
tc(x, y) :- edge(x, y).
"""
STEP = "tc(x, z) :- tc(x, y), edge(y, z)."


def _live() -> Materialization:
    m = Materialization.from_text(BASE)
    m.load({"edge": [(1, 2), (2, 3)]})
    m.bootstrap()
    return m


def _rows(m: Materialization, name: str) -> set:
    return set(m.rows(name))


def test_adding_a_recursive_rule_bootstraps_its_stratum_and_matches_a_fresh_run() -> None:
    m = _live()
    report = m.apply(Delta(add_rules=[STEP], insert={"edge": [(3, 4)]}), strategy="update")
    assert report.rules_added == (rule_id(STEP),)
    assert _rows(m, "tc") == {(1, 2), (2, 3), (3, 4), (1, 3), (2, 4), (1, 4)}
    assert [s.strategy for s in report.strata] == ["bootstrap"]
    assert m.differences(m.rebuilt()) == {}
    assert STEP in m.program_text()


def test_removing_a_rule_by_id_and_adding_it_again() -> None:
    m = _live()
    m.apply(Delta(add_rules=[STEP]))
    report = m.apply(Delta(remove_rules=[rule_id(STEP)]))
    assert report.rules_removed == (rule_id(STEP),)
    assert _rows(m, "tc") == {(1, 2), (2, 3)}
    assert STEP not in m.program_text()
    m.apply(Delta(add_rules=[STEP]))
    assert (1, 3) in _rows(m, "tc")
    assert m.differences(m.rebuilt()) == {}


def test_strata_above_a_changed_stratum_are_updated_from_its_diff() -> None:
    m = Materialization.from_text(BASE + "blocked(x) :- tc(x, _), !edge(x, _).\n")
    m.load({"edge": [(1, 2), (2, 3)]})
    m.bootstrap()
    report = m.apply(Delta(add_rules=["tc(x, x) :- edge(_, x)."]), strategy="update")
    by_relations = {s.relations: s.strategy for s in report.strata}
    assert by_relations == {("tc",): "bootstrap", ("blocked",): "update"}
    assert _rows(m, "blocked") == {(3,)}
    assert m.differences(m.rebuilt()) == {}


def test_adding_a_present_rule_is_a_no_op_with_the_same_id() -> None:
    m = _live()
    text = m.program_text()
    report = m.apply(Delta(add_rules=["tc(x,y):-edge(x,y)."]))
    assert report.rules_added == ()
    assert m.program_text().count(":-") == text.count(":-")


def test_posting_the_program_again_is_a_no_op() -> None:
    """Its rules are present and its declarations and directives stated, however spaced: no
    epoch, and the program text does not grow. A text with one new statement is added; a
    component is never taken for a statement already made."""
    m = _live()
    again = BASE.replace(": ", ":").replace("\n", "  \n") + STEP.replace(" ", "")
    m.apply(Delta(add_rules=[STEP]))
    text, epoch = m.program_text(), m.epoch
    report = m.apply(Delta(add_rules=[again, ".input edge\n"]))
    assert not report.changed and report.rules_added == ()
    assert (m.program_text(), m.epoch) == (text, epoch)
    assert m.apply(Delta(add_rules=[".decl tc(x: number, y: number)\n.output tc\n"])).changed
    assert m.apply(Delta(add_rules=[".comp C { .decl a(x: number) }\n"])).changed


def test_rules_lists_one_entry_per_clause() -> None:
    m = Materialization.from_text(BASE + "tc(x, y) :- edge(y, x) ; edge(x, x), y = x.\n")
    assert [entry.text for entry in m.rules()] == [
        "tc(x, y) :- edge(x, y).",
        "tc(x, y) :- edge(y, x) ; edge(x, x), y = x.",
    ]


def test_new_relations_can_be_declared_with_the_rules_that_use_them() -> None:
    m = _live()
    m.apply(Delta(add_rules=[".decl out(x: number)\nout(x) :- tc(x, _), !blocked(x)."]))
    assert _rows(m, "out") == {(1,), (2,)}
    m.apply(Delta(insert={"blocked": [(1,)]}))
    assert _rows(m, "out") == {(2,)}


@pytest.mark.parametrize("strategy", ["update", "auto"])
def test_a_cancelled_rule_change_leaves_nothing_behind(strategy: str) -> None:
    m = _live()
    before, epoch = m.snapshot(), m.epoch

    class Stop(Exception):
        pass

    calls = 0

    def check() -> None:  # lets the epoch start, then cancels it inside the rule change
        nonlocal calls
        calls += 1
        if calls > 1:
            raise Stop

    with pytest.raises(Stop):
        m.apply(
            Delta(add_rules=[".decl out(x: number)\nout(x) :- tc(x, _)."]),
            strategy=strategy,
            check=check,
        )
    assert m.snapshot() == before
    assert "out" not in m.state
    assert m.epoch == epoch
    # The same name with another arity: nothing of the cancelled epoch's `out` is in the way.
    m.apply(Delta(add_rules=[".decl out(x: number, y: number)\nout(x, y) :- tc(x, y)."]))
    assert _rows(m, "out") == {(1, 2), (2, 3)}
    assert m.differences(m.rebuilt()) == {}


@pytest.mark.parametrize(
    ("text", "code", "line", "column"),
    [
        ("blocked(x) :- !blocked(x), edge(x, _).", "cyclic_negation", 1, 15),
        ("\ntc(x, y) :- edge(x, _).", "unsafe_rule", 2, 7),
        ('tc(x, "a") :- edge(x, _).', "type_mismatch", 1, 7),
        ("tc(x) :- edge(x, _).", "arity_mismatch", 1, 1),
        ("tc(x, y) :- edge(x, y)", "parse_error", 1, 23),
    ],
)
def test_a_bad_rule_is_refused_with_its_position_and_changes_nothing(
    text: str, code: str, line: int, column: int
) -> None:
    m = _live()
    before = (m.snapshot(), m.program_text(), m.epoch)
    with pytest.raises(ProgramError) as raised:
        m.apply(Delta(add_rules=[text], insert={"edge": [(5, 6)]}))
    first = raised.value.diagnostics[0]
    assert (first.code, first.filename, first.line, first.column) == (
        code,
        "<rules>",
        line,
        column,
    )
    assert (m.snapshot(), m.program_text(), m.epoch) == before


def test_unknown_rule_ids_are_refused() -> None:
    m = _live()
    with pytest.raises(InvalidDelta) as raised:
        m.apply(Delta(remove_rules=["0123456789abcdef"]))
    assert raised.value.code == "unknown_rule"


def test_a_removal_that_would_drop_a_relation_holding_facts_is_refused() -> None:
    m = Materialization.from_text(".decl e(x: number)\n.input e\n")
    m.apply(Delta(add_rules=["p(x) :- e(x)."]))
    m.apply(Delta(insert={"p": [(9,)]}))
    with pytest.raises(InvalidDelta) as raised:
        m.apply(Delta(remove_rules=[rule_id("p(x) :- e(x).")]))
    assert raised.value.code == "unknown_relation"
    m.apply(Delta(retract={"p": [(9,)]}, remove_rules=[rule_id("p(x) :- e(x).")]))
    assert "p" not in m.relation_names()


def test_a_relation_whose_rules_are_removed_keeps_its_asserted_facts() -> None:
    m = _live()
    m.apply(Delta(insert={"tc": [(7, 7)]}))
    m.apply(Delta(remove_rules=[rule_id("tc(x, y) :- edge(x, y).")]), strategy="update")
    assert _rows(m, "tc") == {(7, 7)}
    assert m.lookup("tc", (7, 7)) == (0, 1)
    assert m.differences(m.rebuilt()) == {}


def test_prepare_checks_without_changing_and_apply_refuses_a_stale_preparation() -> None:
    m = _live()
    prepared = m.prepare(Delta(add_rules=[STEP]))
    assert prepared.rules_added == (rule_id(STEP),)
    assert STEP in prepared.program_text and STEP not in m.program_text()
    m.apply(Delta(insert={"edge": [(3, 4)]}))
    with pytest.raises(ValueError, match="prepared against epoch 0"):
        m.apply(prepared)


def test_rules_need_the_program_text() -> None:
    m = Materialization(_live().analyzed)
    with pytest.raises(InvalidDelta) as raised:
        m.apply(Delta(add_rules=[STEP]))
    assert raised.value.code == "rules_unavailable"


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_removing_a_rule_reports_every_derived_tuple_it_took(strategy: str) -> None:
    """A rule change is reported like a fact delta: here `hub` leaves the program with its
    tuple, and removing the recursive step retracts the closure it derived."""
    m = _live()
    hub = "hub(x) :- tc(x, _), !tc(_, x)."
    m.apply(Delta(add_rules=[hub, STEP]))
    report = m.apply(Delta(remove_rules=[rule_id(hub)]), strategy=strategy, include_changes=True)
    assert (report.inserted, report.retracted) == (0, 1)
    assert report.changes == {"hub": {"inserted": [], "retracted": [(1,)]}}
    report = m.apply(Delta(remove_rules=[rule_id(STEP)]), strategy=strategy, include_changes=True)
    assert report.changes == {"tc": {"inserted": [], "retracted": [(1, 3)]}}
    assert report.retracted == 1


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_a_relation_reshaped_by_a_rule_change_takes_facts_of_its_new_shape(strategy: str) -> None:
    """`out` holds no facts, so a rule change may give it another arity; later epochs
    (a Bootstrap among them) and facts inserted into it then have the new shape."""
    m = _live()
    narrow = "out(x) :- tc(x, _)."
    m.apply(Delta(add_rules=[narrow]), strategy=strategy)
    reshaped = m.apply(
        Delta(remove_rules=[rule_id(narrow)], add_rules=["out(x, y) :- tc(x, y)."]),
        strategy=strategy,
        include_changes=True,
    )
    assert reshaped.changes is not None
    assert reshaped.changes["out"] == {"inserted": [(1, 2), (2, 3)], "retracted": [(1,), (2,)]}
    m.apply(Delta(insert={"out": [(7, 8)]}), strategy=strategy)
    m.apply(Delta(insert={"edge": [(3, 4)]}), strategy="bootstrap")
    assert _rows(m, "out") == {(1, 2), (2, 3), (3, 4), (7, 8)}
    assert m.differences(m.rebuilt()) == {}


REPLACEMENT = """\
.decl edge(x: number, y: number)
.decl back(x: number, y: number)
back(y, x) :- edge(x, y).
back(x, z) :- back(x, y), back(y, z).
edge(5, 6).
"""


def _fresh(text: str, facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(text)
    m.load(facts)
    m.bootstrap()
    return m


def test_replacing_the_program_equals_a_fresh_bootstrap_of_the_new_one() -> None:
    """Its rules not there are added and the rules there it lacks removed; its facts are
    data; the state is the one a fresh run of it on the same facts has; the same program
    again, spaced otherwise, makes no epoch."""
    m = _live()
    old = {entry.id for entry in m.rules()}
    report = m.apply(Delta(program=REPLACEMENT))
    assert set(report.rules_removed) == old
    assert len(report.rules_added) == 2
    assert "tc" not in m.analyzed.relations
    facts = {"edge": [(1, 2), (2, 3), (5, 6)]}
    assert m.snapshot() == _fresh(REPLACEMENT.replace("edge(5, 6).\n", ""), facts).snapshot()
    epoch = m.epoch
    assert not m.apply(Delta(program=REPLACEMENT.replace(", ", ",") + "\n")).changed
    assert m.epoch == epoch


def test_a_replacement_that_drops_a_relation_holding_facts_is_refused() -> None:
    m = _live()
    with pytest.raises(InvalidDelta):
        m.apply(Delta(program=".decl other(x: number)\n"))
    with pytest.raises(InvalidDelta):  # a replacement adds and removes nothing besides
        m.apply(Delta(program=REPLACEMENT, add_rules=[STEP]))


def test_clearing_the_facts_leaves_the_program_and_its_own_facts() -> None:
    m = Materialization.from_text(BASE + "edge(7, 8).\n")
    m.load({"edge": [(1, 2), (2, 3)], "blocked": [(1,)]})
    m.bootstrap()
    report = m.apply(Delta(clear_facts=True))
    assert report.changed
    assert _rows(m, "edge") == {(7, 8)} and _rows(m, "blocked") == set()
    assert m.snapshot() == _fresh(BASE + "edge(7, 8).\n", {}).snapshot()
    assert not m.apply(Delta(clear_facts=True)).changed
    with pytest.raises(InvalidDelta):
        m.apply(Delta(clear_facts=True, insert={"edge": [(1, 1)]}))
