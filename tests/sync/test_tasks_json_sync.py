"""hb sync with tasks.json, errors.json and last-run.json: the same identity and conflict rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from tests.conftest import Runner
from tests.sync.helpers import events, report, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
Q = "_round3_extension.ag_implementation_queue"


def sync(hb: Runner, now: str = "2026-05-03T10:00:00Z") -> dict[str, Any]:
    return json.loads(hb("sync", "--json", HB_NOW=now).stdout)


def ordered(text: str) -> Any:
    return json.loads(text, object_pairs_hook=list)


@pytest.fixture
def tasks_file(workspace: Path) -> Path:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "tasks_legacy.json", path)
    return path


def test_first_sync_imports_and_writes_only_the_timestamp_fix(hb_db: Runner, tasks_file: Path) -> None:
    original = tasks_file.read_text()
    out = sync(hb_db)
    tj = report(out, "tasks-json")
    assert sorted(tj["added"]) == sorted(t["id"] for t in ordered_ids(original))
    assert tj["written"] is True  # the one deliberate change: "+00:00Z" is written "Z"
    assert ordered(tasks_file.read_text()) == ordered(original.replace("+00:00Z", "Z"))
    assert sync(hb_db)["changed"] is False


def ordered_ids(text: str) -> list[dict[str, Any]]:
    doc = json.loads(text)
    return [t for key in ("pending", "in_progress", "completed", "failed") for t in doc.get(key, [])]


def test_a_file_without_changes_to_make_is_not_rewritten(hb: Runner, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True)
    text = '{"pending": [{"id": "a", "priority": "high", "description": "x"}], "completed": []}'
    path.write_text(text)
    assert report(sync(hb), "tasks-json")["written"] is False
    assert path.read_text() == text  # hb's own layout would differ; the values do not


def test_ledger_changes_are_written_and_file_changes_imported(
    hb_db: Runner, tasks_file: Path, workspace: Path
) -> None:
    sync(hb_db)
    popped = json.loads(hb_db("pop", "--worker", "w1", HB_NOW="2026-05-03T10:05:00Z").stdout)
    out = sync(hb_db, now="2026-05-03T10:06:00Z")
    assert report(out, "tasks-json")["updated"] == [popped["id"]]
    doc = json.loads(tasks_file.read_text())
    assert [t["id"] for t in doc["in_progress"]] == [popped["id"]]
    doc["pending"][0]["description"] = "tidy the notes, edited in the file"
    tasks_file.write_text(json.dumps(doc, indent=2))
    out = sync(hb_db, now="2026-05-03T10:07:00Z")
    assert report(out, "tasks-json")["updated"] == [doc["pending"][0]["id"]]
    assert hb_db.json("show", doc["pending"][0]["id"])["title"] == "tidy the notes, edited in the file"
    assert hb_db.json("show", popped["id"])["status"] == "doing"  # the claim survives the import


def test_both_sides_changed_is_a_conflict_the_file_wins(
    hb_db: Runner, tasks_file: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    hb_db("update", "task-low", "--title", "ledger title")
    doc = json.loads(tasks_file.read_text())
    doc["pending"][0]["description"] = "file title"
    tasks_file.write_text(json.dumps(doc, indent=2))
    out = sync(hb_db)
    assert report(out, "tasks-json")["conflicts"] == ["task-low"]
    assert hb_db.json("show", "task-low")["title"] == "file title"
    [conflict] = [e for e in events(workspace, "task-low", db_url) if e["kind"] == "conflict"]
    assert conflict["before"]["title"] == "ledger title"


def test_a_record_deleted_from_the_file_is_removed(hb_db: Runner, tasks_file: Path) -> None:
    sync(hb_db)
    doc = json.loads(tasks_file.read_text())
    gone = doc["pending"].pop(0)["id"]
    tasks_file.write_text(json.dumps(doc, indent=2))
    out = sync(hb_db)
    assert report(out, "tasks-json")["removed"] == [gone]
    hb_db("show", gone, code=1)


@pytest.mark.parametrize("edited_in_ledger", [False, True])
def test_a_record_deleted_from_the_file_is_removed_by_the_sync_after_an_import_too(
    hb_db: Runner, tasks_file: Path, edited_in_ledger: bool
) -> None:
    """``hb import tasks-json`` keeps the ledger's tasks the file lacks (an import removes
    nothing), and recorded the file as the text hb read: the next sync took a task deleted from
    the file by hand for one new in the ledger, wrote it back and handed it out again. The sync
    after the import now decides as it would have without it."""
    sync(hb_db)
    doc = json.loads(tasks_file.read_text())
    gone = doc["pending"].pop(0)["id"]
    if edited_in_ledger:
        hb_db("update", gone, "--title", "edited in the ledger", HB_NOW="2026-05-03T10:30:00Z")
    tasks_file.write_text(json.dumps(doc, indent=2))
    hb_db("import", "tasks-json", HB_NOW="2026-05-03T11:00:00Z")
    assert hb_db.json("show", gone)["id"] == gone  # the import removed nothing
    out = sync(hb_db, "2026-05-03T11:05:00Z")
    # as a sync alone decides: removed; edited in the ledger meanwhile, a conflict the file wins
    assert report(out, "tasks-json")["removed"] == [gone]
    assert report(out, "tasks-json")["conflicts"] == ([gone] if edited_in_ledger else [])
    assert gone not in [t.get("id") for t in json.loads(tasks_file.read_text())["pending"]]
    hb_db("show", gone, code=1)


def _script_writes(tasks_file: Path, copy: str, *ids: str) -> None:
    """heartbeat.py's write: the copy it read earlier, with its own additions, over the file."""
    doc = json.loads(copy)
    doc["pending"] += [{"id": i, "priority": "low", "description": f"the script's {i}"} for i in ids]
    tasks_file.write_text(json.dumps(doc, indent=2))


def test_a_task_hb_wrote_that_a_stale_copy_wrote_over_is_kept(hb_db: Runner, tasks_file: Path) -> None:
    """heartbeat.py reads the whole file, edits it and writes it back: between its read and its
    write hb may write a task of its own, which the script's write then drops. Nobody deleted
    it: the sync engine merges the script's edit into the text hb wrote (the write-back it
    recorded), so both tasks stay."""
    sync(hb_db)
    stale = tasks_file.read_text()  # the script reads the file ...
    mine = json.loads(hb_db("add", "call the bank", "--json").stdout)["id"]
    sync(hb_db)  # ... hb writes its task ...
    assert mine in tasks_file.read_text()
    _script_writes(tasks_file, stale, "task-from-script")  # ... the script writes its copy
    assert report(sync(hb_db), "tasks-json")["removed"] == []
    ids = [t["id"] for t in json.loads(tasks_file.read_text())["pending"]]
    assert mine in ids and "task-from-script" in ids
    assert json.loads(hb_db("show", mine, "--json").stdout)["status"] == "todo"


def test_scoped_queue_status_round_trips(hb: Runner, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "tasks_scoped.json", path)
    sync(hb)
    got = json.loads(hb("pop", "--scope", Q).stdout)
    sync(hb)
    entries = json.loads(path.read_text())["_round3_extension"]["ag_implementation_queue"]
    assert [e.get("status") for e in entries if e["task_id"] == got["task_id"]] == ["in_progress"]


def test_invalid_tasks_json_stops_the_whole_sync(hb: Runner, tasks_file: Path, workspace: Path) -> None:
    write(workspace / "TODO.md", "- [ ] [Created](2026-05-01 12:41) | A todo.\n")
    tasks_file.write_text('{"pending": [\n  {"id": "a",}\n]}')
    result = hb("sync", code=1)
    assert result.stderr.startswith(f"hb: {tasks_file}:2") and result.stderr.count("\n") == 1
    assert hb.json("list", "--all") == []


def test_errors_and_last_run_sync(hb: Runner, workspace: Path) -> None:
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True)
    item = {
        "timestamp": "2026-04-25T12:00:00Z",
        "task_id": "task-1",
        "assigned_skill": "osint",
        "reason": "timeout",
        "trace_id": "t1",
        "decision_log": None,
        "resolved": False,
    }
    (state / "errors.json").write_text(json.dumps([item], indent=2))
    out = sync(hb)
    assert report(out, "errors-json")["added"] == ["[0]"] and report(out, "errors-json")["written"] is False
    (state / "errors.json").write_text(json.dumps([{**item, "resolved": True}], indent=2))
    out = sync(hb)
    assert report(out, "errors-json")["updated"] == ["[0]"]
    assert json.loads(hb("export", "errors-json", "-").stdout) == [{**item, "resolved": True}]
    hb("add", "job")
    popped = json.loads(hb("pop").stdout)
    hb("fail", popped["id"], "--reason", "boom", "--final")
    out = sync(hb)
    assert report(out, "errors-json")["written"] is True and report(out, "last-run")["written"] is True
    errors = json.loads((state / "errors.json").read_text())
    assert [e["reason"] for e in errors] == ["timeout", "boom"]
    assert json.loads((state / "last-run.json").read_text())["task_id"] == popped["id"]
    assert sync(hb)["changed"] is False


def test_a_blocked_on_list_edited_in_the_file_blocks_and_unblocks(hb_db: Runner, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)  # the database's workspace made it already
    scope = "_r_extension.q"

    def write_doc(blocked: list[dict[str, str]]) -> None:
        doc = {
            "pending": [],
            "_r_extension": {"q": [{"order": 1, "task_id": "t1"}, {"order": 2, "task_id": "t2"}]},
        }
        doc["_r_extension"]["blocked_on_client"] = blocked  # type: ignore[index]
        path.write_text(json.dumps(doc, indent=1))

    write_doc([])
    sync(hb_db)
    write_doc([{"task_id": "t1", "blocker": "waiting for the client"}])
    out = sync(hb_db)
    assert report(out, "tasks-json")["updated"] == [f"{scope}:t1"]
    popped = hb_db("pop", "--scope", scope)
    assert json.loads(popped.stdout)["task_id"] == "t2"
    assert "skipped t1: blocked" in popped.stderr
    hb_db("complete", "t2", "--scope", scope)
    write_doc([])  # the blocker is gone from the file: t1 is ready again
    assert report(sync(hb_db), "tasks-json")["updated"] == [f"{scope}:t1"]
    popped = hb_db("pop", "--scope", scope)
    assert json.loads(popped.stdout)["task_id"] == "t1" and popped.stderr == ""


def test_errors_hb_wrote_keep_their_rows_when_the_file_is_edited(hb: Runner, workspace: Path) -> None:
    hb("add", "x", "--id", "x")
    for reason in ("boom1", "boom2"):
        hb("pop")
        hb("fail", "x", "--reason", reason)
    sync(hb)
    path = workspace / ".agent" / "state" / "errors.json"
    items = json.loads(path.read_text())
    assert [(i["reason"], i["resolved"]) for i in items] == [("boom1", False), ("boom2", False)]
    items[0]["resolved"] = True
    path.write_text(json.dumps(items, indent=2))
    out = sync(hb)
    assert report(out, "errors-json")["updated"] == ["[0]"] and report(out, "errors-json")["added"] == []
    rows = hb.json("sql", "SELECT reason, resolved FROM errors ORDER BY pk")
    assert [(r["reason"], bool(r["resolved"])) for r in rows] == [("boom1", True), ("boom2", False)]
    # the same failure twice in the log is two failures
    path.write_text(json.dumps([*items, items[1]], indent=2))
    assert report(sync(hb), "errors-json")["added"] == ["[2]"]
    assert len(hb.json("sql", "SELECT pk FROM errors")) == 3
    assert sync(hb)["changed"] is False


def test_identical_errors_in_a_new_file_are_each_imported(hb: Runner, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "errors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    item = {"timestamp": "2026-04-25T12:00:00Z", "task_id": "t", "reason": "timeout", "resolved": False}
    text = json.dumps([item, item], indent=2)
    path.write_text(text)
    assert report(sync(hb), "errors-json")["added"] == ["[0]", "[1]"]
    assert path.read_text() == text
    assert len(hb.json("sql", "SELECT pk FROM errors")) == 2


def test_an_error_or_last_run_time_hb_cannot_read_is_reported_and_kept(
    hb_db: Runner, workspace: Path
) -> None:
    """errors.json items and last-run.json whose timestamp is not a time hb reads (outside years
    0002-9998, not text, not a time) are imported, kept as written, and said to be dated when hb
    read them: the ledger's rows carry the sync's time, which a query would otherwise take for
    the failure's."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    items = [
        {"timestamp": "2026-04-25T12:00:00Z", "task_id": "a", "reason": "readable"},
        {"timestamp": "0001-01-01T00:00:00Z", "task_id": "b", "reason": "year 1"},
        {"timestamp": 12345, "task_id": "c", "reason": "a number"},
        {"task_id": "d", "reason": "no time at all"},
    ]
    errors = json.dumps(items, indent=2)
    (state / "errors.json").write_text(errors)
    last_run = json.dumps({"timestamp": "yesterday", "task_id": "a", "status": "completed"}, indent=2)
    (state / "last-run.json").write_text(last_run)
    done = hb_db("sync", HB_NOW="2026-05-03T10:00:00Z")
    warned = [line for line in done.stderr.splitlines() if "is not a timestamp" in line]
    assert warned == [
        f"hb: warning: {state / 'errors.json'}: line 8: [1].timestamp: '0001-01-01T00:00:00Z' is not a "
        "timestamp: kept as written, its row in the ledger is dated when hb read it",
        f"hb: warning: {state / 'errors.json'}: line 13: [2].timestamp: 12345 is not a timestamp: kept as "
        "written, its row in the ledger is dated when hb read it",
        f"hb: warning: {state / 'last-run.json'}: line 2: timestamp: 'yesterday' is not a timestamp: kept as "
        "written, its row in the ledger is dated when hb read it",
    ]
    assert (state / "errors.json").read_text() == errors and (state / "last-run.json").read_text() == last_run
    rows = hb_db.json("sql", "SELECT task_id, at FROM errors_utc ORDER BY pk")
    assert [(r["task_id"], r["at"][:19]) for r in rows] == [
        ("a", "2026-04-25T12:00:00"),
        ("b", "2026-05-03T10:00:00"),
        ("c", "2026-05-03T10:00:00"),
        ("d", "2026-05-03T10:00:00"),
    ]
    assert "is not a timestamp" not in hb_db("sync", HB_NOW="2026-05-03T11:00:00Z").stderr  # said once
    copy = workspace / "errors-copy.json"
    copy.write_text(json.dumps([{**items[1], "task_id": "e"}], indent=2))
    imported = hb_db("import", "errors-json", str(copy))
    assert f"{copy}:3: [0].timestamp: '0001-01-01T00:00:00Z' is not a timestamp" in imported.stderr


def test_a_repeated_key_is_reported_and_only_its_object_could_change(hb: Runner, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (
        '{"pending": [\n'
        '  {"id": "task-1", "description": "a", "zzz": {"nested": [1, 2.50, 1e3]}},\n'
        '  {"id": "task-3", "description": "crit", "description": "dup key"}],\n'
        ' "in_progress": [], "completed": [], "other": {"keep": true}}\n'
    )
    path.write_text(text)
    first = hb("sync")
    assert f"hb: warning: {path}: line 3: key 'description' is repeated in its object" in first.stderr
    assert hb.json("show", "task-3")["title"] == "dup key"  # the last value counts, as JSON readers read it
    assert json.loads(hb("pop").stdout)["id"] == "task-1"
    sync(hb)
    assert path.read_text() == (
        '{"pending": [\n'
        '  {"id": "task-3", "description": "crit", "description": "dup key"}],\n'
        ' "in_progress": [\n'
        '   {"id": "task-1", "description": "a", "zzz": {"nested": [1, 2.50, 1e3]}}\n'
        ' ], "completed": [], "other": {"keep": true}}\n'
    )


def test_an_error_with_the_scripts_malformed_time_is_edited_not_added_again(
    hb: Runner, workspace: Path
) -> None:
    path = workspace / ".agent" / "state" / "errors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    item = {"timestamp": "2026-05-01T09:00:00+00:00Z", "task_id": "h1", "reason": "r", "resolved": False}
    path.write_text(json.dumps([item], indent=1))
    assert report(sync(hb), "errors-json")["added"] == ["[0]"]
    written = json.loads(path.read_text())
    assert written[0]["timestamp"] == "2026-05-01T09:00:00Z"  # FORMATS 2: read that form, write Z
    written[0]["resolved"] = True
    path.write_text(json.dumps(written, indent=1))
    out = sync(hb)
    assert report(out, "errors-json")["updated"] == ["[0]"] and report(out, "errors-json")["added"] == []
    # the old script appends with its own form; the earlier items stay single
    appended = {**item, "task_id": "h2"}
    path.write_text(json.dumps([*written, appended], indent=1))
    assert report(sync(hb), "errors-json")["added"] == ["[1]"]
    rows = hb.json("sql", "SELECT task_id, resolved FROM errors ORDER BY pk")
    assert [(r["task_id"], bool(r["resolved"])) for r in rows] == [("h1", True), ("h2", False)]
    assert sync(hb)["changed"] is False


def test_a_task_is_the_same_row_whether_imported_or_synced(tmp_path: Path) -> None:
    """hb import tasks-json binds its new tasks' columns in bulk; hb sync inserts each task as a
    row object. Both make the same row for the same record."""
    doc = {
        "pending": [
            {"id": "a", "priority": "high", "description": "plain", "created_at": "2026-04-25T12:00:00Z"},
            {"id": 7, "priority": "CRITICAL", "assigned_skill": "deep-research", "extra": [1, {"x": None}]},
            {"id": "c", "description": "odd time", "created_at": "yesterday", "user_id": "matthias"},
        ],
        "in_progress": [{"id": "d", "description": "taken", "created_at": "2026-04-25T12:00:00+00:00Z"}],
        "completed": [{"id": "e", "completed_at": "2026-04-26T08:00:00Z", "project_id": "p"}],
        "failed": [],
        "_round3_extension": {
            "queue": [
                {"order": 3, "task_id": "s1", "status": "in_progress", "gh_issue": 496},
                {"task_id": "s2", "description": "unordered"},
            ],
            "blocked_on_client": [{"issues": [496], "task_id": "s2", "blocker": "translator"}],
        },
    }
    rows = []
    for how in ("import", "sync"):
        ws = tmp_path / how
        (ws / ".agent" / "state").mkdir(parents=True)
        path = ws / ".agent" / "state" / "tasks.json"
        path.write_text(json.dumps(doc, indent=2) + "\n")
        with Ledger.open(workspace=ws, now="2026-05-01T10:00:00Z") as ledger:
            if how == "import":
                ledger.import_file("tasks-json", path)
            else:
                ledger.sync()
            with ledger.ctx.read() as db:
                found = db.dicts("SELECT * FROM tasks ORDER BY scope, id")
        rows.append([{k: v for k, v in row.items() if k != "pk"} for row in found])
    imported, synced = rows
    assert len(imported) == 7
    assert imported == synced


# --- hb export never writes over what the ledger does not hold ----------------------------------


def _state(workspace: Path) -> Path:
    path = workspace / ".agent" / "state"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_export_refuses_a_workspace_file_edited_since_hb_last_read_it(hb_db: Runner, workspace: Path) -> None:
    """A hand-added tasks.json entry, errors.json item or last-run.json edit: `hb export` wrote over
    it (exit 0, the entry gone); it now refuses until hb sync took the edit in."""
    state = _state(workspace)
    task = hb_db.json("add", "Write the report")
    hb_db("pop")
    hb_db("fail", task["id"], "--reason", "flaky")
    hb_db("sync")
    tasks = json.loads((state / "tasks.json").read_text())
    tasks["pending"].append({"id": "hand-added", "description": "typed by hand"})
    edits = {
        "tasks-json": json.dumps(tasks, indent=2),
        "errors-json": json.dumps([*json.loads((state / "errors.json").read_text()), {"task_id": "x"}]),
        "last-run": json.dumps({"task_id": "typed", "status": "completed"}),
    }
    names = {"tasks-json": "tasks.json", "errors-json": "errors.json", "last-run": "last-run.json"}
    for kind, text in edits.items():
        path = state / names[kind]
        kept = path.read_text()
        path.write_text(text)
        result = hb_db("export", kind, code=1)
        assert result.stderr == (
            f"hb: {path}: edited since hb last read or wrote it; run hb sync first (it takes the "
            "edits in), then export; nothing written\n"
        )
        assert path.read_text() == text
        path.write_text(kept)
    (state / "tasks.json").write_text(edits["tasks-json"])
    hb_db("sync")  # takes the entry in; the export after it has nothing to lose
    hb_db("export", "tasks-json")
    assert "hand-added" in (state / "tasks.json").read_text()


def test_export_refuses_a_file_that_is_not_of_its_kind(hb: Runner, workspace: Path) -> None:
    hb("add", "Write the report")
    notes = workspace / "notes.txt"
    notes.write_bytes(b"precious notes\n")
    refused = "; hb export does not overwrite a file it cannot read\n"
    result = hb("export", "tasks-json", str(notes), code=1)
    assert result.stderr == f"hb: {notes}:1:1: invalid JSON: Expecting value{refused}"
    result = hb("export", "errors-json", str(notes), code=1)
    assert result.stderr == f"hb: {notes}:1:1: invalid JSON: Expecting value{refused}"
    hb("sync")
    queue = _state(workspace) / "tasks.json"
    before = queue.read_bytes()
    result = hb("export", "errors-json", str(queue), code=1)  # a slip of the kind: not errors.json
    assert result.stderr == f"hb: {queue}:1:1: errors.json must hold a JSON array{refused}"
    unreadable = workspace / "latin1.json"
    unreadable.write_bytes(b'{"task_id": "caf\xe9"}')
    result = hb("export", "last-run", str(unreadable), code=1)
    assert result.stderr == f"hb: {unreadable}:1:17: not UTF-8 text (byte 16){refused}"
    assert (notes.read_bytes(), queue.read_bytes(), unreadable.read_bytes()) == (
        b"precious notes\n",
        before,
        b'{"task_id": "caf\xe9"}',
    )


def test_export_to_another_file_refuses_entries_the_ledger_does_not_hold(hb: Runner, workspace: Path) -> None:
    """A copy elsewhere is written over while every entry in it is one the ledger holds (an older
    export, say); an entry the ledger never imported stops the export, named."""
    hb("add", "Write the report", "--id", "t1")
    backup = workspace / "backup.json"
    hb("export", "tasks-json", str(backup))
    hb("add", "File the taxes", "--id", "t2")
    hb("export", "tasks-json", str(backup))  # t1 is the ledger's: written over
    assert [t["id"] for t in json.loads(backup.read_text())["pending"]] == ["t1", "t2"]
    doc = json.loads(backup.read_text())
    doc["pending"].append({"id": "t9", "description": "only here"})
    backup.write_text(json.dumps(doc))
    hb("add", "Call the bank", "--id", "t3")
    result = hb("export", "tasks-json", str(backup), code=1)
    assert result.stderr == (
        f"hb: {backup}: t9 is not in the ledger, and hb export writes over entries it has imported "
        f"only (hb import tasks-json {backup}, or move the file away); nothing written\n"
    )
    assert json.loads(backup.read_text()) == doc
    assert hb.json("list", "--status", "all", "--fields", "id") == [{"id": i} for i in ("t1", "t2", "t3")]


def test_a_sync_after_auto_exported_pops_reads_the_file_hb_wrote_alone(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hb wrote tasks.json whole from the ledger (no file before), then spliced the pops into it:
    a sync finds the file and the ledger as hb left them and learns the text's warnings by
    reading it alone, without the three-way merge; its report is the merge's, and the sync after
    it reads nothing."""
    from heartbeat.formats import tasks_json
    from heartbeat.ops.sync.queue_files import syncing

    with Ledger.open(workspace=workspace) as ledger:
        for i in range(3):
            ledger.add(f"job {i}", task_id=f"t{i}")
        ledger.config_set("sync.auto_export", "true")
        ledger.sync()  # writes tasks.json from the ledger
        path = workspace / ".agent" / "state" / "tasks.json"
        # a field the runtime wrote, kept as written, which reading the file warns about
        doc = json.loads(path.read_text())
        doc["pending"][2]["created_at"] = "yesterday"
        path.write_text(json.dumps(doc, indent=2))
        first = ledger.sync()
        got = ledger.pop()
        ledger.complete(got["id"], claim=got["claim"])
        merged = []
        real = syncing.base_records
        monkeypatch.setattr(syncing, "base_records", lambda *a: merged.append(a) or real(*a))
        reads = []
        parse = tasks_json.parse
        monkeypatch.setattr(tasks_json, "parse", lambda text: reads.append(1) or parse(text))
        second = ledger.sync()
        third = ledger.sync()
    assert merged == []  # no three-way merge: the file is as hb left it
    assert len(reads) == 1  # the second sync read the text for its warnings; the third read nothing
    tasks = [report(r, "tasks-json") for r in (first, second, third)]
    said = f"{path}: line %d: pending[%d]: created_at 'yesterday' is not a timestamp: kept as written"
    # the pop moved t0 out of pending: the task warned about is one place and eleven lines up
    assert [t["preserved"] for t in tasks] == [[said % (25, 2)], [said % (14, 1)], [said % (14, 1)]]
    assert not any(t["written"] or t["added"] or t["updated"] for t in tasks[1:])


def _pending_as_the_script_keeps_it(path: Path, pop: int = 0, add: tuple[str, ...] = ()) -> None:
    """What heartbeat.py does to pending: ``pop`` takes pending[0] into in_progress; ``add``
    appends a medium task, then sorts pending by priority (stable), and writes indent 2."""
    doc = json.loads(path.read_text())
    for _ in range(pop):
        doc["in_progress"].append(doc["pending"].pop(0))
    rank = {"high": 0, "medium": 1, "low": 2}
    for task_id in add:
        doc["pending"].append({"id": task_id, "priority": "medium", "description": task_id})
        doc["pending"].sort(key=lambda t: rank.get(t.get("priority", "medium"), 1))
    path.write_text(json.dumps(doc, indent=2))


def test_the_files_order_stays_the_queues_order_after_the_script_pops_and_adds(
    hb_db: Runner, workspace: Path
) -> None:
    """heartbeat.py pops pending[0] and appends what it adds after the tasks of the same
    priority: first in, first out. Its pops shift the tasks after the one taken, without changing
    them; a sync between its pops and adds must neither rewrite that order nor pop out of it."""
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pending": [], "in_progress": [], "completed": [], "failed": []}, indent=2))
    _pending_as_the_script_keeps_it(path, add=("m1", "m2", "m3"))
    sync(hb_db)
    for pop, add in [(2, ("m4",)), (1, ()), (0, ("m5",)), (1, ("m6", "m7"))]:
        _pending_as_the_script_keeps_it(path, pop=pop, add=add)
        before = json.loads(path.read_text())["pending"]
        sync(hb_db)
        assert json.loads(path.read_text())["pending"] == before
    assert [t["id"] for t in json.loads(path.read_text())["pending"]] == ["m5", "m6", "m7"]
    ready = hb_db("ready", "--json").stdout
    assert [t["id"] for t in json.loads(ready)][:3] == ["m5", "m6", "m7"]


@pytest.mark.parametrize("value", [["x"], {"a": 1}, True, 1.5])
def test_errors_and_last_run_fields_that_are_not_text_are_kept_as_written(
    hb_db: Runner, workspace: Path, value: Any
) -> None:
    """heartbeat.py writes whatever it is given: an assigned_skill or trace_id (errors.json) or a
    scope (last-run.json) that is a list or an object stopped every sync and heartbeat with
    "database error: Error binding parameter 4", naming no file. They are read as no text (the
    item keeps what it holds, and the files are left as they are)."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    errors = [
        {
            "timestamp": "2026-04-30T10:00:00Z",
            "task_id": "task-x",
            "assigned_skill": value,
            "reason": "r",
            "trace_id": value,
            "decision_log": None,
            "resolved": False,
        }
    ]
    last_run = {"timestamp": "2026-05-01T01:20:00Z", "task_id": "t", "status": "completed", "scope": value}
    (state / "errors.json").write_text(json.dumps(errors, indent=2) + "\n")
    (state / "last-run.json").write_text(json.dumps(last_run, indent=2) + "\n")
    before = {name: (state / name).read_bytes() for name in ("errors.json", "last-run.json")}
    sync(hb_db)
    assert {name: (state / name).read_bytes() for name in before} == before
    hb_db("add", "another")  # the ledger moves on; the files, synced again, still hold the items
    sync(hb_db)
    assert json.loads((state / "errors.json").read_text()) == errors
    assert json.loads((state / "last-run.json").read_text()) == last_run


@pytest.mark.parametrize("back", ["a retry", "clear-stale"])
def test_a_task_back_from_a_claim_is_written_where_hb_pop_takes_it(workspace: Path, back: str) -> None:
    """heartbeat.py pops pending[0]. A task hb took from pending[0] came back (a retry, or
    clear-stale) after the file had been synced meanwhile: the task left at the front took its
    position (0), and hb pop took the one back from its claim (the earlier task) while the file
    placed it after the other (B, A, C): heartbeat.py and hb pop took different tasks."""
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True)
    tasks = [{"id": i, "priority": "high", "description": i.upper()} for i in ("a", "b")]
    path.write_text(
        json.dumps({"pending": tasks, "in_progress": [], "completed": [], "failed": []}, indent=2)
    )
    with Ledger.open(workspace=workspace, now="2026-05-01T10:00:00Z") as ledger:
        ledger.config_set("sync.auto_export", "true")
        assert ledger.pop(worker="w", lease="5m")["id"] == "a"
        doc = json.loads(path.read_text())
        doc["pending"].append({"id": "c", "priority": "medium", "description": "C"})  # heartbeat.py's add
        doc["pending"].sort(key=lambda t: {"high": 0, "medium": 1, "low": 2}.get(t.get("priority"), 1))
        path.write_text(json.dumps(doc, indent=2))
        ledger.sync()  # the file read again: b is at index 0 now
    with Ledger.open(workspace=workspace, now="2026-05-01T10:10:00Z") as ledger:
        if back == "a retry":
            ledger.fail("a", reason="r")
        else:
            assert ledger.clear_stale() == ["a"]
        pending = [t["id"] for t in json.loads(path.read_text())["pending"]]
        assert pending == [t["id"] for t in ledger.ready()] == ["a", "b", "c"]


@pytest.mark.parametrize("ending", ["complete", "fail"])
def test_last_run_json_copies_the_assigned_fields_as_the_task_object_has_them(
    workspace: Path, ending: str
) -> None:
    """heartbeat.py writes ``task.get("assigned_skill")``, ``task.get("project_id")``, ... into
    last-run.json, and the skill into errors.json: the values as the object holds them. hb wrote
    the ledger's text of them (a number as text, an object as null)."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True)
    task = {"id": "a", "description": "d", "assigned_skill": {"name": "s"}, "project_id": 7}
    task |= {"agent_id": ["x"], "user_id": 42}
    (state / "tasks.json").write_text(json.dumps({"pending": [task], "in_progress": [], "completed": []}))
    with Ledger.open(workspace=workspace, now="2026-05-01T10:00:00Z") as ledger:
        ledger.config_set("sync.auto_export", "true")
        assert ledger.pop(worker="w")["id"] == "a"
        if ending == "complete":
            ledger.complete("a", outcome={"ok": True})
        else:
            ledger.fail("a", reason="r", final=True)
    run = json.loads((state / "last-run.json").read_text())
    assert (run["task_id"], run["status"]) == ("a", "completed" if ending == "complete" else "failed")
    assert [run[key] for key in ("assigned_skill", "project_id", "agent_id", "user_id")] == [
        {"name": "s"},
        7,
        ["x"],
        42,
    ]
    if ending == "fail":
        [error] = json.loads((state / "errors.json").read_text())
        assert error == {
            "timestamp": "2026-05-01T10:00:00Z",
            "task_id": "a",
            "assigned_skill": {"name": "s"},
            "reason": "r",
            "trace_id": None,
            "decision_log": None,
            "resolved": False,
        }
        with Ledger.open(workspace=workspace, now="2026-05-01T10:05:00Z") as ledger:
            assert ledger.sync()["changed"] is False  # the item in the file is the row's
            [row] = ledger.sql("SELECT task_id, skill, reason FROM errors")
        assert row == {"task_id": "a", "skill": None, "reason": "r"}
