"""ISO 8601 timestamps as the JSON state files hold them.

Every timestamp hb reads must carry its UTC offset (``Z``, ``+00:00``,
``+05:30``, ``+0530``); it is returned as an aware datetime in UTC. The
claude-skills heartbeat.py script appends ``Z`` to ``isoformat()`` output and so writes the
malformed ``2026-04-25T12:00:00+00:00Z``: hb reads that form (the offset is the
truth, the ``Z`` is noise) and always writes plain ``...Z``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# The instants hb reads from a file as timestamps: from 0002-01-01T00:00Z up to, not including,
# 9999-01-01T00:00Z. Python's datetime holds years 1 to 9999 only, and hb converts every time it
# reads between zones (an offset moves a time by at most a day) and does day, week and month
# arithmetic around it (a due day, the next run, the day before): a year of room at each end
# leaves space for all of that. A time outside (a date near year 1 or 9999) is no timestamp to
# hb: each file's reader treats it as it treats unreadable text, and the file keeps it as
# written. A naive time (a wall clock in some zone) is held to the same bounds, read as UTC.
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)  # the first instant past the range
OUT_OF_RANGE = "is outside the dates hb reads (0002-01-01 to 9998-12-31 UTC)"  # follows the value
_BEYOND = "is outside the dates Python holds (years 1 to 9999 UTC)"
# The longest duration hb reads anywhere (an option, a setting, a TODO.RECUR.md step): a time
# this far after any date hb handles is still a date.
MAX_DURATION = timedelta(days=36_525)


class OutOfRangeError(ValueError):
    """A date-time :func:`read_timestamp` refuses: outside :data:`EARLIEST` .. :data:`LATEST`
    (from :func:`parse_timestamp`: past what datetime holds at all)."""


def in_range(moment: datetime) -> bool:
    """Whether ``moment`` lies within :data:`EARLIEST` .. :data:`LATEST` (a naive time read as
    UTC). The comparison makes no datetime, so it never overflows."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        moment = moment.replace(tzinfo=UTC)
    return EARLIEST <= moment < LATEST


# hb's one ISO 8601 grammar, for files and the command line alike: a date, optionally a time
# (``T``, ``t`` or a space between; minutes, seconds and a fraction optional), optionally an
# offset (``Z``, ``+HH``, ``+HH:MM``, ``+HHMM``), and the stray ``Z`` heartbeat.py appends after
# an offset. ASCII digits only. The file reader adds its gate on top: a time and an offset.
_ISO = re.compile(
    r"""
    (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})
    (?:
        [Tt\ ]
        (?P<time>[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?)
        (?P<zone>[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?
        (?P<stray_z>[Zz])?
    )?
    """,
    re.VERBOSE,
)


def read_iso(text: str) -> datetime:
    """A date or date-time in hb's grammar (see ``_ISO``): aware when it has an offset, else
    naive (the caller knows its zone); a bare date is its midnight. ValueError otherwise."""
    m = _ISO.fullmatch(text.strip())
    if m is None or (m["stray_z"] and (m["zone"] is None or m["zone"] in ("Z", "z"))):
        raise ValueError(f"{text!r} is not an ISO 8601 date or date-time")
    clock = (m["time"] or "00:00").replace(",", ".")
    zone = m["zone"]
    offset = "" if zone is None else "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(f"{m['date']}T{clock}{offset}")
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid date-time: {exc}") from None


# What hb and most programs write (``2026-04-25T12:00:00Z``, ``...12:00:00.250+02:00``): a part
# of the grammar ``datetime.fromisoformat`` reads to the same instant, without the full match.
_PLAIN = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
)


def parse_timestamp(text: str) -> datetime:
    """Read an ISO 8601 date-time with an offset; return it as an aware UTC datetime.

    hb's grammar (:func:`read_iso`) with the file reader's gate: a time and an offset are
    required (a time without one would be a guess at its zone). Accepts ``Z``/``+00:00``/other
    offsets, fractional seconds, and the malformed ``+HH:MMZ`` form; ValueError otherwise
    (OutOfRangeError for an instant past what datetime holds, ``0001-01-01T00:00+01:00``). Any
    instant Python holds is read: a file's reader wants :func:`read_timestamp`.
    """
    if _PLAIN.fullmatch(text):
        try:
            moment = datetime.fromisoformat(text)  # (Python 3.11 reads the Z; a zero offset is UTC)
            return moment if moment.tzinfo is UTC else moment.astimezone(UTC)
        except ValueError:
            pass  # an impossible date: the full reading says why
        except OverflowError:
            raise OutOfRangeError(f"{text!r} {_BEYOND}") from None
    m = _ISO.fullmatch(text.strip())
    if m is None or m["time"] is None or m["zone"] is None:
        raise ValueError(f"{text!r} is not an ISO 8601 date-time with a UTC offset")
    try:
        parsed = read_iso(text)
    except ValueError as exc:
        if "valid" in str(exc):
            raise ValueError(f"{text!r} is not a valid timestamp: {str(exc).split(': ', 1)[-1]}") from None
        raise ValueError(f"{text!r} is not an ISO 8601 date-time with a UTC offset") from None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise OutOfRangeError(f"{text!r} {_BEYOND}") from None


def read_timestamp(text: str) -> datetime:
    """A file's timestamp: :func:`parse_timestamp` within the dates hb reads (:data:`EARLIEST`
    .. :data:`LATEST`); OutOfRangeError (a ValueError) for a date near year 1 or 9999, which
    would overflow later, converted to another zone or stepped a day on."""
    try:
        moment = parse_timestamp(text)
    except OutOfRangeError:
        moment = None  # past even what datetime holds
    if moment is None or not in_range(moment):
        raise OutOfRangeError(f"{text!r} {OUT_OF_RANGE}")
    return moment


def format_timestamp(dt: datetime) -> str:
    """Write an aware datetime as UTC ``YYYY-MM-DDTHH:MM:SSZ``.

    Microseconds are written (six digits) only when nonzero. A naive datetime
    is a programming error: ValueError.
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"cannot write naive datetime {dt!r}: it has no zone")
    utc = dt if dt.tzinfo is UTC else dt.astimezone(UTC)
    if utc.microsecond:
        return f"{date_time_text(utc, 'T')}.{utc.microsecond:06d}Z"
    return date_time_text(utc, "T") + "Z"


# "00" ... "99": the two-digit fields of a date and time, looked up (datetime.isoformat formats
# each number through C's printf, three times the cost of the whole text put together here)
_TWO = [f"{i:02d}" for i in range(100)]


def date_time_text(value: datetime, sep: str = " ") -> str:
    """``YYYY-MM-DD<sep>HH:MM:SS`` of ``value`` as it stands (no zone read or written): the text
    ``value.isoformat(sep)`` starts with."""
    two = _TWO
    year = value.year
    return (
        f"{year if year > 999 else f'{year:04d}'}-{two[value.month]}-{two[value.day]}{sep}"
        f"{two[value.hour]}:{two[value.minute]}:{two[value.second]}"
    )


def is_malformed(text: str) -> bool:
    """Whether ``text`` is heartbeat.py's ``<date-time>+HH:MMZ`` form hb must rewrite."""
    text = text.strip()
    if text[-1:] not in ("Z", "z") or ("+" not in text and text.count("-") < 3):
        return False  # no offset before a final Z: most values (ids, titles, plain stamps)
    m = _ISO.fullmatch(text)
    if not (m and m["stray_z"] and m["zone"] not in (None, "Z", "z")):
        return False
    try:
        read_timestamp(text)
    except ValueError:
        return False  # an impossible date, or one hb does not read, is not rewritten: kept verbatim
    return True


def timestamp_or_none(value: object) -> datetime | None:
    """A stored JSON value read as an instant (:func:`read_timestamp`); None for null,
    non-strings, unreadable text and a date near year 1 or 9999."""
    if not isinstance(value, str):
        return None
    try:
        return read_timestamp(value)
    except ValueError:
        return None
