"""formats.todo.with_entries after a last line without a newline (a fix made for hb sync)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from heartbeat.formats import todo as fmt


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_an_entry_added_after_a_last_line_without_newline(newline: str) -> None:
    text = f"# TODO Work In Progress (WIP){newline}{newline}- [ ] [Created](2026-05-01 13:00) | Buy milk"
    doc = fmt.parse(text, fmt.TodoKind.TODO)
    new = fmt.Entry(kind=fmt.TodoKind.TODO, content="Water", created=datetime(2026, 5, 3, 10, 0, tzinfo=UTC))
    out = fmt.render(fmt.with_entries(doc, [*doc.entries, new], now=datetime(2026, 5, 3, tzinfo=UTC)))
    assert out == f"{text}{newline}- [ ] [Created](2026-05-03 10:00) | Water"
