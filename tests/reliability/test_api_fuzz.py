"""API fuzzing: schemathesis against the OpenAPI document the server serves.

Every operation of `/openapi.json` gets generated requests, data that fits the schema
(positive) and data that does not (negative), sent over HTTP to a real server (uvicorn
subprocess, SQLite and PostgreSQL) holding a program and facts, with the write token so that
writes really apply. Every answer must be below 500, and every error (4xx) must be an
`application/problem+json` document with `type`, `title`, `status` (the response's), `detail`
and a stable `code`.

A fixed share of the requests goes out without a token or with a wrong one, so that the
authentication errors are fuzzed too.

Schemathesis draws strings from the schema and almost never hits what broke the service
before (issue 28), so a second harness sends those on purpose: cursors nested thousands deep,
with huge numbers, not JSON or not base64; `@index` filters written with non-ASCII digits; NUL
characters and unpaired surrogates in rule texts and symbols, in every body format.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.reliability.conftest import COUNTS, SEED, record
from tests.reliability.strategies import RUNAWAY_RULES, deep_terms
from tests.service.conftest import WRITE_TOKEN, Server
from tests.service.helpers import PROBLEM_KEYS

PROGRAM = """.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(s, y) :- label(x, s), tc(x, y).
"""


def problems_of(response: Any) -> list[str]:
    """What is wrong with a response (empty: nothing)."""
    status = response.status_code
    if status >= 500:
        return [f"server error {status}: {response.content[:300]!r}"]
    if status < 400:
        return []
    content_type = ";".join(response.headers.get("content-type", []))
    out = []
    if not content_type.startswith("application/problem+json"):
        out.append(f"{status} with content type {content_type!r}")
    try:
        body = json.loads(response.content)
    except ValueError:
        return [*out, f"{status} with a body that is not JSON: {response.content[:200]!r}"]
    if not isinstance(body, dict) or not body.keys() >= PROBLEM_KEYS:
        return [*out, f"{status} without the problem keys: {body!r:.300}"]
    if body["status"] != status:
        out.append(f"{status} with status {body['status']!r} in the body")
    if not isinstance(body["code"], str) or not body["code"]:
        out.append(f"{status} without a code: {body!r:.300}")
    if not isinstance(body["detail"], str):
        out.append(f"{status} with a non-string detail: {body!r:.300}")
    return out


def _seed(server: Server) -> None:
    with server.client() as client:
        client.post(
            "/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"}
        ).raise_for_status()
        edges = [[i, (i * 7) % 50] for i in range(50)]
        labels = [[i, s] for i, s in enumerate(["a", "b", "ä", "", "x y"])]
        client.post(
            "/v1/facts", json={"facts": {"edge": edges, "label": labels}}
        ).raise_for_status()


def test_every_operation_answers_problems_never_5xx(
    make_server: Callable[..., Server], backend: str
) -> None:
    server = make_server(REASONER_QUERY_TIMEOUT_SECONDS="2").start()
    _seed(server)
    schema = schemathesis.openapi.from_url(
        server.base_url + "/openapi.json", headers={"Authorization": f"Bearer {WRITE_TOKEN}"}
    )
    operations = []
    for result in schema.get_all_operations():
        operations.append(result.ok())
    assert len(operations) >= 15, [op.label for op in operations]
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    # Operations without parameters or body (health, ready...) exhaust after a few examples:
    # the others get the share of the target.
    with_inputs = [op for op in operations if op.path_parameters or op.query or op.body]
    target = COUNTS.fuzz_requests
    per_run = math.ceil(1.1 * target / (len(with_inputs) * len(modes)))

    session = requests.Session()
    sent: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    # One request in eight without a token, one in eight with a wrong one.
    auth_variants = (
        *[{"Authorization": f"Bearer {WRITE_TOKEN}"}] * 6,
        {},
        {"Authorization": "Bearer wrong"},
    )
    started = time.monotonic()

    def fuzz(operation: Any, mode: GenerationMode, examples: int) -> None:
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case: Any) -> None:
            headers = dict(auth_variants[sum(sent.values()) % len(auth_variants)])
            response = case.call(session=session, headers=headers, timeout=60)
            sent[operation.label] += 1
            statuses[response.status_code] += 1
            for problem in problems_of(response):
                failures.append(
                    f"{operation.label} [{mode.value}]: {problem}\n    {case.as_curl_command()}"
                )

        try:
            run()
        except Unsatisfiable:
            # No input of this operation can be made invalid (no parameters, no body).
            if mode is GenerationMode.POSITIVE:
                raise
            unsatisfiable.append(operation.label)

    unsatisfiable: list[str] = []
    for operation in operations:
        for mode in modes:
            fuzz(operation, mode, per_run if operation in with_inputs else 5)
            server.assert_alive()

    total = sum(sent.values())
    record(
        f"api-fuzz[{backend}]",
        requests=total,
        operations=len(operations),
        statuses=dict(sorted(statuses.items())),
        failures=len(failures),
        no_negative_data=len(unsatisfiable),
        seconds=round(time.monotonic() - started, 1),
        seed=SEED,
    )
    untested = [op.label for op in operations if not sent[op.label]]
    assert not untested, untested
    assert not failures, "\n".join(failures[:20])
    assert total >= target, (total, target)
    with server.client() as client:
        assert client.get("/ready").status_code == 200


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
# Nesting and digits stay under 5,000 so that a cursor fits in a request line (uvicorn
# refuses longer ones itself, with a plain-text 400).
ODD_CURSORS = st.one_of(
    st.integers(1, 5000).map(lambda n: _b64(b"[" * n)),
    st.integers(1, 2500).map(lambda n: _b64(b"[1," + b"[" * n + b"]" * n + b"]")),
    st.integers(1, 5000).map(lambda n: _b64(b"[" + b"9" * n + b",1]")),
    st.integers().map(lambda v: _b64(json.dumps([v, v]).encode())),
    _JSON_VALUES.map(lambda v: _b64(json.dumps(v).encode())),
    st.binary(max_size=48).map(_b64),
    st.text(max_size=48),
)
FILTER_NAMES = st.one_of(
    st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=5).map(
        lambda digits: "@" + digits
    ),
    st.integers(1, 5000).map(lambda n: "@" + "9" * n),
    st.sampled_from(["x", "y", "@0", "@1"]),
    st.text(min_size=1, max_size=12),
)
FILTER_VALUES = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=5),
    st.integers(1, 5000).map(lambda n: "0" * n + "1"),
    st.integers().map(str),
)
BAD_CHARACTERS = st.sampled_from(["\x00", "\ud800", "\udfff", "\x00\ud800"])
RULES = (
    'p(x) :- label(x, "a b").  // a comment',
    "q(x, y) :- tc(x, y), !edge(y, x).\n/* a block\ncomment */",
    'r(s) :- label(_, s), s != "".',
)
TEXTS_WITH_BAD_CHARACTERS = st.builds(
    lambda text, at, bad: text[:at] + bad + text[at:],
    st.sampled_from(RULES),
    st.integers(0, 60),
    BAD_CHARACTERS,
)
SYMBOLS_WITH_BAD_CHARACTERS = st.builds(
    lambda text, at, bad: text[:at] + bad + text[at:],
    st.text(max_size=10),
    st.integers(0, 10),
    BAD_CHARACTERS,
)


def _json(document: Any) -> dict[str, Any]:
    """A JSON body as bytes: `json.dumps` escapes a lone surrogate (`\\ud800`)."""
    return {
        "content": json.dumps(document).encode(),
        "headers": {"content-type": "application/json"},
    }


def _text(text: str, kind: str) -> dict[str, Any]:
    """A text body in UTF-8, a lone surrogate written as its three bytes all the same: the
    body is then not UTF-8, which the service must refuse (400) like any other such body."""
    return {"content": text.encode("utf-8", "surrogatepass"), "headers": {"content-type": kind}}


def _csv(rows: list[list[Any]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


@st.composite
def odd_requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    """One request (method, path, httpx arguments) carrying an input of issue 28's kinds:
    odd cursors and filters, bad characters, expressions nested to the limit and recursions
    that never end (which must be refused, 422 `epoch_timeout`, not hang the service)."""
    kind = draw(
        st.sampled_from(
            [
                "cursor",
                "query cursor",
                "filter",
                "rules text",
                "rules json",
                "delta",
                "facts",
                "facts body",
                "csv body",
                "deep rule",
                "runaway rule",
                "huge number",
            ]
        )
    )
    if kind == "huge number":  # past Python's 4,300-digit limit for int(str)
        digits = "9" * draw(st.integers(4_000, 6_000))
        where = draw(st.sampled_from(["json", "facts body", "csv body", "rule", "query"]))
        if where == "json":
            body = b'{"facts": {"edge": [[' + digits.encode() + b", 1]]}}"
            return (
                "POST",
                "/v1/facts",
                {"content": body, "headers": {"content-type": "application/json"}},
            )
        if where == "facts body":
            return (
                "POST",
                "/v1/relations/edge/facts",
                _text(f"{digits}\t1\n", "text/tab-separated-values"),
            )
        if where == "csv body":
            return "POST", "/v1/relations/edge/facts", _text(f'"{digits}",1\n', "text/csv")
        if where == "rule":
            return "POST", "/v1/rules", _text(f"big(x) :- edge(x, {digits}).", "text/plain")
        return "POST", "/v1/query", _json({"query": f"edge(x, y), y = {digits}"})
    if kind == "deep rule":
        rule = f"deep(y) :- edge(x, _), y = {draw(deep_terms())}."
        return "POST", "/v1/rules", _text(rule, "text/plain")
    if kind == "runaway rule":
        return "POST", "/v1/rules", _json({"rules": [draw(RUNAWAY_RULES)]})
    if kind == "cursor":
        relation = draw(st.sampled_from(["tc", "label"]))
        return "GET", f"/v1/relations/{relation}", {"params": {"cursor": draw(ODD_CURSORS)}}
    if kind == "query cursor":
        return "POST", "/v1/query", _json({"query": "tc(x, y)", "cursor": draw(ODD_CURSORS)})
    if kind == "filter":
        params = {draw(FILTER_NAMES): draw(FILTER_VALUES)}
        return "GET", f"/v1/relations/{draw(st.sampled_from(['tc', 'edge']))}", {"params": params}
    if kind.startswith("rules") or kind == "delta":
        text = draw(TEXTS_WITH_BAD_CHARACTERS)
        if kind == "rules text":
            return "POST", "/v1/rules", _text(text, "text/plain")
        if kind == "rules json":
            return "POST", "/v1/rules", _json({"rules": [text]})
        return "POST", "/v1/deltas", _json({"rules": {"add": [text]}})
    rows = [[i, draw(SYMBOLS_WITH_BAD_CHARACTERS)] for i in range(draw(st.integers(1, 3)))]
    if kind == "facts":
        return (
            draw(st.sampled_from(["POST", "DELETE"])),
            "/v1/facts",
            _json({"facts": {"label": rows}}),
        )
    if kind == "facts body":
        body = "".join(f"{i}\t{' '.join(symbol.split())}\n" for i, symbol in rows)
        return "POST", "/v1/relations/label/facts", _text(body, "text/tab-separated-values")
    return "POST", "/v1/relations/label/facts", _text(_csv(rows), "text/csv")


def test_hostile_inputs_answer_problems_never_5xx(
    make_server: Callable[..., Server], backend: str
) -> None:
    # A short epoch deadline: each runaway rule costs this long before it is refused.
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="1").start()
    _seed(server)
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    examples = max(200, COUNTS.fuzz_requests // 2)

    with server.client() as client:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(request=odd_requests())
        def run(request: tuple[str, str, dict[str, Any]]) -> None:
            method, path, arguments = request
            where = f"{method} {path} {arguments!r:.300}"
            try:
                response = client.request(method, path, **arguments)
            except httpx.TransportError as exc:
                # Uvicorn drops the connection after an unhandled error's 500.
                failures.append(f"{where}: connection lost ({exc!r})")
                return
            statuses[response.status_code] += 1
            fake = SimpleNamespace(
                status_code=response.status_code,
                headers={"content-type": [response.headers.get("content-type", "")]},
                content=response.content,
            )
            for problem in problems_of(fake):
                failures.append(f"{where}: {problem}")

        run()
        server.assert_alive()
        assert client.get("/ready").status_code == 200
    record(
        f"api-fuzz-hostile[{backend}]",
        requests=sum(statuses.values()),
        statuses=dict(sorted(statuses.items())),
        failures=len(failures),
        seed=SEED,
    )
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize(
    "response_fields, expected",
    [
        ((200, "application/json", b"{}"), []),
        ((500, "application/problem+json", b"{}"), ["server error"]),
        ((404, "application/json", b'{"detail": "x"}'), ["content type", "problem keys"]),
    ],
)
def test_the_envelope_check_itself(response_fields, expected) -> None:
    status, kind, content = response_fields

    fake = SimpleNamespace(status_code=status, headers={"content-type": [kind]}, content=content)
    problems = problems_of(fake)
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem
