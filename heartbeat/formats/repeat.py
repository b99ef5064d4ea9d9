"""The Repeat grammar of TODO.RECUR.md, plus hb's cron extension.

mistermorph understands, case-insensitively with white space collapsed (Go's
``strings.Fields``): ``daily``, ``weekly``, ``every N day(s)``, ``every N
hour(s)``, N written ``[1-9][0-9]*`` and at most 2**63 - 1. hb also accepts
``cron <five fields>`` (croniter syntax) for rules added with ``hb recur add``;
those are written to TODO.RECUR.md only in the extended dialect, where commas
inside the expression are written as ``;`` because a metadata value cannot
hold a comma.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from heartbeat.formats import go_text
from heartbeat.formats.timestamps import MAX_DURATION


class RepeatKind(StrEnum):
    DAILY = "daily"  # every calendar day, same wall-clock time
    WEEKLY = "weekly"  # every 7 calendar days, same wall-clock time
    DAYS = "days"  # every N calendar days, same wall-clock time
    HOURS = "hours"  # every N elapsed hours
    CRON = "cron"  # a cron expression in the rule's zone (extended dialect)


# recurring.go's patterns, on the normalised text (single spaces): no leading zero in N
_RUNTIME = re.compile(r"(?:(daily)|(weekly)|every ([1-9][0-9]*) (days?|hours?))")
_MAX_COUNT = 2**63 - 1  # strconv.Atoi on a 64-bit machine: a longer N is no rule at all
_CRON = re.compile(r"^cron (.+)$")


@dataclass(frozen=True)
class Repeat:
    kind: RepeatKind
    n: int = 1
    cron: str | None = None  # the expression with real commas

    @property
    def is_calendar(self) -> bool:
        """Calendar rules keep wall-clock time across daylight-saving changes."""
        return self.kind is not RepeatKind.HOURS

    @property
    def runtime_readable(self) -> bool:
        """Whether the runtime's strict reader understands this rule."""
        return self.kind is not RepeatKind.CRON

    def render(self) -> str:
        """Canonical text for a TODO.RECUR.md ``Repeat`` value."""
        if self.kind is RepeatKind.DAILY:
            return "daily"
        if self.kind is RepeatKind.WEEKLY:
            return "weekly"
        if self.kind is RepeatKind.DAYS:
            return f"every {self.n} days"
        if self.kind is RepeatKind.HOURS:
            return f"every {self.n} hours"
        assert self.cron is not None
        return "cron " + self.cron.replace(",", ";")


_MAX_DAYS = MAX_DURATION.days  # the longest duration hb reads anywhere


def parse_repeat(text: str, *, allow_cron: bool = True, any_step: bool = False) -> Repeat:
    """Read a Repeat value; raise ValueError with the reason when it is not one.

    A step over 100 years is refused (hb cannot schedule it) unless ``any_step``:
    mistermorph reads any N up to 2**63 - 1, and so does hb's TODO.RECUR.md reader.
    """
    words = go_text.fields(text)
    m = _RUNTIME.fullmatch(go_text.lower(" ".join(words)))
    if m:
        if m.group(1):
            return Repeat(RepeatKind.DAILY)
        if m.group(2):
            return Repeat(RepeatKind.WEEKLY)
        digits = m.group(3)
        n = int(digits) if len(digits) <= 19 else _MAX_COUNT + 1
        if n > _MAX_COUNT:
            raise ValueError(f"Repeat {text!r}: N is larger than mistermorph reads (2**63 - 1)")
        unit = RepeatKind.DAYS if m.group(4).startswith("day") else RepeatKind.HOURS
        if not any_step and n > (_MAX_DAYS if unit is RepeatKind.DAYS else _MAX_DAYS * 24):
            raise ValueError(f"Repeat {text!r}: a step over 100 years never comes")
        return Repeat(unit, n)
    m = _CRON.match(" ".join(words))  # cron keeps its case (e.g. MON)
    if m and allow_cron and words[0].lower() == "cron":
        expr = m.group(1).replace(";", ",")
        from croniter import croniter  # lazy: only cron rules need it

        if len(expr.split()) != 5 or not croniter.is_valid(expr):
            raise ValueError(f"Repeat {text!r}: not a valid five-field cron expression")
        return Repeat(RepeatKind.CRON, cron=expr)
    count = words[1] if len(words) == 3 and words[0].lower() == "every" else ""
    if count.isascii() and count.isdigit() and count.startswith("0"):
        if not count.strip("0"):
            raise ValueError(f"Repeat {text!r}: N must be at least 1")
        raise ValueError(f"Repeat {text!r}: N has a leading zero, which mistermorph does not read")
    raise ValueError(
        f"Repeat {text!r}: expected daily, weekly, every N days or every N hours"
        + (", or cron <expr>" if allow_cron else "")
    )


def cron_matches_a_date(expr: str) -> bool:
    """Whether a five-field cron expression matches any date (``0 0 30 2 *`` matches none:
    croniter gives up after its search of the years ahead)."""
    from datetime import UTC, datetime

    from croniter import CroniterBadDateError, croniter  # lazy: only cron rules need it

    try:
        croniter(expr, start_time=datetime(2001, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterBadDateError:
        return False
    return True
