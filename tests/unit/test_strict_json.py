"""Output JSON is strict: json.dumps's text, except that a float that is not finite is its string."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.formats.strict_json import dumps
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
def test_dumps_is_strict_json_and_otherwise_json_dumps_s_text(value: Any, indent: int | None) -> None:
    text = dumps(value, ensure_ascii=False, indent=indent)
    assert strict_json(text) == _as_output(value)
    assert text == json.dumps(_as_output(value), ensure_ascii=False, indent=indent)


def test_dumps_keeps_its_options() -> None:
    value = {"é": [math.inf, 1.5, -math.inf, math.nan], "when": object}
    assert dumps(value, separators=(",", ":"), default=lambda _: "x") == (
        '{"\\u00e9":["Infinity",1.5,"-Infinity","NaN"],"when":"x"}'
    )
