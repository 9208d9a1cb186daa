"""Serving the console: one page and its assets, shipped inside the package.

Why no server-side rendering: every figure the console shows comes from the public API, which
the page's script calls with the user's token in an `Authorization` header. So the page and
its assets hold no data and are open to anyone (a browser cannot send a bearer token when it
navigates), while every request for data needs the token as any other client's does. Tokens
travel in headers, never cookies, so another site cannot make a browser write on its user's
behalf (no CSRF), and the strict Content-Security-Policy admits only these files: no inline
script, no other origin, no framing.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from service.problems import NOT_FOUND, Problem

ASSETS = Path(__file__).parent / "assets"
MEDIA_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    # An upgraded server serves its own console at once: the browser asks again each time.
    "Cache-Control": "no-cache",
}
PAGE = "/console"
ASSET_PREFIX = "/console/assets/"


def is_console_path(path: str) -> bool:
    """The console's own files, which hold no data and are served without a token."""
    return path == PAGE or path.startswith(ASSET_PREFIX)


def console_router() -> APIRouter:
    """The page and its assets, read once: what the package ships is what is served."""
    page = (ASSETS / "index.html").read_bytes()
    assets = {
        path.name: (path.read_bytes(), MEDIA_TYPES[path.suffix])
        for path in ASSETS.iterdir()
        if path.suffix in MEDIA_TYPES
    }
    router = APIRouter(include_in_schema=False)

    @router.get(PAGE)
    async def console_page() -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=HEADERS)

    @router.get(ASSET_PREFIX + "{name}")
    async def console_asset(name: str) -> Response:
        found = assets.get(name)
        if found is None:
            raise Problem(404, NOT_FOUND, f"the console has no asset {name!r}")
        content, media_type = found
        return Response(content, media_type=media_type, headers=HEADERS)

    return router
