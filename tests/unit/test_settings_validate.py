"""settings.validate answers plain values without pydantic; whatever it answers, the setting's
pydantic model answers the same, for every setting."""

from __future__ import annotations

import math
from typing import Any

import pytest

from heartbeat import settings
from heartbeat.errors import InvalidInput

EDGES: list[Any] = [
    True, False, 0, 1, -1, 3, 24, 25, 100, 10_000, 0.0, 0.5, 1.5, -0.5, 23.99, math.inf, math.nan,
    "", " ", "en", "zh", "fr", "EN", "off", "23:00-08:00", "23:00-8:00", "22:00-22:00", "25:00-01:00",
    "30m", "1h", "90s", "0s", "-5m", "soon", "strict", "extended", "UTC", "Asia/Shanghai",
    "Mars/Olympus", "utc", None, [], {},
]  # fmt: skip


def _answer(fn: Any, name: str, value: Any) -> tuple[str, Any]:
    try:
        got = fn(name, value)
    except InvalidInput as exc:
        return "refused", str(exc)
    return "taken", (type(got), got if not (isinstance(got, float) and math.isnan(got)) else "nan")


@pytest.mark.parametrize("name", list(settings.KEYS))
def test_the_plain_answer_is_the_validator_s(name: str) -> None:
    k = settings.key(name)
    for value in EDGES:
        plain = _answer(settings.validate, name, value)
        checked = _answer(lambda n, v: settings._validated(n, k, v), name, value)
        assert plain == checked, (name, value)


def test_plain_answers_are_the_common_ones() -> None:
    """The values hb config set and the state files give most are answered without pydantic."""
    for name, value in [("lang", "zh"), ("quiet_hours", "22:00-07:00"), ("queue.lease", "45m")]:
        assert settings._plain(settings.key(name), value)[0], name
    assert not settings._plain(settings.key("lang"), "fr")[0]  # a refusal is the validator's to word
