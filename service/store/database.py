"""Engines and migrations.

SQLite runs in WAL mode with `synchronous=FULL`: a commit is on disk before the service
acknowledges a delta, and readers of the epochs table never wait for the writer. PostgreSQL is
reached through psycopg 3.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def create_database_engine(url: str, schema: str | None = None) -> Engine:
    """An engine for `url`; on PostgreSQL, one whose connections work in `schema` (their
    `search_path`): a named data store is a schema of the same layout (`service.store.places`),
    so the models and the migrations never name one."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    if schema is not None:  # beside the URL's own options (a statement_timeout, ...)
        given = parsed.query.get("options", ())
        options = " ".join(
            [*([given] if isinstance(given, str) else given), f"-csearch_path={schema}"]
        )
        plain = parsed.difference_update_query(["options"])
        return create_engine(plain, pool_pre_ping=True, connect_args={"options": options})
    return create_engine(url, pool_pre_ping=True)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """`alembic upgrade head` on `engine`, without an ini file or a second connection."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
