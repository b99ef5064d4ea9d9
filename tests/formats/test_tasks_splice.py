"""heartbeat.formats.tasks_splice: a few tasks rewritten in a large tasks.json, by its lines.

The splice must write exactly what rendering the whole document writes, for every sequence of
queue moves (pop, complete, fail, a scoped entry's status), so the property tests compare the two
step after step over documents with the shapes tasks.json takes: legacy lists (one missing,
some empty), extension queues beside metadata lists, objects of other lists that carry the same
ids, non-ASCII text in both of json.dumps's ASCII modes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.formats import tasks_json
from heartbeat.formats.json_edit import Layout, edit_layout
from heartbeat.formats.tasks_splice import apply, splice, splice_edits

NOW = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)
MOVES = {
    "todo": ("doing",),
    "doing": ("done", "failed", "cancelled"),
    "done": (),
    "failed": (),
    "cancelled": (),
}


def _document(pending: int, done: int, scoped: int, *, failed_list: bool, decoy: bool) -> dict[str, object]:
    doc: dict[str, object] = {
        "pending": [
            {
                "id": f"t{i}",
                "priority": ("high", "low")[i % 2],
                "description": f"tâche {i}",
                "created_at": None,
            }
            for i in range(pending)
        ],
        "in_progress": [],
        "completed": [
            {"id": f"d{i}", "description": "old", "completed_at": "2026-01-01T00:00:00Z"} for i in range(done)
        ],
    }
    if failed_list:
        doc["failed"] = []
    if decoy:  # a list that is not a queue, whose objects carry the tasks' ids
        doc["archive"] = [{"id": "t0", "note": "an old copy"}, {"task_id": "s0"}]
    if scoped:
        doc["_round3_extension"] = {
            "queue": [{"order": i, "task_id": f"s{i}", "gh_issue": 100 + i} for i in range(scoped)],
            "blocked_on_client": [{"items": "PDFs", "issues": [390], "blocker": "translator"}],
            "ag_pushed_branches": ["round3/edit"],
        }
    return doc


def _ledger(text: str) -> list[tasks_json.QueueRecord]:
    """The ledger's records of a text: the file's records, in the ledger's order."""
    records = tasks_json.parse(text).records
    return sorted(records, key=lambda r: (r.scope, r.position))


def _step(record: tasks_json.QueueRecord, status: str) -> tasks_json.QueueRecord:
    ended = NOW if status in ("done", "failed", "cancelled") else record.completed_at
    return replace(record, status=status, completed_at=ended)


def _written(doc: Mapping[str, object], ascii_only: bool) -> tuple[str, Layout]:
    text = json.dumps(doc, indent=2, ensure_ascii=ascii_only) + "\n"
    return text, Layout("  ", ascii_only, "\n")


@settings(max_examples=150, deadline=None)
@given(
    pending=st.integers(0, 6),
    done=st.integers(0, 3),
    scoped=st.integers(0, 4),
    failed_list=st.booleans(),
    decoy=st.booleans(),
    ascii_only=st.booleans(),
    moves=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2)), max_size=12),
)
def test_a_splice_writes_what_the_whole_render_writes(
    pending: int,
    done: int,
    scoped: int,
    failed_list: bool,
    decoy: bool,
    ascii_only: bool,
    moves: list[tuple[int, int]],
) -> None:
    text, layout = _written(
        _document(pending, done, scoped, failed_list=failed_list, decoy=decoy), ascii_only
    )
    records = _ledger(text)
    for pick, choice in moves:
        movable = [r for r in records if MOVES[r.status]]
        if not movable:
            break
        moved = movable[pick % len(movable)]
        after = _step(moved, MOVES[moved.status][choice % len(MOVES[moved.status])])
        records = [after if r is moved else r for r in records]
        whole, whole_layout = tasks_json.render_layout(tasks_json.parse(text), records)
        spliced = splice(text, layout, [after])
        if spliced is None:
            # the two cases the splice leaves to the whole render: a list heartbeat.py's order
            # must create, and an id that an object of another list carries too
            missing = after.scope == "" and after.status in ("failed", "cancelled") and not failed_list
            assert missing or (decoy and after.id == "t0")
        else:
            assert spliced == whole
            # the edits it reports make the same text from the old one, one after the other
            found = splice_edits(text, layout, [after])
            assert found is not None and found[0] == spliced
            assert apply(text, found[1]) == spliced
        assert whole_layout is not None  # what the next splice goes by
        text, layout = whole, whole_layout


def test_a_task_back_in_pending_is_left_to_the_whole_render() -> None:
    text, layout = _written(_document(2, 0, 0, failed_list=True, decoy=False), False)
    records = _ledger(text)
    popped = _step(records[0], "doing")
    text = tasks_json.render(tasks_json.parse(text), [popped, records[1]])
    assert splice(text, layout, [replace(popped, status="todo")]) is None


def test_the_last_task_of_a_list_leaves_it_empty_and_the_first_arrival_fills_it() -> None:
    text, layout = _written(_document(1, 0, 0, failed_list=True, decoy=False), False)
    (task,) = _ledger(text)
    popped = splice(text, layout, [_step(task, "doing")])
    assert popped is not None
    assert '"pending": [],' in popped
    assert json.loads(popped)["in_progress"] == [
        {"id": "t0", "priority": "high", "description": "tâche 0", "created_at": None}
    ]
    done = splice(popped, layout, [_step(task, "done")])
    assert done is not None
    assert json.loads(done)["in_progress"] == []
    assert json.loads(done)["completed"][0]["completed_at"] == "2026-12-03T09:30:00Z"


@pytest.mark.parametrize(
    "text",
    [
        '{"pending": [{"id": "t0"}], "in_progress": []}\n',  # one line: no layout to go by
        '{\n  "pending": [\n    {\n      "id": 7\n    }\n  ],\n  "in_progress": []\n}\n',  # a numeric id
        '{\n  "pending": [],\n  "in_progress": []\n}\n',  # not there at all
    ],
)
def test_a_text_not_laid_out_as_expected_is_refused(text: str) -> None:
    record = tasks_json.QueueRecord(id="t0" if "7" not in text else "7", status="doing", title="t0")
    assert splice(text, Layout("  ", False, "\n"), [record]) is None


def test_edit_layout_reports_json_dumps_own_layout_only() -> None:
    doc = {"pending": [{"id": "é"}]}
    assert edit_layout(None, doc)[1] == Layout("  ", False, "\n")
    assert edit_layout(None, doc, indent=None)[1] is None
    dumped = json.dumps({"pending": [], "note": "é"}, indent=4, ensure_ascii=True) + "\n"
    text, layout = edit_layout(dumped, doc)
    assert layout == Layout("    ", True, "\n")
    assert text == json.dumps(doc, indent=4, ensure_ascii=True) + "\n"
    plain = json.dumps({"pending": []}, indent=4) + "\n"  # ASCII either way: json.dumps's default mode
    assert edit_layout(plain, doc)[1] == Layout("    ", False, "\n")
    hand = '{ "pending": [],\n  "x": 1 }\n'  # a hand layout: spliced, no layout to report
    assert edit_layout(hand, {"pending": [], "x": 2})[1] is None
    assert edit_layout("\ufeff" + dumped, doc)[1] is None  # after a BOM: not json.dumps's text


def test_an_id_inside_some_other_object_is_not_taken_for_a_task() -> None:
    doc = {"pending": [{"id": "t1"}], "in_progress": [], "meta": {"x": {"id": "t0"}}}
    text, layout = _written(doc, False)
    record = tasks_json.QueueRecord(id="t0", status="doing", title="t0")
    assert splice(text, layout, [record]) is None


def test_an_edit_outside_its_text_is_refused() -> None:
    assert apply("abcdef", [(1, 3, "XY"), (6, 6, "!")]) == "aXYdef!"
    for edits in ([(2, 1, "x")], [(0, 7, "")], [(-1, 0, "")], [(0, 6, ""), (0, 1, "")]):
        with pytest.raises(ValueError, match="outside"):
            apply("abcdef", edits)


def _one_by_one(text: str, edits: list[tuple[int, int, str]]) -> str | None:
    """Each edit made on the text the ones before it left (None: one falls outside it)."""
    for start, end, new in edits:
        if not 0 <= start <= end <= len(text):
            return None
        text = text[:start] + new + text[end:]
    return text


_EDIT = st.tuples(st.integers(-2, 14), st.integers(-2, 14), st.text("xyz", max_size=4))


@given(st.text("abcdef", max_size=12), st.lists(_EDIT, max_size=5))
def test_edits_made_in_one_pass_are_the_edits_made_one_by_one(text: str, edits: list) -> None:
    """apply makes a run of edits that each end before the last one's start in one pass; any
    list of edits gives the text made one edit at a time, or a ValueError where that fails."""
    expected = _one_by_one(text, edits)
    if expected is None:
        with pytest.raises(ValueError, match="outside"):
            apply(text, edits)
    else:
        assert apply(text, edits) == expected


def test_a_splices_edits_last_first_are_made_in_one_pass() -> None:
    assert apply("0123456789", [(8, 9, "E"), (5, 5, "+"), (1, 3, "")]) == "034+567E9"
    # an edit after the one before it: that run is made first
    assert apply("0123456789", [(2, 3, "X"), (5, 6, "Y"), (0, 1, "Z")]) == "Z1X34Y6789"
