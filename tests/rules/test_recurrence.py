"""Recurrence rules: resolving wall-clock times, schedules, materialising, PROACTIVE.md."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.formats.repeat import Repeat, RepeatKind, parse_repeat
from heartbeat.rules.recurrence import (
    CRON_COUNT_LIMIT,
    ConditionResult,
    Frequency,
    Materialized,
    MissedPolicy,
    Pending,
    check_conditions,
    due_occurrences,
    due_period,
    is_due,
    materialize,
    next_after,
    occurrences,
    pending_occurrences,
    period_key,
    proactive_due,
    resolve_local,
    runs_for,
)

NY = ZoneInfo("America/New_York")
LONDON = ZoneInfo("Europe/London")
SYDNEY = ZoneInfo("Australia/Sydney")
TOKYO = ZoneInfo("Asia/Tokyo")
ZUTC = ZoneInfo("UTC")
DAILY = parse_repeat("daily")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


# --- resolve_local -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "wall", "instant"),
    [
        (NY, datetime(2026, 5, 4, 9), utc(2026, 5, 4, 13)),
        (NY, datetime(2026, 1, 15, 9), utc(2026, 1, 15, 14)),
        # spring-forward gap 02:00-03:00: every missing time fires when the gap ends
        (NY, datetime(2026, 3, 8, 1, 59), utc(2026, 3, 8, 6, 59)),
        (NY, datetime(2026, 3, 8, 2, 0), utc(2026, 3, 8, 7)),
        (NY, datetime(2026, 3, 8, 2, 30), utc(2026, 3, 8, 7)),
        (NY, datetime(2026, 3, 8, 2, 59, 59), utc(2026, 3, 8, 7)),
        (NY, datetime(2026, 3, 8, 3, 0), utc(2026, 3, 8, 7)),
        (NY, datetime(2026, 3, 8, 3, 1), utc(2026, 3, 8, 7, 1)),
        # fall-back: 01:00-02:00 happens twice; the first (EDT) wins
        (NY, datetime(2026, 11, 1, 0, 59), utc(2026, 11, 1, 4, 59)),
        (NY, datetime(2026, 11, 1, 1, 0), utc(2026, 11, 1, 5, 0)),
        (NY, datetime(2026, 11, 1, 1, 30), utc(2026, 11, 1, 5, 30)),
        (NY, datetime(2026, 11, 1, 2, 0), utc(2026, 11, 1, 7, 0)),
        (LONDON, datetime(2026, 3, 29, 1, 30), utc(2026, 3, 29, 1)),
        (LONDON, datetime(2026, 10, 25, 1, 30), utc(2026, 10, 25, 0, 30)),
        (SYDNEY, datetime(2026, 10, 4, 2, 30), utc(2026, 10, 3, 16)),
        (SYDNEY, datetime(2026, 4, 5, 2, 30), utc(2026, 4, 4, 15, 30)),
        (TOKYO, datetime(2026, 3, 8, 2, 30), utc(2026, 3, 7, 17, 30)),
        # a 30-minute shift: the gap is 02:00-02:30
        (ZoneInfo("Australia/Lord_Howe"), datetime(2026, 10, 4, 2, 15), utc(2026, 10, 3, 15, 30)),
        # Samoa skipped 30 December 2011 entirely: the gap ends at 31 December 00:00 (+14)
        (ZoneInfo("Pacific/Apia"), datetime(2011, 12, 30, 12), utc(2011, 12, 30, 10)),
    ],
)
def test_resolve_local(zone: ZoneInfo, wall: datetime, instant: datetime) -> None:
    got = resolve_local(wall, zone)
    assert got == instant
    assert got.tzinfo is UTC


def test_resolve_local_keeps_sub_minute_precision_and_ignores_fold() -> None:
    assert resolve_local(datetime(2026, 5, 4, 9, 0, 7, 250), NY) == datetime(
        2026, 5, 4, 13, 0, 7, 250, tzinfo=UTC
    )
    second_pass = datetime(2026, 11, 1, 1, 30, fold=1)
    assert resolve_local(second_pass, NY) == utc(2026, 11, 1, 5, 30)
    assert resolve_local(datetime(2026, 3, 8, 2, 30, 45, 9), NY) == utc(2026, 3, 8, 7)


def test_resolve_local_refuses_an_aware_time() -> None:
    with pytest.raises(InvalidInput, match="without a zone"):
        resolve_local(utc(2026, 5, 4, 9), NY)


def test_resolve_local_refuses_the_end_of_the_calendar() -> None:
    with pytest.raises(InvalidInput, match="outside"):
        resolve_local(datetime.max, NY)
    with pytest.raises(InvalidInput, match="outside"):
        resolve_local(datetime.min, TOKYO)


SOME_ZONES = [
    "America/New_York",
    "Europe/London",
    "Australia/Sydney",
    "Asia/Tokyo",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Santiago",
    "Europe/Dublin",
    "Asia/Kathmandu",
]


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(SOME_ZONES).map(ZoneInfo),
    wall=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2035, 12, 31)),
)
def test_resolve_local_is_the_earliest_instant_reading_that_time_or_later(
    zone: ZoneInfo, wall: datetime
) -> None:
    got = resolve_local(wall, zone)
    reading = got.astimezone(zone).replace(tzinfo=None)
    assert reading >= wall.replace(fold=0)
    # one second earlier the clock still read less: no earlier instant qualifies
    assert (got - timedelta(seconds=1)).astimezone(zone).replace(tzinfo=None) < wall
    if wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall:
        assert reading == wall  # a time that exists fires at that time


# --- the runtime's own examples (FORMATS.md 1) ----------------------------------------------


def test_every_6_hours_next_0900_now_2000_gives_2100() -> None:
    rule = parse_repeat("every 6 hours")
    anchor = datetime(2026, 5, 2, 9)
    now = resolve_local(datetime(2026, 5, 2, 20), TOKYO)
    assert next_after(rule, anchor, TOKYO, now) == resolve_local(datetime(2026, 5, 2, 21), TOKYO)
    made = materialize(rule, anchor, TOKYO, None, "Check the report queue.", now)
    assert made == Materialized(
        text="2026-05-02 09:00 Check the report queue.",
        new_next_local=datetime(2026, 5, 2, 21),
        missed=1,  # 15:00 was due as well
        new_next_at=utc(2026, 5, 2, 12),
    )


def test_every_3_days_next_0501_now_0509_gives_0510() -> None:
    rule = parse_repeat("every 3 days")
    anchor = datetime(2026, 5, 1, 9)
    now = resolve_local(datetime(2026, 5, 9, 10), LONDON)
    assert next_after(rule, anchor, LONDON, now) == resolve_local(datetime(2026, 5, 10, 9), LONDON)
    due = due_occurrences(rule, resolve_local(anchor, LONDON), LONDON, now)
    assert due == [utc(2026, 5, 1, 8), utc(2026, 5, 4, 8), utc(2026, 5, 7, 8)]
    made = materialize(rule, anchor, LONDON, "Europe/London", "Water the plants", now)
    assert made is not None
    # three periods due, one TODO entry, dated with the old Next
    assert made.text == "2026-05-01 09:00 (Europe/London) Water the plants"
    assert made.missed == 2
    assert made.new_next_local == datetime(2026, 5, 10, 9)


def test_weekly_tokyo_is_due_at_exactly_next_and_moves_a_week() -> None:
    rule = parse_repeat("weekly")
    anchor = datetime(2026, 5, 7, 15)
    now = utc(2026, 5, 7, 6)  # = 15:00 JST
    assert is_due(resolve_local(anchor, TOKYO), now)
    made = materialize(rule, anchor, TOKYO, "Asia/Tokyo", "Play tennis.", now)
    assert made == Materialized(
        text="2026-05-07 15:00 (Asia/Tokyo) Play tennis.",
        new_next_local=datetime(2026, 5, 14, 15),
        missed=0,
        new_next_at=utc(2026, 5, 14, 6),
    )
    assert next_after(rule, anchor, TOKYO, now) == utc(2026, 5, 14, 6)
    assert (
        materialize(rule, anchor, TOKYO, "Asia/Tokyo", "Play tennis.", now - timedelta(microseconds=1))
        is None
    )


# --- schedules ----------------------------------------------------------------------------------


def test_occurrences_window_is_open_at_start_closed_at_end() -> None:
    got = list(occurrences(DAILY, datetime(2026, 1, 1, 9), ZUTC, utc(2026, 1, 2, 9), utc(2026, 1, 4, 9)))
    assert got == [utc(2026, 1, 3, 9), utc(2026, 1, 4, 9)]


def test_nothing_fires_before_the_anchor() -> None:
    anchor = datetime(2026, 6, 10, 9)
    got = list(occurrences(DAILY, anchor, ZUTC, utc(2026, 1, 1), utc(2026, 6, 12)))
    assert got == [utc(2026, 6, 10, 9), utc(2026, 6, 11, 9)]
    assert next_after(DAILY, anchor, ZUTC, utc(2020, 1, 1)) == utc(2026, 6, 10, 9)


def test_empty_window_and_strictly_after_now() -> None:
    anchor = datetime(2026, 1, 1, 9)
    assert list(occurrences(DAILY, anchor, ZUTC, utc(2026, 2, 1), utc(2026, 1, 1))) == []
    assert next_after(DAILY, anchor, ZUTC, utc(2026, 1, 5, 9)) == utc(2026, 1, 6, 9)


@pytest.mark.parametrize(
    ("rule", "expected_days"),
    [("weekly", [1, 8, 15]), ("every 2 days", [1, 3, 5, 7, 9, 11, 13, 15]), ("every 5 days", [1, 6, 11])],
)
def test_calendar_steps(rule: str, expected_days: list[int]) -> None:
    got = list(
        occurrences(
            parse_repeat(rule), datetime(2026, 1, 1, 7, 45), ZUTC, utc(2025, 12, 1), utc(2026, 1, 15, 8)
        )
    )
    assert got == [utc(2026, 1, d, 7, 45) for d in expected_days]


def test_hours_keep_the_anchor_phase_far_from_it() -> None:
    rule = parse_repeat("every 7 hours")
    anchor = datetime(2026, 1, 1, 0, 10)
    now = utc(2026, 3, 1, 12)
    got = next_after(rule, anchor, ZUTC, now)
    assert (got - utc(2026, 1, 1, 0, 10)) % timedelta(hours=7) == timedelta(0)
    assert now < got <= now + timedelta(hours=7)


def test_cron_weekdays_from_friday_evening_to_monday() -> None:
    rule = Repeat(RepeatKind.CRON, cron="0 9 * * 1-5")
    assert next_after(rule, datetime(2026, 1, 1), NY, utc(2026, 5, 8, 14)) == utc(2026, 5, 11, 13)


def test_cron_with_a_list_and_the_anchor_as_lower_bound() -> None:
    rule = parse_repeat("cron 0 9;17 * * *")
    got = list(occurrences(rule, datetime(2026, 5, 10, 12), ZUTC, utc(2026, 5, 1), utc(2026, 5, 11, 23)))
    assert got == [utc(2026, 5, 10, 17), utc(2026, 5, 11, 9), utc(2026, 5, 11, 17)]


def test_cron_that_never_matches() -> None:
    rule = Repeat(RepeatKind.CRON, cron="0 0 30 2 *")
    assert list(occurrences(rule, datetime(2026, 1, 1), ZUTC, utc(2026, 1, 1), utc(2030, 1, 1))) == []
    with pytest.raises(InvalidInput, match="never fires"):
        next_after(rule, datetime(2026, 1, 1), ZUTC, utc(2026, 1, 1))
    with pytest.raises(InvalidInput, match="never fires"):
        materialize(rule, datetime(2026, 1, 1), ZUTC, None, "x", utc(2026, 1, 2))


def test_cron_rule_without_expression() -> None:
    with pytest.raises(InvalidInput, match="cron expression"):
        next_after(Repeat(RepeatKind.CRON), datetime(2026, 1, 1), ZUTC, utc(2026, 1, 1))


def test_naive_and_aware_mixups_are_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        next_after(DAILY, utc(2026, 1, 1), ZUTC, utc(2026, 1, 1))
    with pytest.raises(InvalidInput):
        next_after(DAILY, datetime(2026, 1, 1), ZUTC, datetime(2026, 1, 1))
    with pytest.raises(InvalidInput):
        list(occurrences(DAILY, datetime(2026, 1, 1), ZUTC, datetime(2026, 1, 1), utc(2026, 2, 1)))
    with pytest.raises(InvalidInput):
        is_due(datetime(2026, 1, 1), utc(2026, 1, 1))
    with pytest.raises(InvalidInput):
        materialize(DAILY, utc(2026, 1, 1), ZUTC, None, "x", utc(2026, 1, 1))


RULES = [
    "daily",
    "weekly",
    "every 2 days",
    "every 3 days",
    "every 1 hour",
    "every 5 hours",
    "every 25 hours",
    "cron 30 2 * * *",
    "cron */20 0-3 * * *",
    "cron 0 9 * * 1-5",
]


@settings(max_examples=150, deadline=None)
@given(
    rule=st.sampled_from(RULES).map(parse_repeat),
    zone=st.sampled_from(SOME_ZONES).map(ZoneInfo),
    anchor=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1)).map(
        lambda d: d.replace(second=0, microsecond=0)
    ),
    offset=st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=60)),
    span=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=40)),
)
def test_occurrences_agree_with_a_heartbeat_calling_next_after(
    rule: Repeat, zone: ZoneInfo, anchor: datetime, offset: timedelta, span: timedelta
) -> None:
    start = resolve_local(anchor, zone) + offset
    end = start + span
    listed = list(occurrences(rule, anchor, zone, start, end))
    assert all(start < at <= end for at in listed)
    assert all(a < b for a, b in pairwise(listed))
    chained: list[datetime] = []
    now = start
    while (now := next_after(rule, anchor, zone, now)) <= end:
        chained.append(now)
    assert chained == listed


@settings(max_examples=100, deadline=None)
@given(
    rule=st.sampled_from(["daily", "weekly", "every 3 days"]).map(parse_repeat),
    zone=st.sampled_from(SOME_ZONES).map(ZoneInfo),
    anchor=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1)).map(
        lambda d: d.replace(second=0, microsecond=0)
    ),
    late=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=30)),
)
def test_materialize_keeps_the_wall_clock_time_of_calendar_rules(
    rule: Repeat, zone: ZoneInfo, anchor: datetime, late: timedelta
) -> None:
    now = resolve_local(anchor, zone) + late
    made = materialize(rule, anchor, zone, None, "x", now)
    assert made is not None
    assert made.new_next_local.time() == anchor.time()
    assert made.new_next_at > now
    assert made.new_next_at == resolve_local(made.new_next_local, zone)
    assert made.missed == len(due_occurrences(rule, resolve_local(anchor, zone), zone, now)) - 1


# --- due, materialise, missed policies -------------------------------------------------------


def test_is_due_is_inclusive() -> None:
    assert is_due(utc(2026, 5, 7, 6), utc(2026, 5, 7, 6))
    assert is_due(utc(2026, 5, 7, 6), utc(2026, 5, 7, 6, 0, 1))
    assert not is_due(utc(2026, 5, 7, 6, 0, 0, 1), utc(2026, 5, 7, 6))


def test_due_occurrences() -> None:
    assert due_occurrences(DAILY, utc(2026, 5, 1, 9), ZUTC, utc(2026, 5, 1, 8, 59)) == []
    assert due_occurrences(DAILY, utc(2026, 5, 1, 9), ZUTC, utc(2026, 5, 1, 9)) == [utc(2026, 5, 1, 9)]
    assert due_occurrences(DAILY, utc(2026, 5, 1, 9), ZUTC, utc(2026, 5, 3, 12)) == [
        utc(2026, 5, 1, 9),
        utc(2026, 5, 2, 9),
        utc(2026, 5, 3, 9),
    ]


def test_due_occurrences_of_hours_step_from_the_instant_not_its_wall_clock() -> None:
    # 06:30Z is the second 01:30 in New York; its wall clock alone would mean 05:30Z.
    rule = parse_repeat("every 5 hours")
    got = due_occurrences(rule, utc(2026, 11, 1, 6, 30), NY, utc(2026, 11, 1, 17))
    assert got == [utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 11, 30), utc(2026, 11, 1, 16, 30)]


def test_due_occurrences_returns_utc_for_any_aware_next_at() -> None:
    next_at = datetime(2026, 5, 7, 15, tzinfo=TOKYO)
    got = due_occurrences(DAILY, next_at, TOKYO, utc(2026, 5, 8, 7))
    assert got == [utc(2026, 5, 7, 6), utc(2026, 5, 8, 6)]
    assert all(g.tzinfo is UTC for g in got)


@pytest.mark.parametrize(
    ("label", "prefix"),
    [(None, "2026-05-01 09:00 "), ("", "2026-05-01 09:00 "), ("UTC", "2026-05-01 09:00 (UTC) ")],
)
def test_materialize_text_with_and_without_tz(label: str | None, prefix: str) -> None:
    content = "Remind [John](tg:@john) | to submit report."
    made = materialize(DAILY, datetime(2026, 5, 1, 9), ZUTC, label, content, utc(2026, 5, 1, 9, 30))
    assert made is not None
    assert made.text == prefix + content


def test_materialize_many_missed_periods_is_one_entry() -> None:
    made = materialize(
        parse_repeat("every 1 hour"), datetime(2026, 5, 1, 0), ZUTC, None, "ping", utc(2026, 5, 3, 0, 30)
    )
    assert made is not None
    assert made.text == "2026-05-01 00:00 ping"
    assert made.missed == 48
    assert made.new_next_local == datetime(2026, 5, 3, 1)


def test_materialize_not_due_is_none() -> None:
    assert materialize(DAILY, datetime(2026, 5, 1, 9), ZUTC, None, "x", utc(2026, 5, 1, 8, 59, 59)) is None


A, B, C = utc(2026, 5, 1), utc(2026, 5, 2), utc(2026, 5, 3)


@pytest.mark.parametrize(
    ("policy", "due", "runs"),
    [
        (MissedPolicy.ONCE, [A, B, C], [C]),
        (MissedPolicy.ALL, [A, B, C], [A, B, C]),
        (MissedPolicy.SKIP, [A, B, C], []),
        (MissedPolicy.ONCE, [A], [A]),
        (MissedPolicy.ALL, [A], [A]),
        (MissedPolicy.SKIP, [A], [A]),
        (MissedPolicy.ONCE, [], []),
        (MissedPolicy.ALL, [], []),
        (MissedPolicy.SKIP, [], []),
    ],
)
def test_runs_for(policy: MissedPolicy, due: list[datetime], runs: list[datetime]) -> None:
    assert runs_for(policy, due) == runs


def test_missed_policy_values_are_the_stored_words() -> None:
    assert [p.value for p in MissedPolicy] == ["skip", "once", "all"]
    assert MissedPolicy("once") is MissedPolicy.ONCE


# --- PROACTIVE.md periods -------------------------------------------------------------------


def test_period_keys() -> None:
    when = datetime(2026, 5, 4, 10, 59)
    assert period_key(Frequency.HOURLY, when) == "2026-05-04T10"
    assert period_key(Frequency.DAILY, when) == "2026-05-04"
    assert period_key(Frequency.WEEKLY, when) == "2026-05-04"  # a Monday
    assert period_key(Frequency.WEEKLY, datetime(2026, 5, 10, 23, 59)) == "2026-05-04"  # its Sunday
    assert period_key(Frequency.MONTHLY, when) == "2026-05"


def test_weekly_period_spans_the_year_boundary() -> None:
    week = [datetime(2026, 12, 28) + timedelta(days=i, hours=i) for i in range(7)]
    assert {period_key(Frequency.WEEKLY, d) for d in week} == {"2026-12-28"}
    assert period_key(Frequency.WEEKLY, datetime(2026, 12, 27, 23, 59)) == "2026-12-21"
    assert period_key(Frequency.WEEKLY, datetime(2027, 1, 4)) == "2027-01-04"
    # calendar year + ISO week would read "2024-W01" here and "2025-W01" five days later
    assert period_key(Frequency.WEEKLY, datetime(2024, 12, 30)) == period_key(
        Frequency.WEEKLY, datetime(2025, 1, 5)
    )


def test_period_key_of_an_aware_time_uses_its_wall_clock() -> None:
    when = datetime(2026, 5, 4, 23, 30, tzinfo=NY)  # already 5 May in UTC
    assert period_key(Frequency.DAILY, when) == "2026-05-04"


def due(
    freq: Frequency,
    now: datetime,
    *,
    time: str | None = None,
    day: str | None = None,
    last: str | None = None,
    tick: timedelta = timedelta(minutes=30),
) -> bool:
    return proactive_due(freq, time=time, day=day, last_period=last, now_local=now, tick=tick)


def test_hourly() -> None:
    now = datetime(2026, 5, 4, 10, 40)
    assert due(Frequency.HOURLY, now)
    assert due(Frequency.HOURLY, now, last="2026-05-04T09")
    assert not due(Frequency.HOURLY, now, last="2026-05-04T10")
    assert due(Frequency.HOURLY, now, time="23:00", day="sunday")  # hourly has no window


@pytest.mark.parametrize(
    ("hhmm", "expected"),
    [("07:59", False), ("08:00", True), ("08:15", True), ("08:30", True), ("08:31", False), ("20:00", False)],
)
def test_daily_time_window_edges(hhmm: str, expected: bool) -> None:
    h, m = map(int, hhmm.split(":"))
    assert due(Frequency.DAILY, datetime(2026, 5, 4, h, m), time="08:00") is expected


def test_daily_window_upper_edge_to_the_microsecond() -> None:
    # CraftBot's window [time, time + 30 minutes] includes its end, as its :30 tick sees it
    assert due(Frequency.DAILY, datetime(2026, 5, 4, 8, 30), time="08:00")
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 30, 0, 1), time="08:00")


def test_daily_once_per_day() -> None:
    now = datetime(2026, 5, 4, 8, 10)
    assert not due(Frequency.DAILY, now, time="08:00", last="2026-05-04")
    assert due(Frequency.DAILY, now, time="08:00", last="2026-05-03")
    assert due(Frequency.DAILY, now)
    assert not due(Frequency.DAILY, now, last="2026-05-04")
    assert due(Frequency.DAILY, now, day="friday")  # a day means nothing to a daily task


def test_daily_custom_tick_and_single_digit_hour() -> None:
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 16), time="8:00", tick=timedelta(minutes=15))
    assert due(Frequency.DAILY, datetime(2026, 5, 4, 8, 15), time="8:00", tick=timedelta(minutes=15))


def test_daily_window_running_past_midnight_belongs_to_yesterday() -> None:
    args = {"time": "23:45", "day": None}
    assert (
        due_period(Frequency.DAILY, **args, last_period=None, now_local=datetime(2026, 5, 4, 23, 45))
        == "2026-05-04"
    )
    # ticks on :00 and :30 still catch the 23:45 window, at midnight
    assert (
        due_period(Frequency.DAILY, **args, last_period=None, now_local=datetime(2026, 5, 5, 0, 0))
        == "2026-05-04"
    )
    assert (
        due_period(Frequency.DAILY, **args, last_period="2026-05-04", now_local=datetime(2026, 5, 5, 0, 0))
        is None
    )
    assert (
        due_period(Frequency.DAILY, **args, last_period=None, now_local=datetime(2026, 5, 5, 0, 15))
        == "2026-05-04"
    )
    assert (
        due_period(Frequency.DAILY, **args, last_period=None, now_local=datetime(2026, 5, 5, 0, 16)) is None
    )


def test_daily_time_inside_a_gap_opens_when_the_gap_ends() -> None:
    # 02:15 does not exist in New York on 8 March 2026; the window opens at 03:00 EDT
    at_0300 = datetime(2026, 3, 8, 7, tzinfo=UTC).astimezone(NY)
    assert due(Frequency.DAILY, at_0300, time="02:15")
    assert due(Frequency.DAILY, at_0300 + timedelta(minutes=30), time="02:15")
    assert not due(Frequency.DAILY, at_0300 + timedelta(minutes=31), time="02:15")


def test_daily_time_in_the_repeated_hour_opens_the_first_time() -> None:
    first = datetime(2026, 11, 1, 5, 20, tzinfo=UTC).astimezone(NY)  # 01:20 EDT
    second = datetime(2026, 11, 1, 6, 20, tzinfo=UTC).astimezone(NY)  # 01:20 EST
    assert due(Frequency.DAILY, first, time="01:15")
    assert not due(Frequency.DAILY, second, time="01:15")


def test_weekly_on_its_day_once_a_week() -> None:
    monday, tuesday = datetime(2026, 5, 4, 10), datetime(2026, 5, 5, 10)
    assert due(Frequency.WEEKLY, monday, day="monday")
    assert due(Frequency.WEEKLY, monday, day=" Monday ")
    assert not due(Frequency.WEEKLY, tuesday, day="monday")
    assert not due(Frequency.WEEKLY, monday, day="monday", last="2026-05-04")
    assert due(Frequency.WEEKLY, monday, day="monday", last="2026-04-27")
    assert due(Frequency.WEEKLY, monday.replace(hour=9, minute=5), day="monday", time="09:00")
    assert not due(Frequency.WEEKLY, monday.replace(hour=8, minute=55), day="monday", time="09:00")
    assert not due(Frequency.WEEKLY, tuesday.replace(hour=9, minute=5), day="monday", time="09:00")


def test_weekly_across_the_year_boundary() -> None:
    # ran on Thursday 31 December 2026; the next Thursday (7 January 2027) is a new week
    ran = period_key(Frequency.WEEKLY, datetime(2026, 12, 31, 9))
    assert ran == "2026-12-28"
    assert not due(Frequency.WEEKLY, datetime(2027, 1, 3, 9), day="sunday", last=ran)
    assert due(Frequency.WEEKLY, datetime(2027, 1, 7, 9), day="thursday", last=ran)
    assert due(Frequency.WEEKLY, datetime(2027, 1, 10, 9), day="sunday", last=ran)


def test_weekly_without_a_day_runs_once_in_the_week() -> None:
    assert due(Frequency.WEEKLY, datetime(2026, 5, 6, 10))
    assert not due(Frequency.WEEKLY, datetime(2026, 5, 6, 10), last="2026-05-04")


@pytest.mark.parametrize(
    ("day", "when", "expected"),
    [
        ("31", datetime(2026, 1, 31, 10), True),
        ("31", datetime(2026, 1, 30, 10), False),
        ("31", datetime(2026, 4, 30, 10), True),  # clamped: April has 30 days
        ("31", datetime(2026, 4, 29, 10), False),
        ("31", datetime(2026, 2, 28, 10), True),
        ("31", datetime(2028, 2, 28, 10), False),  # leap year: the 29th is the last day
        ("31", datetime(2028, 2, 29, 10), True),
        ("30", datetime(2026, 2, 28, 10), True),
        ("29", datetime(2026, 2, 28, 10), True),
        ("28", datetime(2028, 2, 28, 10), True),
        ("28", datetime(2028, 2, 29, 10), False),
        ("1", datetime(2026, 5, 1, 0, 0), True),
        ("1", datetime(2026, 5, 2, 10), False),
        ("15", datetime(2026, 5, 15, 10), True),
    ],
)
def test_monthly_day_clamped_to_the_month(day: str, when: datetime, expected: bool) -> None:
    assert due(Frequency.MONTHLY, when, day=day) is expected


def test_monthly_once_a_month_and_time_window() -> None:
    apr30 = datetime(2026, 4, 30, 8, 10)
    assert not due(Frequency.MONTHLY, apr30, day="31", last="2026-04")
    assert due(Frequency.MONTHLY, apr30, day="31", last="2026-03")
    assert due(Frequency.MONTHLY, apr30, day="31", time="08:00")
    assert not due(Frequency.MONTHLY, apr30.replace(hour=7, minute=50), day="31", time="08:00")


@pytest.mark.parametrize(
    ("freq", "time", "day"),
    [
        (Frequency.DAILY, "25:00", None),
        (Frequency.DAILY, "8am", None),
        (Frequency.DAILY, "08:60", None),
        (Frequency.WEEKLY, None, "funday"),
        (Frequency.WEEKLY, None, "mon"),
        (Frequency.MONTHLY, None, "32"),
        (Frequency.MONTHLY, None, "0"),
        (Frequency.MONTHLY, None, "last"),
        (Frequency.MONTHLY, None, "-1"),
    ],
)
def test_bad_time_or_day(freq: Frequency, time: str | None, day: str | None) -> None:
    with pytest.raises(InvalidInput):
        due(freq, datetime(2026, 5, 4, 10), time=time, day=day)


def test_tick_must_be_positive() -> None:
    with pytest.raises(InvalidInput, match="tick"):
        due(Frequency.DAILY, datetime(2026, 5, 4, 10), time="10:00", tick=timedelta(0))


# --- conditions -------------------------------------------------------------------------------

NOW = utc(2026, 5, 4, 14)


def conditions(
    names: list[str], local: datetime, *, spoke: datetime | None = None, hours: float = 4
) -> ConditionResult:
    return check_conditions(
        names, now_local=local, last_conversation_at=spoke, now=NOW, available_hours=hours
    )


@pytest.mark.parametrize(
    ("local", "ok"),
    [
        (datetime(2026, 5, 4, 9, 29), False),
        (datetime(2026, 5, 4, 9, 30), True),
        (datetime(2026, 5, 4, 15, 59), True),
        (datetime(2026, 5, 4, 16, 0), False),
        (datetime(2026, 5, 8, 12, 0), True),  # Friday
        (datetime(2026, 5, 9, 12, 0), False),  # Saturday
        (datetime(2026, 5, 10, 12, 0), False),  # Sunday
    ],
)
def test_market_hours_only(local: datetime, ok: bool) -> None:
    result = conditions(["market_hours_only"], local)
    assert result == ConditionResult(ok=ok, failed=[] if ok else ["market_hours_only"], passed_through=[])


@pytest.mark.parametrize(
    ("local", "ok"),
    [
        (datetime(2026, 5, 4, 3), True),
        (datetime(2026, 5, 8, 23, 59), True),
        (datetime(2026, 5, 9, 0, 0), False),
        (datetime(2026, 5, 10, 12), False),
    ],
)
def test_weekdays_only(local: datetime, ok: bool) -> None:
    assert conditions(["weekdays_only"], local).ok is ok


@pytest.mark.parametrize(
    ("spoke", "hours", "ok"),
    [
        (None, 4, False),
        (NOW - timedelta(hours=3, minutes=59), 4, True),
        (NOW - timedelta(hours=4), 4, True),
        (NOW - timedelta(hours=4, seconds=1), 4, False),
        (NOW - timedelta(minutes=90), 1, False),
        (NOW - timedelta(minutes=90), 1.5, True),
    ],
)
def test_user_available(spoke: datetime | None, hours: float, ok: bool) -> None:
    assert conditions(["user_available"], datetime(2026, 5, 4, 10), spoke=spoke, hours=hours).ok is ok


def test_unknown_conditions_are_passed_through_not_judged() -> None:
    monday_noon = datetime(2026, 5, 4, 12)
    result = conditions(["market_hours_only", "portfolio_changed", "Custom: only if it rains"], monday_noon)
    assert result == ConditionResult(
        ok=True, failed=[], passed_through=["portfolio_changed", "Custom: only if it rains"]
    )


def test_failures_keep_their_order_and_spelling() -> None:
    saturday = datetime(2026, 5, 9, 12)
    result = conditions(["Weekdays_Only", "mood_check", "user_available", " "], saturday)
    assert result == ConditionResult(
        ok=False, failed=["Weekdays_Only", "user_available"], passed_through=["mood_check"]
    )


def test_no_conditions_is_ok() -> None:
    assert conditions([], datetime(2026, 5, 9, 12)) == ConditionResult(ok=True, failed=[], passed_through=[])


def test_condition_inputs_are_checked() -> None:
    with pytest.raises(InvalidInput):
        check_conditions(
            [], now_local=datetime(2026, 5, 4), last_conversation_at=None, now=datetime(2026, 5, 4)
        )
    with pytest.raises(InvalidInput):
        check_conditions(
            [], now_local=datetime(2026, 5, 4), last_conversation_at=datetime(2026, 5, 4), now=NOW
        )
    with pytest.raises(InvalidInput):
        conditions([], datetime(2026, 5, 4), hours=-1)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("every 36525 days", True),
        ("every 36526 days", False),
        ("every 876600 hours", True),
        ("every 100000000 hours", False),
    ],
)
def test_a_step_is_at_most_a_hundred_years(text: str, ok: bool) -> None:
    """Like every duration hb reads: a longer step would overflow the calendar, never fire."""
    if ok:
        assert parse_repeat(text).n == int(text.split()[1])
    else:
        with pytest.raises(ValueError, match="over 100 years"):
            parse_repeat(text)


# --- occurrences counted, not listed: a Next decades back ------------------------------------


def _materialized_by_listing(
    rule: Repeat, anchor: datetime, zone: ZoneInfo, now: datetime, first: datetime
) -> tuple[datetime, int] | None:
    """materialize's new Next instant and missed count as it found them before: stepping through
    every slot after ``first`` up to the first after ``now``."""
    if first > now:
        return None
    for missed, at in enumerate(
        occurrences(rule, anchor, zone, first, now + timedelta(days=800), first=first)
    ):
        if at > now:
            return at, missed
    raise AssertionError("the rule never fires again")


@settings(max_examples=300, deadline=None)
@given(
    rule=st.sampled_from(RULES).map(parse_repeat),
    zone=st.sampled_from(SOME_ZONES).map(ZoneInfo),
    anchor=st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2028, 1, 1)).map(
        lambda d: d.replace(second=0, microsecond=0)
    ),
    shift=st.sampled_from([None, timedelta(hours=1), timedelta(hours=-1), timedelta(minutes=-30)]),
    offset=st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=60)),
    span=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=120)),
    keep=st.integers(1, 5),
)
def test_pending_occurrences_sum_up_what_occurrences_list(
    rule: Repeat,
    zone: ZoneInfo,
    anchor: datetime,
    shift: timedelta | None,
    offset: timedelta,
    span: timedelta,
    keep: int,
) -> None:
    """The count, the first and the latest ``keep`` of the occurrences in (start, end], for any
    rule, zone (daylight saving of an hour, of 30 minutes) and window; ``first`` given or not
    (the stored instant of a repeated local time differs from the anchor's first reading)."""
    first = None if shift is None else resolve_local(anchor, zone) + shift
    start = resolve_local(anchor, zone) + offset
    end = start + span
    listed = list(occurrences(rule, anchor, zone, start, end, first=first))
    got = pending_occurrences(rule, anchor, zone, start, end, first=first, keep=keep)
    if not listed:
        assert got is None
        return
    assert got == Pending(len(listed), listed[0], tuple(listed[-keep:]))


@settings(max_examples=150, deadline=None)
@given(
    rule=st.sampled_from(RULES).map(parse_repeat),
    zone=st.sampled_from(SOME_ZONES).map(ZoneInfo),
    anchor=st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2028, 1, 1)).map(
        lambda d: d.replace(second=0, microsecond=0)
    ),
    late=st.timedeltas(min_value=timedelta(days=-1), max_value=timedelta(days=90)),
)
def test_materialize_counts_the_missed_periods_it_used_to_step_through(
    rule: Repeat, zone: ZoneInfo, anchor: datetime, late: timedelta
) -> None:
    first = resolve_local(anchor, zone)
    now = first + late
    made = materialize(rule, anchor, zone, None, "x", now)
    expected = _materialized_by_listing(rule, anchor, zone, now, first)
    if expected is None:
        assert made is None
        return
    assert made is not None
    assert (made.new_next_at, made.missed) == expected


def test_a_next_typed_in_the_year_two_is_counted_not_stepped_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """An hourly rule whose Next reads 0002-01-01 has 17,750,168 occurrences by the end of 2026:
    a few readings of the wall clock count them (hb heartbeat took a minute listing them)."""
    from heartbeat.rules import recurrence

    readings = 0
    resolve = recurrence.resolve_local

    def counted(wall: datetime, zone: ZoneInfo) -> datetime:
        nonlocal readings
        readings += 1
        return resolve(wall, zone)

    monkeypatch.setattr(recurrence, "resolve_local", counted)
    anchor, now = datetime(2, 1, 1), utc(2026, 12, 6, 8, 30)
    hourly = pending_occurrences(
        parse_repeat("every 1 hour"), anchor, ZUTC, resolve(anchor, ZUTC), now, keep=100
    )
    daily = pending_occurrences(DAILY, anchor, NY, resolve(anchor, NY), now, keep=100)
    made = materialize(parse_repeat("every 1 hour"), anchor, ZUTC, None, "x", now)
    assert hourly is not None and daily is not None and made is not None
    assert hourly.count == 17_750_168 and hourly.latest[-1] == utc(2026, 12, 6, 8)
    assert len(hourly.latest) == 100 and hourly.first == utc(2, 1, 1, 1)
    assert daily.latest[-1] == resolve(datetime(2026, 12, 6), NY) and daily.exact
    assert (made.missed, made.new_next_at) == (hourly.count, utc(2026, 12, 6, 9))
    assert made.text == "0002-01-01 00:00 x"  # the year as mistermorph writes it (Go: 2006-01-02)
    assert readings < 300


def test_a_cron_rule_is_counted_up_to_a_limit_its_latest_found_before_the_end() -> None:
    every_minute = parse_repeat("cron * * * * *")
    anchor, now = datetime(2026, 1, 1), utc(2026, 12, 6, 8, 30)
    got = pending_occurrences(every_minute, anchor, ZUTC, resolve_local(anchor, ZUTC), now, keep=3)
    assert got is not None and not got.exact and got.count == CRON_COUNT_LIMIT
    assert got.first == utc(2026, 1, 1, 0, 1)
    assert got.latest == (utc(2026, 12, 6, 8, 28), utc(2026, 12, 6, 8, 29), utc(2026, 12, 6, 8, 30))
