"""The core refuses with codes and no HTTP; the API gives each code its status."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from service import problems
from service.api.problem_responses import REFUSAL_STATUS, refusal_response
from service.problems import Problem, Refusal

CORE = Path(__file__).resolve().parents[3] / "service" / "core"


def _refusal_codes_and_problems() -> tuple[set[str], list[str]]:
    """The codes the core's modules refuse with, and every place one names `Problem`."""
    codes: set[str] = set()
    problem_uses: list[str] = []
    for path in sorted(CORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name) and node.id == "Problem":
                problem_uses.append(f"{path.name}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Refusal"
            ):
                first = node.args[0]
                assert isinstance(first, ast.Name), f"{path.name}:{node.lineno}: a code constant"
                codes.add(getattr(problems, first.id))
    return codes, problem_uses


def test_the_core_names_no_status_and_every_code_it_refuses_with_has_one() -> None:
    codes, problem_uses = _refusal_codes_and_problems()
    assert problem_uses == []
    assert codes, "the scan found the core's refusals"
    assert codes <= set(REFUSAL_STATUS)


@pytest.mark.parametrize(("code", "status"), sorted(REFUSAL_STATUS.items()))
def test_a_refusal_answers_with_its_codes_status(code: str, status: int) -> None:
    response = refusal_response(Refusal(code, "no", retry_after=2, limit=3))
    assert response.status_code == status
    assert response.headers["retry-after"] == "2"
    body = json.loads(bytes(response.body))
    assert (body["status"], body["code"], body["detail"], body["limit"]) == (status, code, "no", 3)


def test_a_problem_keeps_the_status_it_names() -> None:
    response = refusal_response(Problem(410, problems.CHANGES_EXPIRED, "gone", epoch=4))
    assert response.status_code == 410
    assert "retry-after" not in response.headers
    assert json.loads(bytes(response.body))["epoch"] == 4
