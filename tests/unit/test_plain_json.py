"""The plain-SQL layer writes JSON exactly as json.dumps does, its shortcut for flat objects included."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.db.plain import Conn

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
