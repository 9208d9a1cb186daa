"""`reasoner serve`: the service's command on the engine's command line.

The engine finds it by its entry point (group `reasoner.commands`, see pyproject.toml), so
the engine never imports the service, and an install without the service's extras still
lists the command and says what it needs instead of failing on an import.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from types import ModuleType
from typing import Any

from reasoner import collector_paused

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
"""Where `reasoner serve` and `python -m service` listen unless told: the loopback only."""

_EXTRA = frozenset(
    {"fastapi", "uvicorn", "starlette", "pydantic", "pydantic_settings", "sqlalchemy"}
    | {"alembic", "psycopg"}
)
"""Top-level packages of the `[service]` extra: a missing one is a missing extra, any other
missing module a bug to report as such."""


def register(commands: Any) -> None:
    """Add `serve` to the command line's subcommands (`argparse`'s subparsers)."""
    serve = commands.add_parser(
        "serve", help="run the HTTP service (settings from REASONER_* environment variables)"
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port")
    serve.set_defaults(handler=_serve)


def import_server() -> ModuleType:
    """`service.server`, imported with Python's cyclic collector paused.

    The import builds FastAPI's and pydantic's schemas. It allocates enough to trigger
    collection after collection, and it leaves no cycles worth one: those collections were 30 %
    of a server's CPU before it listens (farm-bench, `import service.server`: 0.97 -> 0.68 s).
    What the import keeps lives as long as the process, so the pause's end moves it to the
    oldest generation without traversing it (`reasoner.support.gc_pause`)."""
    with collector_paused():
        return import_module("service.server")


def _serve(args: argparse.Namespace) -> int:
    try:
        serve = import_server().serve
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in _EXTRA:
            raise
        print(
            f"reasoner serve: the service needs its dependencies ({error.name} is not "
            "installed): pip install 'reasoner[service]'",
            file=sys.stderr,
        )
        return 2
    serve(args.host, args.port)
    return 0
