"""When recurring work is due: schedules, daylight saving, PROACTIVE.md periods.

Pure functions of (rule, state, now). Two kinds of rule (SPEC.md section 6):

- calendar rules (``daily``, ``weekly``, ``every N days``, cron) are scheduled
  in local wall-clock time and keep it across daylight-saving changes;
- ``every N hours`` steps in elapsed time from the anchor instant.

hb's daylight-saving rule (:func:`resolve_local`): a wall-clock time that does
not exist fires once, when the gap ends; one that happens twice fires once, the
first time. Never twice, never skipped.

All instants returned are aware UTC datetimes. Local wall-clock times (an
anchor, TODO.RECUR.md ``Next``) are naive datetimes read in a ``ZoneInfo``.
"""

from __future__ import annotations

import calendar
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from zoneinfo import ZoneInfo

from heartbeat.errors import InvalidInput
from heartbeat.formats.repeat import Repeat, RepeatKind
from heartbeat.rules.wallclock import require_naive, resolve_local, wall_clock

__all__ = [
    "CRON_COUNT_LIMIT",
    "ConditionResult",
    "Frequency",
    "Materialized",
    "MissedPolicy",
    "Pending",
    "check_conditions",
    "due_occurrences",
    "due_period",
    "is_due",
    "materialize",
    "next_after",
    "next_due",
    "next_local_after",
    "occurrences",
    "outcome_period",
    "pending_occurrences",
    "period_key",
    "proactive_due",
    "resolve_local",
    "runs_for",
]

_SECOND = timedelta(seconds=1)


# --- validation of datetimes handed in by callers --------------------------------------


def _require_aware(value: datetime, what: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{what} must carry a timezone, got {value}")


# --- daylight saving ---------------------------------------------------------------------


def resolve_next(naive: datetime, zone: ZoneInfo, stored: datetime | None) -> datetime:
    """The instant a rule's ``Next`` stands for, given the instant stored with it.

    A ``Next`` text cannot say which of a repeated local time it means. An
    ``every N hours`` rule that fired at the first 01:30 of a fall-back night
    stores the second 01:30 as its next instant, and its text still reads
    01:30: the stored instant is kept whenever it reads as ``naive`` in
    ``zone``. Any other text (typed by hand, or a rule never resolved) is
    :func:`resolve_local`'s.
    """
    require_naive(naive, "local time")
    if stored is not None:
        _require_aware(stored, "stored instant")
        if wall_clock(stored, zone) == naive.replace(fold=0):
            return stored.astimezone(UTC)
    return resolve_local(naive, zone)


# --- schedules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    local: datetime  # the scheduled wall-clock time (naive; may lie in a gap)
    at: datetime  # the instant it fires (aware UTC)


def _calendar_slots(anchor: datetime, step_days: int, zone: ZoneInfo, after: datetime) -> Iterator[_Slot]:
    # Begin one step early: a slot can fire a few hours off its wall-clock date.
    behind = (wall_clock(after, zone).date() - anchor.date()).days // step_days - 1
    k = max(0, behind)
    while True:
        local = anchor + timedelta(days=k * step_days)  # naive arithmetic keeps the wall clock
        yield _Slot(local, resolve_local(local, zone))
        k += 1


def _hour_slots(first: datetime, hours: int, zone: ZoneInfo, after: datetime) -> Iterator[_Slot]:
    step = timedelta(hours=hours)
    k = max(0, (after - first) // step)
    while True:
        at = first + k * step
        yield _Slot(wall_clock(at, zone), at)
        k += 1


def _cron_slots(expr: str, anchor: datetime, zone: ZoneInfo, after: datetime) -> Iterator[_Slot]:
    # A match at or before the wall clock of `after` resolves to an instant <= `after`.
    from croniter import CroniterBadDateError, croniter  # lazy: only cron rules need it

    begin = max(wall_clock(after, zone), anchor - timedelta(minutes=1))
    matches = croniter(expr, start_time=begin, ret_type=datetime)
    while True:
        try:
            local = matches.get_next(datetime)
        except CroniterBadDateError:
            return  # the expression never matches again (e.g. 30 February)
        if local >= anchor:
            yield _Slot(local, resolve_local(local, zone))


def _raw_slots(
    repeat: Repeat, anchor: datetime, first: datetime, zone: ZoneInfo, after: datetime
) -> Iterator[_Slot]:
    if repeat.kind is RepeatKind.HOURS:
        return _hour_slots(first, repeat.n, zone, after)
    if repeat.kind is RepeatKind.CRON:
        if repeat.cron is None:
            raise InvalidInput("a cron rule needs a cron expression")
        return _cron_slots(repeat.cron, anchor, zone, after)
    return _calendar_slots(anchor, _calendar_step(repeat), zone, after)


def _calendar_step(repeat: Repeat) -> int:
    """The days between a calendar rule's slots; InvalidInput for ``every N days`` below 1."""
    step = {RepeatKind.DAILY: 1, RepeatKind.WEEKLY: 7}.get(repeat.kind, repeat.n)
    if step < 1:
        raise InvalidInput(f"Repeat {repeat.render()!r}: N must be at least 1")
    return step


def _series(
    repeat: Repeat, anchor: datetime, first: datetime, zone: ZoneInfo, after: datetime
) -> Iterator[_Slot]:
    """The rule's slots firing strictly after ``after``: increasing, each instant once.

    ``anchor`` is the phase as a wall-clock time (calendar and cron rules);
    ``first`` is the instant the series starts at (``every N hours``).
    """
    last = after
    try:
        for slot in _raw_slots(repeat, anchor, first, zone, after):
            # Wall-clock times that resolve to one instant (a gap) fire once.
            if slot.at > last:
                last = slot.at
                yield slot
    except OverflowError:
        return  # past the year 9999: the calendar ends


def occurrences(
    repeat: Repeat,
    anchor: datetime,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
    *,
    first: datetime | None = None,
) -> Iterator[datetime]:
    """The instants (aware UTC) a rule fires in ``(start, end]``, strictly increasing.

    ``anchor`` is the rule's phase and first occurrence, a naive wall-clock time
    in ``zone`` (TODO.RECUR.md ``Next``); nothing fires before it. ``first`` is
    the instant it stands for when known (:func:`resolve_next`), else
    :func:`resolve_local`'s.
    """
    first = _first_of_window(anchor, zone, start, end, first)
    for slot in _until(_series(repeat, anchor, first, zone, start), end):
        yield slot.at


def _first_of_window(
    anchor: datetime, zone: ZoneInfo, start: datetime, end: datetime, first: datetime | None
) -> datetime:
    """The instant a rule's series starts at (``first``, else the anchor's reading), once the
    anchor is known naive and the window's ends aware."""
    require_naive(anchor, "anchor")
    _require_aware(start, "start")
    _require_aware(end, "end")
    return resolve_local(anchor, zone) if first is None else first


# how many matches of a cron rule are counted one by one before the count is said to be at least
# that many (interval rules are counted by arithmetic, however many)
CRON_COUNT_LIMIT = 10_000


@dataclass(frozen=True)
class Pending:
    """A rule's occurrences in ``(start, end]`` summed up, not listed: a ``Next`` decades back (a
    year typed wrong: ``0002``) is millions of them, and listing them took a minute."""

    count: int  # how many (when not ``exact``, at least this many)
    first: datetime  # the earliest
    latest: tuple[datetime, ...]  # the latest ``keep`` of them, increasing
    exact: bool = True  # False: a cron rule matched more than CRON_COUNT_LIMIT times


def pending_occurrences(
    repeat: Repeat,
    anchor: datetime,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
    *,
    first: datetime | None = None,
    keep: int = 1,
) -> Pending | None:
    """What :func:`occurrences` lists for ``(start, end]``, in a few steps however many there are
    (None: none): interval rules by arithmetic on their step, a cron rule by counting its matches
    up to :data:`CRON_COUNT_LIMIT`, its latest ones then found in a window before ``end``."""
    first = _first_of_window(anchor, zone, start, end, first)
    keep = max(1, keep)
    if repeat.kind is RepeatKind.HOURS:
        if repeat.n < 1:
            raise InvalidInput(f"Repeat {repeat.render()!r}: N must be at least 1")
        return _pending_hours(first, timedelta(hours=repeat.n), start, end, keep)
    if repeat.kind is RepeatKind.CRON:
        return _pending_counted(repeat, anchor, first, zone, start, end, keep)
    return _pending_calendar(anchor, _calendar_step(repeat), zone, start, end, keep)


def _pending_hours(
    first: datetime, step: timedelta, start: datetime, end: datetime, keep: int
) -> Pending | None:
    """``every N hours``: the instants ``first + k * step`` (k >= 0), as :func:`_hour_slots` steps."""
    if end < first:
        return None
    low = 0 if start < first else (start - first) // step + 1
    high = (end - first) // step
    if high < low:
        return None
    latest = tuple(first + k * step for k in range(max(low, high - keep + 1), high + 1))
    return Pending(high - low + 1, first + low * step, latest)


def _pending_calendar(
    anchor: datetime, step: int, zone: ZoneInfo, start: datetime, end: datetime, keep: int
) -> Pending | None:
    """Calendar rules: slot k is ``anchor`` + k * ``step`` days on the wall clock, as
    :func:`_calendar_slots` steps; its instant grows with k (days apart, whatever the zone's
    shifts), so the first slot after ``start`` and the last at or before ``end`` are found from
    the dates, a step or two either side."""

    def fires(k: int) -> datetime | None:
        try:
            return resolve_local(anchor + timedelta(days=k * step), zone)
        except OverflowError:
            return None  # past the year 9999: the calendar ends

    def index_on(moment: datetime) -> int:
        return (wall_clock(moment, zone).date() - anchor.date()).days // step

    low = max(0, index_on(start) - 1)
    while (earliest := fires(low)) is not None and earliest <= start:
        low += 1
    if earliest is None or earliest > end:
        return None
    high = max(low, index_on(end) + 1)
    while (at := fires(high)) is None or at > end:
        high -= 1
    ks = range(max(low, high - keep + 1), high + 1)
    latest = tuple(at for k in ks if (at := fires(k)) is not None)
    return Pending(high - low + 1, earliest, latest)


def _pending_counted(
    repeat: Repeat,
    anchor: datetime,
    first: datetime,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
    keep: int,
) -> Pending | None:
    """A cron rule's matches, counted one by one up to :data:`CRON_COUNT_LIMIT`."""
    count = 0
    earliest: datetime | None = None
    latest: deque[datetime] = deque(maxlen=keep)
    for slot in _until(_series(repeat, anchor, first, zone, start), end):
        if earliest is None:
            earliest = slot.at
        count += 1
        latest.append(slot.at)
        if count >= CRON_COUNT_LIMIT:
            tail = _latest_before(repeat, anchor, first, zone, start, end, keep)
            return Pending(count, earliest, tail, exact=False)
    if earliest is None:
        return None
    return Pending(count, earliest, tuple(latest))


def _latest_before(
    repeat: Repeat,
    anchor: datetime,
    first: datetime,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
    keep: int,
) -> tuple[datetime, ...]:
    """The latest ``keep`` slots in ``(start, end]``, read from a window before ``end`` that
    doubles until it holds that many (a rule matching that often fills a short one)."""
    window = timedelta(days=1)
    while True:
        since = max(start, end - window)
        found = deque((slot.at for slot in _until(_series(repeat, anchor, first, zone, since), end)), keep)
        if len(found) >= keep or since == start:
            return tuple(found)
        window *= 2


def next_after(repeat: Repeat, anchor: datetime, zone: ZoneInfo, now: datetime) -> datetime:
    """The first occurrence strictly after ``now`` (aware UTC), keeping the anchor's phase.

    Raises :class:`InvalidInput` when the rule never fires again (a cron
    expression that cannot match).
    """
    require_naive(anchor, "anchor")
    _require_aware(now, "now")
    slot = _next_slot(repeat, anchor, resolve_local(anchor, zone), zone, now)
    return slot.at


def next_local_after(repeat: Repeat, anchor: datetime, zone: ZoneInfo, now: datetime) -> datetime:
    """Like :func:`next_after`, as the scheduled wall-clock time (naive; it may lie in a gap).

    This is what ``Next`` holds: a cron ``30 2 * * *`` on a spring-forward day is 02:30 (it
    fires when the gap ends), not 03:00, which the expression does not match.
    """
    require_naive(anchor, "anchor")
    _require_aware(now, "now")
    return _next_slot(repeat, anchor, resolve_local(anchor, zone), zone, now).local


def _next_slot(repeat: Repeat, anchor: datetime, first: datetime, zone: ZoneInfo, now: datetime) -> _Slot:
    for slot in _series(repeat, anchor, first, zone, now):
        return slot
    raise InvalidInput(f"Repeat {repeat.render()!r} never fires after {now.isoformat()}")


def is_due(next_at: datetime, now: datetime) -> bool:
    """Whether an occurrence at ``next_at`` is due at ``now`` (inclusive: ``next_at <= now``)."""
    _require_aware(next_at, "next_at")
    _require_aware(now, "now")
    return next_at <= now


def due_occurrences(repeat: Repeat, next_at: datetime, zone: ZoneInfo, now: datetime) -> list[datetime]:
    """The occurrences in ``[next_at, now]`` (aware UTC, increasing); empty when not due.

    ``next_at`` is the stored next instant and is always the first element when
    due. Later calendar occurrences keep ``next_at``'s local wall-clock time (a
    ``next_at`` already moved to a gap's end keeps that moved time; callers that
    hold the wall-clock phase use :func:`occurrences` instead).
    """
    if not is_due(next_at, now):
        return []
    first = next_at.astimezone(UTC)
    anchor = wall_clock(first, zone)
    later = _series(repeat, anchor, first, zone, first)
    return [first, *(slot.at for slot in _until(later, now))]


def _until(slots: Iterator[_Slot], end: datetime) -> Iterator[_Slot]:
    for slot in slots:
        if slot.at > end:
            return
        yield slot


# --- materialising TODO.RECUR.md entries (the newer runtime) -------------------------------


@dataclass(frozen=True)
class Materialized:
    """One TODO.md entry for a due recurring entry, and where its ``Next`` moves."""

    text: str  # the TODO.md content: "<Next> [(<TZ>)] <content>"
    new_next_local: datetime  # the new ``Next``: naive wall-clock time in the entry's zone
    missed: int  # due occurrences beyond the first (periods missed while nobody ran)
    new_next_at: datetime  # the instant ``new_next_local`` fires at (aware UTC)


def materialize(
    repeat: Repeat,
    next_local: datetime,
    zone: ZoneInfo,
    tz_label: str | None,
    content: str,
    now: datetime,
    *,
    first: datetime | None = None,
) -> Materialized | None:
    """Copy a due TODO.RECUR.md entry the way the newer runtime does (FORMATS.md 1).

    None when ``Next`` (``next_local``, naive wall-clock in ``zone``; ``first``,
    the instant it stands for when known) is after ``now``. Otherwise ONE entry
    however many periods were missed, and ``Next`` advances to the first
    occurrence strictly after ``now``, phase kept: a calendar rule keeps its
    wall-clock time even where that time was skipped.
    """
    require_naive(next_local, "Next")
    _require_aware(now, "now")
    first = resolve_local(next_local, zone) if first is None else first
    if first > now:
        return None
    slot = _next_slot(repeat, next_local, first, zone, now)
    missed = pending_occurrences(repeat, next_local, zone, first, now, first=first)
    label = f" ({tz_label})" if tz_label else ""
    # the year in four digits, as Go's layout writes it (strftime's %Y leaves 0002 as "2")
    text = f"{next_local.year:04d}-{next_local:%m-%d %H:%M}{label} {content}"
    return Materialized(text, slot.local, 0 if missed is None else missed.count, slot.at)


# --- missed periods ------------------------------------------------------------------------


class MissedPolicy(StrEnum):
    SKIP = "skip"  # run only the current period; drop periods missed while down
    ONCE = "once"  # one run stands for every missed period (the default)
    ALL = "all"  # one run per due occurrence


def runs_for(policy: MissedPolicy, due: Sequence[datetime]) -> list[datetime]:
    """Which of the due occurrences to run under ``policy``.

    once: the latest only; all: every one; skip: the one when exactly one is
    due, none when periods were missed (more than one is due).
    """
    if not due:
        return []
    if policy is MissedPolicy.ALL:
        return sorted(due)
    if policy is MissedPolicy.SKIP:
        return list(due) if len(due) == 1 else []
    return [max(due)]


# --- PROACTIVE.md frequencies (FORMATS.md 3) -----------------------------------------------
#
# CraftBot's manager (app/proactive/types.py, should_run), with its faults fixed: a task runs
# once per period; with a time, only in [time, time + 30 minutes], both ends included, as its
# heartbeat on :00 and :30 sees it; an outcome anywhere in the period, also before the time or
# the day ("Scheduled for 08:15"), uses the period up. Fixed here: weeks run Monday to Sunday
# across the new year (CraftBot compares ISO week numbers with calendar years), day 29-31
# fires on a shorter month's last day (CraftBot never fires it there), a window opened late in
# the evening stays open past midnight (CraftBot closes it at midnight, so 23:45 never runs on
# its :00/:30 ticks), and times are instants (a time in a daylight-saving gap opens when the
# gap ends; CraftBot skips it).


class Frequency(StrEnum):
    HOURLY = "hourly"  # once per clock hour (CraftBot: every tick, twice an hour)
    DAILY = "daily"  # once per day, inside the time window if a time is set
    WEEKLY = "weekly"  # once per week (Monday to Sunday), on its day
    MONTHLY = "monthly"  # once per month, on its day clamped to the month's end


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_HHMM = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")
_TICK = timedelta(minutes=30)  # CraftBot's grace period: its heartbeat interval
_SCAN_DAYS = 400  # every calendar rule opens a new period within this many days


def period_key(freq: Frequency, when_local: datetime) -> str:
    """The period a local time belongs to, for "already ran this period".

    hourly ``2026-05-04T10``, daily ``2026-05-04``, weekly the date of that
    week's Monday (``2026-12-28`` for 2026-12-28..2027-01-03), monthly ``2026-05``.
    The second of a repeated hour (clocks fell back; ``when_local`` aware, with
    ``fold=1``) is an hour of its own: ``2026-11-01T01-05:00``.
    """
    day = when_local.date()
    if freq is Frequency.HOURLY:
        key = f"{day.isoformat()}T{when_local.hour:02d}"
        offset = when_local.utcoffset()
        if when_local.fold and offset is not None and when_local.replace(fold=0).utcoffset() != offset:
            key += when_local.isoformat()[-6:]  # the offset, as ISO 8601 writes it
        return key
    if freq is Frequency.DAILY:
        return day.isoformat()
    if freq is Frequency.WEEKLY:
        # ISO week numbers misfire at year boundaries; the Monday's date does not.
        return (day - timedelta(days=day.weekday())).isoformat()
    return f"{day.year:04d}-{day.month:02d}"


def period_before(key: str, other: str) -> bool:
    """Whether the period ``key`` comes before ``other`` (:func:`period_key`'s keys of one
    frequency, whose text sorts as their time does; keys of an hour and of a day never compare)."""
    hourly = len(key) >= 13 and key[10] == "T"
    if hourly != (len(other) >= 13 and other[10] == "T") or (not hourly and len(key) != len(other)):
        return False
    return key < other


def _parse_time(text: str) -> time:
    m = _HHMM.match(text.strip())
    if not m:
        raise InvalidInput(f"time {text!r}: expected HH:MM (24-hour)")
    return time(int(m.group(1)), int(m.group(2)))


def _weekday_matcher(day: str) -> Callable[[date], bool]:
    name = day.strip().lower()
    if name not in _WEEKDAYS:
        raise InvalidInput(f"day {day!r}: expected monday..sunday for a weekly task")
    index = _WEEKDAYS.index(name)
    return lambda d: d.weekday() == index


def _monthday_matcher(day: str) -> Callable[[date], bool]:
    text = day.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 2 and 1 <= int(text) <= 31):
        raise InvalidInput(f"day {day!r}: expected 1..31 for a monthly task")
    wanted = int(text)
    # Clamped to the month's last day, so day 31 fires on 30 April and 28/29 February.
    return lambda d: d.day == min(wanted, calendar.monthrange(d.year, d.month)[1])


def _day_matcher(freq: Frequency, day: str | None) -> Callable[[date], bool]:
    if day is None or freq is Frequency.DAILY:
        return lambda d: True
    if freq is Frequency.WEEKLY:
        return _weekday_matcher(day)
    return _monthday_matcher(day)


def _at_local(day: date, at: time, zone: tzinfo | None) -> datetime:
    """When ``day`` at wall-clock ``at`` happens, in the zone of the caller's local time."""
    wall = datetime.combine(day, at)
    if isinstance(zone, ZoneInfo):
        return resolve_local(wall, zone)
    return wall.replace(tzinfo=zone)


def _open_window(
    freq: Frequency, at: time, on_day: Callable[[date], bool], when_local: datetime, tick: timedelta
) -> str | None:
    """The period whose time window holds ``when_local`` (opened today or late yesterday), or None."""
    today = when_local.date()
    for opened_on in (today, today - timedelta(days=1)):
        if not on_day(opened_on):
            continue
        opens = _at_local(opened_on, at, when_local.tzinfo)
        if opens <= when_local <= opens + tick:
            return period_key(freq, datetime.combine(opened_on, at))
    return None


def outcome_period(
    freq: Frequency, *, time: str | None, day: str | None, when_local: datetime, tick: timedelta = _TICK
) -> str:
    """The period an outcome (a run) at ``when_local`` uses up.

    The period it falls in, wherever in it (also before the task's time or
    day: CraftBot's "Scheduled for 08:15" at 07:00 counts for the day), except
    inside a time window that opened late yesterday and runs past midnight:
    then yesterday's period, the one the window belongs to.
    """
    if freq is not Frequency.HOURLY and time is not None:
        window = _open_window(freq, _parse_time(time), _day_matcher(freq, day), when_local, tick)
        if window is not None:
            return window
    return period_key(freq, when_local)


def due_period(
    freq: Frequency,
    *,
    time: str | None,
    day: str | None,
    last_period: str | None,
    now_local: datetime,
    tick: timedelta = _TICK,
    last_run: datetime | None = None,
) -> str | None:
    """The period key a PROACTIVE.md task is due for at ``now_local``, or None.

    The key to record as handed out. It is ``period_key(freq, now_local)``
    except when a time window that opened late yesterday runs past midnight;
    then it is yesterday's period. Not due for ``last_period`` (handed out
    already) nor for the period ``last_run`` used up (:func:`outcome_period`).
    ``now_local`` and ``last_run`` are local times, naive or aware alike (with a
    ZoneInfo, windows are measured in elapsed time, so a time inside a
    daylight-saving gap opens when the gap ends).
    """
    if tick <= timedelta(0):
        raise InvalidInput(f"tick must be positive, got {tick}")
    done = {last_period}
    if last_run is not None:
        done.add(outcome_period(freq, time=time, day=day, when_local=last_run, tick=tick))
    if freq is Frequency.HOURLY:
        key = period_key(freq, now_local)
        return None if key in done else key
    on_day = _day_matcher(freq, day)
    if time is None:
        key = period_key(freq, now_local)
        return key if on_day(now_local.date()) and key not in done else None
    window = _open_window(freq, _parse_time(time), on_day, now_local, tick)
    return window if window is not None and window not in done else None


def proactive_due(
    freq: Frequency,
    *,
    time: str | None,
    day: str | None,
    last_period: str | None,
    now_local: datetime,
    tick: timedelta = _TICK,
    last_run: datetime | None = None,
) -> bool:
    """Whether a PROACTIVE.md task is due at ``now_local`` (FORMATS.md 3, bugs fixed).

    hourly: unless it already ran this hour. daily: not yet this period and,
    with ``time``, ``now_local`` in ``[time, time + tick]``. weekly: on ``day``
    (monday..sunday; any day when absent), not yet this week. monthly: on
    ``day`` ("1".."31", clamped to the month's last day), not yet this month.
    Raises :class:`InvalidInput` for a bad ``time`` or ``day``.
    """
    period = due_period(
        freq,
        time=time,
        day=day,
        last_period=last_period,
        now_local=now_local,
        tick=tick,
        last_run=last_run,
    )
    return period is not None


def next_due(
    freq: Frequency, *, time: str | None, day: str | None, last_run: datetime, tick: timedelta = _TICK
) -> datetime:
    """When a task that ran at ``last_run`` is next due: the start of the first later period
    (its time window's opening, on its day), ignoring conditions. In ``last_run``'s zone;
    aware when it is (CraftBot's manager writes this as ``next_run``)."""
    used = outcome_period(freq, time=time, day=day, when_local=last_run, tick=tick)
    if freq is Frequency.HOURLY:
        hour = last_run.replace(minute=0, second=0, microsecond=0)
        if last_run.tzinfo is None:
            return hour + timedelta(hours=1)
        return (hour.astimezone(UTC) + timedelta(hours=1)).astimezone(last_run.tzinfo)
    on_day = _day_matcher(freq, day)
    at = _parse_time(time) if time is not None else datetime.min.time()
    start = last_run.date()
    for step in range(_SCAN_DAYS):
        candidate = start + timedelta(days=step)
        if not on_day(candidate) or period_key(freq, datetime.combine(candidate, at)) == used:
            continue
        opens = _at_local(candidate, at, last_run.tzinfo)
        if opens > last_run:
            return opens.astimezone(last_run.tzinfo) if last_run.tzinfo is not None else opens
    raise InvalidInput(f"{freq.value} task never falls due after {last_run.isoformat()}")


# --- conditions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionResult:
    ok: bool  # no known condition failed
    failed: list[str]  # known conditions that do not hold now
    passed_through: list[str]  # conditions hb does not judge; the agent does


_MARKET_OPEN = time(9, 30)
_MARKET_CLOSE = time(16, 0)


def check_conditions(
    conditions: Sequence[str],
    *,
    now_local: datetime,
    last_conversation_at: datetime | None,
    now: datetime,
    available_hours: float = 4,
) -> ConditionResult:
    """Judge a task's conditions at ``now`` (CraftBot).

    market_hours_only: Monday-Friday, 09:30 <= local time < 16:00;
    weekdays_only: Monday-Friday; user_available: the user spoke within
    ``available_hours``. Unknown conditions are passed through, not judged.
    """
    _require_aware(now, "now")
    if last_conversation_at is not None:
        _require_aware(last_conversation_at, "last_conversation_at")
    if available_hours < 0:
        raise InvalidInput(f"available_hours must not be negative, got {available_hours}")
    weekday = now_local.weekday() < 5
    judged: dict[str, bool] = {
        "market_hours_only": weekday and _MARKET_OPEN <= now_local.time() < _MARKET_CLOSE,
        "weekdays_only": weekday,
        "user_available": last_conversation_at is not None
        and now - last_conversation_at <= timedelta(hours=available_hours),
    }
    failed: list[str] = []
    passed_through: list[str] = []
    for condition in conditions:
        name = condition.strip().lower()
        if not name:
            continue  # a blank list item is no condition
        if name not in judged:
            passed_through.append(condition)
        elif not judged[name]:
            failed.append(condition)
    return ConditionResult(ok=not failed, failed=failed, passed_through=passed_through)
