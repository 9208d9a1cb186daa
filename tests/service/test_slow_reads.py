"""A slow query stalls nobody: writes and other reads are answered while it runs, probes answer
under any load, expensive reads beyond the limit are refused at once with `Retry-After`, and a
client that gives up on a queued write takes it out of the queue.

These are ordering properties (what is answered before what), not speed measurements: the
slow query is made to take seconds by its size, and every bound checked is that query's own
deadline plus slack.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from tests.service.conftest import READ_TOKEN, Server
from tests.service.helpers import assert_problem, read_relation

TEXT = {"content-type": "text/plain"}
QUERY_SECONDS = 4
SLOW_QUERY = "e(a, b), e(c, d), e(f, g), a + c + f = -1"
"""No answer, but 400^3 combinations to try: it runs until its deadline."""


def _loaded(server: Server) -> None:
    with server.client() as client:
        client.post(
            "/v1/rules", content=".decl e(x: number, y: number)\nf(x) :- e(x, _).", headers=TEXT
        ).raise_for_status()
        edges = [[i, i + 1] for i in range(400)]
        client.post("/v1/facts", json={"facts": {"e": edges}}).raise_for_status()


class _Timed(threading.Thread):
    """One request on its own thread, remembering when its answer arrived."""

    def __init__(self, send: Callable[[httpx.Client], httpx.Response], server: Server) -> None:
        super().__init__()
        self.send = send
        self.server = server
        self.response: httpx.Response | None = None
        self.finished = 0.0

    def run(self) -> None:
        with self.server.client() as client:
            self.response = self.send(client)
        self.finished = time.monotonic()


def _slow_query(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/query", json={"query": SLOW_QUERY})


def test_a_slow_query_holds_back_neither_writes_nor_reads(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_QUERY_TIMEOUT_SECONDS=str(QUERY_SECONDS)).start()
    _loaded(server)
    query = _Timed(_slow_query, server)
    query.start()
    time.sleep(0.5)  # the query is evaluating
    with server.client() as client:
        write = client.post("/v1/facts", json={"facts": {"e": [[-1, -2]]}})
        write.raise_for_status()
        wrote = time.monotonic()
        with server.client(READ_TOKEN) as reader:
            sizes = reader.get("/v1/relations").raise_for_status().json()["relations"]
            read = time.monotonic()
            assert {r["name"]: r["size"] for r in sizes}["e"] == 401
            assert (-1,) in read_relation(reader, "f")
    query.join()
    assert query.response is not None
    assert_problem(query.response, 422, "query_timeout")
    assert wrote < query.finished and read < query.finished


def test_probes_answer_and_reads_are_bounded_under_load(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(
        REASONER_QUERY_TIMEOUT_SECONDS=str(QUERY_SECONDS), REASONER_MAX_CONCURRENT_READS="3"
    ).start()
    _loaded(server)
    started = time.monotonic()
    queries = [_Timed(_slow_query, server) for _ in range(20)]
    for query in queries:
        query.start()
    time.sleep(0.5)
    probes = []
    for path in ("/health", "/ready"):
        probes.append(httpx.get(server.base_url + path, timeout=QUERY_SECONDS))
        probes[-1].raise_for_status()
    probed = time.monotonic()
    for query in queries:
        query.join()
    responses = [q.response for q in queries]
    codes = sorted(r.json()["code"] for r in responses if r is not None)
    assert codes.count("query_timeout") == 3, codes
    assert codes.count("too_busy") == 17, codes
    for response in responses:
        assert response is not None
        if response.json()["code"] == "too_busy":
            assert_problem(response, 503, "too_busy")
            assert response.headers["retry-after"] == "1"
    # The probes were answered while the admitted queries were still running, and those
    # honoured their deadline despite sharing the processor.
    assert probed < min(q.finished for q in queries if q.response.json()["code"] != "too_busy")
    assert max(q.finished for q in queries) - started < QUERY_SECONDS + 3


def test_a_write_whose_client_left_before_its_turn_is_dropped(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="3").start()
    with server.client() as client:
        rules = ".decl seed(x: number)\n.decl s(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x)."
        epoch = client.post("/v1/rules", content=rules, headers=TEXT).json()["epoch"]
    busy = _Timed(lambda c: c.post("/v1/facts", json={"facts": {"seed": [[0]]}}), server)
    busy.start()  # holds the writer for its 3 s deadline
    time.sleep(0.5)
    with server.client() as client:
        try:
            client.post("/v1/facts", json={"facts": {"s": [[9]]}}, timeout=0.5)
        except httpx.TimeoutException:
            pass
        else:
            raise AssertionError("the queued write was answered while the writer was busy")
    busy.join()
    assert busy.response is not None
    assert_problem(busy.response, 422, "epoch_timeout")
    time.sleep(0.5)  # the writer is free: a write still queued would be applied now
    with server.client() as client:
        assert read_relation(client, "s") == []
        assert client.get("/ready").json()["epoch"] == epoch
        assert "reasoner_queue_length 0" in client.get("/metrics").text
