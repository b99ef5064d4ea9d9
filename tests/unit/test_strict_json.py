"""Output JSON is strict: json.dumps's text, except that a float that is not finite is its string
and a character a terminal acts on (DEL, C1, the bidirectional controls, U+2028/U+2029) is its
\\u escape."""

from __future__ import annotations

import json
import math
from datetime import UTC
from decimal import Decimal
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from heartbeat.formats.strict_json import dumps, dumps_indented, safe
from tests.conftest import strict_json

TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT | FLOATS,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)


def _as_output(value: Any) -> Any:
    """``value`` as a strict reader reads what hb printed: its own value, a float that is not
    finite as "Infinity", "-Infinity" or "NaN", a tuple as an array."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _as_output(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_output(item) for item in value]
    return value


@settings(max_examples=400, deadline=None)
@given(value=VALUES, indent=st.sampled_from([None, 2]))
@example(value=math.nan, indent=None)
@example(value={"\x9b": ["\u202e", math.inf]}, indent=2)
def test_dumps_is_strict_json_and_otherwise_json_dumps_s_text(value: Any, indent: int | None) -> None:
    text = dumps(value, ensure_ascii=False, indent=indent)
    assert strict_json(text) == _as_output(value)
    assert text == safe(json.dumps(_as_output(value), ensure_ascii=False, indent=indent))
    shown = _as_output(value)  # (a NaN is no value equal to itself: compared as its string)
    assert json.loads(safe(json.dumps(shown, ensure_ascii=False))) == json.loads(json.dumps(shown))


def test_safe_escapes_only_what_a_terminal_acts_on() -> None:
    every = "".join(chr(c) for c in range(0x20, 0x3000) if not 0xD800 <= c < 0xE000)
    text = safe(json.dumps(every, ensure_ascii=False))
    assert json.loads(text) == every
    escaped = {c for c in every if f"\\u{ord(c):04x}" in text}
    acted_on = [*range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    assert escaped == {chr(c) for c in acted_on}


def test_dumps_keeps_its_options() -> None:
    value = {"é": [math.inf, 1.5, -math.inf, math.nan], "when": object}
    assert dumps(value, separators=(",", ":"), default=lambda _: "x") == (
        '{"\\u00e9":["Infinity",1.5,"-Infinity","NaN"],"when":"x"}'
    )


class _Level(IntEnum):
    HIGH = 3


class _State(StrEnum):
    DONE = "done"


class _Ratio(float):
    pass


# what hb prints besides plain JSON values: times and dates (default=str), its enums, tuples,
# objects with keys that are no text (json writes them as text), float subclasses
ODD = st.one_of(
    st.datetimes(timezones=st.sampled_from([None, UTC])),
    st.dates(),
    st.sampled_from([_Level.HIGH, _State.DONE, _Ratio(0.5), _Ratio(math.inf), Decimal("1.10")]),
    st.dictionaries(st.integers() | st.booleans() | st.none(), st.integers(), min_size=1, max_size=2),
)
ANY_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT | FLOATS | ODD,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=ANY_VALUES)
def test_dumps_indented_writes_the_text_dumps_writes(value: Any) -> None:
    """dumps_indented (``hb ... --json`` prints with it) gives dumps's text with indent=2 for
    any value, nested at any depth: the same layout, the same strings, the same numbers."""
    assert dumps_indented(value, default=str) == dumps(value, ensure_ascii=False, indent=2, default=str)


def test_dumps_indented_of_a_task_and_of_a_value_too_deep() -> None:
    task = {"id": "t-1", "status": _State.DONE, "extra": {"tags": ["a", "ü"]}, "due_at": None, "n": 2}
    assert dumps_indented(task, default=str) == (
        '{\n  "id": "t-1",\n  "status": "done",\n  "extra": {\n    "tags": [\n      "a",\n      "ü"\n'
        '    ]\n  },\n  "due_at": null,\n  "n": 2\n}'
    )
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    # deeper than these frames go: dumps's own answer, its text (Python 3.13) or its RecursionError
    try:
        expected = dumps(deep, ensure_ascii=False, indent=2)
    except RecursionError:
        with pytest.raises(RecursionError):
            dumps_indented(deep)
    else:
        assert dumps_indented(deep) == expected
