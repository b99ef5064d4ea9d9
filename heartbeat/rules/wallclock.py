"""From a local wall-clock time to the instant hb acts at, across daylight-saving changes.

hb's rule: a wall-clock time that does not exist (the spring-forward gap) maps to
the instant the gap ends; one that happens twice (fall-back) maps to the first.
Pure functions of (time, zone); the clock and the recurrence rules use them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from heartbeat.errors import InvalidInput

_SECOND = timedelta(seconds=1)


def require_naive(value: datetime, what: str) -> None:
    if value.tzinfo is not None:
        raise InvalidInput(f"{what} must be a local wall-clock time without a zone, got {value}")


def wall_clock(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive local wall-clock reading of an aware instant in ``zone``."""
    return instant.astimezone(zone).replace(tzinfo=None, fold=0)


def resolve_local(naive: datetime, zone: ZoneInfo) -> datetime:
    """Map a local wall-clock time to the aware UTC instant hb fires at.

    A time that exists once maps to that instant; a time that happens twice
    (fall-back) maps to the FIRST instant; a time that does not exist
    (spring-forward gap) maps to the instant the gap ends. Equivalently: the
    earliest instant whose local wall clock reads ``naive`` or later, so the
    mapping never decreases as ``naive`` increases.
    """
    require_naive(naive, "local time")
    wall = naive.replace(fold=0)
    try:
        first = wall.replace(tzinfo=zone).astimezone(UTC)
        if wall_clock(first, zone) == wall:
            return first
        return gap_end(wall, zone)
    except OverflowError:
        raise InvalidInput(f"local time {naive} is outside the supported calendar") from None


def gap_end(wall: datetime, zone: ZoneInfo) -> datetime:
    """The transition instant that skips over ``wall`` (a time that does not exist)."""
    # For a missing time, fold=0 reads it with the offset before the gap (an instant after
    # the transition) and fold=1 with the offset after it (an instant before the transition).
    a = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    b = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    lo, hi = min(a, b).replace(microsecond=0), max(a, b)
    if hi.microsecond:
        hi = hi.replace(microsecond=0) + _SECOND
    later_offset = hi.astimezone(zone).utcoffset()
    # Zone transitions fall on whole seconds: bisect for the first second in the new offset.
    while hi - lo > _SECOND:
        mid = lo + ((hi - lo) // _SECOND // 2) * _SECOND
        if mid.astimezone(zone).utcoffset() == later_offset:
            hi = mid
        else:
            lo = mid
    return hi
