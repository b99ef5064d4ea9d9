"""sync.auto_export and the recurrence files: an operation that changes what PROACTIVE.md,
TODO.RECUR.md or TODO.md says writes that file after its commit, as `hb sync` of it would.

CraftBot's manager (app/proactive/manager.py, update_task) saves PROACTIVE.md with each
recorded outcome and decides due-ness from the task's `last_run` in that file; until hb wrote the
file, CraftBot would run a task again that hb had recorded as done for the period. mistermorph's
MaterializeDueRecurring reads `Next` from TODO.RECUR.md; until hb wrote it, mistermorph would
materialise the occurrence hb had already put into TODO.md a second time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import Runner
from tests.recur.conftest import rule
from tests.recur.test_proactive import FILE, _write

RECUR = """\
---
created_at: "2026-05-01T00:00:00Z"
updated_at: "2026-05-01T00:00:00Z"
---

# Recurring TODO

- [ ] [Next](2026-05-04 09:00), [Repeat](daily) | Water the plants.
"""
TODO = "# TODO Work In Progress (WIP)\n\n"
NOW = "2026-05-04T08:10"  # a Monday, UTC: the morning briefing's window (08:00-08:30) is open


def _history(workspace: Path, task_id: str) -> list[dict]:
    text = (workspace / "PROACTIVE.md").read_text()
    start = text.index(f"id: {task_id}")
    block = text[start : text.index("```", start)]
    return yaml.safe_load(block)


@pytest.fixture
def craftbot(hb_db: Runner, workspace: Path) -> Runner:
    hb_db("init")  # the machine zone: UTC
    _write(workspace, FILE)
    hb_db("--now", "2026-05-04T08:00", "sync")
    return hb_db


def test_an_outcome_writes_proactive_md_at_once_with_auto_export(craftbot: Runner, workspace: Path) -> None:
    craftbot("config", "set", "sync.auto_export", "true")
    craftbot("--now", NOW, "recur", "outcome", "morning_briefing", "--result", "sent the briefing")

    block = _history(workspace, "morning_briefing")
    assert block["run_count"] == 3
    assert block["outcome_history"][-1] == {
        "timestamp": "2026-05-04T08:10:00Z",
        "result": "sent the briefing",
        "success": True,
    }
    # CraftBot decides due-ness from last_run: the period is used up in the file itself
    assert str(block["last_run"]).startswith("2026-05-04")
    # the file says what the ledger says: a sync now has nothing to move
    synced = json.loads(craftbot("--now", "2026-05-04T08:11", "sync", "--json").stdout)
    [report] = [r for r in synced["reports"] if r["kind"] == "proactive"]
    assert (report["written"], report["updated"], report["added"]) == (False, [], [])


def test_without_auto_export_the_file_waits_for_the_next_sync(craftbot: Runner, workspace: Path) -> None:
    before = (workspace / "PROACTIVE.md").read_bytes()
    craftbot("--now", NOW, "recur", "outcome", "morning_briefing", "--result", "sent the briefing")
    assert (workspace / "PROACTIVE.md").read_bytes() == before
    craftbot("--now", "2026-05-04T08:11", "sync")
    assert _history(workspace, "morning_briefing")["run_count"] == 3


def test_an_empty_result_is_recorded_as_craftbot_records_it(craftbot: Runner, workspace: Path) -> None:
    """CraftBot's update_task takes add_outcome's result with "" as its default: an outcome
    without a text is a run all the same."""
    craftbot("config", "set", "sync.auto_export", "true")
    out = craftbot.json("--now", NOW, "recur", "outcome", "morning_briefing", "--result", "")
    assert out["outcome"]["result"] == "" and out["run_count"] == 3
    assert _history(workspace, "morning_briefing")["outcome_history"][-1]["result"] == ""
    # read back from the file by a fresh sync: the same outcome, not a second one
    craftbot("--now", "2026-05-04T08:11", "sync")
    assert _history(workspace, "morning_briefing")["run_count"] == 3


def test_enable_and_disable_write_proactive_md(craftbot: Runner, workspace: Path) -> None:
    craftbot("config", "set", "sync.auto_export", "true")
    craftbot("--now", NOW, "recur", "update", "morning_briefing", "--disable")
    assert _history(workspace, "morning_briefing")["enabled"] is False
    craftbot("--now", NOW, "recur", "update", "morning_briefing", "--enable")
    assert _history(workspace, "morning_briefing")["enabled"] is True


def test_materialize_add_and_remove_write_the_todo_files(hb_db: Runner, workspace: Path) -> None:
    hb_db("init")
    (workspace / "TODO.RECUR.md").write_text(RECUR)
    (workspace / "TODO.md").write_text(TODO)
    hb_db("--now", "2026-05-04T08:00", "sync")
    hb_db("config", "set", "sync.auto_export", "true")

    hb_db("--now", "2026-05-04T09:30", "recur", "materialize")
    # the occurrence is in TODO.md, and TODO.RECUR.md's Next moved past it (mistermorph reads it)
    assert "| 2026-05-04 09:00 Water the plants.\n" in (workspace / "TODO.md").read_text()
    assert (
        "[Next](2026-05-05 09:00), [Repeat](daily) | Water the plants."
        in (workspace / "TODO.RECUR.md").read_text()
    )
    # nothing is left for a sync to do, so nothing is materialised twice
    synced = json.loads(hb_db("--now", "2026-05-04T09:31", "sync", "--json").stdout)
    assert not any(r["written"] or r["added"] for r in synced["reports"] if r["kind"] in ("todo", "recur"))
    assert (workspace / "TODO.md").read_text().count("Water the plants.") == 1

    added = hb_db.json("--now", "2026-05-04T09:40", "recur", "add", "Feed the cat.", "--repeat", "daily")
    recur = (workspace / "TODO.RECUR.md").read_text()
    # on top of the list, where mistermorph's AddRecurring puts a new rule
    assert recur.index("| Feed the cat.") < recur.index("| Water the plants.")
    hb_db("--now", "2026-05-04T09:41", "recur", "remove", added["id"])
    assert "Feed the cat." not in (workspace / "TODO.RECUR.md").read_text()
    assert "Water the plants." in (workspace / "TODO.RECUR.md").read_text()


def test_a_file_that_cannot_be_written_is_a_warning_and_the_outcome_stands(
    craftbot: Runner, workspace: Path
) -> None:
    craftbot("config", "set", "sync.auto_export", "true")
    path = workspace / "PROACTIVE.md"
    path.write_bytes(path.read_bytes() + b"\xff\xfe not UTF-8\n")  # a file no sync can read
    before = path.read_bytes()
    result = craftbot("--now", NOW, "recur", "outcome", "morning_briefing", "--result", "done")
    assert "hb: warning: the recurrence files were not written" in result.stderr
    assert "hb sync retries" in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == before
    assert rule(craftbot, "morning_briefing")["run_count"] == 3
