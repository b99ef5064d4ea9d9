"""A write-back that did not land must not undo the commit; a file hb may not write is left.

The sync commits, then writes the files. When that write fails or is killed, the file still
holds the text the sync read: the next sync must render the ledger's version again, not take
the old text for a user's edit (that reopened tasks, reverted claims, fired recurrences twice).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.ops.sync import swap, writeback
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-05-01T09:00:00Z"


def tasks_file(workspace: Path) -> Path:
    return workspace / ".agent" / "state" / "tasks.json"


def seed_queue(hb: Runner, workspace: Path, *ids: str) -> Path:
    path = tasks_file(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = [{"id": i, "priority": "high", "description": f"do {i}"} for i in ids]
    path.write_text(
        json.dumps({"pending": pending, "in_progress": [], "completed": [], "failed": []}, indent=2)
    )
    hb("--now", NOW, "sync")
    return path


@contextmanager
def writes_fail(monkeypatch: pytest.MonkeyPatch, code: int = errno.EROFS) -> Iterator[None]:
    """Every workspace-file write fails as on a read-only file system."""

    def refuse(path: Path, *_a: Any, **_k: Any) -> swap.Swapped:
        raise OSError(code, os.strerror(code), str(path))

    import heartbeat.compat.files
    import heartbeat.ops.sync.queue_files.export  # imported before swap is patched: they bind the real one

    with monkeypatch.context() as patch:
        for module in (heartbeat.ops.sync.queue_files.export, heartbeat.compat.files, swap):
            patch.setattr(module, "replace_if", refuse)
        yield


def statuses(path: Path) -> dict[str, list[str]]:
    doc = json.loads(path.read_text())
    return {name: [t["id"] for t in doc.get(name, [])] for name in ("pending", "in_progress", "completed")}


def test_a_sync_whose_write_failed_does_not_undo_the_claim(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    assert hb_db.json("--now", NOW, "pop")["id"] == "t1"
    before = path.read_bytes()
    with writes_fail(monkeypatch):
        result = hb_db("--now", NOW, "sync")  # commits, then cannot write tasks.json
    assert "not written; the next hb sync tries again" in result.stderr
    assert path.read_bytes() == before  # still shows t1 pending
    hb_db("--now", NOW, "sync")  # the write-back lands now
    assert statuses(path) == {"pending": ["t2"], "in_progress": ["t1"], "completed": []}
    assert hb_db.json("show", "t1")["status"] == "doing"  # the old file did not take the claim back
    assert hb_db.json("--now", NOW, "pop")["id"] == "t2"  # and t1 is not handed out twice


def test_a_sync_whose_write_failed_does_not_reopen_a_completed_task(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db.json("--now", NOW, "pop")
    hb_db("--now", NOW, "sync")  # tasks.json shows t1 in progress
    hb_db("--now", NOW, "complete", "t1", "--outcome", '{"ok": true}')
    with writes_fail(monkeypatch):
        hb_db("--now", NOW, "sync")
    assert statuses(path)["in_progress"] == ["t1"]  # the write did not land
    hb_db("--now", NOW, "sync")
    assert hb_db.json("show", "t1")["status"] == "done"
    assert statuses(path) == {"pending": ["t2"], "in_progress": [], "completed": ["t1"]}


def test_a_failed_auto_export_leaves_the_next_sync_to_write_it(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed_queue(hb_db, workspace, "t1")
    hb_db("config", "set", "sync.auto_export", "true")
    with writes_fail(monkeypatch):
        popped = hb_db("--now", NOW, "pop")
    assert json.loads(popped.stdout)["id"] == "t1"
    assert "were not re-rendered" in popped.stderr
    assert statuses(path)["pending"] == ["t1"]
    hb_db("--now", NOW, "sync")
    assert statuses(path) == {"pending": [], "in_progress": ["t1"], "completed": []}
    assert hb_db.json("show", "t1")["status"] == "doing"


def test_a_state_file_write_that_failed_keeps_what_hb_recorded(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = workspace / "memory" / "heartbeat-state.json"
    path.parent.mkdir()
    path.write_text('{"proactiveChat": {"enabled": true, "lastConversationAt": null}, "lastChecks": {}}\n')
    hb_db("--now", NOW, "sync")
    hb_db("--now", "2026-05-01T10:00:00Z", "seen")
    with writes_fail(monkeypatch):
        hb_db("--now", "2026-05-01T10:00:00Z", "sync")
    assert json.loads(path.read_text())["proactiveChat"]["lastConversationAt"] is None
    hb_db("--now", "2026-05-01T10:05:00Z", "sync")
    seen = json.loads(path.read_text())["proactiveChat"]["lastConversationAt"]
    assert seen is not None and seen.startswith("2026-05-01T")


def test_a_read_only_file_is_left_as_it_is_and_written_once_it_may(hb: Runner, workspace: Path) -> None:
    path = seed_queue(hb, workspace, "t1")
    hb.json("--now", NOW, "pop")
    path.chmod(0o444)
    before = path.read_bytes()
    result = hb("--now", NOW, "sync", "--json")
    assert f"{path}: read-only (mode 0444): left as it is" in result.stderr
    assert path.read_bytes() == before and path.stat().st_mode & 0o777 == 0o444
    [report] = [r for r in json.loads(result.stdout)["reports"] if r["kind"] == "tasks-json"]
    refused = "read-only (mode 0444): left as it is; hb sync writes it once it may"
    assert (report["written"], report["not_written"]) == (False, refused)  # not "written": true
    again = hb("--now", NOW, "sync")  # still pending, still refused, still one line
    assert "read-only" in again.stderr and path.read_bytes() == before
    assert f"{path}: re-rendered (not written: {refused})" in again.stdout
    path.chmod(0o644)
    [report] = [r for r in hb.json("--now", NOW, "sync")["reports"] if r["kind"] == "tasks-json"]
    assert (report["written"], report["not_written"]) == (True, None)
    assert statuses(path)["in_progress"] == ["t1"]


def test_a_file_that_keeps_changing_is_reported_not_written(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program edits tasks.json each time hb is about to write it: after the rounds hb
    merges and tries again, the file is left with that program's text, and the report says so."""
    path = seed_queue(hb_db, workspace, "t1")
    hb_db.json("--now", NOW, "pop")
    edits = []

    def edited_meanwhile(target: Path, text: str, expected: str | None, **_k: Any) -> swap.Swapped:
        doc = json.loads(target.read_text())
        doc["pending"].append({"id": f"e{len(edits)}", "priority": "low", "description": "by the runtime"})
        edits.append(json.dumps(doc, indent=2))
        target.write_text(edits[-1])
        return swap.Swapped(False, edits[-1])

    with monkeypatch.context() as patch:
        patch.setattr(swap, "replace_if", edited_meanwhile)
        result = hb_db("--now", NOW, "sync", "--json")
    [report] = [r for r in json.loads(result.stdout)["reports"] if r["kind"] == "tasks-json"]
    assert report["written"] is False
    assert report["not_written"] == "it kept changing while hb wrote it; left as it is (run hb sync)"
    assert "kept changing while hb wrote them" in result.stderr
    assert len(edits) == 3 and path.read_text() == edits[-1]  # the runtime's last text, as it left it
    hb_db("--now", NOW, "sync")
    assert statuses(path) == {"pending": ["e0", "e1", "e2"], "in_progress": ["t1"], "completed": []}


def test_a_dangling_symlink_is_not_followed_to_create_a_file(
    hb: Runner, workspace: Path, tmp_path: Path
) -> None:
    hb("--now", NOW, "add", "queued work")
    outside = tmp_path / "outside" / "tasks.json"
    outside.parent.mkdir()
    link = tasks_file(workspace)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    result = hb("--now", NOW, "sync")
    assert "a symlink to nothing (hb does not create its target)" in result.stderr
    assert not outside.exists() and link.is_symlink()


WRITE_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from heartbeat.cli.main import main
from heartbeat.ops.sync import swap

def die(path, text, expected, **kw):
    target = swap.target_of(Path(path))
    # a temp file half written, named as hb names it (after the text the write expects to replace)
    half = target.with_name(f".{target.name}.{swap.temp_tag(expected)}-killed.tmp")
    half.write_text(text[: len(text) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

swap.replace_if = die
import heartbeat.ops.sync.queue_files.export as q
q.replace_if = die
sys.exit(main(sys.argv[1:]))
"""


def run_killed(script: str, workspace: Path, db: str | None, *args: str, **env: str) -> None:
    """Run hb ``args`` on ``workspace`` (and ``db``) through ``script``, which patches hb to kill
    itself at one moment: it must die of that SIGKILL. ``env``: more for the script to read."""
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT), **env}
    if db:
        env["HB_DATABASE_URL"] = db
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _killed(workspace: Path, db: str | None, *args: str) -> None:
    run_killed(WRITE_THEN_DIE, workspace, db, *args)


def test_sigkill_at_the_write_after_the_commit(hb_db: Runner, workspace: Path) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db.json("--now", NOW, "pop")
    before = path.read_bytes()
    _killed(workspace, hb_db.env.get("HB_DATABASE_URL"), "--now", NOW, "sync")
    assert path.read_bytes() == before
    assert list(path.parent.glob(".tasks.json.*.tmp"))  # what the killed write left
    hb_db("--now", NOW, "sync")
    assert not list(path.parent.glob(".tasks.json.*.tmp"))  # removed by the next run
    assert not list(path.parent.glob(".tasks.json.*.hb-kept"))  # hb's own text: not kept aside
    assert statuses(path) == {"pending": ["t2"], "in_progress": ["t1"], "completed": []}
    assert hb_db.json("show", "t1")["status"] == "doing"


def test_an_edit_made_after_a_write_that_did_not_land_is_still_imported(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that differs from both the text read and the text meant is a user's edit."""
    path = seed_queue(hb, workspace, "t1")
    hb.json("--now", NOW, "pop")
    with writes_fail(monkeypatch):
        hb("--now", NOW, "sync")
    doc = json.loads(path.read_text())
    doc["pending"].append({"id": "t9", "priority": "low", "description": "added by hand"})
    path.write_text(json.dumps(doc, indent=2))
    hb("--now", NOW, "sync")
    assert hb.json("show", "t9")["title"] == "added by hand"
    assert "t9" in statuses(path)["pending"]


def test_the_ledger_api_reports_a_write_that_did_not_land(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        ledger.add("queued work")
        with writes_fail(monkeypatch):
            result = ledger.sync()
        assert any("not written" in n for n in ledger.notices)
        # the write was refused: the report must not say it was written, and says why
        assert [(r["written"], r["not_written"]) for r in result["reports"] if r["kind"] == "tasks-json"] == [
            (False, "Read-only file system; the next hb sync tries again")
        ]


RECUR = (
    '---\ncreated_at: "2026-05-01T00:00:00Z"\nupdated_at: "2026-05-01T00:00:00Z"\nrecurring_count: 1\n---\n\n'
    "# TODO Recurring\n\n- [ ] [Next](2026-05-01 09:00), [Repeat](daily), [TZ](UTC) | Water the plants\n"
)


def _recurring_workspace(hb: Runner, workspace: Path) -> None:
    (workspace / "TODO.RECUR.md").write_text(RECUR)
    (workspace / "TODO.md").write_text(
        '---\ncreated_at: "2026-05-01T00:00:00Z"\nupdated_at: "2026-05-01T00:00:00Z"\nopen_count: 0\n---\n\n'
        "# TODO Work In Progress (WIP)\n\n"
    )
    hb("--now", "2026-05-01T08:00:00Z", "init", "--timezone", "UTC")
    hb("config", "set", "recur.materialize", "true")
    hb("--now", "2026-05-01T08:00:00Z", "sync")


def _materialized(workspace: Path) -> list[str]:
    return [ln for ln in (workspace / "TODO.md").read_text().splitlines() if "Water the plants" in ln]


def test_a_killed_heartbeat_does_not_fire_its_recurrence_twice(hb_db: Runner, workspace: Path) -> None:
    _recurring_workspace(hb_db, workspace)
    _killed(workspace, hb_db.env.get("HB_DATABASE_URL"), "--now", "2026-05-01T09:10:00Z", "heartbeat")
    assert _materialized(workspace) == []  # killed at the write, after the commit
    hb_db("--now", "2026-05-01T09:40:00Z", "heartbeat")
    assert len(_materialized(workspace)) == 1
    assert "[Next](2026-05-02 09:00)" in (workspace / "TODO.RECUR.md").read_text()
    hb_db("--now", "2026-05-01T10:10:00Z", "heartbeat")  # and later ticks add nothing
    assert len(_materialized(workspace)) == 1
    assert len([t for t in hb_db.json("list") if "Water the plants" in t["title"]]) == 1


def test_a_heartbeat_that_could_not_write_does_not_fire_twice(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recurring_workspace(hb_db, workspace)
    with writes_fail(monkeypatch):
        result = hb_db("--now", "2026-05-01T09:10:00Z", "heartbeat")
    assert "not written; the next hb sync tries again" in result.stderr
    assert _materialized(workspace) == []
    hb_db("--now", "2026-05-01T09:40:00Z", "heartbeat")
    hb_db("--now", "2026-05-01T10:10:00Z", "heartbeat")
    assert len(_materialized(workspace)) == 1
    assert "[Next](2026-05-02 09:00)" in (workspace / "TODO.RECUR.md").read_text()


def test_done_whose_sync_could_not_write_is_not_reopened(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "TODO.md").write_text(
        "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n"
    )
    hb_db("--now", NOW, "sync")
    [task] = hb_db.json("list")
    hb_db("--now", NOW, "done", task["id"])
    with writes_fail(monkeypatch):
        hb_db("--now", NOW, "sync")
    assert "Send the invoice" in (workspace / "TODO.md").read_text()  # the write did not land
    hb_db("--now", NOW, "sync")
    assert hb_db.json("show", task["id"])["status"] == "done"
    assert "Send the invoice" not in (workspace / "TODO.md").read_text()
    assert "- [x] [Created](2026-05-01 08:00), [Done](" in (workspace / "TODO.DONE.md").read_text()


def test_a_read_only_todo_md_is_respected(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    todo.write_text("# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n")
    hb("--now", NOW, "sync")
    [task] = hb.json("list")
    hb("--now", NOW, "done", task["id"])
    todo.chmod(0o444)
    result = hb("--now", NOW, "sync")
    assert f"{todo}: read-only (mode 0444): left as it is" in result.stderr
    assert "Send the invoice" in todo.read_text() and todo.stat().st_mode & 0o777 == 0o444
    todo.chmod(0o644)
    hb("--now", NOW, "sync")
    assert "Send the invoice" not in todo.read_text()
    assert hb.json("show", task["id"])["status"] == "done"


def test_sigkill_at_an_auto_exported_pop_keeps_the_claim(hb_db: Runner, workspace: Path) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db("config", "set", "sync.auto_export", "true")
    _killed(workspace, hb_db.env.get("HB_DATABASE_URL"), "--now", NOW, "pop")
    assert statuses(path)["pending"] == ["t1", "t2"]  # killed at the export, after the claim
    assert hb_db.json("show", "t1")["status"] == "doing"
    hb_db("--now", NOW, "sync")
    assert statuses(path) == {"pending": ["t2"], "in_progress": ["t1"], "completed": []}
    assert hb_db.json("--now", NOW, "pop")["id"] == "t2"


def test_sigkill_at_the_sync_after_done_does_not_reopen(hb_db: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    todo.write_text("# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n")
    hb_db("--now", NOW, "sync")
    [task] = hb_db.json("list")
    hb_db("--now", NOW, "done", task["id"])
    _killed(workspace, hb_db.env.get("HB_DATABASE_URL"), "--now", NOW, "sync")
    assert "Send the invoice" in todo.read_text()
    hb_db("--now", NOW, "sync")
    assert hb_db.json("show", task["id"])["status"] == "done"
    assert "Send the invoice" not in todo.read_text()


def test_a_stale_copy_older_than_hbs_last_two_writes_loses_none_of_hbs_tasks(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """heartbeat.py reads tasks.json, hb writes it twice (a task each time), then the script saves
    the copy it read with its own task: both of hb's tasks stay (in the ledger and the file) and
    the script's task is taken in; nothing reads as deleted."""
    from heartbeat.ops.sync import writeback

    monkeypatch.setattr(writeback, "STALE_WRITE", 3_600_000_000_000)  # the two writes count as quick
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pending": [], "in_progress": [], "completed": [], "failed": []}, indent=2))
    with Ledger.open(workspace=workspace, now="2026-05-01T09:00:00Z") as ledger:
        ledger.sync()
        read_by_the_script = path.read_text()
        first = ledger.add("first of hb", priority="high")["id"]
        ledger.sync(only=["tasks-json"])
        second = ledger.add("second of hb", priority="high")["id"]
        ledger.sync(only=["tasks-json"])
        doc = json.loads(read_by_the_script)
        doc["pending"].append({"id": "w1", "priority": "low", "description": "from the script"})
        path.write_text(json.dumps(doc, indent=2))
        [report] = [r for r in ledger.sync(only=["tasks-json"])["reports"] if r["kind"] == "tasks-json"]
        assert report["removed"] == []
        in_ledger = {t["id"] for t in ledger.list(status="all")}
    in_file = {t["id"] for t in json.loads(path.read_text())["pending"]}
    assert {first, second, "w1"} <= in_ledger
    assert {first, second, "w1"} <= in_file


def _mistermorph_files(open_lines: list[str], done_lines: list[str], stamp: str) -> tuple[str, str]:
    """TODO.md and TODO.DONE.md as mistermorph's Complete writes them: each file whole, with
    its front matter stamped (created_at, updated_at and the count), its heading and the entries
    it reads, LF line endings."""
    todo = (
        f'---\ncreated_at: "{stamp}"\nupdated_at: "{stamp}"\nopen_count: {len(open_lines)}\n---\n\n'
        "# TODO Work In Progress (WIP)\n\n" + "".join(line + "\n" for line in open_lines)
    )
    done = (
        f'---\ncreated_at: "{stamp}"\nupdated_at: "{stamp}"\ndone_count: {len(done_lines)}\n---\n\n'
        "# TODO Done\n\n" + "".join(line + "\n" for line in done_lines)
    )
    return todo, done


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every change of a file hb wrote counts as made within moments of hb's write."""
    from heartbeat.ops.sync import writeback

    monkeypatch.setattr(writeback, "STALE_WRITE", 3_600_000_000_000)
    monkeypatch.setattr(writeback, "TODO_STALE_WRITE", 3_600_000_000_000)


PLAIN = "- [ ] [Created](2026-05-01 12:41) | plain"


def _plain_then_hb_one(ledger: Ledger) -> tuple[dict[str, Any], dict[str, Any]]:
    """TODO.md's one entry (PLAIN, written before) synced in, then hb's own entry "hb one" added
    and written: (the plain task, hb's)."""
    ledger.sync()
    [plain] = ledger.list(source="todo")
    mine = ledger.add_todo("hb one")
    ledger.sync()
    return plain, mine


@pytest.mark.usefixtures("quick")
def test_mistermorph_completing_an_entry_just_after_hbs_write_is_taken_in(workspace: Path) -> None:
    """mistermorph's Complete, run on the TODO.md hb has just written (within the second in which
    hb reads a change as a copy of the text before its write), rewrites both files whole and
    stamps their front matter. hb took that for a stale copy: it put the completed entry back
    into TODO.md (open and done at once) and wrote the front matter keys twice, which
    mistermorph's YAML reader then refuses."""
    todo_md, done_md = workspace / "TODO.md", workspace / "TODO.DONE.md"
    todo_md.write_text(PLAIN + "\n")
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00+08:00") as ledger:
        plain, _mine = _plain_then_hb_one(ledger)
        [hb_line] = [line for line in todo_md.read_text().splitlines() if line.endswith("| hb one")]
        todo, done = _mistermorph_files(
            [hb_line],
            ["- [x] [Created](2026-05-01 12:41), [Done](2026-05-04 02:30) | plain"],
            "2026-05-04T02:30:00Z",
        )
        todo_md.write_text(todo)
        done_md.write_text(done)
        ledger.sync()
        assert ledger.get(plain["id"])["status"] == "done"
        assert [t["title"] for t in ledger.list(source="todo")] == ["hb one"]
    assert todo_md.read_text() == todo  # nothing put back, no key written twice
    assert done_md.read_text() == done


@pytest.mark.usefixtures("quick")
def test_mistermorph_completing_the_entry_hb_just_added_is_taken_in(workspace: Path) -> None:
    """mistermorph's Complete (the line moved, as it was, to TODO.DONE.md) on the TODO.md hb had
    just written with a new entry: hb read the file as a stale copy of the text before its write
    (the line it added was gone), so it wrote its line back; the entry was then open and done at
    once, and mistermorph acted on both."""
    todo_md, done_md = workspace / "TODO.md", workspace / "TODO.DONE.md"
    todo_md.write_text(PLAIN + "\n")
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00+08:00") as ledger:
        plain, hb_one = _plain_then_hb_one(ledger)
        [hb_line] = [line for line in todo_md.read_text().splitlines() if line.endswith("| hb one")]
        done_line = hb_line.replace("- [ ]", "- [x]").replace(
            ") | hb one", "), [Done](2026-05-04 01:00) | hb one"
        )
        todo, done = _mistermorph_files([PLAIN], [done_line], "2026-05-04T01:00:00Z")
        done_md.write_text(done)
        todo_md.write_text(todo)
        ledger.sync()
        tasks = ledger.list(source="todo", status="all")
        assert [(t["id"], t["status"]) for t in tasks if t["id"] != plain["id"]] == [(hb_one["id"], "done")]
    assert todo_md.read_text() == todo  # nothing put back


@pytest.mark.usefixtures("quick")
def test_mistermorph_advancing_the_rule_hb_just_added_is_taken_in(workspace: Path) -> None:
    """mistermorph's MaterializeDueRecurring advances a rule's Next on the TODO.RECUR.md hb has
    just written with that rule: hb read a stale copy, took the advanced rule for a new one and
    wrote its own back, and mistermorph materialised the rule's run a second time."""
    recur_md = workspace / "TODO.RECUR.md"
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        ledger.recur_add("first", repeat="daily", next="2026-05-04T08:00")
        ledger.sync()
        second = ledger.recur_add("second", repeat="daily", next="2026-05-04T08:30")
        ledger.sync()
        text = recur_md.read_text()
        assert "[Next](2026-05-04 08:30), [Repeat](daily) | second" in text
        recur_md.write_text(text.replace("[Next](2026-05-04 08:30)", "[Next](2026-05-05 08:30)"))
        ledger.sync()
        assert [r["id"] for r in ledger.recur_list() if r["title"] == "second"] == [second["id"]]
        assert ledger.recur_get(second["id"])["next"] == "2026-05-05 08:30"
    assert recur_md.read_text().count("| second") == 1


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("copy", [False, True], ids=["edit", "stale copy"])
def test_an_edit_of_a_rule_whose_next_hb_just_moved_on_updates_it(workspace: Path, copy: bool) -> None:
    """hb materialises a rule and writes its new Next; its text is edited within the minute.
    The line was neither the one before hb's write nor hb's, so the file read as a stale copy
    of the text before plus a new rule: hb wrote its line back beside the edited one, and the
    rule stood twice (and fired twice). Only a reader of hb's text writes another text on the
    Next hb gave it. A stale copy (the rule's old line, and the runtime's own new rule on hb's
    new schedule) still keeps hb's line."""
    recur_md = workspace / "TODO.RECUR.md"
    recur_md.write_text(
        "# TODO Recurring\n\n- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | water plants\n"
    )
    with Ledger.open(workspace=workspace, now="2026-05-01T09:10:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        ledger.sync()
        before = recur_md.read_text()
        ledger.recur_materialize()
        ledger.sync()
        [rule] = ledger.recur_list()
        moved = recur_md.read_text()
        assert "[Next](2026-05-02 09:00), [Repeat](daily) | water plants\n" in moved
        if copy:
            other = "- [ ] [Next](2026-05-02 09:00), [Repeat](daily) | feed the cat\n"
            recur_md.write_text(before + other)
        else:
            recur_md.write_text(moved.replace("| water plants", "| water the plants"))
        ledger.sync()
        rules = {r["title"]: r for r in ledger.recur_list()}
        if copy:
            assert sorted(rules) == ["feed the cat", "water plants"]
            assert rules["water plants"]["next"] == "2026-05-02 09:00"  # not run again on its old Next
        else:
            assert list(rules) == ["water the plants"]
            assert rules["water the plants"]["id"] == rule["id"]
            assert rules["water the plants"]["next"] == "2026-05-02 09:00"
    text = recur_md.read_text()
    assert text.count("| water") == 1 and text.count("[Next](2026-05-01 09:00)") == 0


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("file", ["todo", "recur", "recur advanced"])
def test_a_stale_copy_that_looks_like_hbs_entries_loses_none_of_them(workspace: Path, file: str) -> None:
    """A copy mistermorph made before hb's write, saved just after with its own change, whose entry
    resembles the one hb added: created in the same minute (todo), a rule on the same schedule
    (recur), an old rule its materialisation advanced to the new rule's Next (recur advanced).
    hb's entry stays beside it; a first version of telling a copy by its entries lost it."""
    todo_md, recur_md = workspace / "TODO.md", workspace / "TODO.RECUR.md"
    with Ledger.open(workspace=workspace, now="2026-05-02T10:05:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        if file == "todo":
            ledger.add_todo("A")
            ledger.sync()
            copy = todo_md.read_text()
            mine = ledger.add_todo("B")
            ledger.sync()
            head = copy.partition("- [ ]")[0]
            todo_md.write_text(head + "- [ ] [Created](2026-05-02 10:05) | C\n" + copy[len(head) :])
            ledger.sync()
            assert sorted(t["title"] for t in ledger.list(source="todo")) == ["A", "B", "C"]
            assert ledger.get(mine["id"])["title"] == "B"
            assert "| B\n" in todo_md.read_text() and "| C\n" in todo_md.read_text()
            return
        ledger.recur_add("R", repeat="daily", next="2026-05-02T09:00")
        ledger.sync()
        copy = recur_md.read_text()
        mine = ledger.recur_add("S", repeat="daily", next="2026-05-03T09:00")
        ledger.sync()
        if file == "recur":
            stale = copy.replace("- [ ]", "- [ ] [Next](2026-05-03 09:00), [Repeat](daily) | C\n- [ ]", 1)
        else:  # R materialised on the copy: advanced to S's Next
            stale = copy.replace("[Next](2026-05-02 09:00)", "[Next](2026-05-03 09:00)")
        recur_md.write_text(stale)
        ledger.sync()
        titles = [r["title"] for r in ledger.recur_list()]
        assert titles.count("S") == 1 and ledger.recur_get(mine["id"])["title"] == "S"
        assert sorted(titles) == (["C", "R", "S"] if file == "recur" else ["R", "S"])
        if file == "recur advanced":  # R once, as the copy advanced it: not run again on its old Next
            [r] = [r for r in ledger.recur_list() if r["title"] == "R"]
            assert r["next"] == "2026-05-03 09:00"
    assert recur_md.read_text().count("| S\n") == 1 and recur_md.read_text().count("| R\n") == 1


@pytest.mark.usefixtures("quick")
def test_a_stale_copy_holding_an_entry_hb_just_completed_does_not_reopen_it(workspace: Path) -> None:
    """mistermorph read TODO.md, hb completed an entry (moved to TODO.DONE.md), mistermorph saved
    its copy with its own new entry just above that one: the entry came back open beside its
    done line (and was imported as a new task), as the two changes were merged as a conflict."""
    todo_md = workspace / "TODO.md"
    with Ledger.open(workspace=workspace, now="2026-05-02T10:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        h1 = ledger.add_todo("h1")
        h2 = ledger.add_todo("h2")
        ledger.sync()
        copy = todo_md.read_text()
        ledger.done(h2["id"])
        ledger.sync()
        head, sep, rest = copy.partition("- [ ]")
        todo_md.write_text(head + "- [ ] [Created](2026-05-02 10:01) | m4\n" + sep + rest)
        ledger.sync()
        tasks = sorted((t["title"], t["status"]) for t in ledger.list(source="todo", status="all"))
        assert tasks == [("h1", "todo"), ("h2", "done"), ("m4", "todo")]
        assert ledger.get(h1["id"])["status"] == "todo"
    text = todo_md.read_text()
    assert "| m4\n" in text and "| h1\n" in text and "| h2\n" not in text


@pytest.mark.usefixtures("quick")
def test_a_stale_copy_completing_the_entry_next_to_one_hb_completed_reopens_neither(workspace: Path) -> None:
    """hb completes one entry while mistermorph's Complete, on a copy made before that, completes
    the entry next to it (found by a fuzzer running mistermorph's own code against hb): the two
    deletions only abut, and the merge took them for a conflict and kept both lines. Both entries
    stood open in TODO.md and done in TODO.DONE.md, and were imported again as open tasks."""
    todo_md, done_md = workspace / "TODO.md", workspace / "TODO.DONE.md"
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        a = ledger.add_todo("task A")
    with Ledger.open(workspace=workspace, now="2026-05-04T09:01:00Z") as ledger:
        b = ledger.add_todo("task B")
        ledger.sync()
        assert todo_md.read_text().endswith("| task B\n- [ ] [Created](2026-05-04 09:00) | task A\n")
        ledger.done(b["id"])
        ledger.sync()
        todo, done = _mistermorph_files(
            ["- [ ] [Created](2026-05-04 09:01) | task B"],
            ["- [x] [Created](2026-05-04 09:00), [Done](2026-05-04 09:02) | task A"],
            "2026-05-04T09:02:00Z",
        )
        todo_md.write_text(todo)
        done_md.write_text(done)
        ledger.sync()
        tasks = sorted((t["title"], t["status"]) for t in ledger.list(source="todo", status="all"))
        assert tasks == [("task A", "done"), ("task B", "done")]
        assert ledger.get(a["id"])["status"] == "done"
    assert "| task" not in todo_md.read_text()
    assert done_md.read_text().count("| task A\n") == 1 and done_md.read_text().count("| task B\n") == 1


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("first", ["an entry added", "an entry completed", "a rule added to no file"])
def test_a_stale_copy_older_than_hbs_last_two_writes_of_a_todo_file_loses_none_of_them(
    workspace: Path, first: str
) -> None:
    """mistermorph read a TODO file, hb wrote it twice within the second, and mistermorph's copy
    with its own change landed after (a fuzzer running mistermorph's code against hb found it).
    The copy was merged against the text before hb's second write: what hb's first write did
    read as undone by the copy (its new entry deleted, its completion reopened; a rule added to
    a file that did not exist, removed). It is merged against the text it was made from, told by
    its entries. And a file the second write left as it was (TODO.DONE.md, which the copy wrote
    too) is still guarded: its guard was dropped at the second sync, and the entry hb had moved
    there was lost from the file and the ledger."""
    todo_md, done_md = workspace / "TODO.md", workspace / "TODO.DONE.md"
    recur_md = workspace / "TODO.RECUR.md"
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        if first == "a rule added to no file":
            one = ledger.recur_add("hb rule 1", repeat="daily", next="2026-05-04T08:00")
            ledger.sync()
            two = ledger.recur_add("hb rule 2", repeat="daily", next="2026-05-04T08:00")
            ledger.sync()
            recur_md.write_text(  # mistermorph's own new file: it found none
                '---\ncreated_at: "2026-05-04T09:00:00Z"\nupdated_at: "2026-05-04T09:00:00Z"\n'
                "recurring_count: 1\n---\n\n# TODO Recurring\n\n"
                "- [ ] [Next](2026-05-04 08:30), [Repeat](daily) | mm rule 3\n"
            )
            ledger.sync()
            rules = sorted(r["title"] for r in ledger.recur_list())
            assert rules == ["hb rule 1", "hb rule 2", "mm rule 3"]
            assert ledger.recur_get(one["id"])["title"] == "hb rule 1" and ledger.recur_get(two["id"])
            text = recur_md.read_text()
            assert all(text.count(f"| {title}\n") == 1 for title in rules)
            return
        x = ledger.add_todo("task X")
        ledger.sync()
        copy_lines = [line for line in todo_md.read_text().splitlines() if line.startswith("- [ ]")]
        if first == "an entry added":
            p = ledger.add_todo("task P")
        else:
            ledger.done(x["id"])
        ledger.sync()
        q = ledger.add_todo("task Q")
        ledger.sync()
        todo, done = _mistermorph_files(
            ["- [ ] [Created](2026-05-04 09:00) | mm M", *copy_lines], [], "2026-05-04T09:00:00Z"
        )
        todo_md.write_text(todo)
        done_md.write_text(done)
        ledger.sync()
        tasks = sorted((t["title"], t["status"]) for t in ledger.list(source="todo", status="all"))
        if first == "an entry added":
            assert tasks == [("mm M", "todo"), ("task P", "todo"), ("task Q", "todo"), ("task X", "todo")]
            assert ledger.get(p["id"])["title"] == "task P"
        else:
            assert tasks == [("mm M", "todo"), ("task Q", "todo"), ("task X", "done")]
            assert ledger.get(x["id"])["status"] == "done"
            assert done_md.read_text().count("| task X\n") == 1
        assert ledger.get(q["id"])["title"] == "task Q"
    text = todo_md.read_text()
    assert all(text.count(f"| {title}\n") == 1 for title, status in tasks if status == "todo")
    if first == "an entry completed":
        assert "| task X\n" not in text


@pytest.mark.parametrize(("after_s", "kept"), [(10, True), (50, True), (90, False)])
def test_mistermorphs_copy_landing_seconds_after_hbs_write_loses_none_of_hbs_entries(
    workspace: Path, after_s: int, kept: bool
) -> None:
    """mistermorph's Add asks its LLM (the semantic dedupe) between reading TODO.md and writing it
    whole, so a copy it made before hb's write lands seconds after it. With a second's window, hb
    read such a copy as its new entry deleted. A TODO file's window is a minute; a change after it
    is an edit like any other."""
    todo_md = workspace / "TODO.md"
    todo_md.write_text(PLAIN + "\n")
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        _plain, mine = _plain_then_hb_one(ledger)
        written = todo_md.stat().st_mtime_ns
        theirs = "- [ ] [Created](2026-05-04 09:00) | from mistermorph"
        todo_md.write_text(_mistermorph_files([theirs, PLAIN], [], "2026-05-04T09:00:00Z")[0])
        os.utime(todo_md, ns=(written, written + after_s * 1_000_000_000))
        ledger.sync()
        titles = sorted(t["title"] for t in ledger.list(source="todo"))
        if kept:
            assert titles == ["from mistermorph", "hb one", "plain"]
            assert ledger.get(mine["id"])["title"] == "hb one"
        else:
            assert titles == ["from mistermorph", "plain"]
    assert ("| hb one\n" in todo_md.read_text()) is kept


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("front_matter", [False, True])
def test_a_stale_copy_of_todo_md_loses_none_of_hbs_entries(workspace: Path, front_matter: bool) -> None:
    """The other way round, as before: mistermorph read TODO.md before hb's write and saved its
    own change (a new entry, its front matter restamped) just after: hb's entry is no deletion,
    and both stay. With a front matter, merged by lines, hb's stamps and mistermorph's both
    stayed: ``updated_at`` and ``open_count`` twice, which mistermorph's YAML reader refuses (it
    then resets ``created_at``). The copy's front matter is taken, its count set to the entries
    the merged file holds (it said the copy's two)."""
    todo_md = workspace / "TODO.md"
    first = _mistermorph_files([PLAIN], [], "2026-05-04T01:00:00Z")[0] if front_matter else PLAIN + "\n"
    todo_md.write_text(first)
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00+08:00") as ledger:
        _plain_then_hb_one(ledger)
        mm_line = "- [ ] [Created](2026-05-04 02:30) | from mistermorph"
        copy, _done = _mistermorph_files([mm_line, PLAIN], [], "2026-05-04T02:30:00Z")
        todo_md.write_text(copy)
        ledger.sync()
        titles = sorted(t["title"] for t in ledger.list(source="todo"))
    assert titles == ["from mistermorph", "hb one", "plain"]
    text = todo_md.read_text()
    assert all(f"| {title}\n" in text for title in titles)
    head = text.split("---\n")[1]
    assert [line.split(":")[0] for line in head.splitlines()] == ["created_at", "updated_at", "open_count"]
    assert head.splitlines()[2] == "open_count: 3"


@pytest.mark.usefixtures("quick")
def test_an_edit_of_hbs_new_entry_with_its_id_is_an_edit_not_a_copy(workspace: Path) -> None:
    """With the extended dialect, an entry holding the [ID] of the entry hb has just added was
    made from hb's text, whatever else changed on its line: an edit of the title within the second
    after hb's write updates the task. Told by the line's other parts, it read as a stale copy's
    new entry, and the task stood twice."""
    todo_md = workspace / "TODO.md"
    todo_md.write_text(PLAIN + "\n")
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("todo.dialect", "extended")
        _plain, mine = _plain_then_hb_one(ledger)
        text = todo_md.read_text()
        assert f"[ID]({mine['id']}) | hb one\n" in text
        todo_md.write_text(text.replace("| hb one\n", "| hb one, edited\n"))
        ledger.sync()
        assert sorted(t["title"] for t in ledger.list(source="todo")) == ["hb one, edited", "plain"]
        assert ledger.get(mine["id"])["title"] == "hb one, edited"
    assert todo_md.read_text().count("| hb one") == 1


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("file", ["TODO.md", "TODO.RECUR.md"])
def test_a_stale_copy_of_a_file_hb_just_created_loses_none_of_hbs_entries(workspace: Path, file: str) -> None:
    """mistermorph found no TODO.md (or TODO.RECUR.md), hb's write then created the file with its
    entry, and mistermorph saved the file it meant to create, with its own entry, just after: hb
    read that as its entry deleted, and lost it. A file that did not exist before hb's write is a
    copy of an empty text; both entries stay."""
    path = workspace / file
    with Ledger.open(workspace=workspace, now="2026-05-04T09:00:00Z") as ledger:
        ledger.config_set("timezone", "UTC")
        if file == "TODO.md":
            mine = ledger.add_todo("hb one")
            ledger.sync()
            theirs = "- [ ] [Created](2026-05-04 09:00) | from mistermorph"
            path.write_text(_mistermorph_files([theirs], [], "2026-05-04T09:00:00Z")[0])
            ledger.sync()
            assert sorted(t["title"] for t in ledger.list(source="todo")) == ["from mistermorph", "hb one"]
            assert ledger.get(mine["id"])["status"] == "todo"
        else:
            mine = ledger.recur_add("hb rule", repeat="daily", next="2026-05-05T08:00")
            ledger.sync()
            path.write_text(
                '---\ncreated_at: "2026-05-04T09:00:00Z"\nupdated_at: "2026-05-04T09:00:00Z"\n'
                "recurring_count: 1\n---\n\n# TODO Recurring\n\n"
                "- [ ] [Next](2026-05-05 10:00), [Repeat](weekly) | from mistermorph\n"
            )
            ledger.sync()
            assert sorted(r["title"] for r in ledger.recur_list()) == ["from mistermorph", "hb rule"]
            assert ledger.recur_get(mine["id"])["title"] == "hb rule"
    text = path.read_text()
    assert text.count("| from mistermorph\n") == 1 and text.count("| hb ") == 1


@pytest.mark.usefixtures("quick")
def test_heartbeat_py_saving_the_tasks_json_it_found_missing_loses_none_of_hbs_tasks(workspace: Path) -> None:
    """heartbeat.py's ``add`` read no tasks.json (a missing file is an empty queue to it), hb's
    export then created the file, and the script saved its own file with its one task just
    after: hb read its exported task as deleted and lost it. A file hb's write created is synced
    as one hb never read: the script's task is imported, and hb's stays."""
    path = tasks_file(workspace)
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        mine = ledger.add("from hb")
        ledger.sync()
        assert [t["description"] for t in json.loads(path.read_text())["pending"]] == ["from hb"]
        path.write_text(_script_add(None, "task-20260501090000", "from the script", "medium"))
        ledger.sync()
        assert sorted(t["title"] for t in ledger.list()) == ["from hb", "from the script"]
        assert ledger.get(mine["id"])["status"] == "todo"
        pending = json.loads(path.read_text())["pending"]
        assert sorted(t["description"] for t in pending) == ["from hb", "from the script"]
        # the script's pop right after hb's next write (a file it read from hb's text) is its pop
        other = ledger.add("another")
        path.unlink()
        ledger.sync()
        doc = json.loads(path.read_text())
        popped = doc["pending"].pop(0)
        doc["in_progress"].append(popped)
        path.write_text(json.dumps(doc, indent=2))
        [report] = [r for r in ledger.sync()["reports"] if r["kind"] == "tasks-json"]
        assert report["conflicts"] == [] and ledger.get(popped["id"])["status"] == "doing"
        assert ledger.get(other["id"])["status"] in ("todo", "doing")


def _script_add(text: str | None, task_id: str, description: str, priority: str = "low") -> str:
    """heartbeat.py's ``add`` on ``text`` (None: no file, an empty queue to it): the task appended
    to pending, pending sorted by priority, the file dumped whole with indent 2 and no final
    newline."""
    doc = json.loads(text) if text else {"pending": [], "in_progress": [], "completed": [], "failed": []}
    doc["pending"].append(
        {
            "id": task_id,
            "priority": priority,
            "description": description,
            "assigned_skill": None,
            "project_id": None,
            "agent_id": None,
            "user_id": None,
            "created_at": "2026-05-01T09:00:00+00:00Z",
            "completed_at": None,
        }
    )
    rank = {"high": 0, "medium": 1, "low": 2}
    doc["pending"].sort(key=lambda t: rank.get(t.get("priority"), 1))
    return json.dumps(doc, indent=2)


def _script_pop(text: str) -> str:
    """heartbeat.py's ``pop`` on ``text``: pending[0] moved to in_progress."""
    doc = json.loads(text)
    doc["in_progress"].append(doc["pending"].pop(0))
    return json.dumps(doc, indent=2)


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("case", ["a task hb added", "a retry hb made"])
def test_a_stale_tasks_json_after_two_quick_exports_is_told_by_its_tasks(workspace: Path, case: str) -> None:
    """heartbeat.py read tasks.json, hb wrote it twice within the second, the script's copy with
    its one change landed after (a fuzzer running heartbeat.py against hb found it). The copy's
    source was told by lines, and heartbeat.py's change sits where hb's later write changed lines
    too, so the wrong text read closest: a task hb added was read as deleted by the copy, or hb's
    retry of a failed task as popped again (in progress with no claim: ``hb pop`` then refused,
    exit 12). It is told by where its tasks stand."""
    path = tasks_file(workspace)
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        ledger.config_set("sync.auto_export", "true")
        a = ledger.add("hb-a", priority="high")
        if case == "a task hb added":
            ledger.sync()
            read = path.read_text()
            b = ledger.add("hb-b")
            ledger.sync()
            ledger.pop(worker="w")
            path.write_text(_script_add(read, "task-script", "hp-c"))
            ledger.sync()
            statuses = {t["title"]: t["status"] for t in ledger.list(status="all")}
            assert statuses == {"hb-a": "doing", "hb-b": "todo", "hp-c": "todo"}
            assert ledger.get(b["id"])["title"] == "hb-b"
            return
        b = ledger.add("hb-b")
        ledger.pop(worker="w")  # the export creates the file: hb-a in progress, hb-b pending
        read = path.read_text()
        assert ledger.fail(a["id"], reason="x")["status"] == "todo"  # back to pending: a retry
        ledger.add("hb-c")
        ledger.sync()
        path.write_text(_script_pop(read))  # the script popped hb-b from the file it read
        ledger.sync()
        statuses = {t["title"]: t["status"] for t in ledger.list(status="all")}
        assert statuses == {"hb-a": "todo", "hb-b": "doing", "hb-c": "todo"}
        assert ledger.get(b["id"])["claimed_at"] is None  # the script's pop: no claim of hb's


@pytest.mark.usefixtures("quick")
def test_heartbeat_py_saving_its_own_file_over_the_one_a_queue_export_created_loses_nothing(
    workspace: Path,
) -> None:
    """The same as for a sync's write, for an auto-exported pop that created tasks.json: the export
    kept no guard for a file it created, so the script's own file (made from no file) was read as
    an edit that deleted hb's pending task."""
    path = tasks_file(workspace)
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        ledger.add("hb-a")
        b = ledger.add("hb-b")
        ledger.config_set("sync.auto_export", "true")
        ledger.pop(worker="w")
        path.write_text(_script_add(None, "task-script", "hp-x", "medium"))
        ledger.sync()
        statuses = {t["title"]: t["status"] for t in ledger.list(status="all")}
        assert statuses == {"hb-a": "doing", "hb-b": "todo", "hp-x": "todo"}
        assert ledger.get(b["id"])["status"] == "todo"
    pending = [t["description"] for t in json.loads(path.read_text())["pending"]]
    assert sorted(pending) == ["hb-b", "hp-x"]


@pytest.mark.usefixtures("quick")
def test_two_stale_copies_in_a_row_lose_none_of_hbs_tasks(workspace: Path) -> None:
    """heartbeat.py saved a copy made before hb's exports, then, with no hb sync between, ran again
    on its own copy and saved that: the second copy's text is none hb kept, and the nearest kept
    text held the task hb had just added, which the copy then read as deleting. heartbeat.py never
    takes a task out of the file, so a copy lacking a task was made before the text that has it."""
    path = tasks_file(workspace)
    with Ledger.open(workspace=workspace, now=NOW) as ledger:
        ledger.config_set("sync.auto_export", "true")
        x1 = ledger.add("x1", priority="high")
        ledger.add("x2")
        ledger.sync()
        read = path.read_text()
        mine = ledger.add("hb-5")
        ledger.pop(worker="w")  # exports: x1 in progress, hb-5 written
        ledger.fail(x1["id"], reason="again")  # exports: x1 back to pending
        first = _script_add(read, "task-script", "y", "medium")
        path.write_text(first)  # the script's copy of the text before hb's exports lands ...
        path.write_text(_script_pop(first))  # ... and its next command pops from that copy
        ledger.sync()
        statuses = {t["title"]: t["status"] for t in ledger.list(status="all")}
        assert statuses == {"x1": "doing", "x2": "todo", "y": "todo", "hb-5": "todo"}
        assert ledger.get(mine["id"])["title"] == "hb-5"
    doc = json.loads(path.read_text())
    assert sorted(t["description"] for t in doc["pending"]) == ["hb-5", "x2", "y"]


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("next_command", ["sync", "pop"])
@pytest.mark.parametrize("read", ["after the pop", "before the pop"])
@pytest.mark.parametrize("size", ["small", "large", "large on one line"])
def test_a_stale_copy_saved_after_an_auto_exported_completion_does_not_reopen_it(
    hb_db: Runner, db_url: str, workspace: Path, next_command: str, read: str, size: str
) -> None:
    """heartbeat.py reads tasks.json, ``hb complete`` (sync.auto_export) rewrites it, then the
    script saves its copy with a task of its own. The export kept no write-back, so the next
    ``hb sync`` (or the next queue operation's export) read the copy against hb's text: the
    completed task was reopened, held by a stale claim, and handed out again. A copy read before
    the pop is older than both of hb's writes. A file past the 256 KiB whose text before an
    export is stored whole had no write-back at all: its text is referred to where hb keeps it."""
    path = tasks_file(workspace)
    indent = None if size == "large on one line" else 2  # heartbeat.py writes indent=2
    if size != "small":  # about 400 KB: past STALE_COPY_TEXT_MAX, kept compressed and as edits
        filler = [{"id": f"f{i}", "priority": "low", "description": "x" * 1000} for i in range(400)]
        path.parent.mkdir(parents=True, exist_ok=True)
        empty: dict[str, list[Any]] = {"in_progress": [], "completed": [], "failed": []}
        path.write_text(json.dumps({"pending": filler, **empty}, indent=indent))
        hb_db("sync")  # hb writes the file in the layout it found
    hb_db("config", "set", "sync.auto_export", "true")
    a = hb_db("add", "Task A").stdout.strip()
    hb_db("add", "Task B")
    hb_db("sync")  # the file as heartbeat.py finds it
    assert (len(path.read_text()) > 256 * 1024) is (size != "small")
    copy = json.loads(path.read_text()) if read == "before the pop" else None
    assert hb_db.json("pop")["id"] == a
    if copy is None:
        copy = json.loads(path.read_text())
    hb_db("complete", a, "--outcome", '{"ok": true}')
    if size == "large":  # hb wrote the task in place: the text before is referred to, not stored again
        with Ledger.open(workspace=workspace, db=db_url) as ledger, ledger.ctx.read() as db:
            kept = writeback.pending(db, ["tasks-json"])["tasks-json"].kept_before
        assert isinstance(kept, dict) and set(kept) == {"edits"}
    copy["pending"].append({"id": "task-script01", "priority": "medium", "description": "x"})
    path.write_text(json.dumps(copy, indent=indent))
    hb_db(next_command)
    assert hb_db.json("show", a)["status"] == "done"
    assert hb_db.json("show", "task-script01")["status"] in ("todo", "doing")
    shown = statuses(path)
    assert a in shown["completed"] and any("task-script01" in ids for ids in shown.values())


PROACTIVE = (
    "# Proactive Tasks\n\n<!-- PROACTIVE_TASKS_START -->\n\n### [DAILY] Inbox\n```yaml\nid: inbox\n"
    "frequency: daily\ninstruction: check the inbox\nrun_count: 3\n```\n\n<!-- PROACTIVE_TASKS_END -->\n\n"
    "## Goals\n"
)


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("auto_export", [True, False])
def test_a_stale_copy_of_proactive_md_does_not_undo_a_recorded_run(
    hb: Runner, workspace: Path, auto_export: bool
) -> None:
    """An editor (or CraftBot) reads PROACTIVE.md, hb writes a run of a task into it (run_count 4
    and the outcome), then the editor saves its copy with a line of its own. The rows keep the
    file's version themselves, so the copy's run_count 3 read as CraftBot's own count: the run
    was gone from the file and the ledger, and the next outcome was "run 4" again."""
    path = workspace / "PROACTIVE.md"
    path.write_text(PROACTIVE)
    hb("config", "set", "sync.auto_export", "true" if auto_export else "false")
    hb("--now", "2026-05-04T09:00:00Z", "sync")
    read_by_the_editor = path.read_text()
    hb("--now", "2026-05-04T09:05:00Z", "recur", "outcome", "inbox", "--result", "run A")
    if not auto_export:
        hb("--now", "2026-05-04T09:05:00Z", "sync")
    assert "run_count: 4" in path.read_text()
    path.write_text(read_by_the_editor.replace("## Goals\n", "## Goals\n\n- a goal of the editor\n"))
    hb("--now", "2026-05-04T09:06:00Z", "sync")
    text = path.read_text()
    assert "run_count: 4" in text and "run A" in text and "- a goal of the editor\n" in text
    assert (
        "run 5 recorded"
        in hb("--now", "2026-05-04T09:10:00Z", "recur", "outcome", "inbox", "--result", "B").stdout
    )


@pytest.mark.usefixtures("quick")
@pytest.mark.parametrize("when", ["sync", "auto_export"])
def test_json_nested_too_deeply_right_after_hbs_write_is_named_not_a_crash(
    workspace: Path, when: str
) -> None:
    """A tasks.json nested deeper than Python's json reads, landing within moments of hb's
    write: telling whether it was a stale copy of hb's text read it with a bare json.loads, whose
    RecursionError went up as an internal error (exit 70) from sync, pop, complete and heartbeat.
    It is the error (sync) or the warning (a queue operation's export) any such file gets."""
    from heartbeat.errors import FileFormatError

    path = workspace / ".agent" / "state" / "tasks.json"
    deep = '{"pending": [{"id": "t1", "x": ' + "[" * 20000 + "]" * 20000 + '}], "in_progress": []}\n'
    with Ledger.open(workspace=workspace, now="2026-05-01T10:00:00Z") as ledger:
        ledger.add("A")
        ledger.add("B")
        if when == "auto_export":
            ledger.config_set("sync.auto_export", "true")
            assert ledger.pop(worker="w") is not None  # its export writes the file
        ledger.sync()
        path.write_text(deep)
        if when == "sync":
            with pytest.raises(FileFormatError, match=r"tasks\.json:1:\d+: invalid JSON: nested too deeply"):
                ledger.sync()
        else:
            assert ledger.pop(worker="w") is not None
            assert any("nested too deeply: left as it is" in notice for notice in ledger.ctx.notices)
    assert path.read_text() == deep


def test_two_workspaces_on_one_ledger_do_not_remove_each_others_tasks(tmp_path: Path) -> None:
    """Two workspaces with one ledger outside both (a shared PostgreSQL database, a --db file):
    the write-back B's sync left was read by A's as A's own (its text taken as the text A had
    read), so A's sync removed B's tasks from the ledger. A write-back of another file is not
    this file's; and the sync says that a ledger serves one workspace."""
    shared = tmp_path / "shared.db"
    spaces = {name: tmp_path / name for name in ("a", "b")}
    for name, ws in spaces.items():
        state = ws / ".agent" / "state"
        state.mkdir(parents=True)
        tasks = [{"id": f"{name}{i}", "priority": "low", "description": name} for i in (1, 2)]
        (state / "tasks.json").write_text(json.dumps({"pending": tasks, "in_progress": [], "completed": []}))
    for name in ("a", "b", "a"):
        with Ledger.open(workspace=spaces[name], db=str(shared), now="2026-05-01T10:00:00Z") as ledger:
            report = ledger.sync()
            [queue] = [r for r in report["reports"] if r["kind"] == "tasks-json"]
            assert queue["removed"] == [], name
            notices = list(ledger.ctx.notices)
            ids = sorted(t["id"] for t in ledger.list(status="all"))
    assert ids == ["a1", "a2", "b1", "b2"]
    other = spaces["b"] / ".agent" / "state" / "tasks.json"
    assert any(f"this ledger last synced {other}" in n and "serves one workspace" in n for n in notices)


DIE_AFTER_THE_COMMIT = """
import os, signal, sys
from heartbeat.cli.main import main
import heartbeat.ops.sync.markdown.base as base

def die(*args, **kw):  # the commit is made, the write-back and the copy's renaming are not
    os.kill(os.getpid(), signal.SIGKILL)

base._keep_base = die
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("done_by_hand", [False, True])
def test_a_sync_killed_right_after_its_commit_loses_no_task_added_in_the_ledger(
    hb_db: Runner, workspace: Path, done_by_hand: bool
) -> None:
    """A sync records the text it will write in its commit and kept its copy of that text after
    it. Killed in between, the copy was the text before: the next sync read the task
    ``hb add --source todo`` had added (in that text, not yet in the file) as deleted from TODO.md,
    and removed it; with a line of the same minute added to TODO.DONE.md meanwhile, the lost task's
    id went to that line. The copy is now written before the commit."""
    hb_db("init", "--timezone", "UTC")
    hb_db("--now", "2026-06-01T10:00", "add", "Old entry", "--source", "todo")
    hb_db("--now", "2026-06-01T10:00", "sync")
    added = hb_db("--now", "2026-06-01T10:05", "add", "Write the report", "--source", "todo").stdout.strip()
    todo = (workspace / "TODO.md").read_bytes()
    run_killed(
        DIE_AFTER_THE_COMMIT, workspace, hb_db.env.get("HB_DATABASE_URL"), "--now", "2026-06-01T10:05", "sync"
    )
    assert (workspace / "TODO.md").read_bytes() == todo  # killed before its write-back
    hand = "- [x] [Created](2026-06-01 10:05), [Done](2026-06-01 10:06) | Water the plants\n"
    if done_by_hand:
        with (workspace / "TODO.DONE.md").open("a") as done:
            done.write(hand)
    report = hb_db.json("--now", "2026-06-01T10:07", "sync")
    assert not any(r.get("removed") for r in report["reports"]), report
    task = hb_db.json("show", added)
    assert (task["title"], task["status"]) == ("Write the report", "todo")
    assert "| Write the report" in (workspace / "TODO.md").read_text()
    if done_by_hand:
        titles = {t["title"]: t["status"] for t in hb_db.json("list", "--all", "--source", "todo")}
        assert titles == {"Write the report": "todo", "Old entry": "todo", "Water the plants": "done"}
        assert hand in (workspace / "TODO.DONE.md").read_text()
    assert hb_db("--now", "2026-06-01T10:08", "sync").stdout == "Everything is in sync.\n"
    assert not list((workspace / ".agent" / "state" / "sync").glob("*.next"))  # the last copies now
