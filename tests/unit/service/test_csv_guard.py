"""The CSV formula guard (`service.api.paging.guarded_row`), for the cells a server test
cannot send through a CSV answer intact (a carriage return)."""

from __future__ import annotations

from service.api.paging import guarded_row


def test_text_cells_a_spreadsheet_would_run_are_prefixed() -> None:
    row = ["=1", "+1", "-a", "@f", "\tx", "\ry", "a=b", "", 5, -5, 1.5]
    assert guarded_row(row) == ["'=1", "'+1", "'-a", "'@f", "'\tx", "'\ry", "a=b", "", 5, -5, 1.5]
