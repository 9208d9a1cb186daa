"""Readers during writes: they are answered while an epoch is being computed (they do not wait
for it), and every answer shows one whole epoch, never a mix of two."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tests.service.conftest import READ_TOKEN, Server

N = 300
CUT = (N // 2, N // 2 + 1)
PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def _tc_size(edges: set[tuple[int, int]]) -> int:
    """Pairs (x, y), x < y, connected along the chain's remaining edges."""
    size, run = 0, 1
    for i in range(N):
        if (i, i + 1) in edges:
            run += 1
        else:
            size += run * (run - 1) // 2
            run = 1
    return size + run * (run - 1) // 2


def test_reads_are_answered_during_writes_and_see_whole_epochs(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    chain = {(i, i + 1) for i in range(N)}
    whole = (len(chain), _tc_size(chain))
    cut = (len(chain) - 1, _tc_size(chain - {CUT}))
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
        client.post("/v1/facts", json={"facts": {"edge": sorted(chain)}}).raise_for_status()

    writing = threading.Event()
    done = threading.Event()
    write_spans: list[tuple[float, float]] = []

    def writer() -> None:
        with server.client() as client:
            for i in range(6):
                verb = "DELETE" if i % 2 == 0 else "POST"
                writing.set()
                start = time.monotonic()
                client.request(verb, "/v1/facts", json={"facts": {"edge": [list(CUT)]}})
                write_spans.append((start, time.monotonic()))
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    seen: set[tuple[int, int]] = set()
    read_spans: list[tuple[float, float]] = []
    with server.client(READ_TOKEN) as reader:
        writing.wait()
        while not done.is_set():
            start = time.monotonic()
            body = reader.get("/v1/relations").raise_for_status().json()
            read_spans.append((start, time.monotonic()))
            sizes = {r["name"]: r["size"] for r in body["relations"]}
            seen.add((sizes["edge"], sizes["tc"]))
    thread.join()

    assert seen <= {whole, cut}, seen  # never half an epoch
    inside = [(a, b) for a, b in read_spans if any(s < a and b < e for s, e in write_spans)]
    assert inside, "no read was answered while a write was being applied"
    server.assert_alive()
