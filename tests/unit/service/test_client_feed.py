"""`reasoner_client`'s reading of the live feed's events, line by line: an epoch's `part`
events and its `epoch` event make one epoch; a `shutdown` ends nothing; an `expired` raises; a
reconnection drops the parts of an epoch it was cut off in."""

from __future__ import annotations

import json

import pytest

from reasoner_client import ReasonerError, _Feed


def _event(kind: str, data: dict, ident: int | None = None) -> list[str]:
    head = [f"id: {ident}"] if ident is not None else []
    return [*head, f"event: {kind}", f"data: {json.dumps(data)}", ""]


def _epochs(feed: _Feed, lines: list[str]) -> list[dict]:
    return [epoch for line in lines if (epoch := feed.line(line)) is not None]


def test_parts_and_their_epoch_make_one_epoch() -> None:
    feed = _Feed()
    feed.request(0)
    lines = ["retry: 2000", ": ping", ""]
    lines += _event("part", {"epoch": 1, "reset": False, "changes": [{"relation": "a"}]})
    lines += _event("epoch", {"epoch": 1, "reset": False, "changes": [{"relation": "b"}]}, 1)
    lines += _event("shutdown", {"epoch": 1})
    epochs = _epochs(feed, lines)
    assert epochs == [
        {"epoch": 1, "reset": False, "changes": [{"relation": "a"}, {"relation": "b"}]}
    ]
    assert feed.retry == 2.0 and feed.last == 1
    assert feed.request(0)["headers"]["last-event-id"] == "1"


def test_a_reconnection_drops_an_epoch_cut_off_midway() -> None:
    feed = _Feed()
    feed.request(0)
    _epochs(feed, _event("part", {"epoch": 1, "reset": False, "changes": [{"relation": "a"}]}))
    feed.request(0)  # cut off: the server sends epoch 1 again, whole
    lines = _event("epoch", {"epoch": 1, "reset": True, "changes": []}, 1)
    assert _epochs(feed, lines) == [{"epoch": 1, "reset": True, "changes": []}]


def test_expired_changes_raise() -> None:
    feed = _Feed()
    feed.request(5)
    problem = {"status": 410, "code": "changes_expired", "detail": "kept from epoch 9"}
    with pytest.raises(ReasonerError) as raised:
        _epochs(feed, _event("expired", problem))
    assert (raised.value.status, raised.value.code) == (410, "changes_expired")
