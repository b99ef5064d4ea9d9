"""Daylight saving: never twice, never skipped, on real zones over two years.

The expected instants are computed here without zoneinfo and without hb's
resolver: from a hand-written table of each zone's 2026-2028 transitions (itself
checked against the tz database), reading hb's rule literally: a wall-clock
time fires at the earliest instant whose local reading is that time or later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from heartbeat.formats.repeat import Repeat, RepeatKind, parse_repeat
from heartbeat.rules.recurrence import materialize, next_after, occurrences, resolve_local

H = timedelta(hours=1)
YEARS_2 = timedelta(days=730)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


# (offset before the first transition, [(transition instant, offset from then on), ...])
TABLE: dict[str, tuple[timedelta, list[tuple[datetime, timedelta]]]] = {
    "America/New_York": (
        -5 * H,
        [
            (utc(2026, 3, 8, 7), -4 * H),
            (utc(2026, 11, 1, 6), -5 * H),
            (utc(2027, 3, 14, 7), -4 * H),
            (utc(2027, 11, 7, 6), -5 * H),
            (utc(2028, 3, 12, 7), -4 * H),
            (utc(2028, 11, 5, 6), -5 * H),
        ],
    ),
    "Europe/London": (
        0 * H,
        [
            (utc(2026, 3, 29, 1), 1 * H),
            (utc(2026, 10, 25, 1), 0 * H),
            (utc(2027, 3, 28, 1), 1 * H),
            (utc(2027, 10, 31, 1), 0 * H),
            (utc(2028, 3, 26, 1), 1 * H),
            (utc(2028, 10, 29, 1), 0 * H),
        ],
    ),
    # Southern hemisphere: summer time ends in April and starts in October.
    "Australia/Sydney": (
        11 * H,
        [
            (utc(2026, 4, 4, 16), 10 * H),
            (utc(2026, 10, 3, 16), 11 * H),
            (utc(2027, 4, 3, 16), 10 * H),
            (utc(2027, 10, 2, 16), 11 * H),
            (utc(2028, 4, 1, 16), 10 * H),
            (utc(2028, 9, 30, 16), 11 * H),
        ],
    ),
    "Asia/Tokyo": (9 * H, []),
}
TABLE_SPAN = (utc(2026, 1, 1), utc(2029, 1, 1))


def table_offset(zone: str, instant: datetime) -> timedelta:
    offset, transitions = TABLE[zone]
    for at, after in transitions:
        if instant >= at:
            offset = after
    return offset


def table_resolve(zone: str, wall: datetime) -> datetime:
    """Earliest instant whose local reading is ``wall`` or later (from the table only)."""
    as_utc = wall.replace(tzinfo=UTC)
    offsets = {TABLE[zone][0], *(after for _, after in TABLE[zone][1])}
    exact = [as_utc - o for o in offsets if table_offset(zone, as_utc - o) == o]
    if exact:
        return min(exact)  # once, or the first of two readings
    for at, after in TABLE[zone][1]:
        before = table_offset(zone, at - timedelta(seconds=1))
        if at + before <= as_utc < at + after:
            return at  # a skipped time: the instant the gap ends
    raise AssertionError(f"{wall} neither exists nor lies in a gap in {zone}")


def test_the_table_agrees_with_the_tz_database() -> None:
    for name in TABLE:
        zone = ZoneInfo(name)
        instant = TABLE_SPAN[0]
        while instant < TABLE_SPAN[1]:
            assert instant.astimezone(zone).utcoffset() == table_offset(name, instant), instant
            instant += timedelta(minutes=30)


def test_table_resolve_reads_the_rule_literally() -> None:
    ny = "America/New_York"
    assert table_resolve(ny, datetime(2026, 3, 8, 2, 30)) == utc(2026, 3, 8, 7)
    assert table_resolve(ny, datetime(2026, 11, 1, 1, 30)) == utc(2026, 11, 1, 5, 30)
    assert table_resolve(ny, datetime(2026, 7, 1, 9)) == utc(2026, 7, 1, 13)


# --- the expected schedules, computed independently ------------------------------------------

CALENDAR_STEP = {"daily": 1, "weekly": 7, "every 2 days": 2, "every 3 days": 3}
HOURS = {"every 1 hour": 1, "every 5 hours": 5}
CRON_TIMES: dict[str, Callable[[date], list[time]]] = {
    "30 2 * * *": lambda d: [time(2, 30)],
    "*/15 1-3 * * *": lambda d: [time(h, m) for h in (1, 2, 3) for m in (0, 15, 30, 45)],
    "0 9 * * 1-5": lambda d: [time(9)] if d.weekday() < 5 else [],
}


@dataclass(frozen=True)
class Fire:
    local: datetime  # the scheduled wall-clock time
    at: datetime  # when it fires


def once_each(fires: Iterator[Fire], start: datetime, end: datetime) -> list[Fire]:
    """Keep fires in (start, end]; a later wall-clock time on an instant already fired is dropped."""
    out: list[Fire] = []
    for fire in fires:
        if fire.at > end:
            break
        if fire.at > start and (not out or fire.at > out[-1].at):
            out.append(fire)
    return out


def expected_calendar(zone: str, anchor: datetime, step: int, start: datetime, end: datetime):
    def fires() -> Iterator[Fire]:
        k = 0
        while True:
            local = anchor + timedelta(days=k * step)
            yield Fire(local, table_resolve(zone, local))
            k += 1

    return once_each(fires(), start, end)


def expected_hours(zone: str, anchor: datetime, n: int, start: datetime, end: datetime):
    first = table_resolve(zone, anchor)
    count = int((end - first) / (n * H)) + 1
    return [first + k * n * H for k in range(count) if start < first + k * n * H <= end]


def expected_cron(zone: str, expr: str, anchor: datetime, start: datetime, end: datetime):
    def fires() -> Iterator[Fire]:
        day = anchor.date()
        while True:
            for t in CRON_TIMES[expr](day):
                local = datetime.combine(day, t)
                if local >= anchor:
                    yield Fire(local, table_resolve(zone, local))
            day += timedelta(days=1)

    return once_each(fires(), start, end)


# --- the simulation -----------------------------------------------------------------------------

ANCHORS = [
    pytest.param("America/New_York", datetime(2026, 3, 8, 2, 30), id="NY-gap-02:30"),
    pytest.param("America/New_York", datetime(2026, 11, 1, 1, 30), id="NY-overlap-01:30"),
    pytest.param("Europe/London", datetime(2026, 3, 29, 1, 30), id="London-gap-01:30"),
    pytest.param("Europe/London", datetime(2026, 10, 25, 1, 30), id="London-overlap-01:30"),
    pytest.param("Australia/Sydney", datetime(2026, 10, 4, 2, 30), id="Sydney-gap-02:30"),
    pytest.param("Australia/Sydney", datetime(2026, 4, 5, 2, 30), id="Sydney-overlap-02:30"),
    pytest.param("Asia/Tokyo", datetime(2026, 3, 8, 2, 30), id="Tokyo-02:30"),
]


def heartbeat_chain(repeat: Repeat, anchor: datetime, zone: ZoneInfo, start: datetime, end: datetime):
    """Call next_after from each returned occurrence, the way a heartbeat would."""
    out: list[datetime] = []
    now = start
    while (now := next_after(repeat, anchor, zone, now)) <= end:
        out.append(now)
    return out


def materialize_chain(repeat: Repeat, first: Fire, zone_name: str, end: datetime) -> list[Fire]:
    """Materialise at each occurrence, then carry the returned Next, as TODO.RECUR.md would."""
    zone = ZoneInfo(zone_name)
    out: list[Fire] = []
    next_local = first.local
    while (at := table_resolve(zone_name, next_local)) <= end:
        assert materialize(repeat, next_local, zone, zone_name, "x", at - H / 60) is None
        made = materialize(repeat, next_local, zone, zone_name, "x", at)
        assert made is not None
        assert made.text == f"{next_local:%Y-%m-%d %H:%M} ({zone_name}) x"
        assert made.missed == 0
        assert made.new_next_at == resolve_local(made.new_next_local, zone)
        out.append(Fire(next_local, at))
        next_local = made.new_next_local
    return out


def assert_once_each_in_order(instants: list[datetime]) -> None:
    assert all(a < b for a, b in pairwise(instants))


@pytest.mark.parametrize(("zone_name", "anchor"), ANCHORS)
@pytest.mark.parametrize("rule", list(CALENDAR_STEP))
def test_calendar_rules_over_two_years(zone_name: str, anchor: datetime, rule: str) -> None:
    repeat, zone = parse_repeat(rule), ZoneInfo(zone_name)
    start = table_resolve(zone_name, anchor) - H
    end = start + YEARS_2
    expected = expected_calendar(zone_name, anchor, CALENDAR_STEP[rule], start, end)
    want = [f.at for f in expected]

    listed = list(occurrences(repeat, anchor, zone, start, end))
    assert listed == want
    assert heartbeat_chain(repeat, anchor, zone, start, end) == want
    assert materialize_chain(repeat, expected[0], zone_name, end) == expected
    assert_once_each_in_order(listed)
    # One fire per scheduled local date, and the first is the anchor's own date.
    assert len(want) == (YEARS_2.days - 1) // CALENDAR_STEP[rule] + 1
    assert expected[0].local == anchor


@pytest.mark.parametrize(("zone_name", "anchor"), ANCHORS)
@pytest.mark.parametrize("rule", list(HOURS))
def test_hour_rules_step_in_elapsed_time(zone_name: str, anchor: datetime, rule: str) -> None:
    repeat, zone = parse_repeat(rule), ZoneInfo(zone_name)
    start = table_resolve(zone_name, anchor) - H
    end = start + YEARS_2
    want = expected_hours(zone_name, anchor, HOURS[rule], start, end)

    listed = list(occurrences(repeat, anchor, zone, start, end))
    assert listed == want
    assert heartbeat_chain(repeat, anchor, zone, start, end) == want
    assert_once_each_in_order(listed)
    assert len(want) == 730 * 24 // HOURS[rule]


# Midnight on the spring-forward day (in October for Sydney).
CRON_ANCHOR = {
    "America/New_York": datetime(2026, 3, 8),
    "Europe/London": datetime(2026, 3, 29),
    "Australia/Sydney": datetime(2026, 10, 4),
    "Asia/Tokyo": datetime(2026, 3, 8),
}


@pytest.mark.parametrize("zone_name", list(TABLE))
@pytest.mark.parametrize("expr", list(CRON_TIMES))
def test_cron_rules_over_two_years(zone_name: str, expr: str) -> None:
    repeat, zone = Repeat(RepeatKind.CRON, cron=expr), ZoneInfo(zone_name)
    anchor = CRON_ANCHOR[zone_name]
    start = table_resolve(zone_name, anchor) - timedelta(seconds=1)
    end = start + YEARS_2
    expected = expected_cron(zone_name, expr, anchor, start, end)
    want = [f.at for f in expected]

    listed = list(occurrences(repeat, anchor, zone, start, end))
    assert listed == want
    assert heartbeat_chain(repeat, anchor, zone, start, end) == want
    assert materialize_chain(repeat, expected[0], zone_name, end) == expected
    assert_once_each_in_order(listed)


# --- specific instants ---------------------------------------------------------------------

NY = ZoneInfo("America/New_York")
DAILY = parse_repeat("daily")


def test_ny_daily_0230_fires_at_the_gap_end_on_spring_forward() -> None:
    got = list(occurrences(DAILY, datetime(2026, 3, 7, 2, 30), NY, utc(2026, 3, 7), utc(2026, 3, 10)))
    assert got == [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30)]


def test_ny_daily_0130_fires_once_on_fall_back() -> None:
    got = list(occurrences(DAILY, datetime(2026, 10, 31, 1, 30), NY, utc(2026, 10, 31), utc(2026, 11, 3)))
    assert got == [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]
    assert utc(2026, 11, 1, 6, 30) not in got
    # A heartbeat at the first 01:30 moves on to the next day, not to the second 01:30.
    assert next_after(DAILY, datetime(2026, 10, 31, 1, 30), NY, utc(2026, 11, 1, 5, 30)) == utc(
        2026, 11, 2, 6, 30
    )


def test_ny_gap_time_keeps_its_phase_in_the_file() -> None:
    made = materialize(DAILY, datetime(2026, 3, 8, 2, 30), NY, None, "water plants", utc(2026, 3, 8, 7))
    assert made is not None
    assert made.text == "2026-03-08 02:30 water plants"
    # 02:30 again the next day, not the 03:00 it fired at.
    assert made.new_next_local == datetime(2026, 3, 9, 2, 30)
    assert made.new_next_at == utc(2026, 3, 9, 6, 30)


def test_cron_quarter_hours_collapse_in_the_gap() -> None:
    cron = Repeat(RepeatKind.CRON, cron="*/15 1-3 * * *")
    got = list(occurrences(cron, datetime(2026, 3, 8), NY, utc(2026, 3, 8), utc(2026, 3, 8, 12)))
    before_gap = [utc(2026, 3, 8, 6, m) for m in (0, 15, 30, 45)]
    # 02:00..02:45 do not exist; they and 03:00 fire once, at 03:00 EDT = 07:00Z.
    after_gap = [utc(2026, 3, 8, 7, m) for m in (0, 15, 30, 45)]
    assert got == before_gap + after_gap


def test_cron_quarter_hours_fire_the_first_time_on_fall_back() -> None:
    cron = Repeat(RepeatKind.CRON, cron="*/15 1-3 * * *")
    got = list(occurrences(cron, datetime(2026, 11, 1), NY, utc(2026, 11, 1), utc(2026, 11, 1, 12)))
    first_pass = [utc(2026, 11, 1, 5, m) for m in (0, 15, 30, 45)]  # 01:xx EDT
    after = [utc(2026, 11, 1, h, m) for h in (7, 8) for m in (0, 15, 30, 45)]  # 02:xx, 03:xx EST
    assert got == first_pass + after


def test_cron_0230_fires_at_the_gap_end() -> None:
    cron = Repeat(RepeatKind.CRON, cron="30 2 * * *")
    assert next_after(cron, datetime(2026, 3, 7), NY, utc(2026, 3, 7, 12)) == utc(2026, 3, 8, 7)


def test_weekday_cron_across_the_transition_keeps_nine_local() -> None:
    cron = Repeat(RepeatKind.CRON, cron="0 9 * * 1-5")
    got = list(occurrences(cron, datetime(2026, 3, 6), NY, utc(2026, 3, 6), utc(2026, 3, 10, 23)))
    # Friday 09:00 EST, Monday and Tuesday 09:00 EDT; nothing at the weekend.
    assert got == [utc(2026, 3, 6, 14), utc(2026, 3, 9, 13), utc(2026, 3, 10, 13)]


def test_every_hour_counts_elapsed_hours_through_the_repeated_hour() -> None:
    hourly = parse_repeat("every 1 hour")
    got = list(occurrences(hourly, datetime(2026, 11, 1, 0, 30), NY, utc(2026, 11, 1), utc(2026, 11, 1, 8)))
    assert got == [utc(2026, 11, 1, h, 30) for h in (4, 5, 6, 7)]
    walls = [g.astimezone(NY).strftime("%H:%M %Z") for g in got]
    assert walls == ["00:30 EDT", "01:30 EDT", "01:30 EST", "02:30 EST"]


def test_every_five_hours_keeps_exact_spacing_over_spring_forward() -> None:
    five = parse_repeat("every 5 hours")
    got = list(occurrences(five, datetime(2026, 3, 7, 23), NY, utc(2026, 3, 8), utc(2026, 3, 8, 23)))
    assert got == [utc(2026, 3, 8, 4), utc(2026, 3, 8, 9), utc(2026, 3, 8, 14), utc(2026, 3, 8, 19)]
    walls = [g.astimezone(NY).strftime("%H:%M") for g in got]
    assert walls == ["23:00", "05:00", "10:00", "15:00"]


def test_sydney_daily_0230_in_april_and_october() -> None:
    sydney = ZoneInfo("Australia/Sydney")
    april = list(occurrences(DAILY, datetime(2026, 4, 4, 2, 30), sydney, utc(2026, 4, 3), utc(2026, 4, 6)))
    # 02:30 happens twice on 5 April: fires at the first (AEDT, +11).
    assert april == [utc(2026, 4, 3, 15, 30), utc(2026, 4, 4, 15, 30), utc(2026, 4, 5, 16, 30)]
    october = list(
        occurrences(DAILY, datetime(2026, 10, 3, 2, 30), sydney, utc(2026, 10, 2), utc(2026, 10, 5))
    )
    # 02:30 does not exist on 4 October: fires when the gap ends, 03:00 AEDT.
    assert october == [utc(2026, 10, 2, 16, 30), utc(2026, 10, 3, 16), utc(2026, 10, 4, 15, 30)]


def test_london_weekly_0130_over_both_sundays() -> None:
    london = ZoneInfo("Europe/London")
    weekly = parse_repeat("weekly")
    got = list(occurrences(weekly, datetime(2026, 3, 22, 1, 30), london, utc(2026, 3, 1), utc(2026, 4, 6)))
    assert got == [utc(2026, 3, 22, 1, 30), utc(2026, 3, 29, 1), utc(2026, 4, 5, 0, 30)]
    autumn = list(
        occurrences(weekly, datetime(2026, 10, 18, 1, 30), london, utc(2026, 10, 1), utc(2026, 11, 2))
    )
    assert autumn == [utc(2026, 10, 18, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 11, 1, 1, 30)]


def test_an_hourly_proactive_task_is_due_in_both_hours_of_a_fall_back_night() -> None:
    from heartbeat.rules.recurrence import Frequency, due_period

    zone = ZoneInfo("America/New_York")
    last: str | None = None
    handed_out = []
    for hour in (4, 5, 6, 7):  # 00:00 EDT, 01:00 EDT, 01:00 EST, 02:00 EST
        for minute in (0, 30):
            now = datetime(2026, 11, 1, hour, minute, tzinfo=UTC).astimezone(zone)
            key = due_period(Frequency.HOURLY, time=None, day=None, last_period=last, now_local=now)
            if key is not None:
                handed_out.append(key)
                last = key
    assert handed_out == ["2026-11-01T00", "2026-11-01T01", "2026-11-01T01-05:00", "2026-11-01T02"]
