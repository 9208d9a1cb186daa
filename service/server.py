"""`serve(host, port)`: the service under uvicorn (what `reasoner serve` runs).

One process, one worker: the materialization lives in memory and has exactly one writer.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from service.api import access_log
from service.app import create_app
from service.feed.stream import TRANSPORT
from service.settings import Settings

log = logging.getLogger("service")


def exposure_problem(settings: Settings, host: str) -> str | None:
    """Why serving on `host` with these settings would be unsafe, or None. Writes without a
    token are only for the loopback, unless the operator says so explicitly."""
    if settings.write_token is not None or settings.allow_anonymous_writes:
        return None
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a host name: treat it as reachable from outside
    return (
        f"refusing to serve on {host} without a write token: anyone who reaches the port "
        "could change the data. Set REASONER_WRITE_TOKEN (and REASONER_READ_TOKEN), or "
        "REASONER_ALLOW_ANONYMOUS_WRITES=true to accept that."
    )


def serve(host: str, port: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    _lighter_log_records()
    settings = Settings()
    for name in ("service", "reasoner"):  # the engine's messages too (e.g. Spark's jobs)
        logging.getLogger(name).setLevel(settings.log_level.upper())
    problem = exposure_problem(settings, host)
    if problem is not None:
        log.error(problem)
        raise SystemExit(2)
    if settings.read_token is None and settings.write_token is not None:
        log.warning("no read token: reads are open to anyone who reaches the port")
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        workers=1,
        proxy_headers=True,
        log_level="info",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        http=_protocol_with_transport(),
    )
    access_log.install()  # after `uvicorn.Config`, which configures its loggers
    _Server(config, app).run()


def _lighter_log_records() -> None:
    """Log records without what no format of the service shows: the caller's file and line
    (found by walking the stack), the thread, the process. The access log writes a record a
    request; with them it took 0.14 ms of the event loop's time a one-fact write, without
    them 0.05 ms (`bench/small_writes.py`). The logging HOWTO's "Optimization" section
    documents these switches."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


SWITCH_INTERVAL_SECONDS = 0.001
"""How long a thread that wants the interpreter lock waits before the running one hands it over
(Python's default is 5 ms). A request takes the lock tens of times (the event loop, a read's
worker thread, a write's writer thread), so beside a long evaluation in another data store
each turn cost up to 5 ms: a 3 ms read took 23 ms (median) and 70 ms (99th percentile); with
1 ms, 7-8 ms and 18-21 ms (`bench/store_isolation.py`). A thread running alone never waits."""
GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long a stopping server waits for responses in progress before it cancels them."""


def _protocol_with_transport() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools', else h11's), giving each request its connection's
    transport under the scope's extensions (`service.feed.stream.TRANSPORT`): the live feed writes
    to the socket of a caught-up client itself (`service.feed.sender`)."""
    base: Any = AutoHTTPProtocol

    class WithTransport(base):
        app: ASGIApp

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            app = self.app

            async def with_transport(scope: Scope, receive: Receive, send: Send) -> None:
                scope.setdefault("extensions", {})[TRANSPORT] = transport
                await app(scope, receive, send)

            self.app = with_transport

    return WithTransport


class _Server(uvicorn.Server):
    """uvicorn's server, ending the live feed's streams when it is told to stop: uvicorn
    waits for open connections before it shuts the application down, and a stream never
    ends by itself."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        stores = getattr(self.app.state, "stores", None)
        if stores is not None:
            stores.close_feeds()
        super().handle_exit(sig, frame)
