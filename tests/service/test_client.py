"""`reasoner_client` against a real server on both databases: every method of the blocking
client, the async one's over the same calls, errors as `ReasonerError`, and the change feed
followed across a server restart."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from reasoner_client import AsyncClient, Client, ReasonerError
from tests.service.conftest import READ_TOKEN, WRITE_TOKEN, Server

PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def test_every_method_of_the_blocking_client(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    server = make_server().start()
    with Client(server.base_url, token=WRITE_TOKEN) as reasoner:
        assert reasoner.ready()["epoch"] == 0
        added = reasoner.add_rules(PROGRAM)
        assert added["changed"] and len(added["ids"]) == 2
        assert reasoner.rules()[0]["text"] == "tc(x, y) :- edge(x, y)."
        assert ".decl edge" in reasoner.program()

        reasoner.insert({"edge": [(1, 2)]})
        (tmp_path / "edges.facts").write_text("2\t3\n")
        (tmp_path / "edges.csv").write_text("3,4\n")
        reasoner.load("edge", tmp_path / "edges.facts")
        reasoner.load("edge", str(tmp_path / "edges.csv"))
        reasoner.load("edge", pl.DataFrame({"x": [4], "y": [5]}))
        reasoner.load("edge", pa.table({"x": [5], "y": [6]}))
        assert sorted(reasoner.rows("edge")) == [(i, i + 1) for i in range(1, 6)]
        assert reasoner.rows("tc", x=1) == [(1, y) for y in range(2, 7)]
        assert reasoner.query("tc(1, y), y > 4") == [(5,), (6,)]
        frame = reasoner.query_frame("tc(x, 6)")
        assert frame.columns == ["x"] and sorted(frame["x"].to_list()) == [1, 2, 3, 4, 5]
        assert reasoner.frame("tc").height == 15
        assert reasoner.export("edge", "csv").startswith(b"x,y\n")
        assert reasoner.explain("tc", [1, 3])["holds"]
        assert {r["name"] for r in reasoner.relations()} == {"edge", "tc"}

        reasoner.unload("edge", pl.DataFrame({"x": [5], "y": [6]}))
        report = reasoner.delta(retract={"edge": [(4, 5)]}, add_rules=["loop(x) :- tc(x, x)."])
        assert report["changed"] and len(report["rules_added"]) == 1
        reasoner.remove_rule(report["rules_added"][0])
        reasoner.retract({"edge": [(3, 4)]})
        assert sorted(reasoner.rows("tc")) == [(1, 2), (1, 3), (2, 3)]
        replaced = reasoner.replace_program(".decl edge(x: number, y: number)\n")
        assert replaced["changed"] and len(replaced["rules_removed"]) == 2
        assert reasoner.clear_facts()["facts_retracted"] == 2

        with pytest.raises(ReasonerError) as refused:
            reasoner.add_rules("broken(x) :- ")
        assert (refused.value.status, refused.value.code) == (400, "parse_error")
    with Client(server.base_url, token=READ_TOKEN) as reader, pytest.raises(ReasonerError) as no:
        reader.insert({"edge": [(9, 9)]})
    assert no.value.code == "forbidden"
    server.stop()


def test_the_async_client_answers_as_the_blocking_one(make_server: Callable[..., Server]) -> None:
    server = make_server().start()

    async def session() -> None:
        async with AsyncClient(server.base_url, token=WRITE_TOKEN) as reasoner:
            await reasoner.add_rules([PROGRAM])
            await reasoner.insert({"edge": [(1, 2), (2, 3)]})
            await reasoner.load("edge", pl.DataFrame({"x": [3], "y": [4]}))
            assert await reasoner.query("tc(1, y)") == [(2,), (3,), (4,)]
            assert (await reasoner.query_frame("tc(1, y)")).height == 3
            assert (await reasoner.frame("edge")).height == 3
            assert sorted(await reasoner.rows("tc", x=2)) == [(2, 3), (2, 4)]
            assert (await reasoner.explain("tc", [1, 4]))["holds"]
            await reasoner.retract({"edge": [(3, 4)]})
            assert await reasoner.query("tc(1, y)") == [(2,), (3,)]
            epochs = []
            async for epoch in reasoner.changes(since=0, reconnect=False):
                epochs.append(epoch)
                if epoch["epoch"] == 4:
                    break
            assert [e["epoch"] for e in epochs] == [1, 2, 3, 4]
            with pytest.raises(ReasonerError):
                await reasoner.query("nosuch(x)")

    asyncio.run(session())
    server.stop()


def test_the_change_feed_is_followed_across_a_restart(make_server: Callable[..., Server]) -> None:
    """Epochs in order, each once: the stream cut by the restart is opened again after the
    last whole epoch (`Last-Event-ID`)."""
    server = make_server().start()
    seen: list[int] = []
    done = threading.Event()
    with Client(server.base_url, token=WRITE_TOKEN) as writer:
        writer.add_rules(PROGRAM)

        def follow() -> None:
            with Client(server.base_url, token=WRITE_TOKEN, timeout=5) as reader:
                for epoch in reader.changes(since=0):
                    seen.append(epoch["epoch"])
                    if epoch["epoch"] >= 6:
                        done.set()
                        return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        writer.insert({"edge": [(1, 2)]})
        writer.insert({"edge": [(2, 3)]})
    for _ in range(100):  # the epochs so far reach the follower before the restart
        if len(seen) >= 3:
            break
        time.sleep(0.1)
    server.stop()
    server.start(same_port=True)
    with Client(server.base_url, token=WRITE_TOKEN) as writer:
        for i in range(3, 7):
            writer.insert({"edge": [(i, i + 1)]})
    assert done.wait(60), seen
    assert seen == [1, 2, 3, 4, 5, 6]
    server.stop()


def test_a_client_of_a_named_store(make_server: Callable[..., Server]) -> None:
    """`create_store`, `stores`, `drop_store`, and a client of the store (`store=`) whose every
    request, the feed's included, goes to that store."""
    server = make_server().start()
    with Client(server.base_url, token=WRITE_TOKEN) as admin:
        made = admin.create_store("team", epoch_timeout_seconds=9)
        assert made["settings"] == {"epoch_timeout_seconds": 9.0}
        with Client(server.base_url, token=WRITE_TOKEN, store="team") as team:
            team.add_rules(PROGRAM)
            team.insert({"edge": [(1, 2), (2, 3)]})
            assert team.query("tc(1, y)") == [(2,), (3,)]
            assert team.frame("tc").height == 3
            epochs = team.changes(since=-1, reconnect=False)
            assert [next(epochs)["epoch"] for _ in range(3)] == [0, 1, 2]
            epochs.close()
        assert admin.relations() == []
        assert [s["name"] for s in admin.stores()] == ["default", "team"]

        async def drop() -> list[str]:
            async with AsyncClient(server.base_url, token=WRITE_TOKEN, store="team") as team:
                assert await team.query("tc(x, 3)") == [(1,), (2,)]
                await team.drop_store("team")
                with pytest.raises(ReasonerError) as gone:
                    await team.rows("tc")
                assert gone.value.code == "unknown_store"
                await team.create_store("again")
                return [s["name"] for s in await team.stores()]

        assert asyncio.run(drop()) == ["default", "again"]
    with pytest.raises(ValueError, match="not a store's name"):
        Client(server.base_url, store="../query")  # would read another route
