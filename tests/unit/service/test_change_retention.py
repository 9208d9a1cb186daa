"""The change feed's retention has a default (issue 49): unset, history grew by about 6.5 kB an
epoch for ever. An empty setting still keeps it for ever, when an operator wants that."""

from __future__ import annotations

import pytest

from service.settings import Settings

VARIABLE = "REASONER_CHANGE_RETENTION_EPOCHS"


def test_the_feed_keeps_a_bounded_history_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    assert Settings().change_retention_epochs == 100_000
    # The recent epochs a read can ask for are well inside it.
    assert Settings().epoch_history < 100_000


@pytest.mark.parametrize(("value", "kept"), [("", None), ("64", 64)])
def test_the_retention_can_be_set_or_lifted(
    monkeypatch: pytest.MonkeyPatch, value: str, kept: int | None
) -> None:
    monkeypatch.setenv(VARIABLE, value)
    assert Settings().change_retention_epochs == kept
