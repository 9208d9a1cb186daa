"""Alembic environment.

Run by the service at start-up (`service.store.migrate.upgrade`, which passes its own
connection in `config.attributes["connection"]`) or by hand with `alembic upgrade head`, which
connects to REASONER_DATABASE_URL (the service's settings decide the default).
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from service.store.models import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    # By hand: log as alembic.ini says and connect the way the service would.
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    from service.settings import Settings
    from service.store.database import create_database_engine

    engine = create_database_engine(Settings().sqlalchemy_url)
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    from service.settings import Settings

    context.configure(
        url=config.get_main_option("sqlalchemy.url") or Settings().sqlalchemy_url,
        target_metadata=metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
