"""The live feed's events as Server-Sent Events bytes: what every path of the feed renders
(the ring of the latest epochs, the catch-up from the store)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from reasoner import floats
from service.store.change_pages import ChangeItem

Follows = frozenset[str] | None
"""The relations a stream follows (None: all of them)."""


class Expired(Exception):
    """A client is behind the change sets the store keeps."""

    def __init__(self, horizon: int) -> None:
        super().__init__(horizon)
        self.horizon = horizon


def followed(items: list[ChangeItem], follows: Follows) -> list[ChangeItem]:
    """The items a stream that follows `follows` sends (a reset's mark goes to every one)."""
    if follows is None:
        return items
    return [item for item in items if item.relation is None or item.relation in follows]


def epoch_data(epoch: int, items: list[ChangeItem]) -> dict[str, Any]:
    return {
        "epoch": epoch,
        "reset": any(item.relation is None for item in items),
        "changes": [g for g in change_groups(items) if not g["reset"]],
    }


def change_groups(items: Iterable[ChangeItem]) -> list[dict[str, Any]]:
    """Items as groups, one per epoch and relation (a reset mark alone), rows as JSON."""
    groups: list[dict[str, Any]] = []
    for item in items:
        if item.relation is None:
            groups.append(
                {
                    "epoch": item.epoch,
                    "relation": None,
                    "reset": True,
                    "retracted": [],
                    "inserted": [],
                }
            )
            continue
        last = groups[-1] if groups else None
        if last is None or (last["epoch"], last["relation"]) != (item.epoch, item.relation):
            last = {
                "epoch": item.epoch,
                "relation": item.relation,
                "reset": False,
                "retracted": [],
                "inserted": [],
            }
            groups.append(last)
        side = last["inserted" if item.present else "retracted"]
        side.extend([floats.json_value(value) for value in row] for row in item.rows)
    return groups


def message(kind: str, data: dict[str, Any], ident: int | None = None) -> bytes:
    head = f"id: {ident}\n" if ident is not None else ""
    text = f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
    return text.encode()
