"""The console's page and assets over HTTP (a real server): served without a token but
holding no data, under a strict Content-Security-Policy, and off when the setting says so.
What the pages show, in a real browser: `test_console_browser.py`."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest

from service.console.routes import ASSETS, CONTENT_SECURITY_POLICY
from tests.service.conftest import Server

ONE_BACKEND = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
"""The console touches no database of its own: one backend is enough."""


@ONE_BACKEND
def test_the_console_is_served_without_a_token_under_a_strict_policy(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with httpx.Client(base_url=server.base_url, timeout=30) as anonymous:
        page = anonymous.get("/console")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src 'self'" in CONTENT_SECURITY_POLICY
        assert "unsafe" not in CONTENT_SECURITY_POLICY
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["x-frame-options"] == "DENY"
        for name, media_type in [
            ("console.js", "text/javascript; charset=utf-8"),
            ("console.css", "text/css; charset=utf-8"),
            ("icon.svg", "image/svg+xml"),
        ]:
            asset = anonymous.get(f"/console/assets/{name}")
            assert asset.status_code == 200, name
            assert asset.headers["content-type"] == media_type
            assert asset.content == (ASSETS / name).read_bytes()
        missing = anonymous.get("/console/assets/..%2Fsettings.py")
        assert missing.status_code == 404
        assert missing.json()["code"] == "not_found"
        # The data stays behind the token.
        assert anonymous.get("/v1/relations").status_code == 401


@ONE_BACKEND
def test_the_console_can_be_turned_off(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_CONSOLE="false").start()
    with server.client() as client:
        assert client.get("/console").status_code == 404
        assert client.get("/console/assets/console.js").status_code == 404
        assert client.get("/v1/relations").status_code == 200


def test_the_page_has_no_inline_script_or_style_and_the_script_never_parses_html() -> None:
    """What the policy enforces in a browser, checked in the source too: a console that
    needed an inline script would break under its own policy; a script that never hands a
    string to the HTML parser cannot run a user's symbol."""
    page = (ASSETS / "index.html").read_text()
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts and all('src="/console/assets/' in tag for tag in scripts)
    assert re.search(r"<script\b[^>]*>\s*[^<\s]", page) is None
    assert re.search(r"\son[a-z]+=|\sstyle=|<style", page) is None
    script = (ASSETS / "console.js").read_text()
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
    ):
        assert sink not in script, sink
