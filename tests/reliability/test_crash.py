"""Crash consistency: SIGKILL the server at random moments while a client streams deltas.

One server (a uvicorn subprocess) per database, SQLite and PostgreSQL. A writer thread streams
writes through every write route: small deltas, JSON fact inserts and retractions, medium
`.facts`/CSV loads (Update), bulk loads and unloads of 12,000 edges (applied by Bootstrap) and
rule additions and removals (each new stratum is bootstrapped inside the epoch). The harness
kills the server with SIGKILL while a write of a chosen kind is in flight (at a random moment
within its expected duration), or while the server is rebuilding at start-up, then restarts it
and checks:

- every acknowledged epoch is there (`/ready`, `/v1/epochs` and the database agree on the
  numbers; the last one is the last acknowledged, or the one in flight if it was committed);
- the write that was in flight is either wholly present or wholly absent (facts, rules, epoch
  row), never half: the served and stored facts equal the client's model with or without it;
- every relation the server answers equals a fresh in-process Bootstrap of the committed
  program and facts — after the restart (a rebuild) and, every few rounds, after a series of
  live Updates on top of it;
- the change feed rebuilds exactly those relations, read page by page from epoch 0 and as a
  live follower has it that reconnected after every kill with `Last-Event-ID`: every epoch
  once, none missing.

Figures: kills survived per database and per phase (what was in flight), writes acknowledged,
in-flight writes found committed or absent.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable

import httpx

from reasoner.elastic.program_text import rule_id
from reasoner.syntax.parser import parse_program
from tests.reliability.conftest import COUNTS, record, rng
from tests.reliability.model import (
    Model,
    Write,
    csv_text,
    differences,
    expected_relations,
    served_epochs,
    stored_program,
    tsv,
)
from tests.service.conftest import Server
from tests.service.feed_client import Follower, feed, fold, served_exactly
from tests.service.helpers import served_relations

PROGRAM = """.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
named(s, y) :- label(x, s), reach(x, y).
leaf(x) :- reach(_, x), !edge(x, _).
"""
OPTIONAL_RULES = (
    "hop2(x, z) :- edge(x, y), edge(y, z).",
    "back(y, x) :- reach(x, y), !reach(y, x).",
    "twice(s, t) :- named(s, y), label(y, t).",
    "down(x, y) :- edge(x, y), x > y.\ndown(x, z) :- down(x, y), down(y, z).",
)
SMALL_NODES = 40
LABELS = ("a", "b c", "ä", '"q"', "", "x\ty", "日本")


def _chains(base: int, count: int) -> frozenset[tuple[int, int]]:
    """`count` disjoint paths of 3 edges: their closure stays linear in the edges."""
    return frozenset(
        (base + 4 * i + j, base + 4 * i + j + 1) for i in range(count) for j in range(3)
    )


MEDIUM = _chains(2_000_000, 2_000)  # 6,000 edges: an Update with some work (< 10,000)
BULK = _chains(1_000_000, 4_000)  # 12,000 edges: >= 10,000 and >= 25% of the facts: Bootstrap
PHASES = ("bulk", "rules", "medium", "startup", "any")
"""What a round kills: a write of that kind in flight, the start-up rebuild, or whatever is
happening a random moment after the stream starts."""


def _ids(text: str) -> list[str]:
    return list(dict.fromkeys(rule_id(rule.text) for rule in parse_program(text).rules))


class Writes:
    """Valid writes of each kind, generated against the current model."""

    def __init__(self, seed: str) -> None:
        self.rng = rng(seed)

    def make(self, kind: str, model: Model) -> Write:
        return getattr(self, kind)(model)

    def _small_edges(self, model: Model) -> tuple[set, set]:
        r = self.rng
        present = {e for e in model.facts["edge"] if e[0] < SMALL_NODES}
        insert = set()
        for _ in range(r.randint(1, 4)):
            edge = (r.randrange(SMALL_NODES), r.randrange(SMALL_NODES))
            if edge not in present:
                insert.add(edge)
        retract = set(r.sample(sorted(present), min(len(present), r.randint(0, 3))))
        return insert, retract

    def small(self, model: Model) -> Write:
        """POST /v1/deltas: edges and labels inserted and retracted together."""
        r = self.rng
        insert, retract = self._small_edges(model)
        labels = model.facts["label"]
        label_in = {(r.randrange(SMALL_NODES), r.choice(LABELS)) for _ in range(r.randint(0, 2))}
        label_in -= labels
        label_out = set(r.sample(sorted(labels), min(len(labels), r.randint(0, 1))))
        body = {
            "facts": {
                "insert": {"edge": sorted(insert), "label": sorted(label_in)},
                "retract": {"edge": sorted(retract), "label": sorted(label_out)},
            }
        }
        return Write(
            "small",
            "POST",
            "/v1/deltas",
            insert={"edge": frozenset(insert), "label": frozenset(label_in)},
            retract={"edge": frozenset(retract), "label": frozenset(label_out)},
            json=body,
        )

    def facts(self, model: Model) -> Write:
        """POST or DELETE /v1/facts."""
        insert, retract = self._small_edges(model)
        if retract and self.rng.random() < 0.4:
            return Write(
                "facts",
                "DELETE",
                "/v1/facts",
                retract={"edge": frozenset(retract)},
                json={"facts": {"edge": sorted(retract)}},
            )
        return Write(
            "facts",
            "POST",
            "/v1/facts",
            insert={"edge": frozenset(insert)},
            json={"facts": {"edge": sorted(insert)}},
        )

    def _block(self, kind: str, block: frozenset, model: Model) -> Write:
        rows = sorted(block)
        as_csv = kind == "medium" and self.rng.random() < 0.5
        content = csv_text(rows) if as_csv else tsv(rows)
        headers = {"content-type": "text/csv" if as_csv else "text/tab-separated-values"}
        if block <= model.facts["edge"]:
            return Write(
                kind,
                "DELETE",
                "/v1/relations/edge/facts",
                retract={"edge": block},
                content=content,
                headers=headers,
            )
        return Write(
            kind,
            "POST",
            "/v1/relations/edge/facts",
            insert={"edge": block - model.facts["edge"]},
            content=content,
            headers=headers,
        )

    def medium(self, model: Model) -> Write:
        return self._block("medium", MEDIUM, model)

    def bulk(self, model: Model) -> Write:
        return self._block("bulk", BULK, model)

    def rules(self, model: Model) -> Write:
        """Add an optional rule (a new stratum, bootstrapped inside the epoch) or remove it,
        through POST /v1/rules (text or JSON), DELETE /v1/rules/{id} or POST /v1/deltas."""
        r = self.rng
        text = r.choice(OPTIONAL_RULES)
        ids = _ids(text)
        present = model.rule_ids()
        if set(ids) <= present:
            if len(ids) == 1 and r.random() < 0.6:
                return Write("rules", "DELETE", f"/v1/rules/{ids[0]}", remove_rules=tuple(ids))
            return Write(
                "rules",
                "POST",
                "/v1/deltas",
                remove_rules=tuple(ids),
                json={"rules": {"remove": ids}},
            )
        choice = r.random()
        if choice < 0.4:
            return Write(
                "rules",
                "POST",
                "/v1/rules",
                add_rules=(text,),
                content=text,
                headers={"content-type": "text/plain"},
            )
        if choice < 0.7:
            return Write("rules", "POST", "/v1/rules", add_rules=(text,), json={"rules": [text]})
        insert, _ = self._small_edges(model)
        return Write(
            "rules",
            "POST",
            "/v1/deltas",
            insert={"edge": frozenset(insert)},
            add_rules=(text,),
            json={"facts": {"insert": {"edge": sorted(insert)}}, "rules": {"add": [text]}},
        )


class Writer(threading.Thread):
    """Streams writes one after the other; the target kind goes out after a few others."""

    def __init__(
        self,
        server: Server,
        model: Model,
        writes: Writes,
        target: str | None,
        max_writes: int,
    ) -> None:
        super().__init__(daemon=True)
        self.client = server.client()
        self.model = model
        self.writes = writes
        self.target = target
        self.max_writes = max_writes
        self.lock = threading.Lock()
        self.current: Write | None = None
        self.target_sent = threading.Event()
        self.unacknowledged: Write | None = None
        self.error: BaseException | None = None
        self.acknowledged = 0
        self.timings: dict[str, list[tuple[float, float]]] = defaultdict(list)
        """Per kind: (request seconds, engine seconds) of each acknowledged write."""
        self.strategies: Counter[str] = Counter()

    def in_flight(self) -> str:
        with self.lock:
            return "between writes" if self.current is None else self.current.kind

    def run(self) -> None:
        r = self.writes.rng
        warm_up = r.randint(1, 3)
        try:
            for n in range(self.max_writes):
                if n == warm_up and self.target is not None:
                    kind = self.target
                else:
                    kind = r.choice(("small", "small", "facts"))
                write = self.writes.make(kind, self.model)
                start = time.monotonic()
                with self.lock:
                    self.current = write
                if n == warm_up:
                    self.target_sent.set()
                try:
                    response = write.send(self.client)
                except httpx.TransportError:
                    self.unacknowledged = write
                    return
                with self.lock:
                    self.current = None
                if response.status_code != 200:
                    raise AssertionError(
                        f"{write.method} {write.path} ({kind}) answered "
                        f"{response.status_code}: {response.text[:500]}"
                    )
                body = response.json()
                self.timings[kind].append((time.monotonic() - start, body["seconds"]))
                self.model = self.model.after(write)
                self.acknowledged += 1
                self.strategies[f"{kind}:{body['strategy']}"] += 1
                assert body["epoch"] == self.model.epoch, (body["epoch"], self.model.epoch)
        except BaseException as exc:  # reported by the harness
            self.error = exc
        finally:
            self.target_sent.set()
            self.client.close()


ENGINE_PHASES = ("Bootstrap: start-up rebuild", "Bootstrap: bulk epoch", "Update epoch")
EPOCH_EVENT = re.compile(r"epoch (\d+): (committing|committed|evaluating \((\w+)|applied by)")


def phase_at_kill(log: str) -> str:
    """What the server was doing when it died, from its debug log since it started: the
    start-up rebuild, committing an epoch, evaluating one (by Bootstrap or Update), or none."""
    rebuilding = log.rfind("rebuilding the materialization")
    if rebuilding >= 0 and "ready at epoch" not in log[rebuilding:]:
        return "Bootstrap: start-up rebuild"
    if rebuilding < 0:
        return "start-up: migrating"
    events = list(EPOCH_EVENT.finditer(log))
    if not events:
        return "between epochs"
    number = events[-1].group(1)
    mine = [e for e in events if e.group(1) == number]
    kinds = [e.group(2).split(" ")[0] for e in mine]
    if "applied" in kinds:
        return "between epochs"
    last = mine[-1]
    if kinds[-1] == "evaluating":
        return "Bootstrap: bulk epoch" if last.group(3) == "bootstrap" else "Update epoch"
    if kinds[-1] == "committed" and "evaluating" in kinds:
        return "publishing an epoch"
    return "committing an epoch"


class Harness:
    def __init__(self, server: Server, backend: str) -> None:
        self.server = server
        self.backend = backend
        self.database_url = server.settings["REASONER_DATABASE_URL"]
        self.model = Model.initial(PROGRAM, ("edge", "label"))
        self.writes = Writes(f"crash-{backend}")
        self.rng = rng(f"crash-kills-{backend}")
        self.timing = {
            "bulk": (1.5, 0.6),
            "medium": (0.3, 0.15),
            "rules": (0.3, 0.15),
            "startup": (1.0, 1.0),
        }
        """Per kind: (request seconds, engine seconds), running averages."""
        self.log_offset = 0
        self.kills: Counter[str] = Counter()
        self.aims: Counter[str] = Counter()
        self.aim = "idle"
        self.aimed: Counter[str] = Counter()
        """Where each kill was aimed, and where it landed."""
        self.in_flight_committed = 0
        self.in_flight_absent = 0
        self.acknowledged = 0
        self.verifications = 0
        self.strategies: Counter[str] = Counter()
        self.follower = Follower(server, reconnect=True)
        """A client of the live change feed through every kill and restart."""

    # -- killing --------------------------------------------------------------------------------

    def kill(self) -> str:
        """SIGKILL; returns (and counts) the phase the server was in."""
        self.server.kill()
        with self.server.log_path.open("rb") as f:
            f.seek(self.log_offset)
            log = f.read().decode("utf-8", "replace")
        phase = phase_at_kill(log)
        self.kills[phase] += 1
        self.aimed[f"{self.aim} -> {phase}"] += 1
        self.aim = "idle"
        return phase

    def _learn(self, kind: str, total: float, engine: float) -> None:
        old_total, old_engine = self.timing.get(kind, (total, engine))
        self.timing[kind] = (0.6 * old_total + 0.4 * total, 0.6 * old_engine + 0.4 * engine)

    def stream_and_kill(self, target: str | None, aim_at_engine: bool | None = None) -> Writer:
        """Stream writes and kill the server while `target` is in flight (or at a random moment
        when target is None). Two times in three the kill is aimed at the engine: the harness
        watches the server's log for the write's evaluation to start, then kills within the
        time evaluations of that kind take; otherwise anywhere within the request's expected
        duration. Returns the finished writer."""
        writer = Writer(self.server, self.model, self.writes, target, max_writes=400)
        writer.start()
        if target is None:
            self.aim = "random moment"
            time.sleep(self.rng.uniform(0.05, 2.0))
        else:
            assert writer.target_sent.wait(120), "the writer never sent its target write"
            total, engine = self.timing[target]
            if aim_at_engine if aim_at_engine is not None else self.rng.random() < 2 / 3:
                self.aims["engine"] += 1
                self.aim = f"{target} evaluation"
                self._await_evaluation(writer, deadline=time.monotonic() + 3 * total + 1)
                time.sleep(self.rng.uniform(0.0, 0.5 * engine))
            else:
                self.aims["anywhere"] += 1
                self.aim = f"{target} anywhere"
                time.sleep(self.rng.uniform(0.0, total))
        self.kill()
        writer.join(120)
        assert not writer.is_alive(), "the writer did not notice the kill"
        if writer.error is not None:
            raise writer.error
        for kind, timings in writer.timings.items():
            if kind in self.timing:
                for total, engine in timings:
                    self._learn(kind, total, engine)
        return writer

    def _await_evaluation(self, writer: Writer, deadline: float) -> None:
        """Until the server logs that it evaluates an epoch (the target write's: the writes
        before it were answered, so their lines are already there), or the target is done."""
        path = self.server.log_path
        start = path.stat().st_size
        with path.open("rb") as log:
            while time.monotonic() < deadline and writer.in_flight() != "between writes":
                log.seek(start)
                if b": evaluating (" in log.read():
                    return
                time.sleep(0.002)

    def _launch(self) -> float:
        """Start the server; returns when /health answers (the rebuild is under way)."""
        self.log_offset = (
            self.server.log_path.stat().st_size if self.server.log_path.exists() else 0
        )
        self.server.start(wait_ready=False)
        return time.monotonic()

    def start(self) -> None:
        answered = self._launch()
        self.server.wait_ready(300)
        seconds = time.monotonic() - answered
        self._learn("startup", seconds, seconds)

    def kill_during_startup(self) -> None:
        self._launch()
        self.aim = "start-up"
        time.sleep(self.rng.uniform(0.0, self.timing["startup"][0]))
        self.kill()

    # -- checking -------------------------------------------------------------------------------

    def verify(self, unacknowledged: Write | None, when: str) -> None:
        """The server (and its database) hold exactly the acknowledged epochs, plus the one in
        flight wholly or not at all, and answer as a fresh Bootstrap of them."""
        model = self.model
        with self.server.client() as client:
            epoch = client.get("/ready").raise_for_status().json()["epoch"]
            if unacknowledged is None:
                assert epoch == model.epoch, (when, epoch, model.epoch)
            else:
                assert epoch in (model.epoch, model.epoch + 1), (when, epoch, model.epoch)
                if epoch == model.epoch + 1:
                    model = model.after(unacknowledged)
                    self.in_flight_committed += 1
                else:
                    self.in_flight_absent += 1
            epochs = served_epochs(client)
            assert [e["number"] for e in epochs] == list(range(epoch + 1)), when
            statuses = {e["status"] for e in epochs}
            assert statuses <= {"applied", "recovered", "committed"}, statuses
            assert all(e["status"] != "committed" for e in epochs[:-1]), when
            served = served_relations(client)
            served_rules = {
                r["id"] for r in client.get("/v1/rules").raise_for_status().json()["rules"]
            }
        stored = stored_program(self.database_url)
        assert (stored.last_epoch, stored.epochs) == (epoch, epoch + 1), when
        assert stored.program_text == model.program.text, when
        committed_facts = {name: set(rows) for name, rows in model.facts.items() if rows}
        assert stored.facts == committed_facts, (when, differences(committed_facts, stored.facts))
        assert served_rules == model.rule_ids(), when
        if unacknowledged is not None:
            for name, rows in unacknowledged.insert.items():
                present = rows & served[name]
                assert present in (set(), set(rows)), f"{when}: half of an insert is present"
            for name, rows in unacknowledged.retract.items():
                present = rows & served[name]
                assert present in (set(), set(rows)), f"{when}: half of a retraction applied"
        expected = expected_relations(model)
        diff = differences(expected, served)
        assert not diff, f"{when}: the server differs from a fresh Bootstrap: {diff}"
        self._check_feed(epoch, when)
        self.model = model
        self.verifications += 1

    def _check_feed(self, epoch: int, when: str) -> None:
        """The change feed rebuilds the served relations: read page by page from epoch 0,
        and as the live follower has it, which reconnected after every kill with the last
        epoch it had whole: every epoch once, none missing."""
        with self.server.client() as client:
            held = served_exactly(client)
            assert fold(feed(client)) == held, when
        follower = self.follower
        follower.wait_for(lambda: follower.epochs()[-1:] == [epoch], timeout=120)
        assert follower.epochs() == list(range(epoch + 1)), when
        assert fold(follower.groups()) == held, when

    # -- the rounds -----------------------------------------------------------------------------

    def engine_kills(self) -> int:
        return sum(self.kills[p] for p in ENGINE_PHASES)

    def run(self, kills: int, engine_kills: int) -> None:
        """At least `kills` kills and, within three times as many, `engine_kills` of them
        while the engine was bootstrapping or updating (rounds aimed at the evaluation of a
        medium load are added until then)."""
        self.start()
        self.follower.start()
        self.verify(None, "first start")
        phases: list[str] = []
        round_number = 0
        while sum(self.kills.values()) < kills or (
            self.engine_kills() < engine_kills and sum(self.kills.values()) < 3 * kills
        ):
            if not phases:
                phases = list(PHASES)
                self.rng.shuffle(phases)
            phase = phases.pop()
            aim = None
            if sum(self.kills.values()) >= kills:
                phase, aim = "medium", True  # only engine kills are missing
            round_number += 1
            when = f"round {round_number} ({phase})"
            unacknowledged = None
            if phase == "startup":
                if not self.model.facts["edge"] >= BULK:
                    # A start-up rebuild long enough to be hit: the bulk block is loaded.
                    self.live_writes("bulk", 2)
                self.kill()
                self.kill_during_startup()
            else:
                writer = self.stream_and_kill(None if phase == "any" else phase, aim)
                self.acknowledged += writer.acknowledged
                self.strategies.update(writer.strategies)
                self.model = writer.model
                unacknowledged = writer.unacknowledged
            self.start()
            self.verify(unacknowledged, when)
            if round_number % 3 == 0:
                # Live Updates on the rebuilt state, then the same comparison without a restart.
                self.live_writes("rules", 6)
                self.verify(None, f"{when}, after live updates")

    def live_writes(self, target: str, count: int) -> None:
        writer = Writer(self.server, self.model, self.writes, target, max_writes=count)
        writer.start()
        writer.join(300)
        assert not writer.is_alive()
        if writer.error is not None:
            raise writer.error
        self.acknowledged += writer.acknowledged
        self.strategies.update(writer.strategies)
        self.model = writer.model


def test_sigkill_at_random_moments(make_server: Callable[..., Server], backend: str) -> None:
    server = make_server(
        REASONER_PAGE_SIZE="200000",
        REASONER_LOG_LEVEL="debug",
        REASONER_FEED_HEARTBEAT_SECONDS="1",
    )
    program = server.workdir / "program.dl"
    program.write_text(PROGRAM)
    server.settings["REASONER_PROGRAM"] = str(program)
    harness = Harness(server, backend)
    started = time.monotonic()
    try:
        harness.run(COUNTS.kills, engine_kills=max(1, COUNTS.kills // 5))
    finally:
        harness.follower.stop()
        record(
            f"crash[{backend}]",
            kills_survived=sum(harness.kills.values()),
            kills_by_phase=dict(sorted(harness.kills.items())),
            kills_in_engine=harness.engine_kills(),
            kills_aimed=dict(sorted(harness.aimed.items())),
            writes_acknowledged=harness.acknowledged,
            in_flight_committed=harness.in_flight_committed,
            in_flight_absent=harness.in_flight_absent,
            verifications=harness.verifications,
            strategies=dict(sorted(harness.strategies.items())),
            final_epoch=harness.model.epoch,
            feed_connections=harness.follower.connections,
            feed_epochs_followed=len(harness.follower.epochs()),
            seconds=round(time.monotonic() - started, 1),
        )
    assert sum(harness.kills.values()) >= COUNTS.kills
    assert harness.engine_kills() >= max(1, COUNTS.kills // 5), harness.kills
