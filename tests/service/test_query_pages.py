"""Paging through a query's answer evaluates it once (`service.core.query_answers`): later
pages are slices of the kept answer, equal to one unpaged read; a cursor keeps its epoch
across writes; a write's new epoch is evaluated afresh."""

from __future__ import annotations

from collections.abc import Callable

from tests.service.conftest import Server

PROGRAM = """.decl edge(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
TEXT = {"content-type": "text/plain"}
QUERY = "reach(x, y), x < y"


def _pages(client, query: str, limit: int, cursor: str | None = None) -> list[dict]:
    pages = []
    while True:
        body = {"query": query, "limit": limit, "cursor": cursor}
        page = client.post("/v1/query", json=body).raise_for_status().json()
        pages.append(page)
        cursor = page["next"]
        if cursor is None:
            return pages


def test_the_pages_of_an_answer_evaluate_it_once(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_PAGE_SIZE="5000").start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        chain = [[i, i + 1] for i in range(60)]
        client.post("/v1/facts", json={"facts": {"edge": chain}}).raise_for_status()

        whole = client.post("/v1/query", json={"query": QUERY}).raise_for_status().json()
        assert whole["next"] is None and len(whole["rows"]) == 60 * 61 // 2
        pages = _pages(client, QUERY, 100)
        assert [row for page in pages for row in page["rows"]] == whole["rows"]
        assert len(pages) == 19
        assert all(page["kept"] for page in pages)  # the unpaged read evaluated it
        assert {page["seconds"] for page in pages} == {whole["seconds"]}

        # A cursor keeps its epoch across a write; a new request reads the new epoch.
        first = client.post("/v1/query", json={"query": QUERY, "limit": 100}).json()
        client.post("/v1/facts", json={"facts": {"edge": [[60, 61]]}}).raise_for_status()
        rest = _pages(client, QUERY, 100, first["next"])
        assert {page["epoch"] for page in rest} == {first["epoch"]}
        assert first["rows"] + [row for page in rest for row in page["rows"]] == whole["rows"]
        fresh = client.post("/v1/query", json={"query": QUERY, "limit": 100}).json()
        assert fresh["epoch"] == first["epoch"] + 1 and not fresh["kept"]
        assert len([row for page in _pages(client, QUERY, 5000) for row in page["rows"]]) == (
            61 * 62 // 2
        )
    server.stop()


def test_answers_are_not_kept_when_the_cache_is_off(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_QUERY_CACHE_ROWS="0").start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2], [2, 3]]}}).raise_for_status()
        pages = _pages(client, QUERY, 1)
        assert [page["rows"] for page in pages] == [[[1, 2]], [[1, 3]], [[2, 3]]]
        assert not any(page["kept"] for page in pages)
    server.stop()
