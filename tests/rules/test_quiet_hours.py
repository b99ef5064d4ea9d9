"""Quiet hours exactly as FORMATS.md section 4 describes them."""

from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.rules.quiet_hours import QuietHours, is_quiet

SH = ZoneInfo("Asia/Shanghai")
NIGHT = QuietHours.parse("23:00-08:00")


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 5, 1, hour, minute, second, tzinfo=SH)


def test_parse_reads_minutes_of_day() -> None:
    assert QuietHours.parse("23:00-08:00") == QuietHours(start=23 * 60, end=8 * 60)
    assert QuietHours.parse(" 7:05 - 9:30 ") == QuietHours(start=425, end=570)


@pytest.mark.parametrize("text", ["", "  ", "off", "OFF"])
def test_off_or_blank_means_no_quiet_hours(text: str) -> None:
    assert QuietHours.parse(text) is None
    assert is_quiet(None, time(3, 0)) is False


@pytest.mark.parametrize(
    "text",
    ["23:00", "23-08", "23:00-08", "25:00-08:00", "23:60-08:00", "24:00-08:00", "a-b", "2300-0800"],
)
def test_bad_text_is_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInput, match="quiet hours"):
        QuietHours.parse(text)


def test_24_00_only_as_an_end() -> None:
    evening = QuietHours.parse("20:00-24:00")
    assert evening == QuietHours(start=1200, end=1440)
    assert is_quiet(evening, time(23, 59, 59)) is True
    assert is_quiet(evening, time(0, 0)) is False
    assert is_quiet(evening, time(19, 59)) is False
    with pytest.raises(InvalidInput, match="only as the end"):
        QuietHours.parse("24:00-06:00")


def test_render_round_trips() -> None:
    assert NIGHT is not None
    assert NIGHT.render() == "23:00-08:00"
    assert QuietHours.parse("7:05-24:00") == QuietHours.parse(QuietHours(425, 1440).render())


def test_night_window_wraps_past_midnight_in_the_workspace_zone() -> None:
    assert is_quiet(NIGHT, at(23, 30)) is True
    assert is_quiet(NIGHT, at(23, 0)) is True  # start inclusive
    assert is_quiet(NIGHT, at(22, 59, 59)) is False
    assert is_quiet(NIGHT, at(3, 0)) is True
    assert is_quiet(NIGHT, at(7, 59)) is True
    assert is_quiet(NIGHT, at(7, 59, 59)) is True
    assert is_quiet(NIGHT, at(8, 0)) is False  # end exclusive
    assert is_quiet(NIGHT, at(12, 0)) is False


def test_a_utc_instant_is_judged_after_conversion_to_the_workspace_zone() -> None:
    # 15:30 UTC is 23:30 in Shanghai: quiet there, although 15:30 is not quiet.
    instant = datetime(2026, 5, 1, 15, 30, tzinfo=UTC)
    assert is_quiet(NIGHT, instant) is False
    assert is_quiet(NIGHT, instant.astimezone(SH)) is True


NY = ZoneInfo("America/New_York")
EARLY = QuietHours.parse("01:00-03:00")


def quiet_in_ny(month: int, day: int, hour: int, minute: int) -> bool:
    """Whether 01:00-03:00 is quiet in New York at the given UTC time of 2026."""
    return is_quiet(EARLY, datetime(2026, month, day, hour, minute, tzinfo=UTC).astimezone(NY))


def test_quiet_hours_follow_the_wall_clock_across_daylight_saving_changes() -> None:
    # As OpenClaw's active hours do: the window is read on the local clock of each instant.
    # 2026-03-08: 02:00-02:59 does not exist in New York, so 01:00-03:00 lasts one hour.
    assert quiet_in_ny(3, 8, 5, 59) is False  # 00:59 EST
    assert quiet_in_ny(3, 8, 6, 0) is True  # 01:00 EST
    assert quiet_in_ny(3, 8, 6, 59) is True  # 01:59 EST
    assert quiet_in_ny(3, 8, 7, 0) is False  # 03:00 EDT, one minute later
    # 2026-11-01: 01:00-01:59 happens twice, so the window lasts three hours.
    assert quiet_in_ny(11, 1, 5, 0) is True  # 01:00 EDT
    assert quiet_in_ny(11, 1, 6, 30) is True  # 01:30 EST, the second time
    assert quiet_in_ny(11, 1, 7, 59) is True  # 02:59 EST
    assert quiet_in_ny(11, 1, 8, 0) is False  # 03:00 EST


def minute(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


@pytest.mark.parametrize(
    ("quiet", "active_start", "active_end"),
    [
        ("23:00-08:00", "08:00", "23:00"),
        ("00:00-07:00", "07:00", "24:00"),
        ("20:00-24:00", "00:00", "20:00"),
        ("08:00-23:00", "23:00", "08:00"),
        ("23:59-00:00", "00:00", "23:59"),
    ],
)
def test_quiet_hours_are_openclaws_active_hours_inverted(
    quiet: str, active_start: str, active_end: str
) -> None:
    # OpenClaw's activeHours {start, end}: active from start (inclusive) to end (exclusive),
    # wrapping past midnight, 24:00 only as the end. hb's quiet window is the rest of the day.
    start, end = minute(active_start), minute(active_end)
    for m in range(24 * 60):
        active = start <= m < end if start < end else m >= start or m < end
        assert is_quiet(QuietHours.parse(quiet), time(m // 60, m % 60)) is not active


def test_openclaws_never_active_window_is_hb_quiet_all_day() -> None:
    # OpenClaw reads an active window whose start equals its end as never active; in hb a
    # start equal to the end is an empty quiet window (never quiet), and all day is 00:00-24:00.
    assert all(is_quiet(QuietHours.parse("00:00-24:00"), time(m // 60, m % 60)) for m in range(24 * 60))
    assert not any(is_quiet(QuietHours.parse("09:00-09:00"), time(m // 60, m % 60)) for m in range(24 * 60))


def test_a_window_that_does_not_wrap() -> None:
    lunch = QuietHours.parse("13:00-14:00")
    assert lunch is not None and not lunch.wraps_midnight
    assert is_quiet(lunch, time(12, 59, 59)) is False
    assert is_quiet(lunch, time(13, 0)) is True
    assert is_quiet(lunch, time(13, 59)) is True
    assert is_quiet(lunch, time(14, 0)) is False
    assert is_quiet(lunch, time(23, 30)) is False


@pytest.mark.parametrize("clock", [time(0, 0), time(9, 0), time(9, 0, 30), time(23, 59)])
def test_start_equal_to_end_is_never_quiet(clock: time) -> None:
    assert is_quiet(QuietHours.parse("09:00-09:00"), clock) is False


def test_whole_day() -> None:
    assert all(is_quiet(QuietHours.parse("00:00-24:00"), time(h, 30)) for h in range(24))


def test_out_of_range_minutes_are_refused() -> None:
    with pytest.raises(InvalidInput):
        QuietHours(start=1440, end=0)


windows = st.tuples(st.integers(0, 1439), st.integers(0, 1439)).filter(lambda w: w[0] != w[1])
clocks = st.times()


@given(window=windows, clock=clocks)
def test_a_window_and_its_inverse_split_the_day(window: tuple[int, int], clock: time) -> None:
    start, end = window
    quiet = is_quiet(QuietHours(start, end), clock)
    assert quiet != is_quiet(QuietHours(end, start), clock)
