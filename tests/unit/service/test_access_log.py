"""The access log's redaction of secrets in query strings (`service.api.access_log`)."""

from __future__ import annotations

import logging

import pytest

from service.api.access_log import RedactSecrets, redacted_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/rules", "/v1/rules"),
        ("/v1/rules?limit=3", "/v1/rules?limit=3"),
        ("/v1/a?token=s&limit=3", "/v1/a?token=[redacted]&limit=3"),
        (
            "/v1/a?ACCESS_TOKEN=s&apiKey=s&sig=s",
            "/v1/a?ACCESS_TOKEN=[redacted]&apiKey=[redacted]&sig=[redacted]",
        ),
        ("/v1/a?t%6Fken=s", "/v1/a?t%6Fken=[redacted]"),
        ("/v1/a?password=&x=1&token", "/v1/a?password=[redacted]&x=1&token"),
    ],
)
def test_secret_named_parameters_are_redacted(path: str, expected: str) -> None:
    assert redacted_path(path) == expected


def test_the_filter_rewrites_uvicorns_access_record() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/v1/rules?token=s3cret", "1.1", 401),
        None,
    )
    assert RedactSecrets().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /v1/rules?token=[redacted] HTTP/1.1" 401'
