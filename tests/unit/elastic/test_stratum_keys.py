"""A stratum's key (what its Update plans are cached by) is made once per program: equal to
`stratum_key`, the same object at every epoch, and made anew for another program."""

from __future__ import annotations

from reasoner.analysis import check_program
from reasoner.elastic.restratify import StratumKeys, stratum_key

TEXT = """
.decl e(x: number, y: number)
.input e
.decl p(x: number, y: number)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
.decl q(x: number)
q(x) :- p(x, _), !e(x, x).
"""


def test_a_programs_keys_are_made_once() -> None:
    analyzed = check_program(TEXT)
    keys = StratumKeys()
    first = [keys.of(s, analyzed) for s in analyzed.strata]
    assert first == [stratum_key(s, analyzed) for s in analyzed.strata]
    assert all(keys.of(s, analyzed) is key for s, key in zip(analyzed.strata, first, strict=True))


def test_another_program_gets_its_own_keys() -> None:
    analyzed = check_program(TEXT)
    changed = check_program(TEXT.replace("!e(x, x)", "e(x, x)"))
    keys = StratumKeys()
    before = {s.index: keys.of(s, analyzed) for s in analyzed.strata}
    after = {s.index: keys.of(s, changed) for s in changed.strata}
    assert after == {s.index: stratum_key(s, changed) for s in changed.strata}
    assert before != after  # q's rule changed: so did its stratum's key
