"""The plain-SQL layer writes JSON exactly as json.dumps does, from encoders it makes once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.db.plain import Conn, json_text, read_time, sqlite_time, stamp

TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(TEXT, TEXT, max_size=4) | st.dictionaries(TEXT, VALUES, max_size=4) | VALUES)
def test_conn_json_is_json_dumps(value: Any) -> None:
    got = Conn.json(value)
    assert got == (None if value is None else json.dumps(value))


FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=400, deadline=None)
@given(value=st.recursive(VALUES | FLOATS, lambda inner: st.lists(inner, max_size=3), max_leaves=8))
def test_json_text_is_json_dumps_without_ascii_escapes(value: Any) -> None:
    """The queue's one encoder writes what json.dumps(ensure_ascii=False) writes, floats included."""
    assert json_text(value) == json.dumps(value, ensure_ascii=False)


def test_json_text_refuses_what_json_dumps_refuses() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        json_text({"outcome": looped})
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"outcome": object()})
    with pytest.raises(TypeError):
        json_text({(1, 2): "a tuple is no key"})


INSTANTS = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(9998, 12, 31), timezones=st.just(UTC) | st.timezones()
)


@settings(max_examples=400, deadline=None)
@given(value=INSTANTS)
def test_stored_time_round_trips(value: datetime) -> None:
    """A bound time is the text SQLAlchemy's UTCDateTime stores (naive UTC, microseconds), and
    reading it back gives the same instant, aware UTC."""
    text = stamp(value)
    utc = value.astimezone(UTC)
    assert text == utc.replace(tzinfo=None).isoformat(" ", "microseconds")
    assert sqlite_time(value) == text  # the queue's own binder writes the same text
    back = read_time(text)
    assert back == utc and back is not None and back.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-04-25", datetime(2026, 4, 25, tzinfo=UTC)),  # a date alone: its midnight, UTC
        ("2026-04-25 12:00:00", datetime(2026, 4, 25, 12, tzinfo=UTC)),
        ("2026-04-25 12:00:00.250000", datetime(2026, 4, 25, 12, 0, 0, 250000, tzinfo=UTC)),
        ("2026-04-25T12:00", datetime(2026, 4, 25, 12, tzinfo=UTC)),
    ],
)
def test_read_time_reads_every_stored_form_as_utc(text: str, expected: datetime) -> None:
    got = read_time(text)
    assert got == expected and got is not None and got.tzinfo is UTC


def test_early_years_are_stored_with_four_digits() -> None:
    early = datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert stamp(early) == sqlite_time(early) == "0999-01-02 03:04:05.000006"
    assert sqlite_time(None) is None


@settings(max_examples=300, deadline=None)
@given(value=VALUES, pad=st.sampled_from(["", " ", "\n ", "\t"]))
def test_json_read_back_is_json_loads(value: Any, pad: str) -> None:
    """The ledger's JSON is read with json.loads's own scanner: the same value for every text,
    with or without whitespace around it, and the same error for what is not JSON."""
    from heartbeat.db.plain import json_value

    text = pad + json_text(value) + pad
    assert json_value(text) == json.loads(text)
    for broken in ("", "{", '{"a": 1} x', "[1,]", "\ufeff{}"):
        with pytest.raises(ValueError):
            json_value(broken)
