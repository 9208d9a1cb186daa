"""The server's data stores: the default one and the named ones, each a `Runtime`.

A store is everything a server had before there were several: its program, facts, epochs,
change feed, writer thread, read places, write priority, deadline and memory allowance. Stores
share only the process: its interpreter, its heap (their memory allowances are measured from
one `Baseline`) and its HTTP server. A write running in one store therefore never queues
another's writes or makes its reads wait.

Making and dropping stores is serialized (one at a time), and each is durable when it is
answered: a store is listed in the default store's database once its own database is made,
migrated and rebuilt (`service.store.places`), and it is unlisted before its data is removed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any

from service.core.epoch_budget import Baseline
from service.core.other_stores import ReadCount
from service.core.runtime import Runtime
from service.problems import STORE_EXISTS, STORES_UNAVAILABLE, UNKNOWN_STORE, Refusal
from service.settings import Settings, store_settings
from service.store import places
from service.store.places import (
    DEFAULT_STORE,
    PlaceTaken,
    StoreEntry,
    StoreListed,
    StoresUnavailable,
)
from service.store.repository import Store

log = logging.getLogger("service")
DROP_WAIT_SECONDS = 30.0
"""How long dropping a store waits for the requests using it (a page being read, an export)."""


@dataclass(frozen=True, slots=True)
class NamedStore:
    """A named store: its listing and its runtime."""

    entry: StoreEntry
    runtime: Runtime


class Stores:
    """The default store and the named ones (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._baseline = Baseline()
        self._reads = ReadCount()
        """Reads being evaluated in every store, which a write in another lets go first."""
        self._rebuilds = threading.Lock()
        """The stores' rebuilds run one at a time."""
        self.default = Runtime(
            settings,
            baseline=self._baseline,
            reads_everywhere=self._reads,
            rebuilds=self._rebuilds,
        )
        """The store of today's routes (`/v1/...`), in the server's own database."""
        self._named: dict[str, NamedStore] = {}
        self._changing = threading.Lock()
        """Held while a store is made or dropped: one at a time."""
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the event loop: migrate the default store, then start every listed one (each
        rebuilds on its own writer thread)."""
        self._loop = loop
        self.default.feed.attach(loop)
        self.default.start()
        default = self.default.store.engine
        for entry in places.listed(default):
            try:
                runtime = self._runtime(entry.name, entry.settings)
            except Exception:  # settings this version no longer takes: the store waits
                runtime = self._runtime(entry.name, {})
                runtime.failure = "start-up failed: its settings are invalid (see the log)"
                runtime.log.exception("the store's settings are invalid: not started")
                self._named[entry.name] = NamedStore(entry, runtime)
                continue
            runtime.feed.attach(loop)
            try:
                if not places.place_of(self.settings.sqlalchemy_url, entry.name).exists(default):
                    raise FileNotFoundError(f"the database of the store {entry.name} is missing")
                runtime.start()
            except Exception as exc:  # the store is listed, not ready; the others serve
                runtime.failure = f"start-up failed: {type(exc).__name__} (see the service log)"
                runtime.log.exception("starting the store failed")
            self._named[entry.name] = NamedStore(entry, runtime)

    def close(self) -> None:
        """Finish every store's queued jobs and release the databases."""
        for named in list(self._named.values()):
            named.runtime.close()
        self.default.close()

    def close_feeds(self) -> None:
        """The server is stopping: every store's live feed ends its streams."""
        for runtime in self.runtimes():
            runtime.feed.close()

    def get(self, name: str | None) -> Runtime | None:
        """The runtime of the store `name` (None or `default`: the default store), or None if
        there is no such store."""
        if name is None or name == DEFAULT_STORE:
            return self.default
        named = self.find(name)
        return None if named is None else named.runtime

    def find(self, name: str) -> NamedStore | None:
        """The named store `name`, or None."""
        return self._named.get(name)

    def runtimes(self) -> list[Runtime]:
        """Every store's runtime, the default one first."""
        return [self.default, *(named.runtime for named in list(self._named.values()))]

    def named(self) -> list[NamedStore]:
        """The named stores, oldest first."""
        return list(self._named.values())

    def _runtime(self, name: str, overrides: dict[str, Any]) -> Runtime:
        place = places.place_of(self.settings.sqlalchemy_url, name)
        settings = store_settings(self.settings, overrides)
        store = Store(place.url, place.schema)
        return Runtime(
            settings,
            store,
            baseline=self._baseline,
            reads_everywhere=self._reads,
            rebuilds=self._rebuilds,
            name=name,
        )

    # -- making and dropping (on a worker thread, never the event loop) -------------------------

    def create(self, name: str, overrides: dict[str, Any]) -> NamedStore:
        """Make the store `name`, empty, with the settings `overrides` (validated by the
        caller); it is listed, and so kept across restarts, once it is ready. Until it is
        listed, a failure removes what was made; after, nothing is removed."""
        with self._changing:
            if name == DEFAULT_STORE or name in self._named:
                raise Refusal(STORE_EXISTS, f"the store {name!r} exists")
            try:
                place = places.place_of(self.settings.sqlalchemy_url, name)
                place.make(self.default.store.engine)
            except StoresUnavailable as exc:
                raise Refusal(STORES_UNAVAILABLE, str(exc)) from None
            except PlaceTaken as exc:
                raise Refusal(STORE_EXISTS, str(exc)) from None
            runtime = self._runtime(name, overrides)
            listing = False
            try:
                self._attach(runtime)
                runtime.start().result()
                listing = True
                entry = places.add(self.default.store.engine, name, overrides)
            except BaseException as exc:
                runtime.feed.close()
                runtime.close()
                if not listing:
                    place.remove(self.default.store.engine)
                if isinstance(exc, StoreListed):  # another server on this database made it
                    raise Refusal(STORE_EXISTS, f"the store {name!r} exists") from None
                raise
            named = self._named[name] = NamedStore(entry, runtime)
            log.info("made the store %s", name)
            return named

    def drop(self, name: str) -> None:
        """Drop the store `name`: it is unlisted and its requests are refused as those of a
        store that is not (404 `unknown_store`, the writes queued in it included); the write
        being evaluated finishes, its feed's streams end, the requests using it end (for at
        most `DROP_WAIT_SECONDS`), and its data is deleted."""
        with self._changing:
            named = self._named.get(name)
            if named is None:
                raise Refusal(UNKNOWN_STORE, f"there is no store {name!r}")
            default = self.default.store.engine
            places.unlist(default, name)
            del self._named[name]
            runtime = named.runtime
            runtime.dropped = True
            runtime.feed.close()
            runtime.writer.shutdown()
            if not runtime.wait_unused(DROP_WAIT_SECONDS):
                runtime.log.warning("requests still use the dropped store: deleting its data")
            runtime.close()
            places.place_of(self.settings.sqlalchemy_url, name).remove(default)
            log.info("dropped the store %s", name)

    def _attach(self, runtime: Runtime) -> None:
        """Attach the runtime's feed to the event loop, from a worker thread."""
        loop = self._loop
        assert loop is not None, "the stores are started before any is made"

        async def attach() -> None:
            runtime.feed.attach(loop)

        asyncio.run_coroutine_threadsafe(attach(), loop).result()
