"""A Bootstrap's plans and an Update's enumerations and classifications on several lanes
(threads): the state is the one lane's, tuple by tuple with iteration and count, whatever the
number of lanes and wherever the spans are cut."""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reasoner
import reasoner.kernel.lanes as kernel_lanes
import reasoner.support.lanes as support_lanes
from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.kernel import gate
from reasoner.materialization import Materialization
from reasoner.support.allocations import charging_to
from reasoner.support.deadline import BootstrapCancelled
from tests.conftest import examples
from tests.oracle.evaluation import comparable, evaluate
from tests.property.programs import GeneratedProgram, deltas, programs

TC = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
REASONER = str(Path(reasoner.__file__).parent)
EDGES = [(i, (i * 7 + 3) % 300) for i in range(300)] + [(i, i + 1) for i in range(299)]


@contextmanager
def lanes(count: int, rows: int) -> Iterator[None]:
    saved = support_lanes.LANES, kernel_lanes.LANE_ROWS, kernel_lanes.UPDATE_LANE_ROWS
    support_lanes.LANES, kernel_lanes.LANE_ROWS, kernel_lanes.UPDATE_LANE_ROWS = count, rows, rows
    try:
        yield
    finally:
        support_lanes.LANES, kernel_lanes.LANE_ROWS, kernel_lanes.UPDATE_LANE_ROWS = saved


def _state(program: str | AnalyzedProgram, inputs: dict, check=None) -> dict:
    """The state a Bootstrap on the reference executor leaves; `program` as text or already
    analyzed (a generated example runs it four times)."""
    analyzed = check_program(program) if isinstance(program, str) else program
    m = Materialization(analyzed, engines=EngineSettings("reference"), maintained=False)
    m.load(inputs)
    m.bootstrap(check=check)
    return comparable(m.snapshot(), analyzed)


@settings(max_examples=examples(300))
@given(generated=programs())
def test_lanes_leave_the_state_of_one_lane(generated: GeneratedProgram) -> None:
    """Spans cut at every row and at odd places, on 2 and 4 lanes: the state equals one
    lane's and the oracle's."""
    analyzed = check_program(generated.text)
    with lanes(1, 1):
        one = _state(analyzed, generated.inputs)
    assert one == comparable(evaluate(analyzed, generated.inputs), analyzed)
    for count, rows in ((2, 1), (4, 1), (3, 5)):
        with lanes(count, rows):
            assert _state(analyzed, generated.inputs) == one, (count, rows)


@settings(max_examples=examples(100))
@given(generated=programs(), data=st.data())
def test_updates_on_lanes_leave_the_state_of_one_lane(
    generated: GeneratedProgram, data: st.DataObject
) -> None:
    """Random deltas applied by Update on 1, 2 and 4 lanes, every hand-over and every
    classification split (and on 3 lanes from 5 rows; on 2 from 128, the first two heads
    handed on one lane), per tuple and all in bulk (the vectorized-Update threshold at 0, on
    1, 2 and 4 lanes): after each, the states are equal, and equal to a fresh Bootstrap of
    the facts."""
    analyzed = check_program(generated.text)
    settings_ = ((1, 1, None), (2, 1, None), (4, 1, None), (3, 5, None), (2, 128, None))
    settings_ += ((1, 1, 0), (2, 1, 0), (4, 1, 0))
    live = []
    for count, rows, bulk in settings_:
        with lanes(count, rows):
            m = Materialization(
                analyzed, engines=EngineSettings("reference"), bulk_update_rows=bulk
            )
            m.load(generated.inputs)
            m.bootstrap()
            live.append(m)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    for step in data.draw(deltas(generated)):
        delta = Delta(
            insert={n: sorted(r) for n, r in step.insert.items()},
            retract={n: sorted(r) for n, r in step.retract.items()},
        )
        for (count, rows, _), m in zip(settings_, live, strict=True):
            with lanes(count, rows):
                m.apply(delta, strategy="update")
        for name, rows in step.retract.items():
            current[name] -= rows
        for name, rows in step.insert.items():
            current[name] |= rows
        one = live[0].snapshot()
        for setting, m in zip(settings_[1:], live[1:], strict=True):
            assert m.snapshot() == one, setting
        fresh = Materialization(analyzed, engines=EngineSettings("reference"), maintained=False)
        fresh.load(current)
        fresh.bootstrap()
        assert one == fresh.snapshot()


def _tc_on(count: int, rows: int) -> Materialization:
    """TC over EDGES with its Update plans' kernels on `count` lanes from `rows` rows."""
    with lanes(count, rows):
        m = Materialization(check_program(TC), engines=EngineSettings("reference"))
        m.load({"edge": EDGES})
        m.bootstrap()
    return m


def test_an_update_on_the_lanes_stops_at_a_check_there_and_changes_nothing() -> None:
    """60 edges retracted on 2 lanes from 128 rows (the Update's first two heads handed on
    one lane): the epoch's check runs on the lanes' threads; one that raises there cancels
    the epoch with nothing changed; the same epoch let through leaves one lane's state."""
    delta = Delta(retract={"edge": EDGES[::10]})
    one = _tc_on(1, 1)
    one.apply(delta, strategy="update")
    two = _tc_on(2, 128)
    before = two.snapshot()
    seen: set[str] = set()

    def check() -> None:
        seen.add(threading.current_thread().name)
        if threading.current_thread().name.startswith("reasoner-lane"):
            raise BootstrapCancelled("stopped on a lane")

    with lanes(2, 128), pytest.raises(BootstrapCancelled, match="stopped on a lane"):
        two.apply(delta, strategy="update", check=check)
    assert any(name.startswith("reasoner-lane") for name in seen), seen
    assert two.snapshot() == before
    with lanes(2, 128):
        two.apply(delta, strategy="update")
    assert two.snapshot() == one.snapshot()


def _gate_lanes() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name.startswith("reasoner-lane-gate")}


def test_a_run_gives_its_gate_back_to_the_next() -> None:
    """A Bootstrap or an Update hands its spans to lanes waiting at a gate
    (`reasoner.kernel.gate`) that it borrows: once it ends, finished or stopped by a check on
    a lane, the gate is given back and the next run's spans go to the same lanes, none
    started anew and none lost."""
    delta = Delta(retract={"edge": EDGES[::10]})

    def check() -> None:
        if threading.current_thread().name.startswith("reasoner-lane"):
            raise BootstrapCancelled("stopped on a lane")

    kept = None
    for stop in (False, True, False, True):
        two = _tc_on(2, 1)  # a Bootstrap on the gate
        kept = kept or _gate_lanes()
        assert kept and _gate_lanes() == kept, (stop, kept, _gate_lanes())
        before = gate.spans()
        with lanes(2, 1), contextlib.suppress(BootstrapCancelled):
            two.apply(delta, strategy="update", check=check if stop else None)
        assert gate.spans() > before
        kept = kept or _gate_lanes()
        assert kept and _gate_lanes() == kept, (stop, kept, _gate_lanes())


class _Threads:
    """A meter that notes the thread and the bytes of each charge."""

    def __init__(self) -> None:
        self.charged: list[tuple[str, int]] = []

    def charge(self, size: int) -> None:
        self.charged.append((threading.current_thread().name, size))

    def on_lanes(self) -> int:
        """The bytes charged on the lanes' threads (0: none was)."""
        return sum(size for name, size in self.charged if name.startswith("reasoner-lane"))


def test_a_gates_lanes_charge_each_update_to_its_own_evaluation() -> None:
    """A gate's lanes serve one Update after another: each Update's growth on them is charged
    to the allowance that Update runs under, not to the one that borrowed the gate before."""
    product = """
    .decl a(x: number)
    .decl b(y: number)
    .decl p(x: number, y: number)
    p(x, y) :- a(x), b(y).
    """
    more = [(j,) for j in range(2, 200)]
    with lanes(2, 1):
        m = Materialization(check_program(product), engines=EngineSettings("reference"))
        m.load({"a": [(i,) for i in range(1000)], "b": [(0,), (1,)]})
        m.bootstrap()
        for delta in (Delta(insert={"b": more}), Delta(retract={"b": more})):
            meter = _Threads()
            with charging_to(meter):
                m.apply(delta, strategy="update")
            assert any(name.startswith("reasoner-lane-gate") for name, _ in meter.charged), (
                meter.charged
            )


def test_a_forked_process_starts_its_own_lanes() -> None:
    """A gate's lanes stay in the process that started them (a fork copies none): in a child
    forked after an Update, the next Update starts the child's own. Without them it would run
    every share on its own thread (each share is claimed), right but on one core."""
    two = _tc_on(2, 1)
    one = _tc_on(1, 1)
    delta = Delta(retract={"edge": EDGES[::10]})
    with lanes(2, 1):
        two.apply(Delta(retract={"edge": EDGES[1::10]}), strategy="update")
        one.apply(Delta(retract={"edge": EDGES[1::10]}), strategy="update")
        assert _gate_lanes()
        child = os.fork()
        if child == 0:
            try:
                two.apply(delta, strategy="update")
                one.apply(delta, strategy="update")
                os._exit(0 if two.snapshot() == one.snapshot() and _gate_lanes() else 1)
            finally:
                os._exit(2)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def test_an_update_stopped_on_a_lane_is_freed_without_the_cyclic_collector() -> None:
    """An Update stopped by a check that raises on a lane: once the epoch is refused, no
    frame it passed through is alive with the cyclic collector off. In a cycle with the
    error they would keep the state and the Update's records until a collection (crdt.dl's
    fallback epochs kept 6 GB each that way, until the process was killed)."""
    two = _tc_on(2, 128)
    delta = Delta(retract={"edge": EDGES[::10]})

    def check() -> None:
        if threading.current_thread().name.startswith("reasoner-lane"):
            raise BootstrapCancelled("stopped on a lane")

    gc.collect()
    gc.disable()
    try:
        before = {id(frame) for frame in _engine_frames()}  # other tests' may be kept alive
        with lanes(2, 128):
            try:
                two.apply(delta, strategy="update", check=check)
            except BootstrapCancelled:
                pass
            else:
                pytest.fail("the check on the lane did not stop the Update")
        alive = [frame.f_code.co_name for frame in _engine_frames() if id(frame) not in before]
    finally:
        gc.enable()
    assert alive == []


def _engine_frames() -> list[types.FrameType]:
    return [
        frame
        for frame in gc.get_objects()
        if isinstance(frame, types.FrameType) and frame.f_code.co_filename.startswith(REASONER)
    ]


def test_a_bootstraps_spans_go_to_the_gate() -> None:
    with lanes(1, 1):
        one = _state(TC, {"edge": EDGES})
    before = gate.spans()
    with lanes(2, 1):
        assert _state(TC, {"edge": EDGES}) == one
    assert gate.spans() > before


def test_a_check_that_stops_a_lane_stops_the_bootstrap() -> None:
    """The deadline's check runs on the lanes too (with the GIL); what it raises there
    reaches the caller once every lane has stopped."""
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        if threading.current_thread().name.startswith("reasoner-lane"):
            raise BootstrapCancelled("stopped on a lane")

    edges = [(i, j) for i in range(200) for j in range(i + 1, min(200, i + 40))]
    with lanes(2, 1), pytest.raises(BootstrapCancelled, match="stopped on a lane"):
        _state(TC, {"edge": edges}, check)
    assert calls > 1


def test_the_lanes_charge_their_growth_to_the_evaluation() -> None:
    """A lane's buffer of heads grows on the lane's thread; the allowance that the
    evaluation's thread runs under is charged for it all the same. (Every head of the
    product is new, so the buffers hold one entry a derivation.)"""
    product = """
    .decl a(x: number)
    .decl b(y: number)
    .decl p(x: number, y: number)
    p(x, y) :- a(x), b(y).
    """
    inputs = {"a": [(i,) for i in range(1000)], "b": [(j,) for j in range(300)]}
    for _attempt in range(20):
        # Spans of up to 104 rows (each at most twice the last, from one): a lane's share of the
        # largest grows its buffer past 1 MiB. The caller may claim the share of a lane
        # that has not woken yet (a loaded machine). Evaluated again, a lane runs one.
        meter = _Threads()
        with lanes(2, 1), charging_to(meter):
            _state(product, inputs)
        if meter.on_lanes():
            break
    assert meter.on_lanes(), meter.charged


def test_an_updates_hand_over_is_held_on_the_lanes_a_span_at_a_time() -> None:
    """The lanes hold one span of the heads an Update hands over (about HAND_SPAN candidates
    a lane), scheduled before the next span is handed. 500 new b rows, each finding 1,000
    candidates of p, are handed in spans on both lanes. The other lane's buffer grows by less
    than 4 MiB in all (growths of 1 MiB or more are charged to the meter, on the thread that
    makes them); handed in one span, it held 250,000 candidates and was charged 15.7 MB."""
    meter = _Threads()
    product = """
    .decl a(x: number)
    .decl b(y: number)
    .decl p(x: number, y: number)
    p(x, y) :- a(x), b(y).
    """
    # The lanes from the default rows: the first heads, on one lane, tell how many
    # candidates a head finds.
    with lanes(2, kernel_lanes.UPDATE_LANE_ROWS):
        m = Materialization(check_program(product), engines=EngineSettings("reference"))
        m.load({"a": [(i,) for i in range(1000)], "b": [(j,) for j in range(10)]})
        m.bootstrap()
        before = gate.spans()
        with charging_to(meter):
            m.apply(Delta(insert={"b": [(j,) for j in range(10, 510)]}), strategy="update")
    assert m.size("p") == 510_000
    # The spans are the hand-over's: every head is new, so the classification stays here.
    assert gate.spans() - before > 1, gate.spans() - before
    assert meter.on_lanes() < 4 << 20, meter.charged


def test_a_bootstraps_spans_on_the_lanes_hold_a_bounded_share_of_heads() -> None:
    """A Bootstrap's span is cut by the heads its lanes hold, not only by its rows: each of
    6,000 b rows finds 300 new p heads. The plan's first span (a few rows) tells the rate,
    the next ones are cut to about FLUSH_WORDS words a lane, so the lanes' buffers grow by
    less than 16 MiB in all (growths of 1 MiB or more are charged on the thread that makes
    them); in spans of 65,536 rows a lane, one lane's thread alone was charged 70 MiB."""
    meter = _Threads()
    join = """
    .decl a(x: number, y: number)
    .decl b(y: number, z: number)
    .decl p(x: number, z: number)
    p(x, z) :- a(x, y), b(y, z).
    """
    inputs = {
        "a": [(x, x % 100) for x in range(30_000)],
        "b": [(y, z) for y in range(100) for z in range(60)],
    }
    before = gate.spans()
    with lanes(2, kernel_lanes.LANE_ROWS), charging_to(meter):
        state = _state(join, inputs)
    assert len(state["p"]) == 1_800_000
    assert gate.spans() - before > 2
    assert meter.on_lanes() < 16 << 20, meter.charged


def test_spans_grow_by_twice_at_most_into_a_graphs_hubs(bench_dir: Path) -> None:
    """graph10000-rmat1k's closure: the rate of heads a row climbs as the spans reach the
    R-MAT hubs, and a span cut at the rate of the one before alone held 3.8 M words (32 MiB
    charged on the lanes). Grown by twice at most, the lanes' buffers are charged less than
    12 MiB in all."""
    meter = _Threads()
    text = (bench_dir / "graph10000-rmat1k" / "edge.facts").read_text()
    edges = [tuple(int(v) for v in line.split("\t")) for line in text.splitlines()]
    with lanes(2, kernel_lanes.LANE_ROWS), charging_to(meter):
        state = _state(TC, {"edge": edges})
    assert len(state["tc"]) > 250_000
    assert meter.on_lanes() < 12 << 20, meter.charged


def test_repeated_heads_fold_into_one_count() -> None:
    """Many derivations of few heads (each lane folds them before the count) and few of many
    (folding is given up after a sample): each head's count is its derivations, and the state
    is the one lane's."""
    program = """
    .decl a(x: number)
    .decl b(y: number)
    .decl few(x: number)
    .decl many(x: number, y: number)
    few(x % 7) :- a(x), b(_).
    many(x, y) :- a(x), b(y), y < 30.
    """
    inputs = {"a": [(i,) for i in range(3000)], "b": [(j,) for j in range(40)]}
    with lanes(1, 1):
        one = _state(program, inputs)
    assert one["few"] == {(x,): (1, 40 * len(range(x, 3000, 7))) for x in range(7)}
    for count, rows in ((2, 1), (3, 7)):
        with lanes(count, rows):
            assert _state(program, inputs) == one


def test_a_count_past_sixteen_bits_in_one_iteration() -> None:
    """A new head keeps its count in its table while the iteration runs, 16 bits a row and
    a dict beyond: 120,001 derivations of one head, folded or not, on one lane and on
    several, give its count, the other heads theirs."""
    program = """
    .decl a(x: number)
    .decl b(y: number)
    .decl h(x: number)
    h(0) :- a(_), b(_).
    h(x) :- a(x).
    """
    inputs = {"a": [(i,) for i in range(3000)], "b": [(j,) for j in range(40)]}
    expected = {(0,): (1, 120_001)} | {(x,): (1, 1) for x in range(1, 3000)}
    for count, rows in ((1, 1), (2, 1), (3, 7)):
        with lanes(count, rows):
            assert _state(program, inputs)["h"] == expected, (count, rows)
