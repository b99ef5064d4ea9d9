"""Rendering a :class:`Table`: aligned text for people, JSON and CSV for programs.

JSON and CSV are also written as the rows come (:func:`write_csv`, :func:`write_records`,
:func:`write_document`): the same text as :func:`render`, without holding the rows or the text.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable
from datetime import datetime, tzinfo
from typing import Any

from heartbeat.formats import strict_json
from heartbeat.reporting import grid
from heartbeat.reporting.sql import QueryFailed
from heartbeat.reporting.table import Stream, Table, json_value, unique_names

FORMATS = ("table", "json", "csv")
NUMERIC = frozenset({"int", "float", "rate", "duration"})
CHUNK = 1000  # rows written at a time


def nested_too_deep() -> QueryFailed:
    """What ``hb sql`` says of an answer holding a value nested past what Python reads or writes
    (a PostgreSQL json value of hundreds of levels: its driver decodes it, and printing it ran
    out of stack, exit 70, from 500 levels on Python 3.11); what was printed before it stands."""
    return QueryFailed("sql: a value in the answer is nested too deeply for Python to read or print")


def render(table: Table, fmt: str, *, document: Any = None, null: str = "-") -> str:
    """``table`` in ``fmt``; ``document`` is what JSON prints (default: the report document)."""
    if fmt == "json":
        return strict_json.dumps(
            table.as_dict() if document is None else document, ensure_ascii=False, indent=2
        )
    if fmt == "csv":
        return render_csv(table)
    return render_text(table, null=null)


def render_csv(table: Table) -> str:
    """A header row, then one row per record (RFC 4180 quoting; empty cell = NULL)."""
    out = io.StringIO()
    writer = _CsvWriter(out)
    writer.writerow(table.names)
    for row in table.rows:
        writer.writerow([_csv_cell(json_value(v, table.zone)) for v in row])
    return out.getvalue().rstrip("\n")


def write_csv(
    names: list[str], rows: Iterable[tuple[Any, ...]], zone: tzinfo, write: Callable[[str], Any]
) -> None:
    """:func:`render_csv`'s text and its final newline, written ``CHUNK`` rows at a time."""
    out = io.StringIO()
    writer = _CsvWriter(out)
    writer.writerow(names)
    for n, row in enumerate(rows, 1):
        writer.writerow([_csv_cell(json_value(v, zone)) for v in row])
        if n % CHUNK == 0:
            write(out.getvalue())
            out.seek(0)
            out.truncate()
    write(out.getvalue())


def write_records(
    names: list[str], rows: Iterable[tuple[Any, ...]], zone: tzinfo, write: Callable[[str], Any]
) -> None:
    """The rows as a JSON array of objects (the text ``json.dumps(records, indent=2)`` gives)
    and a final newline, written ``CHUNK`` rows at a time."""
    write(_json_array(names, rows, zone, write, level=0) + "\n")


def write_document(table: Table | Stream, write: Callable[[str], Any]) -> None:
    """The report document ``--format json`` prints (``render(table, "json")``) and a final
    newline, the rows written ``CHUNK`` at a time."""
    head = strict_json.dumps({**table.meta, "columns": table.names}, ensure_ascii=False, indent=2)
    write(head.removesuffix("\n}") + ',\n  "rows": ')
    write(_json_array(table.names, table.rows, table.zone, write, level=1) + "\n}\n")


def _json_array(
    names: list[str],
    rows: Iterable[tuple[Any, ...]],
    zone: tzinfo,
    write: Callable[[str], Any],
    *,
    level: int,
) -> str:
    """Write a JSON array of records nested ``level`` deep; returns its last part, unwritten."""
    pad = "  " * (level + 1)
    # each record as json.dumps(record, indent=2) nests it, the keys encoded once
    heads = [f"\n{pad}  {_STRING(key)}: " for key in unique_names(names)]
    close = f"\n{pad}}}" if heads else "}"
    parts: list[str] = []
    count = 0
    for count, row in enumerate(rows, 1):
        cells = [head + _json(json_value(value, zone), pad) for head, value in zip(heads, row, strict=True)]
        parts.append(("[\n" if count == 1 else ",\n") + pad + "{" + ",".join(cells) + close)
        if count % CHUNK == 0:
            write(strict_json.safe("".join(parts)))
            parts.clear()
    if not count:
        return "[]"
    return strict_json.safe("".join(parts)) + "\n" + "  " * level + "]"


_STRING = json.encoder.encode_basestring  # a JSON string, as json.dumps(..., ensure_ascii=False)


def _json(value: Any, pad: str) -> str:
    """A record's value as ``json.dumps(record, ensure_ascii=False, indent=2)`` writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return strict_json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  " + pad)


class _CsvWriter:
    """``csv.writer`` rows ending in ``\n``, where a field holding a carriage return is quoted
    too: the csv module quotes only its line terminator's characters, and a reader (Python's
    csv among them) takes a bare CR for the end of a row."""

    def __init__(self, out: io.StringIO) -> None:
        self.out = out
        self.plain = csv.writer(out, lineterminator="\n")
        self.row = io.StringIO()
        self.crlf = csv.writer(self.row, lineterminator="\r\n")  # quotes CR and LF alike

    def writerow(self, cells: list[Any]) -> None:
        if any(type(cell) is str and "\r" in cell for cell in cells):
            self.row.seek(0)
            self.row.truncate()
            self.crlf.writerow(cells)
            self.out.write(self.row.getvalue()[:-2] + "\n")
        else:
            self.plain.writerow(cells)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return strict_json.dumps(value, ensure_ascii=False)
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
