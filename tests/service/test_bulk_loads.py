"""Bulk loads through HTTP: a large body, sent in chunks, is stored and served exactly, and a
bulk write the service refuses (a bad row, a type the engine rejects, an epoch past its
memory allowance) leaves nothing behind, in the engine or in the store.

The bodies hold more rows than a bulk write (`BULK_MIN_FACTS`: applied by a Bootstrap
directly); the restarts read back what the store committed (its segments of facts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from reasoner.elastic.switch import BULK_MIN_FACTS
from tests.service.conftest import Server
from tests.service.helpers import assert_problem, read_relation

ROWS = 6 * BULK_MIN_FACTS
TEXT = {"content-type": "text/plain"}
TSV = {"content-type": "text/tab-separated-values"}
PROGRAM = ".decl labelled(n: number, s: symbol)\nseven(s) :- labelled(7, s).\n"


def _symbol(i: int) -> str:
    """A symbol with what JSON, the `.facts` reader and the store must each get right."""
    return f'{i} "q" \\ \\n {{}} é ✓ ,;[] \x00 \x1f'


def _rows(start: int, stop: int) -> list[tuple[int, str]]:
    return [(i, _symbol(i)) for i in range(start, stop)]


def _body(rows: list[tuple[int, str]]) -> bytes:
    return "".join(f"{n}\t{s}\n" for n, s in rows).encode("utf-8")


def _chunked(body: bytes, size: int = 1 << 16) -> Iterator[bytes]:
    """The body as a generator: httpx sends it with chunked transfer encoding."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _started(make_server: Callable[..., Server], **settings: str) -> Server:
    server = make_server(
        REASONER_MAX_REQUEST_BYTES=str(64 << 20), REASONER_PAGE_SIZE="100000", **settings
    ).start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
    return server


def _restarted(server: Server) -> Server:
    """SIGKILL and start again: the server rebuilds from what the store committed."""
    server.kill()
    return server.start()


def _latest_epoch(server: Server) -> int:
    with server.client() as client:
        return client.get("/v1/epochs", params={"limit": 1}).json()["epochs"][0]["number"]


def test_a_chunked_bulk_body_round_trips_exactly(make_server: Callable[..., Server]) -> None:
    server = _started(make_server)
    rows = _rows(0, ROWS)
    with server.client() as client:
        loaded = client.post(
            "/v1/relations/labelled/facts", content=_chunked(_body(rows)), headers=TSV
        ).raise_for_status()
        assert (loaded.json()["facts_inserted"], loaded.json()["changed"]) == (ROWS, True)
        assert sorted(read_relation(client, "labelled")) == rows
    _restarted(server)
    with server.client() as client:
        assert sorted(read_relation(client, "labelled")) == rows
        assert read_relation(client, "seven") == [(_symbol(7),)]
        again = client.post("/v1/relations/labelled/facts", content=_body(rows), headers=TSV)
        assert again.raise_for_status().json()["changed"] is False
        more = _rows(ROWS // 2, ROWS + BULK_MIN_FACTS)  # half of them present already
        added = client.post("/v1/relations/labelled/facts", content=_body(more), headers=TSV)
        assert added.raise_for_status().json()["facts_inserted"] == BULK_MIN_FACTS
        gone = _rows(0, ROWS // 2 + 1)  # the row (7, ...) among them
        removed = client.request(
            "DELETE", "/v1/relations/labelled/facts", content=_chunked(_body(gone)), headers=TSV
        )
        assert removed.raise_for_status().json()["facts_retracted"] == len(gone)
    _restarted(server)
    with server.client() as client:
        assert sorted(read_relation(client, "labelled")) == _rows(len(gone), ROWS + BULK_MIN_FACTS)
        assert read_relation(client, "seven") == []


def test_a_bad_row_in_the_middle_of_a_bulk_body_changes_nothing(
    make_server: Callable[..., Server],
) -> None:
    server = _started(make_server)
    rows = _rows(0, ROWS)
    lines = _body(rows).decode("utf-8").splitlines(keepends=True)
    bad = ROWS // 2
    lines[bad] = "x\tbad\n"
    epoch = _latest_epoch(server)
    with server.client() as client:
        body = assert_problem(
            client.post(
                "/v1/relations/labelled/facts",
                content=_chunked("".join(lines).encode("utf-8")),
                headers=TSV,
            ),
            400,
            "invalid_facts",
        )
        assert body["line"] == bad + 1
        assert read_relation(client, "labelled") == []
    assert _latest_epoch(server) == epoch


def test_a_bulk_write_the_engine_refuses_leaves_nothing_in_the_store(
    make_server: Callable[..., Server],
) -> None:
    server = _started(make_server)
    rows: list[list[object]] = [list(row) for row in _rows(0, ROWS)]
    rows[ROWS // 2] = [ROWS // 2, 17]  # a number in the symbol column
    epoch = _latest_epoch(server)
    with server.client() as client:
        assert_problem(
            client.post("/v1/facts", json={"facts": {"labelled": rows}}), 400, "type_mismatch"
        )
    _restarted(server)
    assert _latest_epoch(server) == epoch
    with server.client() as client:
        assert read_relation(client, "labelled") == []


def test_a_bulk_write_past_its_memory_allowance_leaves_nothing_in_the_store(
    make_server: Callable[..., Server],
) -> None:
    server = _started(make_server, REASONER_EPOCH_MEMORY_MB="64")
    product = ".decl e(x: number, y: number)\ncp(a, b, c, d) :- e(a, b), e(c, d)."
    with server.client() as client:
        client.post("/v1/rules", content=product, headers=TEXT).raise_for_status()
    epoch = _latest_epoch(server)
    body = "".join(f"{i}\t{i + 1}\n" for i in range(BULK_MIN_FACTS * 2)).encode("ascii")
    with server.client() as client:
        refused = client.post("/v1/relations/e/facts", content=_chunked(body), headers=TSV)
        assert_problem(refused, 422, "epoch_too_large")
    _restarted(server)
    assert _latest_epoch(server) == epoch
    with server.client() as client:
        assert read_relation(client, "e") == []


def test_uploads_read_as_the_input_directive_says_and_make_new_relations(
    make_server: Callable[..., Server],
) -> None:
    """A `.facts` body splits at the `.input`'s delimiter and a CSV body skips the header its
    `headers=true` announces; a header sent unannounced is refused with the fix; a body for a
    relation the program lacks makes it, its types from its values, as JSON facts do."""
    program = (
        '.decl pair(x: number, y: number)\n.input pair(delimiter=",")\n'
        ".decl named(n: number, s: symbol)\n.input named(headers=true)\n"
        ".decl plain(x: number, y: number)\n"
    )
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        client.post("/v1/relations/pair/facts", content="1,2\n3,4\n", headers=TSV)
        assert set(read_relation(client, "pair")) == {(1, 2), (3, 4)}
        csv_body = {"content-type": "text/csv"}
        client.post(
            "/v1/relations/named/facts", content="n,s\n1,one\n", headers=csv_body
        ).raise_for_status()
        assert read_relation(client, "named") == [(1, "one")]
        refused = client.post("/v1/relations/plain/facts", content="x,y\n1,2\n", headers=csv_body)
        body = assert_problem(refused, 400, "invalid_facts")
        assert "?header=true" in body["detail"] and body["line"] == 1

        made = client.post(
            "/v1/relations/fresh/facts", content="1\ta\t2.5\n2\tb c\t-1\n", headers=TSV
        )
        assert made.raise_for_status().json()["facts_inserted"] == 2
        relations = {r["name"]: r for r in client.get("/v1/relations").json()["relations"]}
        assert [c["type"] for c in relations["fresh"]["columns"]] == ["number", "symbol", "float"]
        assert set(read_relation(client, "fresh")) == {(1, "a", 2.5), (2, "b c", -1.0)}
        ragged = client.post("/v1/relations/other/facts", content="1\t2\n3\n", headers=TSV)
        assert_problem(ragged, 400, "invalid_facts")
        assert "other" not in {r["name"] for r in client.get("/v1/relations").json()["relations"]}
    server.stop()
