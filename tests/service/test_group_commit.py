"""Group commit against a real server, on both databases: small writes that queue up while an
epoch is applied become the next epoch together, and each is still answered alone (its own
counts, its place in the epoch, or its own error); a client's writes land in its order; the
epoch row lists the writes it holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.service.conftest import Server
from tests.service.helpers import queue_length, served_relations

PROGRAM = """.decl edge(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
RUNAWAY = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x).\n"
"""Rules that never end once a seed is inserted: the write is refused at its deadline, and
holds the writer until then while the writes under test queue up behind it."""


def _in_threads(
    calls: list[Callable[[], Any]],
    queued: Callable[[], int] | None = None,
    all_queued: Callable[[], bool] | None = None,
) -> list[Any]:
    """Each call in a thread of its own; their results. With `queued` (the writes queued on
    the server), each is started once the one before it is in the queue: they queue in
    order; `all_queued` must then hold (they all waited behind the same write)."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        before = queued() if queued is not None else 0
        thread.start()
        deadline = time.monotonic() + 10  # past it, the test's assertions say what went wrong
        while queued is not None and queued() <= before and time.monotonic() < deadline:
            time.sleep(0.002)
    everyone = all_queued() if all_queued is not None else True
    for thread in threads:
        thread.join(120)
    assert everyone, "the writes did not all queue behind the same write"
    return results


def test_writes_queued_behind_an_epoch_share_the_next_and_each_is_answered_alone(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="3").start()
    with server.client() as client:
        rules = PROGRAM + RUNAWAY
        client.post("/v1/rules", content=rules, headers={"content-type": "text/plain"})
        refused: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: refused.append(client.post("/v1/facts", json={"facts": {"seed": [[0]]}}))
        )
        slow.start()
        while queue_length(client) < 1:  # the runaway write is being evaluated
            time.sleep(0.005)

        def write(verb: str, rows: list[list[Any]]) -> httpx.Response:
            with server.client() as own:
                return own.request(verb, "/v1/facts", json={"facts": {"edge": rows}})

        answers = _in_threads(
            [
                lambda: write("POST", [[9001, 9002]]),
                lambda: write("POST", [["not a number", 1]]),
                lambda: write("POST", [[9002, 9003], [9002, 9003]]),
                lambda: write("DELETE", [[77777, 1]]),  # absent: changes nothing
                lambda: write("DELETE", [[9001, 9002]]),  # flips the first one back
                lambda: write("POST", [[9001, 9002]]),  # and in again
            ],
            queued=lambda: queue_length(client),
            all_queued=lambda: queue_length(client) == 7,
        )
        slow.join(120)
        assert refused[0].status_code == 422, refused[0].text  # epoch_timeout
        first, bad, second, absent, back, again = answers
        assert bad.status_code == 400 and bad.json()["code"] == "type_mismatch", bad.text
        good = [first, second, back, again]
        for answer in (*good, absent):
            assert answer.status_code == 200, answer.text
        epoch = first.json()["epoch"]
        assert [a.json()["epoch"] for a in good] == [epoch] * 4  # one epoch for them all
        assert [a.json()["write"] for a in good] == [0, 1, 2, 3]
        assert [(a.json()["facts_inserted"], a.json()["facts_retracted"]) for a in good] == [
            (1, 0),
            (1, 0),
            (0, 1),
            (1, 0),
        ]
        assert absent.json()["changed"] is False and absent.json()["write"] is None
        row = client.get(f"/v1/epochs/{epoch}").json()
        assert row["writes"] == [
            {"facts_inserted": 1, "facts_retracted": 0},
            {"facts_inserted": 1, "facts_retracted": 0},
            {"facts_inserted": 0, "facts_retracted": 1},
            {"facts_inserted": 1, "facts_retracted": 0},
        ]
        assert (row["facts_inserted"], row["facts_retracted"]) == (2, 0)  # the net change
        feed = client.get("/v1/changes", params={"since": epoch - 1}).json()["changes"]
        edges = [c for c in feed if c["epoch"] == epoch and c["relation"] == "edge"]
        assert [sorted(c["inserted"]) for c in edges] == [[[9001, 9002], [9002, 9003]]]
        assert [c["retracted"] for c in edges] == [[]]  # the feed shows the net change
        found = client.post("/v1/query", json={"query": "reach(9001, y)"}).json()["rows"]
        assert sorted(found) == [[9002], [9003]]
        single = client.get(f"/v1/epochs/{epoch - 1}").json()  # the rules' epoch: one write
        assert single["writes"] == [{"facts_inserted": 0, "facts_retracted": 0}]
        assert "reasoner_group_writes_count" in client.get("/metrics").text
    server.assert_alive()


def test_many_clients_writing_at_once_each_see_their_writes_land_in_order(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    clients, rounds = 16, 9
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})

    def writer(k: int) -> list[dict[str, Any]]:
        """Client k flips its own edge in and out, ending in: each write flips it."""
        answers = []
        with server.client() as own:
            for i in range(rounds):
                verb = "POST" if i % 2 == 0 else "DELETE"
                answer = own.request(verb, "/v1/facts", json={"facts": {"edge": [[k, k + 100]]}})
                answer.raise_for_status()
                answers.append(answer.json())
        return answers

    results = _in_threads([lambda k=k: writer(k) for k in range(clients)])
    for answers in results:
        epochs = [a["epoch"] for a in answers]
        assert epochs == sorted(set(epochs)), epochs  # each a later epoch than the one before
        assert all(a["facts_inserted"] + a["facts_retracted"] == 1 for a in answers)
    with server.client() as client:
        assert served_relations(client)["edge"] == {(k, k + 100) for k in range(clients)}
        made = client.get("/v1/epochs", params={"limit": 1000}).json()["epochs"]
        held = sum(len(e["writes"]) for e in made if e["kind"] == "delta")
        assert held == clients * rounds + 1  # every write, and the rules' epoch
    server.assert_alive()
