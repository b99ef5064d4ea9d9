"""tasks.json, errors.json, last-run.json (the heartbeat skill): reading, lossless writing, moves."""

from __future__ import annotations

import copy
import json
import re
import sys
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.errors import FileFormatError, InvalidInput, InvalidState, ScopeNotFound
from heartbeat.formats.tasks_json import (
    LEGACY_LISTS,
    QueueRecord,
    TasksDocument,
    empty_document,
    error_entry,
    last_run_entry,
    outcome_value,
    parse,
    parse_errors,
    parse_last_run,
    priority_rank,
    render,
    render_errors,
    render_last_run,
    resolve_scope,
    status_as_written,
)

# The heartbeat skill's own legacy example, verbatim.
SEED_LEGACY = """{
  "pending": [
    {
      "id": "task-123",
      "priority": "high",
      "description": "Deep research the current state of local LLM orchestration.",
      "assigned_skill": "deep-research",
      "project_id": "claude-skills",
      "agent_id": "antigravity",
      "user_id": "matthias",
      "created_at": "2026-04-25T12:00:00Z",
      "completed_at": null
    }
  ],
  "in_progress": [],
  "completed": [],
  "failed": []
}
"""

# Legacy lists as they look after a crashed session: stale in_progress, no failed
# list, extra fields, a top-level key hb does not know.
LEGACY_WORN = """{
  "version": "1.2.0",
  "pending": [
    {"id": "task-a", "priority": "low", "description": "Low first in file",
     "created_at": "2026-04-25T08:00:00Z", "completed_at": null},
    {"description": "Id not first", "id": 7, "priority": "urgent", "trace_id": "tr-1",
     "tags": ["x", {"nested": true}], "created_at": "2026-04-25T09:00:00.5+02:00"}
  ],
  "in_progress": [
    {"id": "task-stale", "priority": "critical", "description": "Left by a crashed session",
     "assigned_skill": "osint", "created_at": "2026-04-24T10:00:00Z", "completed_at": null,
     "started_by": "agent-2"}
  ],
  "completed": [
    {"id": "task-done", "priority": "medium", "description": "Shipped",
     "result": {"pr": 12, "merged": true}, "completed_at": "2026-04-25T11:00:00Z",
     "created_at": "2026-04-25T10:00:00Z"}
  ]
}
"""

SCOPED = """{
  "pending": [
    {"id": "task-123", "priority": "high", "description": "Legacy work", "created_at": null}
  ],
  "in_progress": [],
  "completed": [],
  "failed": [],
  "_round3_extension": {
    "owner": "antigravity",
    "ag_implementation_queue": [
      {
        "order": 1,
        "task_id": "round3-edit-item-33-southern-qualifier",
        "gh_issue": 496,
        "estimate": "frontmatter only on 2 providers; ~10 min",
        "risk": "minimal"
      },
      {
        "order": 2,
        "task_id": "round3-spanish-pdfs",
        "gh_issue": 390,
        "estimate": "1h",
        "risk": "low",
        "description": "Attach the Spanish PDFs"
      },
      {
        "order": 3,
        "task_id": "round3-footer",
        "gh_issue": 502,
        "title": "Footer links",
        "status": "completed",
        "result": {"pr": 503}
      }
    ],
    "blocked_on_client": [
      {"items": "Spanish PDFs", "issues": [390, 391], "blocker": "translator pending"}
    ],
    "ag_pushed_branches": [
      "round3/item-33",
      {"branch": "round3/footer", "pr": 503}
    ]
  },
  "_round2_extension": {
    "qa_queue": [
      {"task_id": 41, "status": "in_progress", "blocked": "no"},
      {"task_id": "qa-2", "status": "pending"}
    ],
    "blocked_on_upstream": [{"task_id": "qa-2", "items": "waiting on vendor"}]
  },
  "_notes_extension": "not an object: kept as it is"
}
"""

MALFORMED = """{
  "pending": [
    {"id": "task-1", "priority": "high", "description": "Written by heartbeat.py",
     "created_at": "2026-04-25T12:00:00+00:00Z", "completed_at": null,
     "updated_at": "2026-04-25T13:00:00.250000+00:00Z", "note": "+00:00Z is fine in prose"}
  ],
  "in_progress": [],
  "completed": [],
  "failed": []
}
"""

FIXTURES = [SEED_LEGACY, LEGACY_WORN, SCOPED]


def pairs(text: str) -> Any:
    """The document with every object as a list of (key, value) pairs: order-sensitive."""
    return json.loads(text, object_pairs_hook=list)


def by_id(doc: TasksDocument, task_id: str) -> QueueRecord:
    return next(r for r in doc.records if r.id == task_id)


def with_record(doc: TasksDocument, task_id: str, **changes: Any) -> list[QueueRecord]:
    """doc's records with one of them changed, the way the ledger hands them back."""
    return [replace(r, **changes) if r.id == task_id else r for r in doc.records]


# --- reading ---------------------------------------------------------------------


def test_seed_legacy_example_reads_as_one_todo_record() -> None:
    doc = parse(SEED_LEGACY)
    assert doc.scopes == []
    assert doc.indent == 2
    assert doc.warnings == []
    assert doc.skeleton.legacy_lists == ["pending", "in_progress", "completed", "failed"]
    assert not doc.skeleton.missing_failed
    (record,) = doc.records
    assert record.id == "task-123"
    assert record.scope == ""
    assert record.status == "todo"
    assert record.title == "Deep research the current state of local LLM orchestration."
    assert record.priority == "high"
    assert record.position == 0
    assert record.blocked_by is None
    assert record.created_at == datetime(2026, 4, 25, 12, 0, tzinfo=UTC)
    assert record.completed_at is None
    assert (record.skill, record.project_id, record.agent_id, record.user_id) == (
        "deep-research",
        "claude-skills",
        "antigravity",
        "matthias",
    )
    assert list(record.fields) == [
        "id",
        "priority",
        "description",
        "assigned_skill",
        "project_id",
        "agent_id",
        "user_id",
        "created_at",
        "completed_at",
    ]


def test_worn_legacy_lists_map_to_canonical_statuses_and_positions() -> None:
    doc = parse(LEGACY_WORN)
    assert doc.skeleton.missing_failed
    assert [(r.id, r.status, r.position) for r in doc.records] == [
        ("task-a", "todo", 0),
        ("7", "todo", 1),
        ("task-stale", "doing", 0),
        ("task-done", "done", 0),
    ]
    numeric = by_id(doc, "7")
    assert numeric.priority == "urgent"  # as written; it only ranks as medium
    assert numeric.created_at == datetime(2026, 4, 25, 7, 0, 0, 500000, tzinfo=UTC)
    assert numeric.fields["trace_id"] == "tr-1"
    assert by_id(doc, "task-done").completed_at == datetime(2026, 4, 25, 11, 0, tzinfo=UTC)


def test_scoped_queues_are_found_in_file_order() -> None:
    doc = parse(SCOPED)
    assert doc.scopes == [
        "_round3_extension.ag_implementation_queue",
        "_round2_extension.qa_queue",
    ]
    queue = [r for r in doc.records if r.scope == doc.scopes[0]]
    assert [(r.id, r.status, r.position, r.title) for r in queue] == [
        ("round3-edit-item-33-southern-qualifier", "todo", 1, "round3-edit-item-33-southern-qualifier"),
        ("round3-spanish-pdfs", "todo", 2, "Attach the Spanish PDFs"),
        ("round3-footer", "done", 3, "Footer links"),
    ]
    assert all(r.priority is None for r in queue)


def test_scoped_entry_named_by_a_blocked_on_list_is_blocked() -> None:
    doc = parse(SCOPED)
    assert by_id(doc, "round3-spanish-pdfs").blocked_by == "blocked_on_client: translator pending"
    assert by_id(doc, "round3-edit-item-33-southern-qualifier").blocked_by is None
    # a blocker naming a task_id, with only "items" as its text
    assert by_id(doc, "qa-2").blocked_by == "blocked_on_upstream: waiting on vendor"
    assert by_id(doc, "41").blocked_by is None


def test_blocked_on_issue_numbers_do_not_match_task_ids() -> None:
    text = json.dumps(
        {
            "_b_extension": {
                "q": [{"task_id": "390"}, {"task_id": "x", "gh_issue": "#391"}],
                "blocked_on_x": [{"issues": [390, 391], "blocker": "later"}],
            }
        }
    )
    doc = parse(text)
    assert by_id(doc, "390").blocked_by is None
    assert by_id(doc, "x").blocked_by == "blocked_on_x: later"


def test_scoped_numeric_task_id_is_stringified_and_statuses_mapped() -> None:
    doc = parse(SCOPED)
    assert by_id(doc, "41").status == "doing"
    assert by_id(doc, "41").position == 0  # no "order": the index
    assert by_id(doc, "qa-2").status == "todo"  # "pending" reads as todo


def test_metadata_lists_and_non_object_extensions_are_not_queues() -> None:
    doc = parse(SCOPED)
    assert not any("ag_pushed_branches" in s or "blocked_on" in s for s in doc.scopes)
    assert "_notes_extension" not in " ".join(doc.scopes)


def test_a_list_only_partly_made_of_tasks_is_metadata_with_a_warning() -> None:
    text = '{\n  "_b_extension": {\n    "q": [{"task_id": "a"}, {"name": "b"}]\n  }\n}\n'
    doc = parse(text)
    assert doc.scopes == []
    assert doc.records == []
    assert doc.warnings == [
        "line 3: _b_extension.q: some items have no task_id: kept as metadata, not a queue"
    ]
    assert pairs(render(doc)) == pairs(text)


def test_an_empty_list_is_not_a_queue() -> None:
    doc = parse('{"_b_extension": {"q": []}, "pending": []}')
    assert doc.scopes == []


def test_an_unreadable_timestamp_is_a_warning_and_kept_as_written() -> None:
    text = '{\n  "pending": [\n    {"id": "t", "created_at": "last tuesday"}\n  ]\n}\n'
    doc = parse(text)
    assert by_id(doc, "t").created_at is None
    assert doc.warnings == [
        "line 3: pending[0]: created_at 'last tuesday' is not a timestamp: kept as written"
    ]
    assert pairs(render(doc)) == pairs(text)


def test_an_unknown_scoped_status_reads_as_todo_with_a_warning_and_survives() -> None:
    text = json.dumps({"_b_extension": {"q": [{"task_id": "a", "status": "parked"}]}})
    doc = parse(text)
    assert by_id(doc, "a").status == "todo"
    assert doc.warnings == ["line 1: _b_extension.q[0]: unknown status 'parked': read as todo"]
    assert pairs(render(doc)) == pairs(text)


# --- lossless round trips ------------------------------------------------------------


@pytest.mark.parametrize("text", FIXTURES, ids=["seed-legacy", "legacy-worn", "scoped"])
def test_render_of_parse_keeps_every_value_and_key_order(text: str) -> None:
    rendered = render(parse(text))
    assert json.loads(rendered) == json.loads(text)
    assert pairs(rendered) == pairs(text)
    assert rendered.endswith("}\n")


def test_seed_example_renders_byte_identical() -> None:
    assert render(parse(SEED_LEGACY)) == SEED_LEGACY


def test_malformed_timestamps_are_read_and_written_as_z() -> None:
    doc = parse(MALFORMED)
    assert by_id(doc, "task-1").created_at == datetime(2026, 4, 25, 12, 0, tzinfo=UTC)
    expected = json.loads(MALFORMED)
    expected["pending"][0]["created_at"] = "2026-04-25T12:00:00Z"
    expected["pending"][0]["updated_at"] = "2026-04-25T13:00:00.250000Z"
    rendered = render(doc)
    assert json.loads(rendered) == expected
    assert pairs(rendered) == pairs(json.dumps(expected))


def test_indentation_is_detected_and_kept() -> None:
    four = json.dumps(json.loads(SCOPED), indent=4) + "\n"
    assert parse(four).indent == 4
    assert render(parse(four)) == four
    compact = json.dumps(json.loads(SCOPED), ensure_ascii=False) + "\n"
    assert parse(compact).indent is None
    assert render(parse(compact)) == compact
    assert parse("{}").indent == 2


def test_a_byte_order_mark_is_read_past() -> None:
    doc = parse("\ufeff" + SEED_LEGACY)
    assert [r.id for r in doc.records] == ["task-123"]
    assert render(doc) == SEED_LEGACY


def test_non_ascii_text_is_written_as_is() -> None:
    text = '{\n  "pending": [\n    {\n      "id": "t",\n      "description": "提交报告 — ok"\n    }\n  ]\n}\n'
    assert render(parse(text)) == text


# --- moves and edits ---------------------------------------------------------------------


def test_legacy_pop_moves_the_entry_from_pending_to_the_end_of_in_progress() -> None:
    doc = parse(LEGACY_WORN)
    rendered = render(doc, with_record(doc, "task-a", status="doing"))
    expected = json.loads(LEGACY_WORN)
    moved = expected["pending"].pop(0)
    expected["in_progress"].append(moved)
    assert pairs(rendered) == pairs(json.dumps(expected))


def test_legacy_complete_moves_to_completed_and_writes_completed_at() -> None:
    doc = parse(SEED_LEGACY)
    done_at = datetime(2026, 4, 26, 9, 30, tzinfo=UTC)
    rendered = render(doc, with_record(doc, "task-123", status="done", completed_at=done_at))
    expected = json.loads(SEED_LEGACY)
    entry = expected["pending"].pop(0)
    entry["completed_at"] = "2026-04-26T09:30:00Z"
    expected["completed"].append(entry)
    assert pairs(rendered) == pairs(json.dumps(expected))


def test_a_failed_record_creates_the_missing_failed_list_after_completed() -> None:
    doc = parse(LEGACY_WORN)
    rendered = render(doc, with_record(doc, "task-stale", status="failed"))
    keys = [key for key, _ in pairs(rendered)]
    assert keys == ["version", "pending", "in_progress", "completed", "failed"]
    out = json.loads(rendered)
    assert out["in_progress"] == []
    assert [t["id"] for t in out["failed"]] == ["task-stale"]


def test_missing_legacy_lists_are_created_in_seed_order_only_when_needed() -> None:
    doc = parse('{"note": 1, "completed": []}')
    assert [k for k, _ in pairs(render(doc))] == ["note", "completed"]
    records = [QueueRecord(id="a", status="todo"), QueueRecord(id="b", status="cancelled")]
    rendered = render(doc, records)
    assert [k for k, _ in pairs(rendered)] == ["note", "pending", "completed", "failed"]


def test_legacy_positions_order_the_list_and_unchanged_fields_keep_their_text() -> None:
    doc = parse(LEGACY_WORN)
    records = [replace(r, position=1 - r.position) if r.status == "todo" else r for r in doc.records]
    out = json.loads(render(doc, records))
    assert [t["id"] for t in out["pending"]] == [7, "task-a"]  # the int id stays an int
    assert out["pending"][0]["created_at"] == "2026-04-25T09:00:00.5+02:00"


def test_a_task_back_in_pending_sorts_pending_by_priority_as_hb_pop_takes_it() -> None:
    """heartbeat.py pops pending[0] and sorts pending by priority when it adds a task: a task hb
    returns to pending (clear-stale, a retry) sorts it too, critical first (heartbeat.py's own
    sort ranks an unknown priority as medium: "urgent" does here too)."""
    doc = parse(LEGACY_WORN)  # pending: task-a (low), then 7 ("urgent")
    out = json.loads(render(doc, with_record(doc, "task-stale", status="todo")))
    assert [t["id"] for t in out["pending"]] == ["task-stale", 7, "task-a"]
    assert out["in_progress"] == []


def test_an_unsorted_pending_list_keeps_its_order_until_a_task_arrives() -> None:
    doc = parse(LEGACY_WORN)
    assert render(doc) == LEGACY_WORN  # nothing changed: byte for byte
    out = json.loads(render(doc, with_record(doc, "task-a", title="renamed")))
    assert [t["id"] for t in out["pending"]] == ["task-a", 7]  # a change in place moves nothing


def test_a_task_hb_adds_goes_where_heartbeat_py_add_puts_it() -> None:
    """heartbeat.py's add appends, then sorts pending by priority, stable (high, medium, low,
    anything else as medium): a new task lands after the tasks of its priority and before the
    lower ones; the file's pending[0] stays what hb pop takes."""
    text = json.dumps(
        {"pending": [{"id": "h1", "priority": "high"}, {"id": "m1"}, {"id": "l1", "priority": "low"}]},
        indent=2,
    )
    doc = parse(text)
    for priority, expected in [
        ("high", ["h1", "new", "m1", "l1"]),
        ("medium", ["h1", "m1", "new", "l1"]),
        (None, ["h1", "m1", "new", "l1"]),
        ("low", ["h1", "m1", "l1", "new"]),
        ("critical", ["new", "h1", "m1", "l1"]),
    ]:
        new = QueueRecord(id="new", status="todo", priority=priority, position=3)
        out = json.loads(render(doc, [*doc.records, new]))
        assert [t["id"] for t in out["pending"]] == expected, priority


def test_scoped_pop_sets_status_in_place_and_nothing_else_changes() -> None:
    doc = parse(SCOPED)
    task = "round3-edit-item-33-southern-qualifier"
    rendered = render(doc, with_record(doc, task, status="doing"))
    expected = json.loads(SCOPED)
    expected["_round3_extension"]["ag_implementation_queue"][0]["status"] = "in_progress"
    assert pairs(rendered) == pairs(json.dumps(expected))


def test_scoped_complete_replaces_the_status_value_where_it_stands() -> None:
    doc = parse(SCOPED)
    rendered = render(doc, with_record(doc, "41", status="done"))
    expected = json.loads(SCOPED)
    expected["_round2_extension"]["qa_queue"][0]["status"] = "completed"
    assert pairs(rendered) == pairs(json.dumps(expected))


def test_scoped_clear_stale_removes_the_status_key() -> None:
    doc = parse(SCOPED)
    out = json.loads(render(doc, with_record(doc, "41", status="todo")))
    assert out["_round2_extension"]["qa_queue"][0] == {"task_id": 41, "blocked": "no"}


def test_a_todo_ish_scoped_status_value_is_kept_while_still_todo() -> None:
    doc = parse(SCOPED)
    out = json.loads(render(doc, with_record(doc, "qa-2", title="Renamed")))
    assert out["_round2_extension"]["qa_queue"][1] == {
        "task_id": "qa-2",
        "status": "pending",
        "description": "Renamed",
    }


def test_scoped_order_change_rewrites_order_but_keeps_the_entry_in_place() -> None:
    doc = parse(SCOPED)
    out = json.loads(render(doc, with_record(doc, "round3-spanish-pdfs", position=9)))
    queue = out["_round3_extension"]["ag_implementation_queue"]
    assert [(e["task_id"], e["order"]) for e in queue] == [
        ("round3-edit-item-33-southern-qualifier", 1),
        ("round3-spanish-pdfs", 9),
        ("round3-footer", 3),
    ]


def test_changed_known_fields_are_rewritten_and_unknown_ones_survive_in_order() -> None:
    doc = parse(LEGACY_WORN)
    rendered = render(doc, with_record(doc, "7", priority="high", title="New", skill="osint"))
    (entry,) = [t for t in pairs(rendered)[1][1] if ("id", 7) in t]
    assert entry == [
        ("description", "New"),
        ("id", 7),
        ("priority", "high"),
        ("trace_id", "tr-1"),
        ("tags", ["x", [("nested", True)]]),
        ("created_at", "2026-04-25T09:00:00.5+02:00"),
        ("assigned_skill", "osint"),
    ]


def test_records_left_out_are_removed() -> None:
    doc = parse(LEGACY_WORN)
    out = json.loads(render(doc, [r for r in doc.records if r.id != "task-a"]))
    assert [t["id"] for t in out["pending"]] == [7]


def test_a_new_legacy_record_gets_the_seed_scripts_key_order() -> None:
    doc = empty_document()
    record = QueueRecord(
        id="task-0a1b2c3d",
        title="Write report",
        priority="medium",
        skill="writer",
        created_at=datetime(2026, 5, 1, 3, 41, tzinfo=UTC),
    )
    out = pairs(render(doc, [record]))
    assert [k for k, _ in out] == ["pending", "in_progress", "completed", "failed"]
    assert out[0][1] == [
        [
            ("id", "task-0a1b2c3d"),
            ("priority", "medium"),
            ("description", "Write report"),
            ("assigned_skill", "writer"),
            ("project_id", None),
            ("agent_id", None),
            ("user_id", None),
            ("created_at", "2026-05-01T03:41:00Z"),
            ("completed_at", None),
        ]
    ]


def test_a_new_scoped_record_is_appended_to_its_queue() -> None:
    doc = parse(SCOPED)
    scope = "_round3_extension.ag_implementation_queue"
    new = QueueRecord(id="round3-new", scope=scope, title="New work", position=4)
    out = pairs(render(doc, [*doc.records, new]))
    queue = dict(dict(out)["_round3_extension"])["ag_implementation_queue"]
    assert queue[-1] == [("order", 4), ("task_id", "round3-new"), ("description", "New work")]
    assert len(queue) == 4


def test_a_scope_missing_from_the_file_is_created() -> None:
    doc = parse(SEED_LEGACY)
    new = QueueRecord(id="n1", scope="_round4_extension.queue", status="doing", position=1)
    out = json.loads(render(doc, [*doc.records, new]))
    assert out["_round4_extension"] == {"queue": [{"order": 1, "task_id": "n1", "status": "in_progress"}]}
    assert list(out)[-1] == "_round4_extension"


def test_an_empty_list_is_filled_when_records_name_it() -> None:
    doc = parse('{"_b_extension": {"q": [], "meta": []}}')
    out = json.loads(render(doc, [QueueRecord(id="a", scope="_b_extension.q")]))
    assert out == {"_b_extension": {"q": [{"order": 0, "task_id": "a"}], "meta": []}}


def test_a_record_whose_queue_became_metadata_is_refused() -> None:
    doc = parse(SCOPED)
    stray = QueueRecord(id="x", scope="_round3_extension.ag_pushed_branches")
    with pytest.raises(InvalidState, match="not a queue"):
        render(doc, [*doc.records, stray])
    other = QueueRecord(id="y", scope="_notes_extension.q")
    with pytest.raises(InvalidState, match="not an object"):
        render(doc, [*doc.records, other])


def test_render_refuses_a_status_that_is_not_canonical() -> None:
    doc = parse(SEED_LEGACY)
    with pytest.raises(InvalidInput, match="in_progress"):
        render(doc, with_record(doc, "task-123", status="in_progress"))


def test_render_does_not_mutate_the_document() -> None:
    doc = parse(SCOPED)
    before = copy.deepcopy(doc)
    render(doc, with_record(doc, "41", status="done", title="t"))
    assert doc == before


# --- errors a user can cause ---------------------------------------------------------------


def test_invalid_json_names_line_and_column() -> None:
    text = '{\n  "pending": [\n    {"id": "a",}\n  ]\n}\n'
    with pytest.raises(FileFormatError) as caught:
        parse(text)
    # Python 3.13's reader names the trailing comma itself, older ones the brace after it
    assert (caught.value.line, caught.value.column) == ((3, 15) if sys.version_info >= (3, 13) else (3, 16))
    assert "invalid JSON" in caught.value.reason


def test_a_legacy_key_that_is_not_a_list_names_it() -> None:
    with pytest.raises(FileFormatError) as caught:
        parse('{\n  "in_progress": [],\n  "pending": {}\n}')
    assert caught.value.reason == "pending: must be a list of task objects, not an object"
    assert (caught.value.line, caught.value.column) == (3, 14)


def test_a_legacy_task_without_id_names_its_path_and_line() -> None:
    text = '{\n  "pending": [\n    {"id": "a"},\n    {"description": "no id"}\n  ]\n}'
    with pytest.raises(FileFormatError) as caught:
        parse(text)
    assert caught.value.reason == "pending[1]: missing id"
    assert (caught.value.line, caught.value.column) == (4, 5)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[]", "tasks.json must hold a JSON object"),
        ('{"failed": null}', "failed: must be a list of task objects, not null"),
        ('{"pending": ["a"]}', "pending[0]: must be a task object, not a string"),
        ('{"pending": [{"id": ""}]}', "pending[0]: id must be a non-empty string or an integer"),
        ('{"pending": [{"id": true}]}', "pending[0]: id must be a non-empty string or an integer"),
        (
            '{"_a_extension": {"q": [{"task_id": null}]}}',
            "_a_extension.q[0]: task_id must be a non-empty string or an integer",
        ),
        (
            '{"pending": [{"id": "a"}], "completed": [{"id": "a"}]}',
            "completed[0]: duplicate id 'a' (also at pending[0])",
        ),
        (
            '{"pending": [{"id": 1}, {"id": "1"}]}',
            "pending[1]: duplicate id '1' (also at pending[0])",
        ),
    ],
)
def test_unreadable_structures_are_file_format_errors(text: str, reason: str) -> None:
    with pytest.raises(FileFormatError) as caught:
        parse(text)
    assert caught.value.reason == reason


def test_the_same_id_in_two_queues_is_fine() -> None:
    doc = parse('{"pending": [{"id": "a"}], "_b_extension": {"q": [{"task_id": "a"}]}}')
    assert [(r.scope, r.id) for r in doc.records] == [("", "a"), ("_b_extension.q", "a")]


def test_an_error_path_gets_the_file_path_from_the_caller() -> None:
    with pytest.raises(FileFormatError) as caught:
        parse("{")
    message = str(caught.value.at_path(".agent/state/tasks.json"))
    assert re.fullmatch(r"\.agent/state/tasks\.json:1:2: invalid JSON: .+", message)


# --- scopes, statuses, priorities ------------------------------------------------------------


def test_resolve_scope_accepts_only_queues() -> None:
    doc = parse(SCOPED)
    path = "_round3_extension.ag_implementation_queue"
    assert resolve_scope(doc, path) == path
    for bad in (
        "_round3_extension.ag_pushed_branches",
        "_round3_extension.blocked_on_client",
        "_round3_extension.owner",
        "_round9_extension.queue",
        "pending",
        "",
    ):
        with pytest.raises(ScopeNotFound) as caught:
            resolve_scope(doc, bad)
        assert caught.value.exit_code == 14
        assert path in str(caught.value)


def test_status_as_written_folds_statuses_the_legacy_lists_cannot_hold() -> None:
    assert status_as_written("", "blocked") == "todo"
    assert status_as_written("", "cancelled") == "failed"
    assert status_as_written("", "doing") == "doing"
    assert status_as_written("_b_extension.q", "blocked") == "blocked"
    doc = parse(SCOPED)
    reread = parse(render(doc, with_record(doc, "qa-2", status="blocked")))
    assert by_id(reread, "qa-2").status == "blocked"


def test_priority_rank_treats_unknown_priorities_as_medium() -> None:
    ranks = [
        priority_rank(p) for p in ("critical", "high", "medium", "low", "urgent", None, "CRITICAL", "High")
    ]
    assert ranks == [0, 1, 2, 3, 2, 2, 2, 2]  # as written: "CRITICAL" is not a priority the script knows


# --- errors.json and last-run.json ----------------------------------------------------------------

NOW = datetime(2026, 4, 25, 12, 0, tzinfo=UTC)


def test_error_entry_has_the_seed_shape_and_default_reason() -> None:
    entry = error_entry(timestamp=NOW, task_id="task-1", assigned_skill="osint")
    assert list(entry.items()) == [
        ("timestamp", "2026-04-25T12:00:00Z"),
        ("task_id", "task-1"),
        ("assigned_skill", "osint"),
        ("reason", "Unknown failure"),
        ("trace_id", None),
        ("decision_log", None),
        ("resolved", False),
    ]
    assert error_entry(timestamp=NOW, task_id="t", reason="boom")["reason"] == "boom"


def test_errors_json_round_trips_and_fixes_malformed_timestamps() -> None:
    text = json.dumps(
        [
            {"timestamp": "2026-04-25T12:00:00+00:00Z", "task_id": "a", "extra": [1]},
            error_entry(timestamp=NOW, task_id="b"),
        ],
        indent=2,
    )
    items = parse_errors(text)
    assert [i["task_id"] for i in items] == ["a", "b"]
    rendered = render_errors(items)
    assert json.loads(rendered)[0] == {"timestamp": "2026-04-25T12:00:00Z", "task_id": "a", "extra": [1]}
    assert render_errors(parse_errors(rendered)) == rendered


@pytest.mark.parametrize(
    ("text", "reason", "line"),
    [
        ("{}", "errors.json must hold a JSON array", 1),
        ('[\n  {"a": 1},\n  "oops"\n]', "[1]: must be an object, not a string", 3),
        ("[\n  {,\n]", "invalid JSON: Expecting property name enclosed in double quotes", 2),
    ],
)
def test_errors_json_that_is_not_an_array_of_objects_is_refused(text: str, reason: str, line: int) -> None:
    with pytest.raises(FileFormatError) as caught:
        parse_errors(text)
    assert (caught.value.reason, caught.value.line) == (reason, line)


def test_last_run_entry_has_the_seed_shape_with_scope() -> None:
    entry = last_run_entry(
        timestamp=NOW,
        task_id="round3-x",
        status="completed",
        description="Do x",
        outcome={"pr": 502},
        scope="_round3_extension.ag_implementation_queue",
    )
    assert list(entry) == [
        "timestamp",
        "task_id",
        "status",
        "description",
        "assigned_skill",
        "project_id",
        "agent_id",
        "user_id",
        "outcome",
        "trace_id",
        "decision_log",
        "scope",
    ]
    assert entry["scope"] == "_round3_extension.ag_implementation_queue"
    assert last_run_entry(timestamp=NOW, task_id="t", status="failed", scope="")["scope"] is None


def test_last_run_round_trips_and_must_be_an_object() -> None:
    entry = last_run_entry(timestamp=NOW, task_id="t", status="completed", outcome={"ok": True})
    text = render_last_run(entry)
    assert parse_last_run(text) == entry
    assert pairs(render_last_run(parse_last_run(text))) == pairs(text)
    with pytest.raises(FileFormatError, match="must hold a JSON object"):
        parse_last_run("[]")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"pr": 502, "merged": true}', {"pr": 502, "merged": True}),
        ("42", 42),
        ('"quoted"', "quoted"),
        ("merged PR 502", {"result": "merged PR 502"}),
        ("", {"result": ""}),
        ("{broken", {"result": "{broken"}),
        ("[" * 500 + "]" * 500, json.loads("[" * 500 + "]" * 500)),  # as deep as it is kept JSON
        ("[ " * 501 + "]" * 501, {"result": "[ " * 501 + "]" * 501}),  # deeper: text
        ('{"a": "' + "[" * 600 + '"}', {"a": "[" * 600}),  # brackets in a string nest nothing
        (
            '{"a": "\\"' + ', "b": [' * 501 + "]" * 501 + "}",
            {"result": '{"a": "\\"' + ', "b": [' * 501 + "]" * 501 + "}"},
        ),
    ],
)
def test_outcome_value_keeps_json_and_wraps_plain_text(text: str, value: Any) -> None:
    assert outcome_value(text) == value


# --- property: any legacy document round-trips with its key order ------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
priorities = st.sampled_from(["critical", "high", "medium", "low", "urgent", "", "HIGH"]) | json_values
task_ids = st.text(min_size=1, max_size=6).filter(str.strip) | st.integers()
extra_keys = st.text(max_size=12).filter(lambda k: k != "id")


@st.composite
def legacy_task(draw: st.DrawFn, task_id: Any) -> dict[str, Any]:
    extras = draw(st.dictionaries(extra_keys, json_values, max_size=5))
    if draw(st.booleans()):
        extras["priority"] = draw(priorities)
    items = list(extras.items())
    items.insert(draw(st.integers(0, len(items))), ("id", task_id))
    return dict(items)


@st.composite
def legacy_documents(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(task_ids, unique_by=str, max_size=8))
    lists = draw(st.permutations(["pending", "in_progress", "completed", "failed"]))
    present = lists[: draw(st.integers(1, 4))]
    doc: dict[str, Any] = {name: [] for name in present}
    for task_id in ids:
        doc[draw(st.sampled_from(present))].append(draw(legacy_task(task_id)))
    others = draw(
        st.dictionaries(
            st.text(max_size=8).filter(lambda k: k not in LEGACY_LISTS and not k.startswith("_")),
            json_values,
            max_size=3,
        )
    )
    items = list(doc.items())
    for key, value in others.items():
        items.insert(draw(st.integers(0, len(items))), (key, value))
    return dict(items)


@settings(max_examples=200)
@given(legacy_documents(), st.sampled_from([None, 2, 4]))
def test_any_legacy_document_round_trips_with_identical_key_order(
    document: dict[str, Any], indent: int | None
) -> None:
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    rendered = render(parse(text))
    assert pairs(rendered) == pairs(text)
    assert parse(rendered).records == parse(text).records


def test_a_blocked_on_list_of_task_entries_is_a_filter_without_a_warning() -> None:
    doc = parse(
        '{"_b_extension": {"q": [{"order": 1, "task_id": "a"}, {"order": 2, "task_id": "b"}], '
        '"blocked_on_review": [{"task_id": "a", "blocker": "needs review"}]}}'
    )
    assert doc.warnings == []
    assert [r.id for r in doc.records if r.blocked_by] == ["a"]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=25,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    found = [(path, value)]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for step, child in items:
        found.extend(_paths(child, (*path, step)))
    return found


@settings(max_examples=150, deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([None, 0, 2, "\t"]))
def test_the_locator_finds_every_value_where_its_text_starts(value: Any, indent: Any) -> None:
    """Every value of a document, at any depth, is located where its own JSON text starts, for
    any layout; a path that leads nowhere is (None, None)."""
    from heartbeat.formats.tasks_json import Locator

    text = json.dumps(value, indent=indent)
    locator = Locator(text)
    lines = text.split("\n")
    for path, found in _paths(value):
        line, column = locator.position(path)
        assert line is not None and column is not None, path
        at = lines[line - 1][column - 1 :]
        start = "{" if isinstance(found, dict) else "[" if isinstance(found, list) else json.dumps(found)
        assert at.startswith(start), (path, at[:20])
    assert locator.position(("no such key", 0)) == (None, None) or isinstance(value, dict)
    assert locator.position((10**6,)) == (None, None)


def test_warnings_on_every_task_are_located_in_one_pass_over_the_file() -> None:
    """A tasks.json with a warning for each task (a created_at that is no timestamp) is located
    in time linear in its size: the Locator reads each container's members once. It walked from
    the top for each warning, in time in the square of the file (66 s for 4,000 tasks)."""
    from heartbeat.formats import tasks_json

    def doc(n: int) -> str:
        tasks = [
            {"id": f"task-{i}", "priority": "high", "description": "x", "created_at": "yesterday"}
            for i in range(n)
        ]
        return json.dumps({"pending": tasks, "completed": []}, indent=2)

    decoded: list[int] = []
    real = json.JSONDecoder.raw_decode

    class Counting(json.JSONDecoder):
        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            decoded.append(idx)
            return real(self, s, idx)

    counts = []
    for n in (200, 800):
        decoded.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tasks_json.json, "JSONDecoder", Counting)
            parsed = tasks_json.parse(doc(n))
        assert len(parsed.warnings) == n
        assert parsed.warnings[-1] == (
            f"line {6 * n - 3}: pending[{n - 1}]: created_at 'yesterday' is not a timestamp: kept as written"
        )
        counts.append(len(decoded))
    assert counts[1] <= 4 * counts[0] + 50  # four times the tasks, at most about four times the work


def test_two_queues_whose_keys_join_to_one_path_are_refused_naming_both() -> None:
    """``"_x_extension": {"q_extension.z": [...]}`` and ``"_x_extension.q_extension": {"z": [...]}``
    are two lists with one queue path, ``_x_extension.q_extension.z``: both were read into that
    one queue, and the next write moved the second list's entries into the first (the other
    object's list left empty)."""
    text = (
        '{"pending": [],\n'
        ' "_x_extension": {"q_extension.z": [{"task_id": "t1", "order": 1}]},\n'
        ' "_x_extension.q_extension": {"z": [{"task_id": "t2", "order": 1}]}\n'
        "}\n"
    )
    with pytest.raises(FileFormatError) as refused:
        parse(text)
    assert refused.value.line == 3
    assert str(refused.value).endswith(
        'the queue "z" of "_x_extension.q_extension" and the queue "q_extension.z" of "_x_extension" '
        "(line 2) have one path, '_x_extension.q_extension.z': rename one"
    )
    # apart, each is its own queue
    apart = parse(text.replace('"q_extension.z"', '"q_extension.y"'))
    assert apart.scopes == ["_x_extension.q_extension.y", "_x_extension.q_extension.z"]


def test_an_extension_keeps_its_queues_when_another_extensions_key_starts_its_own() -> None:
    """``_x_extension`` and ``_x_extension.q_extension`` in one file: the first one written took
    every queue whose path starts with its key, the second's ``z`` included (moved into the first
    as ``"q_extension.z"``, its own list left empty) on a plain sync that changed nothing. A new
    queue goes into the extension with the longest key its path starts with."""
    text = (
        '{"pending": [],\n'
        ' "_x_extension": {"q_extension.y": [{"task_id": "t1", "order": 1}]},\n'
        ' "_x_extension.q_extension": {"z": [{"task_id": "t2", "order": 1}]}\n'
        "}\n"
    )
    doc = parse(text)
    assert render(doc) == text
    new = QueueRecord(id="t3", scope="_x_extension.q_extension.w", status="todo", position=1)
    out = json.loads(render(doc, [*doc.records, new]))
    assert out["_x_extension"] == {"q_extension.y": [{"task_id": "t1", "order": 1}]}
    assert list(out["_x_extension.q_extension"]) == ["z", "w"]
    assert [e["task_id"] for e in out["_x_extension.q_extension"]["w"]] == ["t3"]
