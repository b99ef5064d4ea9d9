"""ISO 8601 timestamps of the JSON state files: reading every form seen, writing one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.formats.timestamps import format_timestamp, is_malformed, parse_timestamp

NOON = datetime(2026, 4, 25, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-04-25T12:00:00Z", NOON),
        ("2026-04-25T12:00:00+00:00", NOON),
        ("2026-04-25T12:00:00z", NOON),
        ("2026-04-25 12:00:00Z", NOON),
        ("2026-04-25T12:00Z", NOON),
        ("2026-04-25T17:30:00+05:30", NOON),
        ("2026-04-25T17:30:00+0530", NOON),
        ("2026-04-25T07:00:00-05:00", NOON),
        ("2026-04-25T12:00:00.250Z", NOON.replace(microsecond=250000)),
        ("2026-04-25T12:00:00,5Z", NOON.replace(microsecond=500000)),
        ("2026-04-25T12:00:00.123456789Z", NOON.replace(microsecond=123456)),
        # heartbeat.py's isoformat() + "Z": the offset is the truth
        ("2026-04-25T12:00:00+00:00Z", NOON),
        ("2026-04-25T12:00:00.000001+00:00Z", NOON.replace(microsecond=1)),
        ("2026-04-25T17:30:00+05:30Z", NOON),
        ("  2026-04-25T12:00:00Z\n", NOON),
    ],
)
def test_parse_reads_every_form_as_aware_utc(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026-04-25T12:00:00",  # naive: the zone would be a guess
        "2026-04-25",
        "2026-04-25T12:00:00ZZ",
        "2026-04-25T12:00:00Z+00:00",
        "2026-13-01T12:00:00Z",
        "2026-04-25T24:00:00Z",
        "yesterday",
        "",
        "1714550400",
    ],
)
def test_parse_rejects_what_is_not_an_offset_date_time(text: str) -> None:
    with pytest.raises(ValueError, match=r"timestamp|ISO 8601"):
        parse_timestamp(text)


def test_format_writes_utc_z_with_seconds() -> None:
    assert format_timestamp(NOON) == "2026-04-25T12:00:00Z"
    tokyo = timezone(timedelta(hours=9))
    assert format_timestamp(datetime(2026, 4, 25, 21, 0, tzinfo=tokyo)) == "2026-04-25T12:00:00Z"


def test_format_writes_microseconds_only_when_nonzero() -> None:
    assert format_timestamp(NOON.replace(microsecond=5)) == "2026-04-25T12:00:00.000005Z"
    assert format_timestamp(NOON.replace(microsecond=0)) == "2026-04-25T12:00:00Z"


def test_format_pads_early_years() -> None:
    assert format_timestamp(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"


def test_format_refuses_naive_datetime() -> None:
    with pytest.raises(ValueError, match="naive"):
        format_timestamp(datetime(2026, 4, 25, 12, 0))


@pytest.mark.parametrize(
    ("text", "malformed"),
    [
        ("2026-04-25T12:00:00+00:00Z", True),
        ("2026-04-25T12:00:00.123+05:30Z", True),
        ("2026-04-25T12:00:00-03:00Z", True),
        ("2026-04-25T12:00:00-0300Z", True),
        ("2026-04-25T12:00:00+05Z", True),
        (" 2026-04-25T12:00:00+00:00z ", True),
        ("2026-04-25T12:00:00ZZ", False),
        ("task-2026-04-25Z", False),
        ("2026-04-25T12:00:00Z", False),
        ("2026-04-25T12:00:00+00:00", False),
        ("2026-02-30T12:00:00+00:00Z", False),  # impossible date: not ours to rewrite
        ("ends with +00:00Z", False),
        ("", False),
    ],
)
def test_is_malformed_names_only_the_offset_plus_z_form(text: str, malformed: bool) -> None:
    assert is_malformed(text) is malformed


aware_datetimes = st.datetimes(
    min_value=datetime(1000, 1, 1),
    max_value=datetime(9998, 12, 31),
    timezones=st.builds(timezone, st.integers(-14 * 60, 14 * 60).map(lambda m: timedelta(minutes=m))),
)


@given(aware_datetimes)
def test_format_then_parse_is_the_same_instant(dt: datetime) -> None:
    text = format_timestamp(dt)
    assert text.endswith("Z")
    assert parse_timestamp(text) == dt


@given(aware_datetimes)
def test_format_writes_the_utc_isoformat_with_z(dt: datetime) -> None:
    utc = dt.astimezone(UTC).replace(tzinfo=None)
    spec = "microseconds" if utc.microsecond else "seconds"
    assert format_timestamp(dt) == utc.isoformat(timespec=spec) + "Z"


@given(aware_datetimes)
def test_the_seed_scripts_malformed_form_reads_as_the_same_instant(dt: datetime) -> None:
    malformed = dt.isoformat() + "Z"
    assert is_malformed(malformed)
    assert parse_timestamp(malformed) == dt
    assert format_timestamp(parse_timestamp(malformed)) == format_timestamp(dt)


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(["Z", "+00:00", "+05:30", "-11:00", "+14:00"]),
    st.sampled_from(["seconds", "milliseconds", "microseconds"]),
)
def test_the_common_form_reads_as_the_full_grammar_reads_it(dt: datetime, zone: str, spec: str) -> None:
    """parse_timestamp's shortcut for the form most programs write gives what hb's grammar does."""
    from heartbeat.formats.timestamps import read_iso

    text = dt.isoformat(timespec=spec) + zone
    assert parse_timestamp(text) == read_iso(text).astimezone(UTC)
    assert parse_timestamp(text).tzinfo is UTC


@settings(max_examples=400, deadline=None)
@given(value=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_the_written_text_is_isoformat_s(value: datetime) -> None:
    """hb puts a time's text together from looked-up digits; it is exactly what isoformat writes,
    every year from 1 to 9999 (padded to four digits), with and without microseconds."""
    from heartbeat.formats.timestamps import date_time_text

    assert date_time_text(value) == value.isoformat(" ")[:19]
    assert date_time_text(value, "T") == value.isoformat()[:19]
    aware = value.replace(tzinfo=UTC)
    spec = "microseconds" if value.microsecond else "seconds"
    assert format_timestamp(aware) == aware.isoformat(timespec=spec)[:-6] + "Z"
