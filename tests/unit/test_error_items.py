"""errors.json items are matched as a multiset under Python's equality, in linear time."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.ops.sync.queue_files.logs import _Items

# values that are equal across types (1, 1.0, True), or look alike and are not ("1", None)
SCALARS = st.sampled_from([1, 1.0, True, 0, False, 0.0, "1", "a", None, 2**70, float(2**70), [1], {"x": 1}])
ITEMS = st.one_of(
    st.dictionaries(st.sampled_from(["timestamp", "task_id", "reason", "trace_id", "resolved"]), SCALARS),
    SCALARS,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ITEMS, max_size=8), st.lists(ITEMS, max_size=8))
def test_the_items_answer_as_a_list_of_them_would(known: list[Any], asked: list[Any]) -> None:
    """``in`` and ``remove`` give what they give on a list (the code before used one)."""
    bag = _Items(known)
    plain = list(known)
    for item in asked:
        assert (item in bag) == (item in plain)
        if item in plain:
            plain.remove(item)
            bag.remove(item)
            assert (item in bag) == (item in plain)


def test_an_item_equal_in_python_is_the_same_item() -> None:
    bag = _Items([{"task_id": "a", "resolved": False, "n": 1}])
    assert {"n": 1.0, "resolved": 0, "task_id": "a"} in bag
    assert {"task_id": "a", "resolved": None, "n": 1} not in bag
