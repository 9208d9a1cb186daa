"""API fuzzing: schemathesis against the OpenAPI document the server serves.

Every operation of `/openapi.json` gets generated requests, data that fits the schema
(positive) and data that does not (negative), sent over HTTP to a real server (uvicorn
subprocess, SQLite and PostgreSQL) holding a program and facts, with the write token so that
writes really apply. Every answer must be below 500, and every error (4xx) must be an
`application/problem+json` document with `type`, `title`, `status` (the response's), `detail`
and a stable `code`.

A fixed share of the requests goes out without a token or with a wrong one, so that the
authentication errors are fuzzed too.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.reliability.conftest import COUNTS, SEED, record
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
    schema = schemathesis.openapi.from_url(server.base_url + "/openapi.json")
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
