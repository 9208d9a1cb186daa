"""Where a named data store keeps its data, and its list (the `stores` table).

A named store is a database of the default store's layout, so that the models, the
migrations and the repository serve every store unchanged and each store is migrated on its
own: on SQLite a file beside the default one (`data/reasoner.db` → `data/reasoner.stores/
<name>.db`), on PostgreSQL a schema `store_<name>` of the same database, which the store's
connections put first on their `search_path`. Dropping a store deletes its file or schema: no
other store's data is touched, and a store made again under the same name starts empty.

The list lives in the default store's database. A store is listed once its database is made
and migrated, and unlisted before its data is removed, so that a crash between the two leaves
an unlisted leftover, never a listed store without data; a leftover is cleared when a store of
its name is made again.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, delete, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from service.store import models

DEFAULT_STORE = "default"
"""The name of the store of today's routes (`/v1/...`), the server's database itself."""
STORE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""A store's name: a lower-case identifier of at most 40 characters, so that it is a file
name and, prefixed, a schema name everywhere without quoting."""
SQLITE_FILES = ("", "-wal", "-shm", "-journal")
"""The suffixes of the files one SQLite database may have."""


class StoresUnavailable(Exception):
    """The default database is in memory: there is nowhere beside it for another store."""


class StoreListed(Exception):
    """A store of that name is already listed."""


class PlaceTaken(Exception):
    """Where a store would keep its data holds something that is not a store's."""


@dataclass(frozen=True, slots=True)
class StorePlace:
    """A named store's database: `url` with `schema` (PostgreSQL) or the file `path` (SQLite)."""

    name: str
    url: str
    schema: str | None = None
    path: Path | None = None

    def make(self, default: Engine) -> None:
        """Make an empty database for the store (unlisted: the caller checked), clearing a
        leftover of an earlier store of its name (made or dropped halfway). A schema that
        is neither empty nor a store's (it has no `alembic_version`) is never touched."""
        if self.schema is not None:
            with default.begin() as connection:
                tables = connection.execute(
                    text(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = :s"
                    ),
                    {"s": self.schema},
                ).scalars()
                found = set(tables)
                if found and "alembic_version" not in found:
                    raise PlaceTaken(f"the schema {self.schema} exists and is not a store's")
                connection.execute(text(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"))
                connection.execute(text(f"CREATE SCHEMA {self.schema}"))
        elif self.path is not None:
            self.remove(default)
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def exists(self, default: Engine) -> bool:
        """Whether the store's database is there (a missing file is never made anew empty)."""
        if self.path is not None:
            return self.path.exists()
        with default.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :name"),
                {"name": self.schema},
            )
            return found.first() is not None

    def remove(self, default: Engine) -> None:
        """Delete the store's data (its engine must be disposed of first)."""
        if self.schema is not None:
            with default.begin() as connection:
                connection.execute(text(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"))
        elif self.path is not None:
            for suffix in SQLITE_FILES:
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").unlink()


def is_store_name(name: str) -> bool:
    """Whether `name` may name a store made at run time (`default` is the server's own)."""
    return STORE_NAME.fullmatch(name) is not None and name != DEFAULT_STORE


def place_of(default_url: str, name: str) -> StorePlace:
    """Where the store `name` of the server whose database is `default_url` keeps its data.
    Raises `StoresUnavailable` for a database in memory."""
    if not is_store_name(name):  # it goes into SQL and paths
        raise ValueError(f"not a store's name: {name!r}")
    parsed = make_url(default_url)
    if parsed.get_backend_name() != "sqlite":
        return StorePlace(name, default_url, schema=f"store_{name}")
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise StoresUnavailable("the default database is in memory: stores need a file")
    main = Path(database).expanduser()
    path = main.with_name(f"{main.stem}.stores") / f"{name}.db"
    url = parsed.set(database=str(path)).render_as_string(hide_password=False)
    return StorePlace(name, url, path=path)


@dataclass(frozen=True, slots=True)
class StoreEntry:
    """A listed store: its name, when it was made, and the settings it overrides."""

    name: str
    created_at: datetime
    settings: dict[str, Any] = field(default_factory=dict)


def listed(default: Engine) -> list[StoreEntry]:
    """The named stores, oldest first."""
    table = models.stores
    query = select(table.c.name, table.c.created_at, table.c.settings).order_by(
        table.c.created_at, table.c.name
    )
    with default.connect() as connection:
        rows = connection.execute(query).all()
    # SQLite gives back the time without its zone, which was UTC.
    return [StoreEntry(name, made.replace(tzinfo=made.tzinfo or UTC), s) for name, made, s in rows]


def add(default: Engine, name: str, settings: dict[str, Any]) -> StoreEntry:
    """List the store `name`. Raises `StoreListed` if it is."""
    entry = StoreEntry(name, datetime.now(UTC), settings)
    try:
        with default.begin() as connection:
            connection.execute(
                insert(models.stores).values(
                    name=name, created_at=entry.created_at, settings=settings
                )
            )
    except IntegrityError:
        raise StoreListed(name) from None
    return entry


def unlist(default: Engine, name: str) -> None:
    """Take the store `name` off the list (its data is removed after)."""
    with default.begin() as connection:
        connection.execute(delete(models.stores).where(models.stores.c.name == name))
