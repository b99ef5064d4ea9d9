"""A workspace moved or copied with its ledger inside it (``mv``, ``cp -a``, the same directory
mounted at another path in a container): its files keep their base.

hb's records of the queue files hold the absolute path they were synced at. After a move the
record's path is no longer the file's, and the sync took the file for one it had never read:
no base, so every task the ledger had changed since reads as changed on both sides and the
file won. A task done in the ledger came back ``todo`` (the next pop handed it out again), a
priority set went back, and a completion's last-run.json record was replaced by the old one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from tests.conftest import Runner

NOW = "2026-05-01T10:00:00Z"
STATE = Path(".agent") / "state"


def _synced_then_changed(ws: Path) -> tuple[str, str, str]:
    """A workspace with its ledger inside, synced, then changed in the ledger: a task done, one
    given a priority, one claimed and failed for good (a task status, an error, a run record)."""
    with Ledger.open(workspace=ws, now=NOW) as ledger:
        a, b, c = (ledger.add(title)["id"] for title in ("A", "B", "C"))
        ledger.sync()
        ledger.done(b)
        ledger.update(a, priority="low")
        assert ledger.pop(task_id=c, worker="w") is not None
        ledger.fail(c, reason="broke", final=True)
    return a, b, c


def _relocate(ws: Path, how: str) -> Path:
    """``ws`` moved (``mv``) or copied (``cp -a``) to a sibling directory; the new path."""
    there = ws.parent / "elsewhere"
    if how == "move":
        shutil.move(str(ws), str(there))
    else:
        shutil.copytree(ws, there, symlinks=True)
    return there


def _tasks(ws: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """tasks.json's tasks by id: (the list holding it, its object)."""
    doc = json.loads((ws / STATE / "tasks.json").read_text())
    return {t["id"]: (key, t) for key, tasks in doc.items() if isinstance(tasks, list) for t in tasks}


@pytest.mark.parametrize("how", ["move", "copy"])
def test_a_moved_or_copied_workspace_syncs_the_ledgers_changes_without_conflict(
    workspace: Path, how: str
) -> None:
    a, b, c = _synced_then_changed(workspace)
    there = _relocate(workspace, how)
    with Ledger.open(workspace=there, now="2026-05-01T11:00:00Z") as ledger:
        result = ledger.sync()
        notices = list(ledger.ctx.notices)
        by_kind = {r["kind"]: r for r in result["reports"]}
        assert all(r["conflicts"] == [] for r in result["reports"]), result
        assert not any("conflict" in n or "reopens" in n for n in notices), notices
        assert not any("another workspace" in n for n in notices), notices
        assert ledger.get(b)["status"] == "done"
        assert ledger.get(a)["priority"] == "low"
        assert ledger.get(c)["status"] == "failed"
        runs = ledger.sql("SELECT kind FROM runs WHERE kind = 'import'")
    assert runs == []  # last-run.json's older record was not taken in as a new run
    for kind in ("tasks-json", "errors-json", "last-run"):
        assert by_kind[kind]["written"], by_kind[kind]
    shown = _tasks(there)
    assert shown[b][0] == "completed"
    assert shown[a][0] == "pending" and shown[a][1]["priority"] == "low"
    assert shown[c][0] == "failed"
    errors = json.loads((there / STATE / "errors.json").read_text())
    assert [e.get("reason") for e in errors] == ["broke"]
    last = json.loads((there / STATE / "last-run.json").read_text())
    assert last.get("task_id") == c
    with Ledger.open(workspace=there, now="2026-05-01T12:00:00Z") as ledger:
        again = ledger.sync()
    assert not again["changed"]


@pytest.mark.parametrize("how", ["move", "copy"])
def test_a_moved_workspace_writes_the_ledgers_last_run(workspace: Path, how: str) -> None:
    """last-run.json: read as a file hb never saw, its older record was taken in as a new run and
    written back over the completion the ledger had recorded since."""
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        a, c = ledger.add("A")["id"], ledger.add("C")["id"]
        assert ledger.pop(task_id=a, worker="w") is not None
        ledger.fail(a, reason="first", final=True)
        ledger.sync()
        assert ledger.pop(task_id=c, worker="w") is not None
        ledger.complete(c)
    there = _relocate(workspace, how)
    with Ledger.open(workspace=there, now="2026-05-01T11:00:00Z") as ledger:
        result = ledger.sync()
        imported = ledger.sql("SELECT task_id FROM runs WHERE kind = 'import'")
    [last_run] = [r for r in result["reports"] if r["kind"] == "last-run"]
    assert last_run["added"] == [] and last_run["written"]
    assert imported == []
    assert json.loads((there / STATE / "last-run.json").read_text())["task_id"] == c


def test_a_refused_operation_after_a_move_reverts_nothing(workspace: Path, hb: Runner) -> None:
    """With sync.auto_export, every queue operation first syncs a file edited since hb wrote
    it; after a move each file read as edited, and even a refused ``hb complete`` (exit 1) ran
    that sync and committed the revert of a done task."""
    hb("init", "--timezone", "UTC", HB_NOW=NOW)
    a = hb("add", "A", HB_NOW=NOW).stdout.strip()
    b = hb("add", "B", HB_NOW=NOW).stdout.strip()
    hb("config", "set", "sync.auto_export", "true", HB_NOW=NOW)
    hb("sync", HB_NOW=NOW)
    hb("done", b, HB_NOW=NOW)
    there = _relocate(workspace, "move")
    result = hb("complete", a, HB_NOW=NOW, HB_WORKSPACE=str(there), code=None)
    assert result.exit_code == 1, result.stderr  # a is not claimed
    assert "reopens" not in result.stderr and "conflict" not in result.stderr
    shown = json.loads(hb("list", "--all", "--json", HB_NOW=NOW, HB_WORKSPACE=str(there)).stdout)
    assert {t["id"]: t["status"] for t in shown}[b] == "done"


def test_what_counts_as_moved_with_the_ledger(tmp_path: Path) -> None:
    """The rule :func:`same_place` applies: the file's place relative to the ledger, not a name."""
    from heartbeat.ops.sync.files import moved_with_ledger

    old, new = tmp_path / "old", tmp_path / "new"
    for ws in (old, new):
        (ws / STATE).mkdir(parents=True)
        (ws / "TODO.md").write_text("")
    ledger = new / STATE / "heartbeat.db"
    ledger.write_text("")
    here = new / STATE / "tasks.json"
    # moved: the old path is gone (or another mount's)
    assert moved_with_ledger(old / STATE / "tasks.json", here, ledger)
    # copied: the old path is there, and so is the ledger's copy beside it
    (old / STATE / "tasks.json").write_text("{}")
    assert not moved_with_ledger(old / STATE / "tasks.json", here, ledger)  # no ledger beside it
    (old / STATE / "heartbeat.db").write_text("")
    assert moved_with_ledger(old / STATE / "tasks.json", here, ledger)
    assert moved_with_ledger(old / "TODO.md", new / "TODO.md", ledger)
    # another file: another name, another place in the workspace, a file hb imported from elsewhere
    assert not moved_with_ledger(old / STATE / "errors.json", here, ledger)
    assert not moved_with_ledger(old / "tasks.json", here, ledger)  # gone, but not a workspace's
    (tmp_path / "tasks.json").write_text("{}")
    assert not moved_with_ledger(tmp_path / "tasks.json", here, ledger)
    # a ledger outside both workspaces: their files are never one another's
    shared = tmp_path / "shared.db"
    assert not moved_with_ledger(old / STATE / "tasks.json", here, shared)
    # ... unless it moved with them (a directory holding the ledger and the workspace)
    assert moved_with_ledger(tmp_path / "gone" / "new" / STATE / "tasks.json", here, shared)
    assert not moved_with_ledger(old / STATE / "tasks.json", here, None)  # PostgreSQL


def test_a_workspace_sharing_the_ledger_inside_another_is_still_another_user(tmp_path: Path) -> None:
    """Workspace ``b`` syncing with the ledger inside ``a`` (``--db``): its file is not ``a``'s
    moved, so ``a``'s sync takes no base from it (``b``'s task is no record ``a``'s file dropped)
    and says that a ledger serves one workspace (it said nothing with the ledger inside ``a``)."""
    a, b = tmp_path / "a", tmp_path / "b"
    for ws in (a, b):
        (ws / STATE).mkdir(parents=True)
        task = {"id": f"{ws.name}1", "priority": "low", "description": ws.name}
        (ws / STATE / "tasks.json").write_text(
            json.dumps({"pending": [task], "in_progress": [], "completed": []})
        )
    inside = a / STATE / "heartbeat.db"
    for ws in (a, b, a):
        with Ledger.open(workspace=ws, db=str(inside), now=NOW) as ledger:
            result = ledger.sync()
            [queue] = [r for r in result["reports"] if r["kind"] == "tasks-json"]
            assert queue["removed"] == [], ws
            notices = list(ledger.ctx.notices)
            ids = sorted(t["id"] for t in ledger.list(status="all"))
    assert ids == ["a1", "b1"]
    other = b / STATE / "tasks.json"
    assert any(f"this ledger last synced {other}" in n and "serves one workspace" in n for n in notices)
