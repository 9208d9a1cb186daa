"""Security: tokens on every route, constant-time comparison, no secrets in logs, a non-root
container.

Routes are taken from the OpenAPI document the server serves, so a new route is either
classified here (open, read, write) or the test fails; the description itself (the document,
`/docs`, `/redoc`) is a read, as only the probes are open. Every write route is tried without
a token, with a wrong one, with the read token and with the write token, in each token
configuration; an anonymous request is refused before its body is even parsed.
"""

from __future__ import annotations

import ast
import asyncio
import hmac
import inspect
import re
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import yaml
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import SecretStr

from service.api import security
from service.problems import Problem
from service.settings import Settings
from tests.conftest import REPO_ROOT
from tests.reliability.conftest import record
from tests.service.conftest import Server
from tests.service.helpers import assert_problem

PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
"""
EXTRA_RULE = "back(y, x) :- edge(x, y)."
OPEN = {("GET", "/health"), ("GET", "/ready")}
DESCRIPTION = {
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
}
"""Read routes outside the OpenAPI document: the document and its two viewers."""
READS = {
    ("GET", "/metrics"),
    ("GET", "/v1/rules"),
    ("GET", "/v1/relations"),
    ("GET", "/v1/relations/{name}"),
    ("GET", "/v1/relations/{name}/export"),
    ("POST", "/v1/query"),
    ("POST", "/v1/query/export"),
    ("GET", "/v1/program"),
    ("GET", "/v1/explain/{name}"),
    ("GET", "/v1/epochs"),
    ("GET", "/v1/epochs/{number}"),
    ("GET", "/v1/changes"),
    ("GET", "/v1/stores"),
    ("GET", "/v1/stores/{name}"),
}
STORE_READS = {("GET", "/v1/stores/{store}/relations"), ("POST", "/v1/stores/{store}/query")}
"""A named store's routes (outside the OpenAPI document: the default store's, under the
store's prefix)."""
STORE_WRITES = {("POST", "/v1/stores/{store}/facts")}
WRITES = {
    ("POST", "/v1/deltas"),
    ("POST", "/v1/rules"),
    ("DELETE", "/v1/rules/{rule_id}"),
    ("POST", "/v1/facts"),
    ("DELETE", "/v1/facts"),
    ("POST", "/v1/relations/{name}/facts"),
    ("DELETE", "/v1/relations/{name}/facts"),
    ("PUT", "/v1/program"),
    ("DELETE", "/v1/facts/all"),
    ("PUT", "/v1/stores/{name}"),
    ("DELETE", "/v1/stores/{name}"),
}


def _request(method: str, path: str, rule_id: str) -> dict[str, Any]:
    """A valid request for a route (writes change nothing much: one fact, one rule)."""
    url = path.format(name="edge", rule_id=rule_id, number=0, store="kept")
    kwargs: dict[str, Any] = {}
    if path in ("/v1/query", "/v1/query/export"):
        kwargs["json"] = {"query": "tc(1, x)"}
    elif path == "/v1/stores/{store}/query":
        kwargs["json"] = {"query": "edge(7, x)"}
    elif path == "/v1/stores/{store}/facts":
        kwargs["json"] = {"facts": {"edge": [[7, 9]]}}
    elif path.startswith("/v1/explain/"):
        kwargs["params"] = {"@0": 1, "@1": 2}
    elif path == "/v1/deltas":
        kwargs["json"] = {"facts": {"insert": {"edge": [[7, 8]]}}}
    elif path == "/v1/rules" and method == "POST":
        kwargs["json"] = {"rules": [EXTRA_RULE]}
    elif path == "/v1/facts":
        kwargs["json"] = {"facts": {"edge": [[7, 9]]}}
    elif path == "/v1/program" and method == "PUT":  # the program it has: no relation goes
        kwargs["json"] = {"program": PROGRAM + EXTRA_RULE}
    elif path.endswith("/facts"):
        kwargs["content"] = "7\t10\n"
        kwargs["headers"] = {"content-type": "text/tab-separated-values"}
    return {"method": method, "url": url, **kwargs}


def _operations(server: Server, headers: dict[str, str]) -> set[tuple[str, str]]:
    response = httpx.get(server.base_url + "/openapi.json", headers=headers)
    schema = response.raise_for_status().json()
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


CONFIGS = {
    "both tokens": {"write": "w-" + uuid.uuid4().hex, "read": "r-" + uuid.uuid4().hex},
    "write token only": {"write": "w-" + uuid.uuid4().hex, "read": None},
    "read token only": {"write": None, "read": "r-" + uuid.uuid4().hex},
    "no tokens": {"write": None, "read": None},
}


def _expected(level: str, config: dict[str, str | None], who: str) -> int | None:
    """401/403 when `who` (anonymous, wrong, read, write) may not do a `level` request under
    `config`; None when it may."""
    write, read = config["write"], config["read"]
    token = {"anonymous": None, "wrong": "wrong-token", "read": read, "write": write}[who]
    if level == "open":
        return None
    if level == "read":
        if read is None or (token is not None and token in (read, write)):
            return None
        return 401
    if write is None:
        return None if read is None or (token is not None and token == read) else 401
    if token is not None and token == write:
        return None
    if token is not None and token == read:
        return 403
    return 401


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
def test_tokens_on_every_route(sqlite_server: Callable[..., Server], config_name: str) -> None:
    config = CONFIGS[config_name]
    settings = {
        "REASONER_WRITE_TOKEN": config["write"] or "",
        "REASONER_READ_TOKEN": config["read"] or "",
    }
    server = sqlite_server(**settings).start()
    admin = config["write"] or config["read"]
    headers = {"Authorization": f"Bearer {admin}"} if admin else {}
    operations = _operations(server, headers)
    assert operations == OPEN | READS | WRITES, (
        "classify the new routes as open, read or write in this test: "
        f"{sorted(operations ^ (OPEN | READS | WRITES))}"
    )
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=60) as client:
        client.post(
            "/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"}
        ).raise_for_status()
        rule_id = client.post("/v1/rules", json={"rules": [EXTRA_RULE]}).json()["ids"][0]
        client.put("/v1/stores/edge").raise_for_status()  # the store `{name}` reads
        client.put("/v1/stores/kept").raise_for_status()  # the store `{store}` routes use
        client.post("/v1/stores/kept/facts", json={"facts": {"edge": [[7, 8]]}}).raise_for_status()
    checked = 0
    for who in ("anonymous", "wrong", "read", "write"):
        token = {"anonymous": None, "wrong": "wrong-token", **config}[who]
        if who in ("read", "write") and token is None:
            continue
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        with httpx.Client(base_url=server.base_url, headers=auth, timeout=60) as client:
            for level, routes in (
                ("open", OPEN),
                ("read", READS | DESCRIPTION | STORE_READS),
                ("write", WRITES | STORE_WRITES),
            ):
                for method, path in sorted(routes):
                    if method == "DELETE" and path in ("/v1/rules/{rule_id}", "/v1/stores/{name}"):
                        # Put the rule or the store back, so that every caller has one to remove.
                        with httpx.Client(
                            base_url=server.base_url, headers=headers, timeout=60
                        ) as admin_client:
                            admin_client.post(
                                "/v1/rules", json={"rules": [EXTRA_RULE]}
                            ).raise_for_status()
                            admin_client.put("/v1/stores/edge").raise_for_status()
                    response = client.request(**_request(method, path, rule_id))
                    expected = _expected(level, config, who)
                    where = f"{config_name}: {who} {method} {path}"
                    if expected is None:
                        assert response.status_code < 400, (where, response.text)
                    else:
                        code = "unauthorized" if expected == 401 else "forbidden"
                        assert_problem(response, expected, code)
                        if expected == 401:
                            assert response.headers.get("www-authenticate") == "Bearer", where
                    checked += 1
            # Refused before the body is parsed: a malformed body still gets 401, not 400.
            for method, path in sorted(WRITES):
                expected = _expected("write", config, who)
                if expected is None:
                    continue
                response = client.request(
                    method,
                    path.format(name="edge", rule_id=rule_id, store="kept"),
                    content=b"{not json",
                    headers={"content-type": "application/json"},
                )
                assert response.status_code == expected, (who, method, path, response.text)
                checked += 1
    record(f"security[{config_name}]", requests_checked=checked)
    server.assert_alive()


def test_token_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every comparison goes through `hmac.compare_digest`, and no `==` touches a token."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    settings = Settings.model_construct(
        read_token=SecretStr("read-x"), write_token=SecretStr("write-x")
    )
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(settings=settings)))

    def credentials(token: str) -> HTTPAuthorizationCredentials:
        return HTTPAuthorizationCredentials(scheme="Bearer", credentials=token)

    asyncio.run(security.require_write(request, credentials("write-x")))  # type: ignore[arg-type]
    asyncio.run(security.require_read(request, credentials("read-x")))  # type: ignore[arg-type]
    for token in ("write-y", "w", "write-x-longer", "ä"):
        with pytest.raises(Problem) as refused:
            asyncio.run(security.require_write(request, credentials(token)))  # type: ignore[arg-type]
        assert refused.value.status in (401, 403)
    assert {b for _, b in calls} <= {b"read-x", b"write-x"}
    assert (b"write-x", b"write-x") in calls and ("ä".encode(), b"write-x") in calls

    tree = ast.parse(inspect.getsource(security))
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Eq | ast.NotEq) for op in node.ops
        ):
            text = ast.unparse(node)
            assert not re.search(r"token|secret|credential", text, re.IGNORECASE), text


def test_no_secrets_in_logs(databases: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tokens and the database password never reach the log, at debug level, through good and
    bad requests, a failed start-up included."""
    pytest.importorskip("psycopg")
    from tests.service.conftest import _postgres_available

    if _postgres_available():
        pytest.skip("PostgreSQL is not available")
    password = "pw-" + uuid.uuid4().hex
    url = databases.new("postgresql").replace("postgres@", f"postgres:{password}@", 1)
    assert password in url
    write, read = "w-" + uuid.uuid4().hex, "r-" + uuid.uuid4().hex
    settings = {
        "REASONER_DATABASE_URL": url,
        "REASONER_WRITE_TOKEN": write,
        "REASONER_READ_TOKEN": read,
        "REASONER_LOG_LEVEL": "debug",
        "REASONER_BOOTSTRAP_ENGINE": "local",
    }
    server = Server(tmp_path_factory.mktemp("secrets"), settings).start()
    try:
        with server.client(write) as client:
            client.post(
                "/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"}
            ).raise_for_status()
            client.post("/v1/facts", json={"facts": {"edge": [[1, 2]]}}).raise_for_status()
            client.post("/v1/rules", json={"rules": ["bad(x :- edge(x, _)."]})
            client.post("/v1/facts", json={"facts": {"nope": [[1]]}})
            client.post("/v1/query", json={"query": "tc(1, x"})
        for token in (read, write[:-1], "Bearer", read + write, "x"):
            httpx.post(
                server.base_url + "/v1/facts",
                json={"facts": {}},
                headers={"Authorization": f"Bearer {token}"},
            )
        httpx.get(server.base_url + "/metrics", headers={"Authorization": f"Bearer {read}"})
        # Tokens tried in the query string, where uvicorn's access log writes them.
        for name in ("token", "access_token", "api_key", "X-Auth", "t%6Fken", "password"):
            for path in ("/v1/relations", "/health", "/nope"):
                httpx.get(f"{server.base_url}{path}?limit=1&{name}={write}&{name}={read}")
    finally:
        server.stop()
    # A start-up that fails on the database: the error is logged and shown by /ready.
    broken = {**settings, "REASONER_DATABASE_URL": url.rsplit("/", 1)[0] + "/no_such_database"}
    failed = Server(tmp_path_factory.mktemp("secrets-broken"), broken)
    try:
        failed.start(timeout=60)
    except AssertionError:
        pass  # the process exits: its log is what matters
    finally:
        failed.stop()
    logs = server.log_path.read_text(errors="replace") + failed.log_path.read_text(errors="replace")
    assert "no_such_database" in logs or "does not exist" in logs, logs[-2000:]
    for name, secret in (("write token", write), ("read token", read), ("password", password)):
        assert secret not in logs, f"the {name} appears in the server log"
    assert "/v1/relations?limit=1&access_token=[redacted]&access_token=[redacted]" in logs
    record("security[logs]", log_bytes=len(logs), secrets_found=0)


DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_container_runs_as_a_non_root_user() -> None:
    """The Dockerfile as text; the built image is checked too, by tests/compose (`make
    compose-test` builds it on local base images, since no registry is reachable here)."""
    instructions = _instructions(DOCKERFILE)
    last_from = max(i for i, (k, _) in enumerate(instructions) if k == "FROM")
    final = instructions[last_from:]
    users = [(i, arg) for i, (k, arg) in enumerate(final) if k == "USER"]
    assert users, "the final stage never leaves root"
    last_user_index, user = users[-1]
    name = user.split(":")[0]
    assert name not in {"root", "0"}, user
    # The user exists with a non-zero uid and is not in group root.
    created = [arg for k, arg in final if k == "RUN" and "useradd" in arg]
    assert created, "the user is not created in the image"
    uid = re.search(r"--uid\s+(\d+)", created[-1])
    assert uid and int(uid.group(1)) != 0, created[-1]
    assert re.search(rf"\b{re.escape(name)}\b", created[-1]), (name, created[-1])
    assert not re.search(r"--gid\s+(0|root)\b|-g\s+(0|root)\b", created[-1])
    # Everything after it runs as that user; what the process runs comes after it.
    for keyword in ("CMD", "ENTRYPOINT", "HEALTHCHECK"):
        positions = [i for i, (k, _) in enumerate(final) if k == keyword]
        assert all(i > last_user_index for i in positions), keyword
    assert any(k == "CMD" for k, _ in final)
    for keyword, arg in final:
        assert not re.search(r"\bsudo\b|chmod\s+(-R\s+)?(777|[0-7]?[4-7][0-7]{3})|u\+s", arg), arg
        if keyword == "COPY" and last_user_index < final.index((keyword, arg)):
            assert "--chown" in arg, arg  # files the user owns, not root's
    service = COMPOSE["services"]["reasoner"]
    assert str(service.get("user", name)) not in {"root", "0", "0:0"}
    assert not service.get("privileged", False)
