"""The API description admits every fact value the server takes: integers up to 2^64 - 1,
floats, and strings (symbols, records, a float's text)."""

from __future__ import annotations

import jsonschema_rs
import pytest

from service.app import create_app
from service.settings import Settings


def _facts_schema() -> dict:
    document = create_app(Settings(database_url="sqlite://")).openapi()
    body = document["paths"]["/v1/facts"]["post"]["requestBody"]["content"]["application/json"]
    reference = body["schema"]["$ref"].rsplit("/", 1)[-1]
    return document["components"]["schemas"][reference]


@pytest.mark.parametrize(
    "row", [[1, 2**64 - 1], [2.5, -1e308], ["a", "[1, b]"], ["inf", "-nan"], [-(2**63), 0.0]]
)
def test_every_value_the_server_takes_is_valid(row: list) -> None:
    validator = jsonschema_rs.validator_for(_facts_schema())
    assert validator.is_valid({"facts": {"r": [row]}})


def test_what_no_column_takes_is_not() -> None:
    validator = jsonschema_rs.validator_for(_facts_schema())
    assert not validator.is_valid({"facts": {"r": [[None]]}})
    assert not validator.is_valid({"facts": {"r": [[[1]]]}})
