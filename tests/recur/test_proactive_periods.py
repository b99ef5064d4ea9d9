"""PROACTIVE.md periods: which period a run uses up, and when a task falls due next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from heartbeat.errors import InvalidInput
from heartbeat.rules.recurrence import Frequency, due_period, next_due, outcome_period

TOKYO = ZoneInfo("Asia/Tokyo")
NEW_YORK = ZoneInfo("America/New_York")


def due(
    freq: Frequency,
    now: datetime,
    *,
    time: str | None = None,
    day: str | None = None,
    last_run: datetime | None = None,
) -> bool:
    return (
        due_period(freq, time=time, day=day, last_period=None, now_local=now, last_run=last_run) is not None
    )


@pytest.mark.parametrize(
    ("freq", "time", "day", "ran", "period"),
    [
        (Frequency.DAILY, "08:15", None, datetime(2026, 5, 4, 7, 0), "2026-05-04"),  # before the time
        (Frequency.DAILY, "08:15", None, datetime(2026, 5, 4, 23, 0), "2026-05-04"),  # after the window
        (Frequency.WEEKLY, "09:00", "friday", datetime(2026, 5, 4, 7, 0), "2026-05-04"),  # Monday of it
        (Frequency.MONTHLY, None, "15", datetime(2026, 5, 1, 0, 0), "2026-05"),
        (Frequency.HOURLY, None, None, datetime(2026, 5, 4, 10, 59), "2026-05-04T10"),
        # inside a window that opened late yesterday: yesterday's period
        (Frequency.DAILY, "23:45", None, datetime(2026, 5, 5, 0, 10), "2026-05-04"),
        (Frequency.DAILY, "23:45", None, datetime(2026, 5, 5, 0, 16), "2026-05-05"),
        (Frequency.WEEKLY, "23:45", "sunday", datetime(2026, 5, 11, 0, 5), "2026-05-04"),
    ],
)
def test_the_period_a_run_uses_up(
    freq: Frequency, time: str | None, day: str | None, ran: datetime, period: str
) -> None:
    assert outcome_period(freq, time=time, day=day, when_local=ran) == period


def test_a_run_before_the_time_uses_the_day_up() -> None:
    """CraftBot's own 'Scheduled for 08:15', recorded at 07:00: not due at 08:15 that day."""
    ran = datetime(2026, 5, 4, 7, 0, tzinfo=TOKYO)
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 15, tzinfo=TOKYO), time="08:15", last_run=ran)
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 45, tzinfo=TOKYO), time="08:15", last_run=ran)
    assert due(Frequency.DAILY, datetime(2026, 5, 5, 8, 15, tzinfo=TOKYO), time="08:15", last_run=ran)
    assert due(Frequency.DAILY, datetime(2026, 5, 4, 8, 15, tzinfo=TOKYO), time="08:15")  # no run: due


def test_a_run_earlier_in_the_week_or_month_uses_it_up() -> None:
    monday = datetime(2026, 5, 4, 7, 0)
    assert not due(Frequency.WEEKLY, datetime(2026, 5, 8, 9, 0), time="09:00", day="friday", last_run=monday)
    assert due(Frequency.WEEKLY, datetime(2026, 5, 15, 9, 0), time="09:00", day="friday", last_run=monday)
    first = datetime(2026, 5, 1, 0, 0)
    assert not due(Frequency.MONTHLY, datetime(2026, 5, 15, 10), day="15", last_run=first)
    assert due(Frequency.MONTHLY, datetime(2026, 6, 15, 10), day="15", last_run=first)


def test_a_run_in_the_window_after_midnight_leaves_the_new_day_open() -> None:
    after_midnight = datetime(2026, 5, 5, 0, 10)  # in the window opened at 23:45 on 4 May
    assert not due(Frequency.DAILY, datetime(2026, 5, 5, 0, 15), time="23:45", last_run=after_midnight)
    assert due(Frequency.DAILY, datetime(2026, 5, 5, 23, 45), time="23:45", last_run=after_midnight)


def test_a_run_of_another_zone_is_judged_by_its_instant() -> None:
    # 23:30 UTC on 3 May is 08:30 on 4 May in Tokyo: the Tokyo day is used up
    ran = datetime(2026, 5, 3, 23, 30, tzinfo=UTC).astimezone(TOKYO)
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 40, tzinfo=TOKYO), time="08:15", last_run=ran)


@pytest.mark.parametrize(
    ("freq", "time", "day", "ran", "expected"),
    [
        (Frequency.DAILY, "08:15", None, datetime(2026, 5, 4, 7, 0), datetime(2026, 5, 5, 8, 15)),
        (Frequency.DAILY, "08:15", None, datetime(2026, 5, 4, 8, 30), datetime(2026, 5, 5, 8, 15)),
        (Frequency.DAILY, None, None, datetime(2026, 5, 4, 13, 0), datetime(2026, 5, 5, 0, 0)),
        (Frequency.DAILY, "23:45", None, datetime(2026, 5, 5, 0, 10), datetime(2026, 5, 5, 23, 45)),
        (Frequency.WEEKLY, "09:00", "friday", datetime(2026, 5, 4, 7, 0), datetime(2026, 5, 15, 9, 0)),
        (Frequency.WEEKLY, None, None, datetime(2026, 12, 30, 7, 0), datetime(2027, 1, 4, 0, 0)),
        (Frequency.MONTHLY, "18:00", "31", datetime(2026, 3, 31, 18, 5), datetime(2026, 4, 30, 18, 0)),
        (Frequency.MONTHLY, None, None, datetime(2026, 12, 9, 7, 0), datetime(2027, 1, 1, 0, 0)),
        (Frequency.HOURLY, None, None, datetime(2026, 5, 4, 10, 5), datetime(2026, 5, 4, 11, 0)),
    ],
)
def test_next_due_is_the_next_periods_opening(
    freq: Frequency, time: str | None, day: str | None, ran: datetime, expected: datetime
) -> None:
    aware = ran.replace(tzinfo=TOKYO)
    got = next_due(freq, time=time, day=day, last_run=aware)
    assert got == expected.replace(tzinfo=TOKYO)
    assert got.utcoffset() == timedelta(hours=9)  # in the run's zone, as CraftBot's next_run is local
    assert due(freq, got, time=time, day=day, last_run=aware)  # due right then
    assert not due(freq, got - timedelta(seconds=1), time=time, day=day, last_run=aware)


def test_next_due_keeps_the_wall_clock_across_daylight_saving() -> None:
    ran = datetime(2026, 3, 7, 9, 0, tzinfo=NEW_YORK)  # EST; 8 March is 23 hours long
    got = next_due(Frequency.DAILY, time="09:00", day=None, last_run=ran)
    assert (got.hour, got.minute, got.utcoffset()) == (9, 0, timedelta(hours=-4))
    in_the_gap = next_due(Frequency.DAILY, time="02:30", day=None, last_run=ran)
    assert in_the_gap == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # the gap's end, 03:00 EDT


def test_next_due_of_an_hourly_task_across_the_repeated_hour() -> None:
    first_one = datetime(2026, 11, 1, 5, 20, tzinfo=UTC).astimezone(NEW_YORK)  # 01:20 EDT
    got = next_due(Frequency.HOURLY, time=None, day=None, last_run=first_one)
    # the second 01:00 (EST): an hour of its own (an ambiguous time compares only in UTC)
    assert got.astimezone(UTC) == datetime(2026, 11, 1, 6, 0, tzinfo=UTC)


def test_next_due_refuses_a_schedule_it_cannot_read() -> None:
    with pytest.raises(InvalidInput):
        next_due(Frequency.WEEKLY, time=None, day="funday", last_run=datetime(2026, 5, 4, tzinfo=TOKYO))
