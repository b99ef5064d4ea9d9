"""Plain SQL on the driver connection, for the hot paths that skip SQLAlchemy.

The queue and the reports write their SQL once with ``:name`` parameters and
bind times exactly as :class:`heartbeat.db.types.UTCDateTime` stores them, so
their comparisons agree with rows SQLAlchemy wrote. Free of SQLAlchemy.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def pyformat(sql: str) -> str:
    """``:name`` parameters as psycopg's ``%(name)s`` (literal ``%`` doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def stamp(value: datetime) -> str:
    """The text UTCDateTime stores on SQLite: naive UTC, microseconds, sorts as time."""
    u = value.astimezone(UTC)
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d} "
        f"{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}"
    )


def bind_time(value: datetime | None, *, sqlite: bool) -> Any:
    """A time parameter: SQLite's stored text, or an aware datetime for PostgreSQL."""
    if value is None:
        return None
    return stamp(value) if sqlite else value.astimezone(UTC)


def read_time(value: Any) -> datetime | None:
    """A stored time back as an aware UTC datetime (SQLite text or a driver datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
    return value.astimezone(UTC)  # type: ignore[no-any-return]
