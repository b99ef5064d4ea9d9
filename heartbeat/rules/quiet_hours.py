"""Quiet hours (FORMATS.md section 4): a daily window in which only P0 reminders go out.

``HH:MM-HH:MM`` in the workspace timezone; the start is inclusive and the end
exclusive; ``24:00`` is allowed only as an end; an end earlier than the start
wraps past midnight (``23:00-08:00`` is quiet from 23:00 up to 07:59:59); a
start equal to the end is an empty window, never quiet. ``off`` or an empty
value means no quiet hours at all (:meth:`QuietHours.parse` returns None); the
``quiet_hours`` setting itself refuses a blank value and stores ``off``
(``heartbeat.settings``), so an unset shell variable cannot end night silence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time

from heartbeat.errors import InvalidInput

MINUTES_PER_DAY = 24 * 60
_WINDOW = re.compile(r"^([0-9]{1,2}):([0-9]{2})\s*-\s*([0-9]{1,2}):([0-9]{2})$")


@dataclass(frozen=True)
class QuietHours:
    """A quiet window as minutes after local midnight; ``end`` may be 1440 (24:00)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < MINUTES_PER_DAY and 0 <= self.end <= MINUTES_PER_DAY):
            raise InvalidInput(f"quiet hours {self.start}-{self.end}: minutes out of range")

    @classmethod
    def parse(cls, text: str) -> QuietHours | None:
        """Read ``HH:MM-HH:MM``; None for ``off`` or blank; InvalidInput for anything else."""
        norm = text.strip()
        if norm == "" or norm.lower() == "off":
            return None
        m = _WINDOW.match(norm)
        if not m:
            raise InvalidInput(f"quiet hours {text!r}: expected HH:MM-HH:MM (e.g. 23:00-08:00) or off")
        start = _minute_of_day(m.group(1), m.group(2), text, allow_midnight_end=False)
        end = _minute_of_day(m.group(3), m.group(4), text, allow_midnight_end=True)
        return cls(start=start, end=end)

    def render(self) -> str:
        """The canonical ``HH:MM-HH:MM`` text, as :meth:`parse` reads it."""
        return f"{_clock(self.start)}-{_clock(self.end)}"

    @property
    def wraps_midnight(self) -> bool:
        """Whether the window runs past midnight into the next day."""
        return self.end < self.start


def is_quiet(quiet_hours: QuietHours | None, local: time | datetime) -> bool:
    """Whether the wall-clock time ``local`` (workspace timezone) falls in the window.

    A datetime is read by its own wall clock: convert it to the workspace zone
    first. No window (None) is never quiet.
    """
    if quiet_hours is None or quiet_hours.start == quiet_hours.end:
        return False
    clock = local.time() if isinstance(local, datetime) else local
    # Seconds matter: 07:59:30 is still inside 23:00-08:00.
    moment = (clock.hour * 60 + clock.minute) * 60 + clock.second + clock.microsecond / 1_000_000
    start, end = quiet_hours.start * 60, quiet_hours.end * 60
    if quiet_hours.wraps_midnight:
        return moment >= start or moment < end
    return start <= moment < end


def _minute_of_day(hours: str, minutes: str, text: str, *, allow_midnight_end: bool) -> int:
    h, m = int(hours), int(minutes)
    if h == 24 and m == 0:
        if not allow_midnight_end:
            raise InvalidInput(f"quiet hours {text!r}: 24:00 is allowed only as the end")
        return MINUTES_PER_DAY
    if h > 23 or m > 59:
        raise InvalidInput(f"quiet hours {text!r}: {hours}:{minutes} is not a time of day")
    return h * 60 + m


def _clock(minute_of_day: int) -> str:
    return f"{minute_of_day // 60:02d}:{minute_of_day % 60:02d}"
