"""The streamed JSON and CSV writers print exactly the text the whole-table renderers print."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from heartbeat.reporting import output
from heartbeat.reporting.table import Column, Stream, Table

ZONE = ZoneInfo("Asia/Shanghai")
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -7,
    10**20,
    1.5,
    1e-7,
    float("inf"),
    float("nan"),
    Decimal("2.50"),
    Decimal("3"),
    "",
    "plain",
    'quotes " and \\ backslash',
    "line\nbreak\ttab\x01",
    "中文 and é",
    datetime(2026, 5, 1, 9, 30, tzinfo=UTC),
    {"nested": [1, {"deep": None}], "empty": {}},
    [],
    b"\x00\xff",
]


def tables() -> list[Table]:
    names = ["a", "b", "a"]  # a repeated name becomes a_2
    rows = [tuple(VALUES[(i + k) % len(VALUES)] for k in range(3)) for i in range(len(VALUES))]
    return [
        Table([Column(n) for n in names], rows, ZONE, {"report": "x", "by": "day", "since": None}),
        Table([Column(n) for n in names], [], ZONE, {"report": "x"}),
        Table([], [(), ()], ZONE),
        Table([Column("only")], [(None,), ("",)], ZONE),
    ]


def written(fn: Any, *args: Any) -> str:
    parts: list[str] = []
    fn(*args, parts.append)
    return "".join(parts)


@pytest.mark.parametrize("table", tables(), ids=["values", "no rows", "no columns", "empty cells"])
def test_streamed_text_is_the_rendered_text(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "CHUNK", 3)  # several chunks
    expected_records = json.dumps(table.records(), ensure_ascii=False, indent=2) + "\n"
    assert written(output.write_records, table.names, iter(table.rows), ZONE) == expected_records
    assert written(output.write_document, Stream.of(table)) == output.render(table, "json") + "\n"
    if table.columns:
        assert (
            written(output.write_csv, table.names, iter(table.rows), ZONE) == output.render_csv(table) + "\n"
        )
