"""Rendering a :class:`Table`: aligned text for people, JSON and CSV for programs."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from typing import Any

from heartbeat.reporting import grid
from heartbeat.reporting.table import Table, json_value

FORMATS = ("table", "json", "csv")
NUMERIC = frozenset({"int", "float", "rate", "duration"})


def render(table: Table, fmt: str, *, document: Any = None, null: str = "-") -> str:
    """``table`` in ``fmt``; ``document`` is what JSON prints (default: the report document)."""
    if fmt == "json":
        return json.dumps(table.as_dict() if document is None else document, ensure_ascii=False, indent=2)
    if fmt == "csv":
        return render_csv(table)
    return render_text(table, null=null)


def render_csv(table: Table) -> str:
    """A header row, then one row per record (RFC 4180 quoting; empty cell = NULL)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.names)
    for row in table.rows:
        writer.writerow([_csv_cell(json_value(v, table.zone)) for v in row])
    return out.getvalue().rstrip("\n")


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


def render_text(table: Table, *, null: str = "-") -> str:
    """An aligned table: numbers right-aligned, durations and rates in human units."""
    keep = [
        i
        for i, c in enumerate(table.columns)
        if c.name not in table.sparse or any(row[i] for row in table.rows)
    ]
    columns = [table.columns[i] for i in keep]
    kinds = [c.kind for c in columns]
    cells = [[_text_cell(row[i], table.columns[i].kind, table, null) for i in keep] for row in table.rows]
    right = [k in NUMERIC for k in kinds]
    return grid.render([c.name for c in columns], cells, right=right, fit=grid.terminal_width())


def _text_cell(value: Any, kind: str, table: Table, null: str) -> str:
    if kind == "scope" and value == "":
        return "(legacy)"
    if value is None:
        return "(none)" if kind in ("key", "scope") else null
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "duration":
        return human_duration(float(value))
    if kind == "float":
        return f"{value:.2f}"
    if kind == "bool" or isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "time" and isinstance(value, datetime):
        return value.astimezone(table.zone).strftime("%Y-%m-%d %H:%M")
    shown = json_value(value, table.zone)
    if isinstance(shown, dict | list):
        return json.dumps(shown, ensure_ascii=False)
    return str(shown)


def human_duration(seconds: float) -> str:
    """12.3s, 4m05s, 2h03m, 3d04h."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"
