"""`reasoner serve`: the service's command on the engine's command line.

The engine finds it by its entry point (group `reasoner.commands`, see pyproject.toml), so
the engine never imports the service, and an install without the service's extras still
lists the command and says what it needs instead of failing on an import.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

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
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    serve.add_argument("--port", type=int, default=8000, help="TCP port")
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        from service.server import serve
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
