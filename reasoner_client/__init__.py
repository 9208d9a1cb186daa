"""A Python client of the reasoning service, on httpx: `Client` (blocking) and `AsyncClient`.

    from reasoner_client import Client

    with Client("http://127.0.0.1:8000", token="...") as reasoner:
        reasoner.add_rules("tc(x, y) :- edge(x, y).\\ntc(x, z) :- tc(x, y), edge(y, z).")
        reasoner.load("edge", "edges.csv")             # a file, or a Polars/pandas/Arrow table
        frame = reasoner.query_frame("tc(1, y)")       # a Polars DataFrame, through Arrow
        for epoch in reasoner.changes(since=-1):       # the change feed, resumed on reconnect
            ...

Every method is one request of the HTTP API (the README lists them); an error answer raises
`ReasonerError` with the problem document's status, code and detail. Both clients share the
requests (`_Requests`): the async one awaits what the blocking one calls.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import polars as pl

Rows = Mapping[str, Sequence[Sequence[Any]]]
Report = dict[str, Any]
"""What a write answers: the epoch it made, whether it changed anything, its strategy..."""
_STREAM = {"accept": "text/event-stream"}


class ReasonerError(Exception):
    """An error answer (`application/problem+json`): its status, stable code and detail."""

    def __init__(self, status: int, code: str, detail: str, document: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.document = document


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    options: dict[str, Any]
    of_store: bool = True
    """A route of a data store (`/v1/...`), which a client of a named store sends under
    `/v1/stores/{name}/`; False for the routes of the stores themselves."""

    def url(self, store: str | None) -> str:
        if store is None or not self.of_store:
            return self.path
        return f"/v1/stores/{store}/{self.path.removeprefix('/v1/')}"


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code < 400:
        return response
    try:
        document = response.json()
    except ValueError:
        document = {"code": "http_error", "detail": response.text[:2000]}
    raise ReasonerError(
        response.status_code,
        str(document.get("code", "http_error")),
        str(document.get("detail", "")),
        document,
    )


_CHANGES = _Request("GET", "/v1/changes", {})
_STORE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""A data store's name, as the server takes it."""


def _store_name(store: str | None) -> str | None:
    if store is not None and _STORE_NAME.fullmatch(store) is None:
        raise ValueError(f"not a store's name (a lower-case identifier): {store!r}")
    return store


class _Requests:
    """The API's requests, made once for both clients."""

    @staticmethod
    def create_store(name: str, settings: Mapping[str, Any]) -> _Request:
        return _Request("PUT", f"/v1/stores/{name}", {"json": {"settings": dict(settings)}}, False)

    @staticmethod
    def drop_store(name: str) -> _Request:
        return _Request("DELETE", f"/v1/stores/{name}", {}, False)

    @staticmethod
    def stores() -> _Request:
        return _Request("GET", "/v1/stores", {}, False)

    @staticmethod
    def rules(texts: str | Sequence[str]) -> _Request:
        rules = [texts] if isinstance(texts, str) else list(texts)
        return _Request("POST", "/v1/rules", {"json": {"rules": rules}})

    @staticmethod
    def delta(
        insert: Rows | None, retract: Rows | None, add: Sequence[str], remove: Sequence[str]
    ) -> _Request:
        facts = {"insert": _rows(insert), "retract": _rows(retract)}
        body = {"facts": facts, "rules": {"add": list(add), "remove": list(remove)}}
        return _Request("POST", "/v1/deltas", {"json": body})

    @staticmethod
    def load(relation: str, source: Any, retract: bool = False) -> _Request:
        content, media = _body_of(source)
        method = "DELETE" if retract else "POST"
        return _Request(
            method, f"/v1/relations/{relation}/facts", {"content": content, "headers": media}
        )

    @staticmethod
    def query(text: str, epoch: int | None, cursor: str | None) -> _Request:
        body: dict[str, Any] = {"query": text, "cursor": cursor}
        if epoch is not None:
            body["epoch"] = epoch
        return _Request("POST", "/v1/query", {"json": body})

    @staticmethod
    def export_query(text: str, epoch: int | None, fmt: str) -> _Request:
        body: dict[str, Any] = {"query": text}
        if epoch is not None:
            body["epoch"] = epoch
        return _Request("POST", "/v1/query/export", {"json": body, "params": {"format": fmt}})

    @staticmethod
    def rows(relation: str, filters: Mapping[str, Any], cursor: str | None) -> _Request:
        params = {**filters, **({"cursor": cursor} if cursor else {})}
        return _Request("GET", f"/v1/relations/{relation}", {"params": params})

    @staticmethod
    def explain(relation: str, row: Sequence[Any]) -> _Request:
        params = {f"@{i}": _text(v) for i, v in enumerate(row)}
        return _Request("GET", f"/v1/explain/{relation}", {"params": params})


def _rows(rows: Rows | None) -> dict[str, list[list[Any]]]:
    return {name: [list(row) for row in values] for name, values in (rows or {}).items()}


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _body_of(source: Any) -> tuple[bytes, dict[str, str]]:
    """A bulk body: a file as it is (`.csv` as CSV, anything else as a Soufflé `.facts`
    file), or a table (Polars, pandas, Arrow) as CSV without a header."""
    if isinstance(source, str | Path):
        path = Path(source)
        media = "text/csv" if path.suffix.lower() == ".csv" else "text/tab-separated-values"
        return path.read_bytes(), {"content-type": media}
    if not isinstance(source, pl.DataFrame):
        source = pl.from_pandas(source) if hasattr(source, "to_numpy") else pl.from_arrow(source)
    assert isinstance(source, pl.DataFrame)
    return source.write_csv(include_header=False).encode("utf-8"), {"content-type": "text/csv"}


def _frame(content: bytes) -> pl.DataFrame:
    return pl.read_ipc_stream(io.BytesIO(content))


class _Feed:
    """Epochs out of the live feed's events: an epoch's `part` events, then its `epoch` event
    (each event's `data` a group of changes); resumed from the last whole epoch."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.retry = 1.0
        """Seconds to wait before connecting again (the server's `retry:`, else one)."""
        self._pending: list[dict[str, Any]] = []
        self._event: dict[str, str] = {}

    def request(self, since: int) -> dict[str, Any]:
        """The stream's options: from after `since`, or, reconnecting, after the last whole
        epoch (an epoch cut off midway is sent again whole)."""
        self._pending, self._event = [], {}
        if self.last is None:
            return {"headers": _STREAM, "params": {"since": since}, "timeout": None}
        return {"headers": {**_STREAM, "last-event-id": str(self.last)}, "timeout": None}

    def line(self, line: str) -> dict[str, Any] | None:
        """The epoch a line completes: its number, whether it reset, and its changes."""
        if line.startswith(":"):
            return None
        if line.startswith("retry: "):
            self.retry = int(line.removeprefix("retry: ")) / 1000
            return None
        if line:
            key, _, value = line.partition(": ")
            self._event[key] = value
            return None
        event, self._event = self._event, {}
        kind = event.get("event")
        if kind == "expired":  # the changes after our epoch are no longer kept
            document = json.loads(event.get("data", "{}"))
            raise ReasonerError(
                int(document.get("status", 410)),
                str(document.get("code", "changes_expired")),
                str(document.get("detail", "")),
                document,
            )
        if kind not in ("part", "epoch") or "data" not in event:
            return None  # `shutdown`: the stream ends, and is opened again
        self._pending.append(json.loads(event["data"]))
        if kind != "epoch":
            return None
        parts, self._pending = self._pending, []
        self.last = int(event["id"])
        changes = [change for part in parts for change in part["changes"]]
        return {"epoch": self.last, "reset": any(p["reset"] for p in parts), "changes": changes}


class Client:
    """The blocking client: each method one request (or, for pages and the feed, several)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        token: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        store: str | None = None,
    ) -> None:
        self.store = _store_name(store)
        """The data store this client reads and writes (None: the default store)."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, request: _Request) -> httpx.Response:
        url = request.url(self.store)
        return _checked(self.http.request(request.method, url, **request.options))

    def stores(self) -> list[dict[str, Any]]:
        """The server's data stores, the default one first."""
        return self._send(_Requests.stores()).json()["stores"]

    def create_store(self, name: str, **settings: Any) -> dict[str, Any]:
        """Make the data store `name` with its own `settings` (`epoch_timeout_seconds`...);
        `Client(..., store=name)` then reads and writes it."""
        return self._send(_Requests.create_store(name, settings)).json()

    def drop_store(self, name: str) -> None:
        self._send(_Requests.drop_store(name))

    def ready(self) -> dict[str, Any]:
        return _checked(self.http.get("/ready")).json()

    def add_rules(self, texts: str | Sequence[str]) -> Report:
        return self._send(_Requests.rules(texts)).json()

    def remove_rule(self, rule_id: str) -> Report:
        return self._send(_Request("DELETE", f"/v1/rules/{rule_id}", {})).json()

    def rules(self) -> list[dict[str, str]]:
        return self._send(_Request("GET", "/v1/rules", {})).json()["rules"]

    def program(self) -> str:
        return self._send(_Request("GET", "/v1/program", {})).json()["program"]

    def replace_program(self, text: str) -> Report:
        return self._send(_Request("PUT", "/v1/program", {"json": {"program": text}})).json()

    def insert(self, facts: Rows) -> Report:
        return self._send(_Request("POST", "/v1/facts", {"json": {"facts": _rows(facts)}})).json()

    def retract(self, facts: Rows) -> Report:
        request = _Request("DELETE", "/v1/facts", {"json": {"facts": _rows(facts)}})
        return self._send(request).json()

    def delta(
        self,
        insert: Rows | None = None,
        retract: Rows | None = None,
        add_rules: Sequence[str] = (),
        remove_rules: Sequence[str] = (),
    ) -> Report:
        return self._send(_Requests.delta(insert, retract, add_rules, remove_rules)).json()

    def load(self, relation: str, source: Any) -> Report:
        """Insert a file's or a table's rows (`_body_of`) into `relation` (made if new)."""
        return self._send(_Requests.load(relation, source)).json()

    def unload(self, relation: str, source: Any) -> Report:
        """Retract a file's or a table's rows from `relation`."""
        return self._send(_Requests.load(relation, source, retract=True)).json()

    def clear_facts(self) -> Report:
        return self._send(_Request("DELETE", "/v1/facts/all", {})).json()

    def relations(self) -> list[dict[str, Any]]:
        return self._send(_Request("GET", "/v1/relations", {})).json()["relations"]

    def rows(self, relation: str, **filters: Any) -> list[tuple[Any, ...]]:
        """Every row of `relation` (with `column=value` filters), page after page."""
        return self._pages(lambda cursor: _Requests.rows(relation, filters, cursor))

    def query(self, text: str, *, epoch: int | None = None) -> list[tuple[Any, ...]]:
        """Every answer of a query, page after page (one evaluation: pages are kept)."""
        return self._pages(lambda cursor: _Requests.query(text, epoch, cursor))

    def _pages(self, page: Callable[[str | None], _Request]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        cursor = None
        while True:
            body = self._send(page(cursor)).json()
            rows.extend(map(tuple, body["rows"]))
            cursor = body["next"]
            if cursor is None:
                return rows

    def query_frame(self, text: str, *, epoch: int | None = None) -> pl.DataFrame:
        """A query's answer as a DataFrame, in one streamed request (Arrow)."""
        return _frame(self._send(_Requests.export_query(text, epoch, "arrow")).content)

    def frame(self, relation: str) -> pl.DataFrame:
        """A whole relation as a DataFrame, in one streamed request (Arrow)."""
        return _frame(self.export(relation, "arrow"))

    def export(self, relation: str, fmt: str = "csv") -> bytes:
        """A whole relation as `fmt` (csv, ndjson, arrow, parquet)."""
        params = {"format": fmt}
        path = f"/v1/relations/{relation}/export"
        return self._send(_Request("GET", path, {"params": params})).content

    def explain(self, relation: str, row: Sequence[Any]) -> dict[str, Any]:
        return self._send(_Requests.explain(relation, row)).json()

    def changes(self, since: int = -1, *, reconnect: bool = True) -> Iterator[dict[str, Any]]:
        """The change feed from after epoch `since` (-1: from the start), an epoch at a time
        (`{"epoch", "reset", "changes"}`), for as long as it is iterated; a stream that ends,
        or that a server starting again answers 503, is opened again after the last whole
        epoch (`Last-Event-ID`) unless `reconnect` is False."""
        feed = _Feed()
        while True:
            try:
                with self.http.stream(
                    "GET", _CHANGES.url(self.store), **feed.request(since)
                ) as stream:
                    _checked_stream(stream)
                    for line in stream.iter_lines():
                        epoch = feed.line(line)
                        if epoch is not None:
                            yield epoch
            except httpx.TransportError:
                if not reconnect:
                    raise
            except ReasonerError as refused:
                if not (reconnect and refused.status == 503):  # a server starting or busy
                    raise
            if not reconnect:
                return
            time.sleep(feed.retry)


class AsyncClient:
    """The client for asyncio code: `Client`'s methods, awaited."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        token: str | None = None,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        store: str | None = None,
    ) -> None:
        self.store = _store_name(store)
        """The data store this client reads and writes (None: the default store)."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _send(self, request: _Request) -> httpx.Response:
        url = request.url(self.store)
        return _checked(await self.http.request(request.method, url, **request.options))

    async def stores(self) -> list[dict[str, Any]]:
        return (await self._send(_Requests.stores())).json()["stores"]

    async def create_store(self, name: str, **settings: Any) -> dict[str, Any]:
        return (await self._send(_Requests.create_store(name, settings))).json()

    async def drop_store(self, name: str) -> None:
        await self._send(_Requests.drop_store(name))

    async def ready(self) -> dict[str, Any]:
        return _checked(await self.http.get("/ready")).json()

    async def add_rules(self, texts: str | Sequence[str]) -> Report:
        return (await self._send(_Requests.rules(texts))).json()

    async def remove_rule(self, rule_id: str) -> Report:
        return (await self._send(_Request("DELETE", f"/v1/rules/{rule_id}", {}))).json()

    async def rules(self) -> list[dict[str, str]]:
        return (await self._send(_Request("GET", "/v1/rules", {}))).json()["rules"]

    async def program(self) -> str:
        return (await self._send(_Request("GET", "/v1/program", {}))).json()["program"]

    async def replace_program(self, text: str) -> Report:
        request = _Request("PUT", "/v1/program", {"json": {"program": text}})
        return (await self._send(request)).json()

    async def insert(self, facts: Rows) -> Report:
        request = _Request("POST", "/v1/facts", {"json": {"facts": _rows(facts)}})
        return (await self._send(request)).json()

    async def retract(self, facts: Rows) -> Report:
        request = _Request("DELETE", "/v1/facts", {"json": {"facts": _rows(facts)}})
        return (await self._send(request)).json()

    async def delta(
        self,
        insert: Rows | None = None,
        retract: Rows | None = None,
        add_rules: Sequence[str] = (),
        remove_rules: Sequence[str] = (),
    ) -> Report:
        request = _Requests.delta(insert, retract, add_rules, remove_rules)
        return (await self._send(request)).json()

    async def load(self, relation: str, source: Any) -> Report:
        return (await self._send(_Requests.load(relation, source))).json()

    async def unload(self, relation: str, source: Any) -> Report:
        return (await self._send(_Requests.load(relation, source, retract=True))).json()

    async def clear_facts(self) -> Report:
        return (await self._send(_Request("DELETE", "/v1/facts/all", {}))).json()

    async def relations(self) -> list[dict[str, Any]]:
        return (await self._send(_Request("GET", "/v1/relations", {}))).json()["relations"]

    async def rows(self, relation: str, **filters: Any) -> list[tuple[Any, ...]]:
        return await self._pages(lambda cursor: _Requests.rows(relation, filters, cursor))

    async def query(self, text: str, *, epoch: int | None = None) -> list[tuple[Any, ...]]:
        return await self._pages(lambda cursor: _Requests.query(text, epoch, cursor))

    async def _pages(self, page: Callable[[str | None], _Request]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        cursor = None
        while True:
            body = (await self._send(page(cursor))).json()
            rows.extend(map(tuple, body["rows"]))
            cursor = body["next"]
            if cursor is None:
                return rows

    async def query_frame(self, text: str, *, epoch: int | None = None) -> pl.DataFrame:
        return _frame((await self._send(_Requests.export_query(text, epoch, "arrow"))).content)

    async def frame(self, relation: str) -> pl.DataFrame:
        return _frame(await self.export(relation, "arrow"))

    async def export(self, relation: str, fmt: str = "csv") -> bytes:
        path = f"/v1/relations/{relation}/export"
        return (await self._send(_Request("GET", path, {"params": {"format": fmt}}))).content

    async def explain(self, relation: str, row: Sequence[Any]) -> dict[str, Any]:
        return (await self._send(_Requests.explain(relation, row))).json()

    async def changes(
        self, since: int = -1, *, reconnect: bool = True
    ) -> AsyncIterator[dict[str, Any]]:
        feed = _Feed()
        while True:
            try:
                async with self.http.stream(
                    "GET", _CHANGES.url(self.store), **feed.request(since)
                ) as stream:
                    if stream.status_code >= 400:
                        await stream.aread()
                        _checked(stream)
                    async for line in stream.aiter_lines():
                        epoch = feed.line(line)
                        if epoch is not None:
                            yield epoch
            except httpx.TransportError:
                if not reconnect:
                    raise
            except ReasonerError as refused:
                if not (reconnect and refused.status == 503):  # a server starting or busy
                    raise
            if not reconnect:
                return
            await asyncio.sleep(feed.retry)


def _checked_stream(stream: httpx.Response) -> None:
    if stream.status_code >= 400:
        stream.read()
        _checked(stream)


__all__ = ["AsyncClient", "Client", "ReasonerError"]
