"""Time: the injectable clock, the workspace zone, and reading times and durations.

Logic never asks the machine for the time: it takes ``now`` from a
:class:`Clock`, which ``--now`` / ``HB_NOW`` can pin. Stored times are UTC;
naive input times are read in the workspace timezone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import partial
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from heartbeat.errors import InvalidInput, quoted
from heartbeat.formats.timestamps import MAX_DURATION


class Clock:
    """Where ``now`` comes from: a fixed instant, a callable, or the system clock.

    ``now()``: the current instant, aware, in UTC (an attribute set once: for the system clock
    it is datetime.now(UTC) itself, with no call of Python's in between)."""

    now: Callable[[], datetime]

    def __init__(self, now: datetime | Callable[[], datetime] | None = None) -> None:
        if isinstance(now, datetime):
            fixed = to_utc(now)
            self.now = lambda: fixed
        elif now is not None:
            source = now
            self.now = lambda: to_utc(source())
        else:
            self.now = _system_now


# the one place hb reads the machine's clock: datetime.now(UTC) (aware, in UTC already)
_system_now = partial(datetime.now, UTC)


def to_utc(value: datetime) -> datetime:
    """An aware datetime in UTC; a naive one is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def load_zone(name: str) -> ZoneInfo:
    """An IANA zone (``UTC`` in any case); InvalidInput names a bad one."""
    if name.strip().upper() == "UTC":
        return ZoneInfo("UTC")
    try:
        if not name or name.startswith(("/", ".")) or ".." in name or not _real_zone(name):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(f"unknown timezone {name!r} (expected an IANA name like Asia/Tokyo)") from None


# Files in the zone database that are not places: the default rules of POSIX TZ strings, the
# "-00" placeholder zone, a machine's own link, and the leap-second ("right/") variants whose
# clocks count leap seconds and so differ from every other zone's by half a minute.
_NOT_ZONES = frozenset(("posixrules", "factory", "localtime"))


def _real_zone(name: str) -> bool:
    return name.lower() not in _NOT_ZONES and not name.startswith("right/")


# A POSIX TZ of a fixed offset, as glibc and Python's time module read it: a name of three letters
# or more (or one in <...>), then hours west of UTC ("JST-9" is UTC+9), which Etc/GMT-9 names alike
_POSIX_FIXED = re.compile(r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)([+-]?)(\d{1,2})(?::00){0,2}")


def machine_zone_name(environ: Callable[[str], str | None] | None = None, etc: str = "/etc") -> str:
    """The machine's local zone as an IANA name, falling back to UTC.

    In turn: ``TZ`` as an IANA name (``:Asia/Tokyo`` too), or as a POSIX fixed offset
    (``JST-9``: Etc/GMT-9, the same hours west of UTC); the zone /etc/localtime links to; the
    name /etc/timezone holds (Debian's, where /etc/localtime is a copy). A POSIX TZ with
    daylight-saving rules names no IANA zone: set ``hb config set timezone``.
    """
    import os

    tz = ((environ or os.environ.get)("TZ") or "").lstrip(":")
    if tz:
        try:
            return load_zone(tz).key
        except InvalidInput:
            pass
        fixed = _POSIX_FIXED.fullmatch(tz)
        if fixed is not None:
            hours = int(fixed[2])
            name = f"Etc/GMT{'-' if fixed[1] == '-' else '+'}{hours}" if hours else "Etc/UTC"
            try:
                return load_zone(name).key
            except InvalidInput:  # past Etc's -14 to +12
                pass
    try:
        target = os.path.realpath(f"{etc}/localtime")
        marker = "zoneinfo/"
        if marker in target:
            name = target.split(marker, 1)[1]
            load_zone(name)
            return name
    except (OSError, InvalidInput):
        pass
    try:
        with open(f"{etc}/timezone", encoding="utf-8") as named:
            return load_zone(named.read(200).strip()).key
    except (OSError, UnicodeDecodeError, InvalidInput):
        pass
    return "UTC"


def parse_when(text: str, zone: tzinfo, *, what: str = "time") -> datetime:
    """Read an ISO 8601 date or date-time; naive means ``zone``. Returns UTC.

    The grammar is hb's one (:func:`heartbeat.formats.timestamps.read_iso`, also the files'):
    a bare date means its midnight in ``zone``; the malformed ``+00:00Z`` form some tools write
    is accepted.
    """
    from heartbeat.formats.timestamps import read_iso

    try:
        parsed = read_iso(text)
    except ValueError:
        raise InvalidInput(
            f"bad {what} {text!r} (expected ISO 8601, e.g. 2026-05-01T09:00 or 2026-05-01T09:00:00Z)"
        ) from None
    if not YEARS[0] <= parsed.year <= YEARS[1]:
        raise InvalidInput(f"{what} {text!r} is outside the years 1970 to 2200 that hb handles")
    if parsed.tzinfo is None:
        from heartbeat.rules.wallclock import resolve_local

        return resolve_local(parsed, zone)  # type: ignore[arg-type]
    return parsed.astimezone(UTC)


# The years of a time typed on the command line: earlier or later ones are typos (0001, 9999)
# that would sort every report and every queue around them.
YEARS = (1970, 2200)


def within_years(value: datetime, *, what: str = "now") -> datetime:
    """``value`` when its year (as given, in its own offset) is one of :data:`YEARS`, as
    :func:`parse_when` holds a time's text to them; else InvalidInput naming ``what``."""
    if not YEARS[0] <= value.year <= YEARS[1]:
        raise InvalidInput(f"{what} {value.isoformat()!r} is outside the years 1970 to 2200 that hb handles")
    return value


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# ASCII digits only (not Arabic-Indic ones), no blank inside: "30 m" is a typo, not 30 minutes
_SHORT = re.compile(r"^(?:([0-9]+(?:\.[0-9]+)?)([smhdw]))+$", re.IGNORECASE)
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])", re.IGNORECASE)
_ISO = re.compile(
    r"^P(?:(?P<w>[0-9]+)W)?(?:(?P<d>[0-9]+)D)?(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+)S)?)?$",
    re.IGNORECASE,
)


def parse_duration(text: str, *, what: str = "duration") -> timedelta:
    """Read ``30m``, ``6h``, ``2d``, ``1w``, ``1h30m`` or ISO 8601 ``PT6H`` (at most 100 years),
    in whole seconds (``1.5m`` is 90 s; a fraction of a second is rounded off, and a duration
    that leaves none is refused: the ledger keeps seconds, where ``0.5s`` became no interval)."""
    too_long = f"bad {what} {quoted(text)}: longer than 100 years"
    try:
        total = _duration(text.strip())
    except OverflowError:  # more than a timedelta holds
        raise InvalidInput(too_long) from None
    if total is None:
        raise InvalidInput(f"bad {what} {quoted(text)} (expected e.g. 30m, 6h, 2d, 1w or PT6H)")
    if total > MAX_DURATION:
        raise InvalidInput(too_long)
    whole = timedelta(seconds=round(total.total_seconds()))
    if not whole:
        raise InvalidInput(f"bad {what} {text!r}: shorter than a second")
    return whole


def _duration(raw: str) -> timedelta | None:
    if raw and _SHORT.match(raw):
        seconds = sum(float(n) * _UNITS[u.lower()] for n, u in _PART.findall(raw))
        if seconds > 0:
            return timedelta(seconds=seconds)
    m = _ISO.match(raw)
    if m and raw.upper() not in ("P", "PT") and not raw.upper().endswith("T"):
        parts = {k: _count(v) for k, v in m.groupdict().items() if v}
        total = timedelta(
            weeks=parts.get("w", 0),
            days=parts.get("d", 0),
            hours=parts.get("h", 0),
            minutes=parts.get("m", 0),
            seconds=parts.get("s", 0),
        )
        if total > timedelta(0):
            return total
    return None


def _count(digits: str) -> int:
    """An ISO 8601 duration's number; OverflowError past what any duration could hold (int()
    refuses a string of more than 4,300 digits with a ValueError of its own)."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > 18:
        raise OverflowError(digits)
    return int(digits)


def format_duration(value: timedelta) -> str:
    """The short form hb prints: the largest exact unit (``90m``, ``6h``, ``2d``)."""
    seconds = int(value.total_seconds())
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def isoformat(value: datetime | None, zone: tzinfo | None = None) -> str | None:
    """ISO 8601 with offset (seconds precision), in ``zone`` or UTC."""
    if value is None:
        return None
    value = to_utc(value)
    if zone is not None:
        value = value.astimezone(zone)
    return value.isoformat(timespec="seconds")
