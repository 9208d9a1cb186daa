"""`serve(host, port)`: the service under uvicorn (what `reasoner serve` runs).

One process, one worker: the materialization lives in memory and has exactly one writer.
"""

from __future__ import annotations

import logging

import uvicorn

from service.app import create_app
from service.settings import Settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    settings = Settings()
    logging.getLogger("service").setLevel(settings.log_level.upper())
    app = create_app(settings)
    uvicorn.run(app, host=host, port=port, workers=1, proxy_headers=True, log_level="info")
