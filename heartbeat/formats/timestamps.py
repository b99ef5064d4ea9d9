"""ISO 8601 timestamps as the JSON state files hold them.

Every timestamp hb reads must carry its UTC offset (``Z``, ``+00:00``,
``+05:30``, ``+0530``); it is returned as an aware datetime in UTC. The
claude-skills heartbeat.py script appends ``Z`` to ``isoformat()`` output and so writes the
malformed ``2026-04-25T12:00:00+00:00Z``: hb reads that form (the offset is the
truth, the ``Z`` is noise) and always writes plain ``...Z``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_TIMESTAMP = re.compile(
    r"""
    (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})
    [Tt\ ]
    (?P<time>[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?)
    (?P<zone>[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)
    (?P<stray_z>[Zz])?
    """,
    re.VERBOSE,
)


def parse_timestamp(text: str) -> datetime:
    """Read an ISO 8601 date-time with an offset; return it as an aware UTC datetime.

    Accepts ``Z``/``+00:00``/other offsets, fractional seconds, and the
    malformed ``+HH:MMZ`` form. Raises ValueError with the reason otherwise
    (including for a time without an offset: its zone would be a guess).
    """
    m = _TIMESTAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not an ISO 8601 date-time with a UTC offset")
    zone = m["zone"]
    if m["stray_z"] and zone in ("Z", "z"):
        raise ValueError(f"{text!r} is not an ISO 8601 date-time with a UTC offset")
    offset = "+00:00" if zone in ("Z", "z") else zone
    try:
        parsed = datetime.fromisoformat(f"{m['date']}T{m['time'].replace(',', '.')}{offset}")
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid timestamp: {exc}") from None
    return parsed.astimezone(UTC)


def format_timestamp(dt: datetime) -> str:
    """Write an aware datetime as UTC ``YYYY-MM-DDTHH:MM:SSZ``.

    Microseconds are written (six digits) only when nonzero. A naive datetime
    is a programming error: ValueError.
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"cannot write naive datetime {dt!r}: it has no zone")
    utc = dt.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def is_malformed(text: str) -> bool:
    """Whether ``text`` is heartbeat.py's ``<date-time>+HH:MMZ`` form hb must rewrite."""
    m = _TIMESTAMP.fullmatch(text.strip())
    if not (m and m["stray_z"] and m["zone"] not in ("Z", "z")):
        return False
    try:
        parse_timestamp(text)
    except ValueError:
        return False  # an impossible date is not rewritten: it is kept verbatim
    return True


def timestamp_or_none(value: object) -> datetime | None:
    """A stored JSON value read as an instant; None for null, non-strings and unreadable text."""
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None
