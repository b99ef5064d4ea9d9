"""Reading times and durations, and the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from heartbeat.clock import Clock, format_duration, isoformat, load_zone, parse_duration, parse_when
from heartbeat.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", timedelta(minutes=30)),
        ("6h", timedelta(hours=6)),
        ("2d", timedelta(days=2)),
        ("1w", timedelta(weeks=1)),
        ("1h30m", timedelta(minutes=90)),
        ("PT6H", timedelta(hours=6)),
        ("P1DT2H", timedelta(days=1, hours=2)),
        ("pt45m", timedelta(minutes=45)),
        ("90s", timedelta(seconds=90)),
        ("36525d", timedelta(days=36525)),  # 100 years: the longest accepted
        ("1.5m", timedelta(seconds=90)),
        ("0.1h", timedelta(seconds=360)),
        ("1.4s", timedelta(seconds=1)),  # the ledger keeps whole seconds
        ("2.6s", timedelta(seconds=3)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "0m", "6", "h", "PT", "P", "six hours", "-5m", "1y"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(InvalidInput, match="bad duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    "text", ["36526d", "100000000d", "99999999999w", "P99999999999999999999D", "1" * 400 + "s"]
)
def test_durations_past_100_years_are_refused_not_overflowing_later(text: str) -> None:
    with pytest.raises(InvalidInput, match="longer than 100 years"):
        parse_duration(text, what="check_interval")


@pytest.mark.parametrize("text", ["0.5s", "0.0000001s", "0.4s", "0.000001m"])
def test_durations_under_a_second_are_refused(text: str) -> None:
    """They became no interval at all (null) where a task's interval was stored."""
    with pytest.raises(InvalidInput, match=f"bad duration '{text}': shorter than a second"):
        parse_duration(text)


def test_format_duration() -> None:
    assert [format_duration(timedelta(seconds=s)) for s in (90 * 60, 6 * 3600, 2 * 86400, 604800, 45)] == [
        "90m",
        "6h",
        "2d",
        "1w",
        "45s",
    ]


def test_parse_when() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    assert parse_when("2026-05-01T09:00", tokyo) == datetime(2026, 5, 1, 0, 0, tzinfo=UTC)
    assert parse_when("2026-05-01", tokyo) == datetime(2026, 4, 30, 15, 0, tzinfo=UTC)
    assert parse_when("2026-05-01T09:00:00Z", tokyo) == datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    # the malformed form heartbeat.py writes
    assert parse_when("2026-04-25T12:00:00+00:00Z", tokyo) == datetime(2026, 4, 25, 12, 0, tzinfo=UTC)
    assert parse_when("2026-05-01T09:00:00-04:00", tokyo) == datetime(2026, 5, 1, 13, 0, tzinfo=UTC)
    with pytest.raises(InvalidInput, match="bad time '2026-13-01'"):
        parse_when("2026-13-01", tokyo)


def test_naive_time_in_a_daylight_saving_gap_resolves_to_the_gap_end() -> None:
    ny = ZoneInfo("America/New_York")
    assert parse_when("2026-03-08T02:30", ny) == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)


def test_clock_sources() -> None:
    fixed = datetime(2026, 5, 1, 9, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert Clock(fixed).now() == datetime(2026, 5, 1, 0, 0, tzinfo=UTC)
    ticks = iter([datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)])
    clock = Clock(lambda: next(ticks))
    assert clock.now().day == 1 and clock.now().day == 2
    assert Clock().now().tzinfo is UTC


def test_zones() -> None:
    assert load_zone("utc").key == "UTC"
    assert load_zone("Europe/London").key == "Europe/London"
    for bad in ("Mars/Base", "../etc/passwd", "", "/etc/localtime"):
        with pytest.raises(InvalidInput, match="unknown timezone"):
            load_zone(bad)
    assert isoformat(datetime(2026, 5, 1, tzinfo=UTC), ZoneInfo("Asia/Tokyo")) == "2026-05-01T09:00:00+09:00"


def test_a_now_callable_is_read_like_a_now_value(tmp_path: Path) -> None:
    """SPEC 1: naive times are in the workspace timezone, whether given or returned by a callable."""
    from heartbeat import Ledger

    with Ledger.open(workspace=tmp_path, now=datetime(2026, 5, 1, 10, 0)) as ledger:
        ledger.config_set("timezone", "Asia/Tokyo")
    expected = datetime(2026, 5, 1, 1, 0, tzinfo=UTC)  # 10:00 in Tokyo
    for now in (datetime(2026, 5, 1, 10, 0), lambda: datetime(2026, 5, 1, 10, 0), lambda: "2026-05-01T10:00"):
        with Ledger.open(workspace=tmp_path, now=now) as ledger:
            assert ledger.now() == expected
            assert ledger.add("x")["created_at"] == "2026-05-01T10:00:00+09:00"
    with Ledger.open(workspace=tmp_path, now=lambda: 7) as ledger, pytest.raises(InvalidInput, match="int"):
        ledger.now()


# --- one ISO 8601 grammar for the command line and the files ---------------------------------

ONE_GRAMMAR = [
    "2026-05-01",
    "2026-05-01T09:00",
    "2026-05-01 09:00",
    "2026-05-01t09:00:30",
    "2026-05-01T09:00:30.250",
    "2026-05-01T09:00:30,250Z",
    "2026-05-01T09:00+08:00",
    "2026-05-01T09:00+0800",
    "2026-05-01T09:00+08",
    "2026-05-01T09:00:00+00:00Z",  # heartbeat.py's form
]
NOT_ISO = [
    "2026-W18-5",
    "2026-121",
    "20260501T0900",
    "2026-05-01T9:00",
    "2026-05-01Z",
    "2026-05-01T09:00ZZ",
    "٢٠٢٦-05-01",
]


def test_the_command_line_reads_the_one_grammar() -> None:
    from zoneinfo import ZoneInfo

    from heartbeat.clock import parse_when
    from heartbeat.errors import InvalidInput
    from heartbeat.formats.timestamps import read_iso

    zone = ZoneInfo("Asia/Tokyo")
    for text in ONE_GRAMMAR:
        parsed = read_iso(text)
        expected = parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)
        assert parse_when(text, zone) == expected.astimezone(UTC), text
    for text in NOT_ISO:
        with pytest.raises(InvalidInput, match="expected ISO 8601"):
            parse_when(text, zone)


def test_the_files_add_a_gate_a_time_with_an_offset() -> None:
    from heartbeat.formats.timestamps import parse_timestamp

    with_offset = [t for t in ONE_GRAMMAR if t.endswith(("Z", "+08:00", "+0800", "+08"))]
    assert len(with_offset) == 5
    for text in with_offset:
        assert parse_timestamp(text).tzinfo is UTC, text
    for text in [t for t in ONE_GRAMMAR if t not in with_offset] + NOT_ISO:
        with pytest.raises(ValueError):
            parse_timestamp(text)
