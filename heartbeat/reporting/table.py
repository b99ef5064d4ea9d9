"""A report's result: named, typed columns and rows; its JSON document and CSV cells.

Column kinds say how a value reads: ``text``, ``key`` (a grouping value; NULL
reads "(none)"), ``scope`` (a queue; '' reads "(legacy)"), ``int``,
``float``, ``bool``, ``rate`` (0..1), ``duration`` (seconds), ``time`` (an
aware datetime, shown in the workspace zone) and ``value`` (anything a query
returned).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, tzinfo
from decimal import Decimal
from typing import Any
from uuid import UUID

from heartbeat.formats.strict_json import finite

KINDS = ("text", "key", "scope", "int", "float", "bool", "rate", "duration", "time", "value")


@dataclass(frozen=True)
class Column:
    name: str
    kind: str = "value"


@dataclass
class Table:
    """Rows of one report or query; ``meta`` describes it (kind, grouping, window, zone)."""

    columns: list[Column]
    rows: list[tuple[Any, ...]]
    zone: tzinfo
    meta: dict[str, Any] = field(default_factory=dict)
    sparse: frozenset[str] = frozenset()  # columns a text table leaves out when they are all zero

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def records(self) -> list[dict[str, Any]]:
        """Each row as a JSON-ready object (duplicate column names get ``_2``, ``_3``, ...)."""
        keys = unique_names(self.names)
        return [
            {key: json_value(value, self.zone) for key, value in zip(keys, row, strict=True)}
            for row in self.rows
        ]

    def as_dict(self) -> dict[str, Any]:
        """The report document ``--format json`` prints."""
        return {**self.meta, "columns": self.names, "rows": self.records()}


@dataclass
class Stream:
    """A :class:`Table` whose rows come as they are read (``hb sql``, the larger reports):
    read once, by iterating ``rows``, while the query that yields them is open."""

    columns: list[Column]
    rows: Iterator[tuple[Any, ...]]
    zone: tzinfo
    meta: dict[str, Any] = field(default_factory=dict)
    sparse: frozenset[str] = frozenset()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def table(self) -> Table:
        """The whole answer, held."""
        return Table(self.columns, list(self.rows), self.zone, self.meta, self.sparse)

    @classmethod
    def of(cls, table: Table) -> Stream:
        """A held table's rows as a stream."""
        return cls(table.columns, iter(table.rows), table.zone, table.meta, table.sparse)


def unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        n = seen.get(name, 0) + 1
        seen[name] = n
        out.append(name if n == 1 else f"{name}_{n}")
    return out


def json_value(value: Any, zone: tzinfo) -> Any:
    """A value JSON (and CSV) can carry: times as ISO 8601 in ``zone``, numbers as numbers,
    the items of an array or object (PostgreSQL's arrays and json values) likewise.

    JSON has no infinity or NaN: those are the strings ``"Infinity"``, ``"-Infinity"`` and
    ``"NaN"`` (:mod:`heartbeat.formats.strict_json`).
    """
    if isinstance(value, float):
        return finite(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.isoformat()
        return value.astimezone(zone).isoformat(timespec="seconds")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        if not value.is_finite():
            return finite(float(value))
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, list):
        return [json_value(item, zone) for item in value]
    if isinstance(value, dict):
        return {key: json_value(item, zone) for key, item in value.items()}
    return str(value)
