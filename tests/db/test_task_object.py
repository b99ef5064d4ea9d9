"""What `hb pop` prints for a task row: the row's own render (``task_object``, which reads the row
directly) gives exactly what rendering its tasks.json record gives (``render_task`` of
``record_from_row``), whatever the original object holds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.db.queue import popped_object, record_from_row, task_object
from heartbeat.formats.tasks_json import render_task

STAMPS = [
    "2026-04-25T12:00:00Z",
    "2026-04-25T12:00:00+00:00Z",  # heartbeat.py's malformed form: written back as ...Z
    "2026-04-25T12:00:00+00:00Z \n",  # the same, before spaces
    "2026-04-25T14:00:00.250000+02:00",
    "2026-02-30T12:00:00Z",  # an impossible date: kept verbatim
    "yesterday",
]
TIMES = [None, datetime(2026, 4, 25, 12, tzinfo=UTC), datetime(2026, 5, 1, 9, 30, 0, 500, tzinfo=UTC)]
texts = st.sampled_from(["job 1", "job 2", "", "t-1", "deep-research"])
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    texts,
    st.sampled_from(STAMPS),
    st.lists(st.integers(0, 2), max_size=2),
)
_KEYS = (
    "id task_id description title priority status order assigned_skill project_id agent_id user_id "
    "created_at completed_at gh_issue note"
)
KEYS = _KEYS.split()
fields = st.dictionaries(st.sampled_from(KEYS), values, max_size=10)
maybe_text = st.one_of(st.none(), texts)


@st.composite
def rows(draw: Any) -> dict[str, Any]:
    scope = draw(st.sampled_from(["", "_round3_extension.q"]))
    return {
        "pk": 1,
        "id": draw(st.sampled_from(["t-1", "7", "job 1"])),
        "scope": scope,
        "source": "tasks-json",
        "status": draw(st.sampled_from(["todo", "doing", "done", "failed", "blocked"])),
        "title": draw(texts),
        "priority": draw(st.sampled_from([None, "high", "medium", "critical", "urgent"])),
        "position": draw(st.integers(0, 3)),
        "blocked_by": None,
        "extra": draw(fields),
        "created_at": draw(st.sampled_from(TIMES)),
        "completed_at": draw(st.sampled_from(TIMES)),
        "skill": draw(maybe_text),
        "project_id": draw(maybe_text),
        "agent_id": draw(maybe_text),
        "user_id": draw(maybe_text),
        "claim": "c" * 24,
    }


@settings(max_examples=400, deadline=None)
@given(rows())
def test_a_rows_object_is_its_records_render(row: dict[str, Any]) -> None:
    expected = render_task(record_from_row(row))
    got = task_object(row)
    assert got == expected
    assert list(got) == list(expected)  # key order too: the object is printed as it is
    assert popped_object(row) == {**expected, "claim": "c" * 24}


def test_a_row_without_its_files_object_is_rendered_new() -> None:
    row = {
        "id": "task-1",
        "scope": "",
        "status": "doing",
        "title": "Write",
        "priority": "high",
        "position": 0,
        "blocked_by": None,
        "extra": None,
        "created_at": TIMES[1],
        "completed_at": None,
        "skill": "writer",
        "project_id": None,
        "agent_id": None,
        "user_id": None,
    }
    assert task_object(row) == {
        "id": "task-1",
        "priority": "high",
        "description": "Write",
        "assigned_skill": "writer",
        "project_id": None,
        "agent_id": None,
        "user_id": None,
        "created_at": "2026-04-25T12:00:00Z",
        "completed_at": None,
    }
