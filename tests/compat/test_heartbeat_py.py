"""hb compat heartbeat-py against what the claude-skills heartbeat skill's heartbeat.py does.

Each test states a fact read from the script (skills/heartbeat/scripts/heartbeat.py, v1.1.1)
or from the skill's 1.2.0 documentation, as file text in and stdout / exit code / file text
out. The script writes its files with ``json.dump(doc, f, indent=2)`` and prints with
``json.dumps(..., indent=2)``; ``dumps`` below is that call, so an equal text is the script's
own bytes. Its timestamps are ``datetime.now(timezone.utc).isoformat() + "Z"``
(``...+00:00Z``); hb writes ``...Z`` (the one deliberate difference in the texts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heartbeat.compat.heartbeat_py import Pending, place_new, project_root, script_outcome
from tests.compat.conftest import ID, NOW, HeartbeatPy, dumps, ordered
from tests.conftest import Runner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
Q = "_round3_extension.ag_implementation_queue"


def new_task(task_id: str, description: str, priority: str = "medium", **changes: Any) -> dict[str, Any]:
    """A task object as the script's add writes it (hb's created_at: plain Z)."""
    task = {
        "id": task_id,
        "priority": priority,
        "description": description,
        "assigned_skill": "research",
        "project_id": None,
        "agent_id": None,
        "user_id": None,
        "created_at": NOW,
        "completed_at": None,
    }
    task.update(changes)
    return task


# --- add -------------------------------------------------------------------------------------------


def test_add_prints_the_id_and_writes_tasks_json_as_the_script_does(hbpy: HeartbeatPy, project: Path) -> None:
    # add_task: id "task-" + 8 hex, the keys in this order, priority "medium" by default,
    # completed_at null; the four lists of load_tasks's empty document; json.dump indent=2
    task_id = hbpy.add("Résumé the thread", "--project-id", "p1", "--agent-id", "a1", "--user-id", "u1")
    expected = {
        "pending": [new_task(task_id, "Résumé the thread", project_id="p1", agent_id="a1", user_id="u1")],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    assert hbpy.text("tasks.json") == dumps(expected)  # ASCII: "R\u00e9sum\u00e9", no final newline
    assert hbpy.text("last-run.json") is None and hbpy.text("errors.json") is None
    assert (project / "src" / ".agent").exists() is False  # the git top level's .agent/state


def test_a_delete_character_is_escaped_as_json_dump_escapes_it(hbpy: HeartbeatPy) -> None:
    """json.dump (ensure_ascii) writes U+007F as \\u007f, as every character past "~"; hb
    counted it as ASCII and wrote it raw, and the next non-ASCII character left the script's
    layout behind."""
    task_id = hbpy.add("a\x7f", "--user-id", "\x7fé")
    expected = {
        "pending": [new_task(task_id, "a\x7f", user_id="\x7fé")],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    assert hbpy.text("tasks.json") == dumps(expected)
    assert "\\u007f" in (hbpy.text("tasks.json") or "") and "\x7f" not in (hbpy.text("tasks.json") or "")
    popped = hbpy.pop()
    hbpy("complete", popped["id"], "--outcome", '{"reason": "r\x7f"}')
    last = hbpy.text("last-run.json") or ""
    assert last == dumps(json.loads(last))  # the script's layout, escapes included


def test_add_keeps_pending_sorted_high_medium_low(hbpy: HeartbeatPy) -> None:
    # the script appends, then sorts pending stably by {"high": 0, "medium": 1, "low": 2}
    ids = {}
    for name, priority in [("l1", "low"), ("m1", "medium"), ("h1", "high"), ("m2", "medium"), ("l2", "low")]:
        ids[name] = hbpy.add(name, "--priority", priority)
    assert [t["description"] for t in hbpy.doc()["pending"]] == ["h1", "m1", "m2", "l1", "l2"]
    assert [hbpy.pop()["id"] for _ in range(5)] == [ids[n] for n in ("h1", "m1", "m2", "l1", "l2")]


def test_add_sorts_a_hand_edited_pending_list_and_ranks_critical_and_unknown_as_medium(
    hbpy: HeartbeatPy,
) -> None:
    pending = [
        {"id": "l1", "priority": "low", "description": "low first"},
        {"id": "c1", "priority": "critical", "description": "critical: medium to the script"},
        {"id": "h1", "priority": "high", "description": "high"},
        {"id": "w1", "priority": "urgent-ish", "description": "unknown: medium"},
        {"id": "n1", "description": "no priority: medium"},
    ]
    hbpy.write("tasks.json", dumps({"pending": pending, "in_progress": [], "completed": [], "failed": []}))
    new = hbpy.add("added medium")
    after = hbpy.doc()["pending"]
    assert [t["id"] for t in after] == ["h1", "c1", "w1", "n1", new, "l1"]
    assert [t for t in after if t["id"] != new] == [
        pending[2],
        pending[1],
        pending[3],
        pending[4],
        pending[0],
    ]


def test_add_refuses_what_argparse_refuses(hbpy: HeartbeatPy) -> None:
    # choices=["high", "medium", "low"] and --skill required=True: usage on stderr, exit 2
    done = hbpy("add", "--priority", "critical", "--skill", "s", "x", code=2)
    assert done.stdout == ""
    assert done.stderr.startswith("usage: heartbeat.py add [-h] [--priority {high,medium,low}] --skill SKILL")
    assert "heartbeat.py add: error: argument --priority: invalid choice: 'critical'" in done.stderr
    done = hbpy("add", "no skill", code=2)
    assert done.stderr.endswith("heartbeat.py add: error: the following arguments are required: --skill\n")
    done = hbpy(code=2)
    assert done.stderr.endswith("heartbeat.py: error: the following arguments are required: command\n")
    assert hbpy.text("tasks.json") is None
    assert hbpy("--help").stdout.startswith("usage: heartbeat.py [-h]")


def test_place_new_shifts_only_what_the_sort_moves() -> None:
    def p(*rows: tuple[int, str | None, int]) -> list[Pending]:
        return [Pending(*row) for row in rows]

    sorted_list = p((1, "high", 0), (2, "medium", 1), (3, "low", 2))
    assert place_new(sorted_list, "low", 10) == (10, [])  # at the end: after every position
    assert place_new(sorted_list, "high", 10) == (1, [(2, 2), (3, 3)])  # no gap: the rest shift
    assert place_new(p((1, "medium", 5), (2, "low", 9)), "medium", 10) == (6, [])  # a gap
    assert place_new(p((1, "low", 3)), "high", 10) == (2, [])  # before the first
    # out of order (edited by hand): renumbered as the stable sort lays it out
    position, moves = place_new(p((1, "low", 0), (2, "high", 1)), "medium", 10)
    assert (position, sorted(moves)) == (1, [(1, 2), (2, 0)])
    assert place_new([], "medium", 0) == (0, [])


# --- pop -------------------------------------------------------------------------------------------


def test_pop_prints_pending_zero_with_indent_2_whatever_its_priority(hbpy: HeartbeatPy, hb: Runner) -> None:
    # pop_task: pending.pop(0) (the add-time sort is the only ordering), appended to in_progress
    first = {"id": "t-low", "priority": "low", "description": "tidy", "result": None, "created_at": NOW}
    second = {"id": "t-high", "priority": "high", "description": "urgent", "trace_id": "tr-9"}
    hbpy.write("tasks.json", dumps({"pending": [first, second], "in_progress": [], "completed": []}))
    done = hbpy("pop")
    assert done.stdout == dumps(first) + "\n"
    done = hbpy("pop")
    assert done.stdout == dumps(second) + "\n"
    # the script's save: a missing "failed" list is added at the end
    expected = {"pending": [], "in_progress": [first, second], "completed": [], "failed": []}
    assert hbpy.text("tasks.json") == dumps(expected)
    assert hbpy.text("last-run.json") is None  # the script's pop does not log a run
    assert {t["id"]: t["status"] for t in hb.json("list", "--all")} == {"t-low": "doing", "t-high": "doing"}


def test_pop_on_empty_prints_no_pending_tasks_and_writes_nothing(hbpy: HeartbeatPy) -> None:
    assert hbpy("pop").stdout == "No pending tasks.\n"
    assert hbpy.text("tasks.json") is None  # the script creates .agent/state, not tasks.json
    text = dumps({"pending": [], "in_progress": [], "completed": [{"id": "old", "priority": "low"}]})
    hbpy.write("tasks.json", text)
    assert hbpy("pop").stdout == "No pending tasks.\n"
    assert hbpy.text("tasks.json") == text  # no save: not even the missing failed list


def test_lists_grow_at_their_end_as_tasks_move(hbpy: HeartbeatPy) -> None:
    a, b, c = (hbpy.add(name) for name in "abc")
    assert [hbpy.pop()["id"] for _ in range(3)] == [a, b, c]
    d = hbpy.add("d", "--priority", "high")  # pending is re-sorted; in_progress keeps its order
    assert [t["id"] for t in hbpy.doc()["in_progress"]] == [a, b, c]
    hbpy("complete", c)
    hbpy("fail", b)
    hbpy("complete", a)
    assert hbpy.pop()["id"] == d
    doc = hbpy.doc()
    assert [t["id"] for t in doc["in_progress"]] == [d]
    assert [t["id"] for t in doc["completed"]] == [c, a]
    assert [t["id"] for t in doc["failed"]] == [b]


# --- complete / fail -------------------------------------------------------------------------------


def test_complete_moves_the_task_and_writes_last_run_json(hbpy: HeartbeatPy) -> None:
    task_id = hbpy.add("Deep research", "--priority", "high", "--user-id", "matthias")
    hbpy.pop()
    done = hbpy(
        "complete",
        task_id,
        "--outcome",
        '{"pr": 502, "merged": true}',
        "--trace-id",
        "tr-1",
        "--decision-log",
        "chose plan B",
        now="2026-05-01T12:30:00Z",
    )
    assert done.stdout == f"Marked task {task_id} as completed.\n"
    task = new_task(task_id, "Deep research", "high", user_id="matthias", completed_at="2026-05-01T12:30:00Z")
    expected = {"pending": [], "in_progress": [], "completed": [task], "failed": []}
    assert hbpy.text("tasks.json") == dumps(expected)
    # log_last_run: these keys in this order (1.2.0 adds scope); trace id and decision log from
    # the options, not from the task
    assert hbpy.text("last-run.json") == dumps(
        {
            "timestamp": "2026-05-01T12:30:00Z",
            "task_id": task_id,
            "status": "completed",
            "description": "Deep research",
            "assigned_skill": "research",
            "project_id": None,
            "agent_id": None,
            "user_id": "matthias",
            "outcome": {"pr": 502, "merged": True},
            "trace_id": "tr-1",
            "decision_log": "chose plan B",
            "scope": None,
        }
    )
    assert hbpy.text("errors.json") is None


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        (["--outcome", "plain words"], {"result": "plain words"}),  # not JSON: {"result": text}
        ([], {}),  # no outcome: outcome_details or {}
        (["--outcome", ""], {}),
        (["--outcome", "0"], {}),  # a JSON value that is false: {} too
        (["--outcome", "[]"], {}),
        (["--outcome", '"just text"'], "just text"),
        (["--outcome", "[1, 2]"], [1, 2]),
        (["--outcome", "NaN"], {"result": "NaN"}),  # hb: not JSON (the script would write NaN)
    ],
)
def test_complete_records_the_outcome_as_the_script_parses_it(
    hbpy: HeartbeatPy, given: list[str], recorded: Any
) -> None:
    task_id = hbpy.add("x")
    hbpy.pop()
    hbpy("complete", task_id, *given)
    last_run = hbpy.text("last-run.json")
    assert last_run is not None
    assert json.loads(last_run)["outcome"] == recorded
    assert '"trace_id": null' in last_run


def test_complete_and_scripts_outcome_value() -> None:
    assert script_outcome(None) == {}
    assert script_outcome('{"a": 1}') == {"a": 1}
    assert script_outcome("{broken") == {"result": "{broken"}
    assert script_outcome("[" * 100_000) == {"result": "[" * 100_000}  # too deep: text


def test_fail_fails_at_once_and_logs_errors_json(hbpy: HeartbeatPy, hb: Runner) -> None:
    # complete_task(status="failed"): to "failed" with completed_at, no retry; log_error appends
    # {timestamp, task_id, assigned_skill, reason, trace_id, decision_log, resolved: false}
    hb("config", "set", "queue.max_attempts", "3")
    first = hbpy.add("flaky")
    second = hbpy.add("flaky again")
    hbpy.pop()
    hbpy.pop()
    at = "2026-05-01T13:00:00Z"
    done = hbpy("fail", first, "--reason", "API 503", "--trace-id", "tr-2", now=at)
    assert done.stdout == f"Marked task {first} as failed.\n"
    hbpy("fail", second, now=at)
    doc = hbpy.doc()
    assert doc["failed"] == [
        new_task(first, "flaky", completed_at=at),
        new_task(second, "flaky again", completed_at=at),
    ]
    assert doc["pending"] == [] and doc["in_progress"] == []
    assert hbpy.text("errors.json") == dumps(
        [
            {"timestamp": at, "task_id": first, "assigned_skill": "research", "reason": "API 503"}
            | {"trace_id": "tr-2", "decision_log": None, "resolved": False},
            {"timestamp": at, "task_id": second, "assigned_skill": "research", "reason": "Unknown failure"}
            | {"trace_id": None, "decision_log": None, "resolved": False},
        ]
    )
    last_run = json.loads(hbpy.text("last-run.json") or "")
    assert (last_run["task_id"], last_run["status"], last_run["outcome"]) == (second, "failed", {})
    hbpy("fail", first, "--reason", "again")  # failed is not in_progress
    assert [t["status"] for t in hb.json("list", "--all")] == ["failed", "failed"]


def test_fail_with_a_reason_records_it_as_the_outcome(hbpy: HeartbeatPy) -> None:
    task_id = hbpy.add("x")
    hbpy.pop()
    hbpy("fail", task_id, "--reason", "boom", "--decision-log", "gave up")
    last_run = json.loads(hbpy.text("last-run.json") or "")
    assert (last_run["outcome"], last_run["decision_log"]) == ({"reason": "boom"}, "gave up")


@pytest.mark.parametrize("command", ["complete", "fail"])
def test_the_scripts_complete_or_fail_is_a_lost_claim_for_an_hb_holder(
    hbpy: HeartbeatPy, hb: Runner, command: str
) -> None:
    """A worker claims with `hb pop` (a token); the script's complete / fail, by id alone, ends
    that claim by another hand: the worker's token is refused as lost (exit 15), not as a claim it
    ended itself (exit 1), and the row the script's call wrote names the claim it closed."""
    task_id = hbpy.add("Summarise the survey")
    a = json.loads(hb("pop", "--worker", "A").stdout)
    hbpy(command, task_id)
    how = "completed without a claim (complete by id alone)"
    if command == "fail":
        how = "failed without a claim (fail by id alone)"
    refused = f"hb: claim lost: task {task_id!r} was {how}, not under this one; nothing changed\n"
    for fenced in ("complete", "fail", "renew"):
        assert hb(fenced, task_id, "--claim", a["claim"], code=15).stderr == refused
    table = "outcomes" if command == "complete" else "errors"
    assert hb.json("sql", f"SELECT claim FROM {table}") == [{"claim": a["claim"]}]


@pytest.mark.parametrize("command", ["complete", "fail"])
def test_a_task_not_in_progress_prints_the_scripts_line_exits_0_and_writes_nothing(
    hbpy: HeartbeatPy, hb: Runner, command: str
) -> None:
    waiting = hbpy.add("still pending")
    done_id = hbpy.add("done")
    assert hbpy.pop()["id"] == waiting
    hbpy("complete", waiting)
    assert hbpy.pop()["id"] == done_id
    hbpy("complete", done_id)
    before = {name: hbpy.text(name) for name in ("tasks.json", "errors.json", "last-run.json")}
    ledger = hb.json("list", "--all")
    for task_id in ("task-00000000", waiting, done_id):
        done = hbpy(command, task_id, "--reason" if command == "fail" else "--outcome", "x")
        assert (done.stdout, done.stderr) == (f"Task {task_id} not found in in_progress.\n", "")
    assert {name: hbpy.text(name) for name in before} == before
    assert hb.json("list", "--all") == ledger


# --- list ------------------------------------------------------------------------------------------


def test_list_prints_the_document_and_adds_a_missing_failed_list(hbpy: HeartbeatPy) -> None:
    assert (
        hbpy("list").stdout == dumps({"pending": [], "in_progress": [], "completed": [], "failed": []}) + "\n"
    )
    doc = {
        "pending": [{"id": "a", "priority": "high", "description": "Ünïcode"}],
        "in_progress": [],
        "completed": [],
        "_round3_extension": {"notes": ["kept"]},
    }
    hbpy.write("tasks.json", dumps(doc))
    assert hbpy("list").stdout == dumps({**doc, "failed": []}) + "\n"
    assert hbpy.text("tasks.json") == dumps(doc)  # list does not save
    hbpy.pop()  # a save: load_tasks put failed last, after the extension
    assert list(hbpy.doc()) == ["pending", "in_progress", "completed", "_round3_extension", "failed"]


def test_list_prints_a_document_whose_file_starts_with_a_byte_order_mark(hbpy: HeartbeatPy) -> None:
    """hb reads a tasks.json an editor saved with a BOM (the script's json.load would stop at
    it) and keeps the mark in the file; ``list`` prints the document, not an internal error."""
    doc = {"pending": [{"id": "a", "priority": "high"}], "in_progress": [], "completed": [], "failed": []}
    hbpy.write("tasks.json", "\ufeff" + dumps(doc))
    assert hbpy("list").stdout == dumps(doc) + "\n"
    assert hbpy.text("tasks.json") == "\ufeff" + dumps(doc)


# --- the files: layout, fields, edits, errors ------------------------------------------------------


def test_a_file_laid_out_by_hand_keeps_its_layout_fields_and_key_order(hbpy: HeartbeatPy) -> None:
    text = (
        "{\n"
        '    "meta": {"owner": "matthias", "note": "edited by hand"},\n'
        '    "pending": [\n'
        '        {"id": "a", "description": "Résumé", "priority": "high", "result": null, "x": [1, 2]},\n'
        '        {"id": "b", "description": "second", "priority": "low",\n'
        '         "created_at": "2026-04-25T12:00:00+00:00Z"}\n'
        "    ],\n"
        '    "in_progress": [],\n'
        '    "completed": [],\n'
        '    "failed": []\n'
        "}\n"
    )
    hbpy.write("tasks.json", text)
    popped = hbpy.pop()
    assert list(popped) == ["id", "description", "priority", "result", "x"]
    after = hbpy.text("tasks.json")
    assert after is not None
    assert after.endswith("}\n") and "Résumé" in after  # raw UTF-8 and the final newline kept
    assert '    "meta": {"owner": "matthias", "note": "edited by hand"},\n' in after
    assert '"created_at": "2026-04-25T12:00:00Z"' in after  # the script's malformed form, written Z
    b = [("id", "b"), ("description", "second"), ("priority", "low"), ("created_at", "2026-04-25T12:00:00Z")]
    a = [("id", "a"), ("description", "Résumé"), ("priority", "high"), ("result", None), ("x", [1, 2])]
    assert ordered(after) == [
        ("meta", [("owner", "matthias"), ("note", "edited by hand")]),
        ("pending", [b]),
        ("in_progress", [a]),
        ("completed", []),
        ("failed", []),
    ]
    assert hbpy.pop()["created_at"] == "2026-04-25T12:00:00Z"


def test_a_file_in_the_scripts_layout_stays_in_it(hbpy: HeartbeatPy) -> None:
    old = {"id": "task-0ld", "priority": "low", "description": "from the script", "completed_at": None}
    hbpy.write("tasks.json", dumps({"pending": [old], "in_progress": [], "completed": [], "failed": []}))
    new = hbpy.add("中文 and emoji 😀", "--priority", "high")
    expected = {
        "pending": [new_task(new, "中文 and emoji 😀", "high"), old],
        "in_progress": [],
        "completed": [],
    }
    assert hbpy.text("tasks.json") == dumps({**expected, "failed": []})  # \u escapes, as json.dump


def test_edits_by_other_tools_are_seen_by_the_next_call(hbpy: HeartbeatPy, hb: Runner) -> None:
    first = hbpy.add("from the drop-in")
    doc = hbpy.doc()
    doc["pending"].insert(0, {"id": "by-hand", "priority": "high", "description": "typed in an editor"})
    hbpy.write("tasks.json", dumps(doc))
    assert hbpy.pop()["id"] == "by-hand"
    before = hbpy.text("tasks.json")
    hb("add", "from hb itself", "--priority", "low")  # the ledger, without touching the file
    listed = json.loads(hbpy("list").stdout)
    assert [t["description"] for t in listed["pending"]] == ["from the drop-in", "from hb itself"]
    assert hbpy.text("tasks.json") == before  # list does not save
    later = hbpy.add("after both", "--priority", "low")
    assert [t["id"] for t in hbpy.doc()["pending"]] == [first, listed["pending"][1]["id"], later]


def test_an_edit_imported_by_a_call_that_does_not_save_loses_no_ledger_change(
    hbpy: HeartbeatPy, hb: Runner
) -> None:
    first = hbpy.add("as added")
    other = hb.json("add", "only in the ledger so far")["id"]
    doc = hbpy.doc()
    doc["pending"][0]["description"] = "edited by hand"
    hbpy.write("tasks.json", dumps(doc))
    for _ in range(2):  # the edit is taken in once; the file is not written (list does not save)
        listed = json.loads(hbpy("list").stdout)
        assert [(t["id"], t["description"]) for t in listed["pending"]] == [
            (first, "edited by hand"),
            (other, "only in the ledger so far"),
        ]
        assert hbpy.doc() == doc
    assert hb.json("show", other)["status"] == "todo"
    assert hbpy.pop()["id"] == first
    assert [t["id"] for t in hbpy.doc()["pending"]] == [other]


def test_hb_sync_after_the_drop_in_finds_files_and_ledger_in_agreement(hbpy: HeartbeatPy, hb: Runner) -> None:
    ids = [
        hbpy.add(f"job {i}", "--priority", priority) for i, priority in enumerate(["low", "high", "medium"])
    ]
    hbpy.pop()
    hbpy("complete", ids[1], "--outcome", '{"ok": true}')
    hbpy.pop()
    hbpy("fail", ids[2], "--reason", "flaky")
    before = {name: hbpy.text(name) for name in ("tasks.json", "errors.json", "last-run.json")}
    synced = json.loads(hb("sync", "--json").stdout)
    assert synced["changed"] is False
    queue_files = [r for r in synced["reports"] if r["kind"] in ("tasks-json", "errors-json", "last-run")]
    assert [(r["written"], r["conflicts"], r["updated"]) for r in queue_files] == [(False, [], [])] * 3
    assert {name: hbpy.text(name) for name in before} == before


def _json_error(text: str) -> str:
    """Where and why this Python's json module refuses ``text`` (3.13 words it differently)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f":{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
    raise AssertionError(f"{text!r} is valid JSON")


TRAILING_COMMA = '{\n  "pending": [\n    {"id": "a",}\n  ]\n}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (TRAILING_COMMA, _json_error(TRAILING_COMMA)),
        ('[\n  {"id": "a"}\n]', ":1:1: tasks.json must hold a JSON object"),
        ('{"pending": [{"description": "no id"}]}', ":1:14: pending[0]: missing id"),
    ],
)
@pytest.mark.parametrize("command", [["pop"], ["add", "--skill", "s", "x"], ["list"], ["complete", "a"]])
def test_an_unreadable_tasks_json_is_one_line_exit_1_and_changes_nothing(
    hbpy: HeartbeatPy, hb: Runner, text: str, where: str, command: list[str]
) -> None:
    # the script: a json.JSONDecodeError / TypeError traceback
    hbpy.write("tasks.json", text)
    ledger = hb.json("list", "--all")
    done = hbpy(*command, code=1)
    assert done.stdout == ""
    assert done.stderr.startswith(f"hb: {hbpy.file('tasks.json')}{where}") and done.stderr.count("\n") == 1
    assert hbpy.text("tasks.json") == text
    assert hb.json("list", "--all") == ledger


def test_undecodable_bytes_and_a_bad_errors_json_change_nothing(hbpy: HeartbeatPy, hb: Runner) -> None:
    task_id = hbpy.add("x")
    hbpy.pop()
    tasks = hbpy.text("tasks.json")
    hbpy.write("errors.json", "[{]")  # the script's log_error would start the log again from []
    done = hbpy("fail", task_id, code=1)
    reason = "invalid JSON: Expecting property name enclosed in double quotes"
    assert done.stderr == f"hb: {hbpy.file('errors.json')}:1:3: {reason}\n"
    assert hbpy.text("tasks.json") == tasks and hbpy.text("errors.json") == "[{]"
    assert hb.json("show", task_id)["status"] == "doing"
    data = b'{"pending": [{"id": "caf\xe9"}]}'
    hbpy.file("tasks.json").write_bytes(data)
    done = hbpy("list", code=1)
    at = data.index(b"\xe9")
    assert done.stderr == f"hb: {hbpy.file('tasks.json')}:1:{at + 1}: not UTF-8 text (byte {at})\n"


# --- scoped queues and stale entries (the skill's 1.2.0) -------------------------------------------


@pytest.fixture
def scoped(hbpy: HeartbeatPy) -> HeartbeatPy:
    hbpy.state.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "tasks_scoped.json", hbpy.file("tasks.json"))
    return hbpy


def test_scopes_and_pop_without_scope_exits_11(scoped: HeartbeatPy) -> None:
    assert scoped("scopes").stdout == f"{Q}  (2 ready / 0 in_progress / 0 completed / 3 total)\n"
    done = scoped("pop", code=11)
    assert done.stdout == "" and Q in done.stderr
    done = scoped("pop", "--scope", "_round3_extension.ag_pushed_branches", code=14)
    assert "is not a queue" in done.stderr
    scoped("complete", "x", "--scope", "_round9_extension.nothing", code=14)


def test_scoped_pop_complete_and_exhaustion(scoped: HeartbeatPy, hb: Runner) -> None:
    first = scoped("pop", "--scope", Q)
    entry = {
        "order": 1,
        "task_id": "round3-edit-item-33-southern-qualifier",
        "gh_issue": 496,
        "estimate": "frontmatter only on 2 providers; ~10 min",
        "risk": "minimal",
        "status": "in_progress",
    }
    assert first.stdout == dumps(entry) + "\n"  # marked in_progress in place
    assert scoped.doc()["_round3_extension"]["ag_implementation_queue"][0] == entry
    tid = entry["task_id"]
    # the script's complete looks in the legacy in_progress list only
    assert scoped("complete", tid).stdout == f"Task {tid} not found in in_progress.\n"
    done = scoped("complete", tid, "--scope", Q, "--outcome", '{"pr": 502, "merged": true}')
    assert done.stdout == f"Marked task {tid} as completed.\n"
    queue = scoped.doc()["_round3_extension"]["ag_implementation_queue"]
    assert queue[0] == {**entry, "status": "completed"}
    last_run = json.loads(scoped.text("last-run.json") or "")
    assert (last_run["task_id"], last_run["scope"], last_run["description"]) == (tid, Q, None)
    assert scoped("complete", "no-such-entry", "--scope", Q).stdout == (
        "Task no-such-entry not found in in_progress.\n"
    )
    second = scoped("pop", "--scope", Q)
    assert json.loads(second.stdout)["task_id"] == "round3-glossary"
    assert "skipped round3-spanish-pdfs: blocked (blocked_on_client: translator pending)" in second.stderr
    done = scoped("pop", "--scope", Q, code=10)
    assert done.stdout == "" and "exhausted" in done.stderr
    assert scoped("scopes").stdout == f"{Q}  (0 ready / 1 in_progress / 1 completed / 3 total)\n"
    scoped("fail", "round3-glossary", "--scope", Q, "--reason", "no reviewer")
    assert scoped.doc()["_round3_extension"]["ag_implementation_queue"][2]["status"] == "failed"
    assert json.loads(scoped.text("errors.json") or "")[0]["reason"] == "no reviewer"
    assert scoped.doc()["_round3_extension"]["ag_pushed_branches"] == [
        "round3/edit-item-33",
        {"branch": "round3/glossary", "pushed": True},
    ]


def test_stale_in_progress_entries_exit_12_until_cleared_or_adopted(hbpy: HeartbeatPy, hb: Runner) -> None:
    hbpy.state.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "tasks_stale.json", hbpy.file("tasks.json"))
    # an in_progress entry left in the file (no claim behind it) is stale
    done = hbpy("pop", code=12)
    assert "task-crashed" in done.stderr and "heartbeat.py clear-stale" in done.stderr
    adopted = hbpy("pop", "--accept-stale")  # adopts it, then pops as usual
    assert adopted.stderr == "adopted stale claim task-crashed (re-leased to you)\n"
    assert json.loads(adopted.stdout)["id"] == "task-a"
    assert hbpy("complete", "task-crashed").stdout == "Marked task task-crashed as completed.\n"
    # a claim older than queue.lease is stale too; clear-stale moves it back to pending
    hb("config", "set", "queue.lease", "30m")
    later = "2026-05-01T12:31:00Z"
    hbpy("pop", code=12, now=later)
    assert hbpy("clear-stale", now=later).stdout == "Cleared 1 stale task(s).\n"
    assert [t["id"] for t in hbpy.doc()["pending"]] == ["task-a"]
    assert hbpy("scopes").stderr == "No scoped queues.\n"


# --- where, which ledger, which command ------------------------------------------------------------


def test_the_project_is_the_git_top_level_else_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "a" / "b")
    assert project_root() == repo.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert project_root() == plain.resolve()


def test_hb_compat_heartbeat_py_takes_hb_s_db_and_now(hb: Runner, db_url: str, project: Path) -> None:
    plain = Runner({"HB_WORKSPACE": str(project)})
    at = "2026-06-01T08:00:00Z"
    done = plain("--db", db_url, "--now", at, "compat", "heartbeat-py", "add", "--skill", "s", "hi")
    task_id = done.stdout.removeprefix("Added task ").strip()
    shown = hb.json("show", task_id)
    assert (shown["source"], shown["priority"], shown["created_at"]) == (
        "heartbeat-py",
        "medium",
        "2026-06-01T08:00:00+00:00",
    )
    refused = plain("--db", db_url, "compat", "heartbeat-py", "pop", "--bogus", code=2)
    assert refused.stderr.endswith("heartbeat.py: error: unrecognized arguments: --bogus\n")
    assert "Example" in plain("compat", "heartbeat-py", "--help").stdout


def test_the_heartbeat_py_command_reads_hb_s_variables(db_url: str, project: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HB_DATABASE_URL": db_url, "HB_NOW": NOW, "TZ": "UTC"}
    code = "import sys; from heartbeat.compat.heartbeat_py import main; sys.exit(main())"

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args], cwd=project / "src", env=env, capture_output=True, text=True
        )

    added = call("add", "--skill", "s", "from a subprocess")
    assert added.returncode == 0 and ID.fullmatch(added.stdout.removeprefix("Added task ").strip())
    assert (
        json.loads((project / ".agent" / "state" / "tasks.json").read_text())["pending"][0]["created_at"]
        == NOW
    )
    assert call("complete", "task-00000000").stdout == "Task task-00000000 not found in in_progress.\n"
    assert call("pop", "--scope", "_x_extension.q").returncode == 14


PROBE = (
    "import sys\n"
    "from heartbeat.compat.heartbeat_py import main\n"
    "code = main(sys.argv[1:])\n"
    "print('sqlalchemy' in sys.modules, code, file=sys.stderr)\n"
)


def test_a_call_with_no_edit_to_import_does_not_load_sqlalchemy(project: Path) -> None:
    # agents call heartbeat.py once per step: the drop-in's path stays off the ORM on SQLite
    env = {"PATH": "/usr/bin:/bin", "HB_NOW": NOW, "TZ": "UTC"}

    def probe(*args: str) -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args], cwd=project / "src", env=env, capture_output=True, text=True
        )
        return done.stdout, done.stderr.splitlines()[-1]

    assert probe("pop") == ("No pending tasks.\n", "True 0")  # the first call creates the ledger
    assert probe("pop") == ("No pending tasks.\n", "False 0")
    out, loaded = probe("add", "--skill", "s", "x")
    assert loaded == "False 0"
    task_id = out.removeprefix("Added task ").strip()
    assert probe("add", "--skill", "s", "y")[1] == "False 0"
    assert probe("pop")[1] == "False 0"
    assert probe("complete", task_id, "--outcome", "done")[1] == "False 0"
    assert probe("list")[1] == "False 0"
    tasks = project / ".agent" / "state" / "tasks.json"
    tasks.write_text(tasks.read_text().replace('"y"', '"y, edited"'))
    assert probe("pop")[1] == "False 0"  # a hand edit goes through the sync engine's merge, on plain SQL too
    assert probe("fail", "task-00000000")[1] == "False 0"


def test_the_shim_in_the_docs_runs_the_drop_in(project: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "heartbeat-py.md").read_text()
    shim = page.split("## Replace the script", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in shim.splitlines() if line]) == 3
    scripts = project / "skills" / "heartbeat" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "heartbeat.py").write_text(shim)
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "heartbeat-py").exists(), "install hb (pip install -e .) for its heartbeat-py command"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HB_NOW": NOW, "TZ": "UTC"}

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["python3", str(scripts / "heartbeat.py"), *args],
            cwd=project / "src",
            env=env,
            capture_output=True,
            text=True,
        )

    added = script("add", "--skill", "osint", "through the shim")
    assert added.returncode == 0 and ID.fullmatch(added.stdout.removeprefix("Added task ").strip())
    popped = script("pop")
    assert json.loads(popped.stdout)["description"] == "through the shim"
    refused = script("add", "--priority", "critical", "--skill", "s", "x")
    assert refused.returncode == 2 and "invalid choice: 'critical'" in refused.stderr
    assert script("pop", "--scope", "_x_extension.q").returncode == 14


def test_an_edit_made_while_a_call_runs_is_merged_not_written_over(
    hbpy: HeartbeatPy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another program (a person, the old script) saves tasks.json between the call's read and its write
    from heartbeat.compat import files

    first, second = hbpy.add("popped by the call"), hbpy.add("edited meanwhile")
    render = files.render
    edits = []

    def render_with_an_edit_landing(*args: Any, **kwargs: Any) -> dict[str, str]:
        if not edits:
            doc = hbpy.doc()
            doc["pending"][1]["description"] = "edited meanwhile, kept"
            edits.append(dumps(doc))
            hbpy.write("tasks.json", edits[0])
        return render(*args, **kwargs)

    monkeypatch.setattr(files, "render", render_with_an_edit_landing)
    assert hbpy.pop()["id"] == first
    doc = hbpy.doc()
    assert [(t["id"], t["description"]) for t in doc["pending"]] == [(second, "edited meanwhile, kept")]
    assert [t["id"] for t in doc["in_progress"]] == [first]


def test_a_bad_clock_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    """HB_NOW=garbage was refused (exit 1) after the ledger and the lock file were created."""
    env = {"PATH": "/usr/bin:/bin", "HB_NOW": "garbage", "TZ": "UTC"}
    done = subprocess.run(
        [sys.executable, "-m", "heartbeat", "compat", "heartbeat-py", "list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("hb: bad --now time 'garbage'") and done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_deep_outcome_completes_and_is_written_as_text(tmp_path: Path) -> None:
    """last-run.json is written with an indent, by json's pure-Python encoder, which gave up
    some levels short of what its reader takes: at 980 levels ``complete`` was an internal
    error (exit 70) after the ledger had recorded the completion. JSON deeper than 500 levels
    is the script's text outcome now, ``{"result": TEXT}``."""
    env = {**os.environ, "HB_NOW": "2026-05-01T09:00:00Z"}
    for depth in (975, 980, 985):
        project = tmp_path / f"p{depth}"
        project.mkdir()

        def run(*args: str, cwd: Path = project) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "heartbeat", "compat", "heartbeat-py", *args],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )

        run("add", "--skill", "s", "deep")
        task = json.loads(run("pop").stdout)
        outcome = "[" * depth + "]" * depth
        done = run("complete", task["id"], "--outcome", outcome)
        assert (done.returncode, done.stderr) == (0, ""), depth
        record = json.loads((project / ".agent" / "state" / "last-run.json").read_text())
        assert record["outcome"] == {"result": outcome}
