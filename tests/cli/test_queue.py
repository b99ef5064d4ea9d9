"""The queue as heartbeat.py's callers use it: exit codes, order, leases, retries, files."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import Runner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
Q = "_round3_extension.ag_implementation_queue"


def _load(hb: Runner, workspace: Path, name: str) -> Path:
    target = workspace / ".agent" / "state" / "tasks.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / name, target)
    hb("import", "tasks-json", str(target))
    return target


def _ordered(text: str) -> object:
    return json.loads(text, object_pairs_hook=list)


@pytest.fixture
def scoped(hb_db: Runner, workspace: Path) -> Runner:
    _load(hb_db, workspace, "tasks_scoped.json")
    return hb_db


def test_scopes_line(scoped: Runner) -> None:
    assert scoped("scopes").stdout == f"{Q}  (2 ready / 0 in_progress / 0 completed / 3 total)\n"
    [row] = scoped.json("scopes")
    assert row == {"scope": Q, "ready": 2, "in_progress": 0, "completed": 0, "blocked": 1, "total": 3}


def test_pop_without_scope_exits_11_listing_queues(scoped: Runner) -> None:
    result = scoped("pop", code=11)
    assert result.stdout == ""
    assert Q in result.stderr


def test_unknown_scope_exits_14(scoped: Runner) -> None:
    result = scoped("pop", "--scope", "_round3_extension.ag_pushed_branches", code=14)
    assert "not a queue" in result.stderr
    scoped("pop", "--scope", "_round9_extension.nothing", code=14)
    task = json.loads(scoped("pop", "--scope", Q).stdout)["task_id"]
    for command in ("complete", "fail"):
        result = scoped(command, task, "--scope", "_round9_extension.nothing", code=14)
        assert result.stderr.startswith("hb: --scope '_round9_extension.nothing' is not a queue")
    scoped("clear-stale", "--scope", "_round9_extension.nothing", code=14)
    scoped("complete", "no-such-task", "--scope", Q, code=1)  # a queue, but not that task
    scoped("complete", task, "--scope", Q)  # nothing above changed it


@pytest.mark.parametrize(
    ("scope", "reason"),
    [
        ("_round3_extension.blocked_on_client", "is a blocked_on_* filter of tasks.json, not a queue"),
        ("_round3_extension.ag_pushed_branches", "names a key of tasks.json that is not a queue"),
    ],
)
def test_add_refuses_a_scope_that_tasks_json_keeps_as_a_filter_or_metadata(
    scoped: Runner, workspace: Path, scope: str, reason: str
) -> None:
    # accepted, the task could never be written: every later hb sync failed
    before = scoped.json("list", "--all")
    result = scoped("add", "oops", "--scope", scope, code=1)
    assert result.stderr == f"hb: scope {scope!r} {reason}" + (
        " (metadata, kept as written)\n" if "names a key" in reason else "\n"
    )
    assert scoped.json("list", "--all") == before
    (workspace / "TODO.md").write_text("- [ ] [Created](2026-05-01 12:41) | unrelated\n")
    scoped("sync")
    scoped("pop", "--scope", scope, code=14)
    new_queue = "_round3_extension.fresh_queue"  # a name the file does not use yet: a new queue
    scoped("add", "fine", "--scope", new_queue)
    scoped("sync")
    doc = json.loads((workspace / ".agent" / "state" / "tasks.json").read_text())
    assert [t["description"] for t in doc["_round3_extension"]["fresh_queue"]] == ["fine"]


def test_scoped_pop_order_skips_blocked_then_exhausts(scoped: Runner) -> None:
    first = scoped("pop", "--scope", Q)
    got = json.loads(first.stdout)
    claim = got.pop("claim")  # the entry's own fields, then its claim token
    assert re.fullmatch(r"[0-9a-f]{24}", claim)
    assert scoped.json("show", "round3-edit-item-33-southern-qualifier", "--scope", Q)["claim"] == claim
    assert got == {
        "order": 1,
        "task_id": "round3-edit-item-33-southern-qualifier",
        "gh_issue": 496,
        "estimate": "frontmatter only on 2 providers; ~10 min",
        "risk": "minimal",
        "status": "in_progress",
    }
    second = scoped("pop", "--scope", Q)
    assert json.loads(second.stdout)["task_id"] == "round3-glossary"
    assert "round3-spanish-pdfs" in second.stderr and "translator pending" in second.stderr
    third = scoped("pop", "--scope", Q, code=10)
    assert third.stdout == ""
    assert "exhausted" in third.stderr and "round3-spanish-pdfs" in third.stderr
    assert scoped.json("scopes")[0]["in_progress"] == 2
    # the claims are on their task rows; the pop that found the queue exhausted leaves a runs row
    runs = scoped.json("sql", "SELECT kind, scope, status, task_id FROM runs WHERE kind = 'pop' ORDER BY pk")
    assert [(r["scope"], r["status"], r["task_id"]) for r in runs] == [(Q, "exhausted", None)]


def test_pop_blocked_entry_by_id_exits_13(scoped: Runner) -> None:
    result = scoped("pop", "--scope", Q, "--id", "round3-spanish-pdfs", code=13)
    assert "translator pending" in result.stderr
    got = json.loads(scoped("pop", "--scope", Q, "--id", "round3-glossary").stdout)
    assert got["task_id"] == "round3-glossary"


def test_complete_and_fail_in_scope(scoped: Runner) -> None:
    scoped("pop", "--scope", Q)
    done = scoped.json(
        "complete",
        "round3-edit-item-33-southern-qualifier",
        "--scope",
        Q,
        "--outcome",
        '{"pr": 502, "merged": true}',
    )
    assert done["status"] == "done"
    assert scoped.json("scopes")[0]["completed"] == 1
    scoped("complete", "round3-glossary", "--scope", Q, code=1)  # not claimed
    scoped("complete", "no-such-task", "--scope", Q, code=1)


def test_legacy_priority_order_then_no_pending(hb: Runner, workspace: Path) -> None:
    _load(hb, workspace, "tasks_legacy.json")
    order = [json.loads(hb("pop").stdout)["id"] for _ in range(5)]
    assert order == ["task-crit", "task-high", "task-med1", "task-odd", "task-low"]
    result = hb("pop")
    assert result.stdout == "No pending tasks.\n"
    assert hb("pop", "--json").stdout.strip() == "null"


def test_stale_entries_exit_12_then_clear_or_adopt(hb: Runner, workspace: Path) -> None:
    """Issue 15 changed --accept-stale: it takes over one stale claim and returns that task, with
    a new claim (it used to re-lease every stale claim and then pop a ready task)."""
    _load(hb, workspace, "tasks_stale.json")
    result = hb("pop", code=12)
    assert "task-crashed" in result.stderr and "clear-stale" in result.stderr
    adopted = hb("pop", "--accept-stale", "--worker", "w2")
    assert adopted.stderr == "adopted stale claim task-crashed (re-leased to you, with a new claim)\n"
    got = json.loads(adopted.stdout)
    assert got["id"] == "task-crashed" and got["agent_id"] == "claude"
    crashed = hb.json("show", "task-crashed")
    assert (crashed["status"], crashed["claimed_by"], crashed["attempts"]) == ("doing", "w2", 2)
    assert crashed["claim"] == got["claim"]
    # no stale claim is left: the next pop is a plain one
    assert json.loads(hb("pop", "--accept-stale", "--worker", "w2").stdout)["id"] == "task-a"
    hb("complete", "task-crashed", "--claim", got["claim"])


def test_clear_stale_counts(hb: Runner, workspace: Path) -> None:
    _load(hb, workspace, "tasks_stale.json")
    assert hb("clear-stale").stdout == "Cleared 1 stale task(s).\n"
    assert hb.json("clear-stale") == {"cleared": [], "count": 0}
    assert json.loads(hb("pop").stdout)["id"] == "task-crashed"  # high before medium


def test_lease_expiry_makes_a_claim_stale(hb: Runner) -> None:
    t = hb.json("add", "slow job")
    hb("--now", "2026-05-01T10:00:00Z", "pop", "--lease", "15m", "--worker", "w1")
    hb("--now", "2026-05-01T10:14:59Z", "pop")  # still leased: nothing else pending, exit 0
    late = hb("--now", "2026-05-01T10:15:00Z", "pop", code=12)
    assert t["id"] in late.stderr
    hb("--now", "2026-05-01T10:16:00Z", "pop", "--accept-stale", "--worker", "w2")
    shown = hb.json("show", t["id"])
    assert shown["claimed_by"] == "w2" and shown["attempts"] == 2
    assert shown["lease_expires_at"] == "2026-05-01T10:46:00+00:00"  # default lease 30m


def test_a_stale_claim_blocks_its_queue_even_with_work_ready(hb: Runner) -> None:
    """The claim itself checks for stale claims: a ready task is not taken past one."""
    stuck = hb.json("add", "stuck", "--priority", "critical")
    waiting = hb.json("add", "next in line")
    other = hb.json("add", "elsewhere", "--scope", "_r9_extension.other")
    hb("--now", "2026-05-01T10:00:00Z", "pop", "--scope", "", "--lease", "15m", "--worker", "w1")
    late = hb("--now", "2026-05-01T10:20:00Z", "pop", "--scope", "", code=12)
    assert stuck["id"] in late.stderr
    assert hb.json("show", waiting["id"])["status"] == "todo"  # untouched
    # another queue is not held up by this one's stale claim
    got = json.loads(hb("--now", "2026-05-01T10:20:00Z", "pop", "--scope", "_r9_extension.other").stdout)
    assert got["task_id"] == other["id"]
    # without --scope, scoped queues must be named (exit 11) before anything is claimed
    hb("--now", "2026-05-01T10:20:00Z", "pop", code=11)
    assert hb.json("show", waiting["id"])["status"] == "todo"


def test_fail_retries_until_max_attempts(hb: Runner, workspace: Path) -> None:
    t = hb.json("add", "flaky")
    for attempt in (1, 2):
        hb("pop")
        r = hb.json("fail", t["id"], "--reason", f"boom {attempt}")
        assert (r["status"], r["attempts"], r["retry"]) == ("todo", attempt, True)
    hb("pop")
    r = hb.json("fail", t["id"])
    assert (r["status"], r["attempts"], r["retry"]) == ("failed", 3, False)
    assert hb("pop").stdout == "No pending tasks.\n"
    errors = json.loads(hb("export", "errors-json", "-").stdout)
    assert [e["reason"] for e in errors] == ["boom 1", "boom 2", "Unknown failure"]
    assert all(e["task_id"] == t["id"] for e in errors)


def test_fail_final_and_max_attempts_setting(hb: Runner) -> None:
    hb("config", "set", "queue.max_attempts", "1")
    a = hb.json("add", "one shot")
    hb("pop")
    assert hb.json("fail", a["id"])["status"] == "failed"
    hb("config", "set", "queue.max_attempts", "5")
    b = hb.json("add", "give up now")
    hb("pop")
    assert hb.json("fail", b["id"], "--final")["status"] == "failed"


def test_every_queue_operation_writes_a_runs_row_with_scope(scoped: Runner, workspace: Path) -> None:
    scoped("--now", "2026-05-01T10:00:00Z", "pop", "--scope", Q, "--worker", "w1")
    scoped(
        "--now",
        "2026-05-01T10:05:00Z",
        "complete",
        "round3-edit-item-33-southern-qualifier",
        "--outcome",
        "shipped it",
    )
    last = json.loads(scoped("export", "last-run", "-").stdout)
    assert last["task_id"] == "round3-edit-item-33-southern-qualifier"
    assert last["status"] == "completed" and last["scope"] == Q
    assert last["outcome"] == {"result": "shipped it"}
    assert last["timestamp"] == "2026-05-01T10:05:00Z"


def test_runs_and_outcomes_rows(hb: Runner, workspace: Path) -> None:
    _load(hb, workspace, "tasks_scoped.json")
    hb("--now", "2026-05-01T10:00:00Z", "pop", "--scope", Q, "--worker", "w1")
    hb("--now", "2026-05-01T10:05:00Z", "complete", "round3-edit-item-33-southern-qualifier", "--scope", Q)
    hb("pop", "--scope", Q)
    hb("fail", "round3-glossary", "--scope", Q, "--reason", "no network")
    hb("clear-stale", "--scope", Q)
    with closing(sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")) as con:
        runs = con.execute("SELECT kind, scope FROM runs WHERE kind != 'import' ORDER BY pk").fetchall()
        outcome = con.execute(
            "SELECT task_id, success, claimed_at, duration_s, worker, attempt FROM outcomes"
        ).fetchall()
        err = con.execute("SELECT task_id, reason, attempt, final, trace_id FROM errors").fetchall()
    # the pops' claims are on their task rows, then on the outcome and error rows that end them; a
    # completion is its outcome row
    assert runs == [("fail", Q), ("clear-stale", Q)]
    assert outcome == [
        ("round3-edit-item-33-southern-qualifier", 1, "2026-05-01 10:00:00.000000", 300.0, "w1", 1)
    ]
    assert err == [("round3-glossary", "no network", 1, 0, "tr-77")]


def test_add_keeps_the_seed_script_options(hb: Runner) -> None:
    hb(
        "add",
        "Deep research",
        "--priority",
        "high",
        "--skill",
        "deep-research",
        "--project-id",
        "claude-skills",
        "--agent-id",
        "antigravity",
        "--user-id",
        "matthias",
    )
    popped = json.loads(hb("--now", "2026-05-01T10:00:00Z", "pop").stdout)
    assert list(popped)[:7] == [
        "id",
        "priority",
        "description",
        "assigned_skill",
        "project_id",
        "agent_id",
        "user_id",
    ]
    assert popped["assigned_skill"] == "deep-research" and popped["description"] == "Deep research"


@pytest.mark.parametrize("name", ["tasks_scoped.json", "tasks_legacy.json", "tasks_stale.json"])
def test_import_export_is_lossless(hb: Runner, workspace: Path, name: str) -> None:
    _load(hb, workspace, name)
    original = (FIXTURES / name).read_text().replace("+00:00Z", "Z")
    exported = hb("export", "tasks-json", "-").stdout
    assert _ordered(exported) == _ordered(original)


def test_errors_and_last_run_round_trip(hb: Runner, workspace: Path) -> None:
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True)
    errors = [
        {
            "timestamp": "2026-04-25T12:00:00+00:00Z",
            "task_id": "task-1",
            "assigned_skill": "osint",
            "reason": "timeout",
            "trace_id": "t1",
            "decision_log": ["a", "b"],
            "resolved": False,
            "extra_note": "kept",
        },
    ]
    last = {
        "timestamp": "2026-04-25T12:05:00Z",
        "task_id": "task-1",
        "status": "failed",
        "description": "x",
        "assigned_skill": "osint",
        "project_id": None,
        "agent_id": None,
        "user_id": None,
        "outcome": None,
        "trace_id": "t1",
        "decision_log": None,
        "scope": None,
        "custom": 1,
    }
    (state / "errors.json").write_text(json.dumps(errors))
    (state / "last-run.json").write_text(json.dumps(last))
    hb("import", "errors-json", str(state / "errors.json"))
    hb("import", "errors-json", str(state / "errors.json"))  # not added twice
    hb("import", "last-run", str(state / "last-run.json"))
    got_errors = json.loads(hb("export", "errors-json", "-").stdout)
    assert got_errors == [{**errors[0], "timestamp": "2026-04-25T12:00:00Z"}]
    assert _ordered(hb("export", "last-run", "-").stdout) == _ordered(json.dumps(last))


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"pending": [\n  {"id": "a",}\n]}', ":2:"),
        ('{"pending": {}}', "pending"),
        ("[1, 2]", "JSON object"),
        ("", ":1:1"),
    ],
)
def test_invalid_tasks_json_is_rejected_and_changes_nothing(
    hb: Runner, workspace: Path, text: str, where: str
) -> None:
    _load(hb, workspace, "tasks_legacy.json")
    before = hb("export", "tasks-json", "-").stdout
    bad = workspace / "bad.json"
    bad.write_text(text)
    result = hb("import", "tasks-json", str(bad), code=1)
    assert result.stderr.startswith(f"hb: {bad}") and where in result.stderr
    assert result.stderr.count("\n") == 1
    assert hb("export", "tasks-json", "-").stdout == before


def test_auto_export_rewrites_the_files_after_each_operation(hb: Runner, workspace: Path) -> None:
    path = _load(hb, workspace, "tasks_legacy.json")
    hb("config", "set", "sync.auto_export", "true")
    popped = json.loads(hb("pop").stdout)
    doc = json.loads(path.read_text())
    assert [t["id"] for t in doc["in_progress"]] == [popped["id"]]
    assert popped["id"] not in [t["id"] for t in doc["pending"]]
    hb("--now", "2026-05-01T10:00:00Z", "complete", popped["id"], "--outcome", '{"ok": 1}')
    doc = json.loads(path.read_text())
    assert doc["completed"][-1]["id"] == popped["id"]
    assert doc["completed"][-1]["completed_at"] == "2026-05-01T10:00:00Z"
    last = json.loads((path.parent / "last-run.json").read_text())
    assert (last["task_id"], last["outcome"]) == (popped["id"], {"ok": 1})
    assert oct(path.stat().st_mode & 0o777) == oct((FIXTURES / "tasks_legacy.json").stat().st_mode & 0o777)


def _exported(hb: Runner, workspace: Path, doc: dict[str, object]) -> Path:
    """auto_export on, and a tasks.json hb has synced."""
    hb("config", "set", "sync.auto_export", "true")
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    hb("sync")
    return path


LEGACY_DOC = {"pending": [{"id": "a", "priority": "low"}, {"id": "b", "priority": "low"}], "completed": []}


def test_auto_export_keeps_hand_edits_made_since_the_last_sync(hb_db: Runner, workspace: Path) -> None:
    path = _exported(hb_db, workspace, LEGACY_DOC)
    doc = json.loads(path.read_text())
    doc["pending"].append({"id": "c", "priority": "critical", "trace_id": "T"})  # the old script's append
    doc["pending"][1]["note"] = "edited by hand"
    path.write_text(json.dumps(doc, indent=2))
    errors = path.parent / "errors.json"
    hand_error = {"timestamp": "2026-04-25T12:00:00Z", "task_id": "z", "reason": "by hand", "resolved": False}
    errors.write_text(json.dumps([hand_error]))
    # the pop sees the edits (c is critical), the files keep them
    assert json.loads(hb_db("pop").stdout)["id"] == "c"
    hb_db("fail", "c", "--reason", "boom")
    doc = json.loads(path.read_text())
    assert doc["pending"] == [  # c is retried: back in pending where hb pop takes it, first
        {"id": "c", "priority": "critical", "trace_id": "T"},
        {"id": "a", "priority": "low"},
        {"id": "b", "priority": "low", "note": "edited by hand"},
    ]
    assert [e["reason"] for e in json.loads(errors.read_text())] == ["by hand", "boom"]
    assert json.loads(hb_db("sync", "--json").stdout)["changed"] is False


def test_auto_export_pop_sees_a_blocker_added_by_hand(hb_db: Runner, workspace: Path) -> None:
    queue = [{"order": 1, "task_id": "t1"}, {"order": 2, "task_id": "t2"}]
    doc: dict[str, object] = {"_r_extension": {"q": queue}}
    path = _exported(hb_db, workspace, doc)
    edited = json.loads(path.read_text())
    edited["_r_extension"]["blocked_on_client"] = [{"task_id": "t1", "blocker": "waiting"}]
    path.write_text(json.dumps(edited, indent=2))
    scoped = hb_db("pop", "--scope", "_r_extension.q")
    assert json.loads(scoped.stdout)["task_id"] == "t2"
    assert scoped.stderr == "skipped t1: blocked (blocked_on_client: waiting)\n"
    after = json.loads(path.read_text())["_r_extension"]
    assert after["q"] == [queue[0], {**queue[1], "status": "in_progress"}]
    assert after["blocked_on_client"] == [{"task_id": "t1", "blocker": "waiting"}]


def test_auto_export_leaves_a_file_it_cannot_read_and_says_so(hb_db: Runner, workspace: Path) -> None:
    path = _exported(hb_db, workspace, LEGACY_DOC)
    broken = path.read_text().replace('"priority": "low"', '"priority": "low",', 1)
    path.write_text(broken)
    popped = hb_db("pop")  # the claim stands: its task is printed, the file is left alone
    assert popped.exit_code == 0 and json.loads(popped.stdout)["id"] == "a"
    [warning] = popped.stderr.splitlines()
    assert warning.startswith(f"hb: warning: {path}:")
    assert warning.endswith(": left as it is (fix it, then run hb sync)")
    assert path.read_text() == broken
    assert hb_db.json("show", "a")["status"] == "doing"


def test_an_adopted_claim_is_the_task_the_pop_returns(hb: Runner) -> None:
    """Issue 15: the caller gets the adopted task and its token (it used to hold it unknowingly,
    with exit 10 for a queue that had nothing else ready)."""
    hb("add", "only job", "--scope", "_b_extension.q", "--id", "a")
    hb("--now", "2026-05-01T10:00:00Z", "pop", "--scope", "_b_extension.q", "--worker", "w1")
    late = hb("--now", "2026-05-01T11:00:00Z", "pop", "--scope", "_b_extension.q", "--accept-stale")
    assert late.stderr == "adopted stale claim a from w1 (re-leased to you, with a new claim)\n"
    got = json.loads(late.stdout)
    assert got["task_id"] == "a"
    shown = hb.json("show", "a", "--scope", "_b_extension.q")
    assert shown["claimed_by"] != "w1" and shown["claim"] == got["claim"]
    # nothing stale and nothing ready left: exit 10, and nothing adopted
    again = hb("--now", "2026-05-01T11:00:00Z", "pop", "--scope", "_b_extension.q", "--accept-stale", code=10)
    assert "adopted" not in again.stderr


def test_export_to_a_directory_that_does_not_exist_is_refused(hb: Runner, tmp_path: Path) -> None:
    hb("add", "job")
    target = tmp_path / "typo" / "dir" / "tasks.json"
    result = hb("export", "tasks-json", str(target), code=1)
    assert result.stderr == f"hb: {target.parent}: no such directory (hb export creates only the file)\n"
    assert not (tmp_path / "typo").exists()
    hb("export", "tasks-json", str(tmp_path / "tasks.json"))
    assert json.loads((tmp_path / "tasks.json").read_text())["pending"][0]["description"] == "job"


def test_auto_export_takes_in_an_edit_made_while_it_rendered(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old script writes tasks.json without hb's lock: an edit that lands while hb renders
    the file is read in and kept, not replaced."""
    from heartbeat import Ledger
    from heartbeat.ops.sync.queue_files import export as queue_files

    path = _exported(hb, workspace, LEGACY_DOC)
    real = queue_files._export_tasks
    calls = []

    def render_while_the_script_appends(db: object, target: Path, *args: object, **kw: object) -> str:
        if not calls:  # the first render: meanwhile the old script appends a task
            doc = json.loads(path.read_text())
            doc["pending"].append({"id": "appended", "priority": "low"})
            path.write_text(json.dumps(doc, indent=2))
        calls.append(target)
        return real(db, target, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(queue_files, "_export_tasks", render_while_the_script_appends)
    with Ledger.open(workspace=workspace) as ledger:
        assert ledger.pop(worker="w1")["id"] == "a"
        assert ledger.notices == []
    doc = json.loads(path.read_text())
    assert [t["id"] for t in doc["pending"]] == ["b", "appended"]
    assert [t["id"] for t in doc["in_progress"]] == ["a"]
    assert hb.json("show", "appended")["status"] == "todo"


@pytest.mark.parametrize("saved", ["at once", "later"])
def test_a_stale_copy_written_back_does_not_revoke_a_live_claim(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch, saved: str
) -> None:
    """The old script read tasks.json before a pop and wrote it back after: the claim stands.
    Saved at once (within writeback.STALE_WRITE of the pop's export), the copy is read against the
    text it was made from, so t0's line says nothing; saved later, it reads as t0 put back to
    pending, which a live claim does not allow: said so, and the claim stands."""
    if saved == "later":
        from heartbeat.ops.sync import writeback

        monkeypatch.setattr(writeback, "STALE_WRITE", 0)
    doc = {"pending": [{"id": f"t{i}", "priority": "low"} for i in range(3)], "completed": []}
    path = _exported(hb_db, workspace, doc)
    snapshot = json.loads(path.read_text())
    assert json.loads(hb_db("pop", "--worker", "w1", "--lease", "1h").stdout)["id"] == "t0"
    snapshot["pending"].append({"id": "hand", "priority": "low"})
    path.write_text(json.dumps(snapshot, indent=2))  # t0 pending again, in the stale copy
    second = hb_db("pop", "--worker", "w2")
    assert json.loads(second.stdout)["id"] == "t1"  # not t0 a second time
    if saved == "later":
        assert "t0: claimed by w1 until" in second.stderr and "it stays claimed" in second.stderr
    else:
        assert "t0" not in second.stderr
    t0 = hb_db.json("show", "t0")
    assert (t0["status"], t0["claimed_by"]) == ("doing", "w1")
    hb_db("complete", "t0")  # the first holder still finishes it
    assert [t["id"] for t in json.loads(path.read_text())["pending"]] == ["t2", "hand"]


def test_a_task_that_fails_for_good_is_an_unsuccessful_outcome(hb_db: Runner) -> None:
    for i in range(4):
        hb_db("add", f"job {i}", "--skill", "s", "--id", f"j{i}")
    for i in range(3):
        hb_db("pop")
        hb_db("complete", f"j{i}")
    hb_db("pop")
    hb_db("fail", "j3", "--reason", "flaky")  # a retry: the task has not ended
    assert hb_db.json("sql", "SELECT count(*) AS n FROM outcomes")[0]["n"] == 3
    hb_db("pop")
    hb_db("fail", "j3", "--final", "--reason", "boom")
    [row] = hb_db.json("report", "outcomes", "--by", "skill", "--format", "json")["rows"]
    assert (row["outcomes"], row["successes"], row["failures"], row["success_rate"]) == (4, 3, 1, 0.75)
    [failed] = hb_db.json("sql", "SELECT task_id, success, result FROM outcomes WHERE NOT success")
    result = failed["result"]  # JSON text on SQLite, a JSON value on PostgreSQL
    assert failed["task_id"] == "j3"
    assert (json.loads(result) if isinstance(result, str) else result) == {"error": "boom"}


def test_last_run_is_the_last_run_that_handled_a_task(hb: Runner, workspace: Path) -> None:
    hb("config", "set", "sync.auto_export", "true")
    hb("add", "job", "--id", "j1", "--skill", "osint")
    hb("--now", "2026-05-01T10:00:00Z", "pop")
    last_run = workspace / ".agent" / "state" / "last-run.json"
    assert not last_run.exists()  # heartbeat.py's pop does not log a run, nor does hb's
    hb("--now", "2026-05-01T10:05:00Z", "complete", "j1", "--outcome", "done")
    completed = json.loads(last_run.read_text())
    assert (completed["task_id"], completed["status"], completed["timestamp"]) == (
        "j1",
        "completed",
        "2026-05-01T10:05:00Z",
    )
    assert (completed["assigned_skill"], completed["outcome"]) == ("osint", {"result": "done"})
    hb("add", "next", "--id", "j2")
    hb("--now", "2026-05-01T10:06:00Z", "pop")  # a claim: last-run.json stays the completion's
    hb("--now", "2026-05-01T10:06:00Z", "clear-stale")  # no task handled: last-run.json stays
    hb("--now", "2026-05-01T10:07:00Z", "pop")  # nothing to pop (j2 is claimed): the same
    assert json.loads(last_run.read_text()) == completed
    assert json.loads(hb("export", "last-run", "-").stdout) == completed


def test_the_files_of_a_failure_and_of_a_bare_completion_read_as_heartbeat_pys(
    hb_db: Runner, workspace: Path
) -> None:
    """heartbeat.py's fail sets the task's completed_at and writes last-run.json's outcome
    ``{"reason": R}`` (``{}`` without one), its complete ``{}`` without --outcome, and the
    description as the task has it (null for none); errors.json only once there is an error.
    hb's own commands left a failed task's completed_at null, wrote ``{"error": R}``
    (``"Unknown failure"``), null and the task's id, and wrote an empty errors.json at a pop."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    tasks = {
        "pending": [
            {"id": "a", "priority": "high", "description": "first", "completed_at": None},
            {"id": "b", "priority": "high", "completed_at": None},
            {"id": "c", "priority": "high", "description": "third", "completed_at": None},
        ],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    (state / "tasks.json").write_text(json.dumps(tasks, indent=2) + "\n")
    hb_db("config", "set", "sync.auto_export", "true")
    hb_db("sync")
    last_run = state / "last-run.json"

    def last() -> dict[str, object]:
        return json.loads(last_run.read_text())

    hb_db("--now", "2026-05-01T10:00:00Z", "pop")
    assert not (state / "errors.json").exists()  # heartbeat.py writes it on a failure only
    hb_db("--now", "2026-05-01T10:01:00Z", "fail", "a", "--final", "--reason", "503")
    failed = json.loads((state / "tasks.json").read_text())["failed"]
    assert [(t["id"], t["completed_at"]) for t in failed] == [("a", "2026-05-01T10:01:00Z")]
    assert (last()["status"], last()["outcome"], last()["description"]) == (
        "failed",
        {"reason": "503"},
        "first",
    )
    hb_db("--now", "2026-05-01T10:02:00Z", "pop")
    hb_db("--now", "2026-05-01T10:03:00Z", "complete", "b")
    assert (last()["task_id"], last()["outcome"], last()["description"]) == ("b", {}, None)
    hb_db("--now", "2026-05-01T10:04:00Z", "pop")
    hb_db("--now", "2026-05-01T10:05:00Z", "fail", "c", "--final")
    assert (last()["task_id"], last()["outcome"]) == ("c", {})
    errors = json.loads((state / "errors.json").read_text())
    assert [(e["task_id"], e["reason"]) for e in errors] == [("a", "503"), ("c", "Unknown failure")]
    # a retry is no end: completed_at stays null
    hb_db("add", "again", "--id", "d")
    hb_db("--now", "2026-05-01T10:06:00Z", "pop")
    hb_db("--now", "2026-05-01T10:07:00Z", "fail", "d")
    [retried] = [t for t in json.loads((state / "tasks.json").read_text())["pending"] if t["id"] == "d"]
    assert retried["completed_at"] is None
    assert hb_db.json("show", "d")["completed_at"] is None


def test_auto_export_takes_in_a_file_created_while_it_rendered(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat import Ledger
    from heartbeat.ops.sync.queue_files import export as queue_files

    hb("config", "set", "sync.auto_export", "true")
    hb("add", "first", "--id", "a")
    hb("add", "second", "--id", "b")
    path = workspace / ".agent" / "state" / "tasks.json"
    assert not path.exists()  # hb add does not export: the pop's export starts from no file
    real = queue_files._export_tasks

    def render_while_a_file_appears(db: object, target: Path, *args: object, **kw: object) -> str:
        if not path.exists():
            path.write_text(json.dumps({"pending": [{"id": "hand", "priority": "low"}]}, indent=2))
        return real(db, target, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(queue_files, "_export_tasks", render_while_a_file_appears)
    with Ledger.open(workspace=workspace) as ledger:
        assert ledger.pop(worker="w1")["id"] == "a"
    doc = json.loads(path.read_text())
    assert sorted(t["id"] for t in doc["pending"]) == ["b", "hand"]
    assert [t["id"] for t in doc["in_progress"]] == ["a"]
    assert sorted(t["id"] for t in hb.json("list", "--all")) == ["a", "b", "hand"]


def test_a_claimed_task_left_out_of_the_file_is_kept_and_one_completed_by_hand_is_done(
    hb_db: Runner, workspace: Path
) -> None:
    doc = {"pending": [{"id": f"t{i}", "priority": "low"} for i in range(3)], "completed": []}
    path = _exported(hb_db, workspace, doc)
    stale = json.loads(path.read_text())
    hb_db("pop", "--worker", "w1")  # t0
    hb_db("pop", "--worker", "w2")  # t1
    del stale["pending"][0]  # a copy read before the pops, without t0, and t1 still pending
    path.write_text(json.dumps(stale, indent=2))
    third = hb_db("pop", "--worker", "w3")
    assert json.loads(third.stdout)["id"] == "t2"
    assert "t0: claimed by w1 until" in third.stderr and "not removed" in third.stderr
    hb_db("complete", "t0")  # its worker finishes it: nothing was lost
    # a person completes the claimed t1 in the file: that is taken as done by hand
    edited = json.loads(path.read_text())
    [t1] = [t for t in edited["in_progress"] if t["id"] == "t1"]
    edited["in_progress"].remove(t1)
    edited["completed"].append({**t1, "completed_at": "2026-05-01T09:00:30Z", "result": "by hand"})
    path.write_text(json.dumps(edited, indent=2))
    hb_db("sync")
    shown = hb_db.json("show", "t1")
    assert (shown["status"], shown["completed_at"]) == ("done", "2026-05-01T09:00:30+00:00")
    # a stale copy that shows a completed task pending reopens it, and says so
    edited = json.loads(path.read_text())
    [t0] = [t for t in edited["completed"] if t["id"] == "t0"]
    edited["completed"].remove(t0)
    edited["pending"].append({k: v for k, v in t0.items() if k != "completed_at"})
    path.write_text(json.dumps(edited, indent=2))
    assert "t0: was done; the file reopens it" in hb_db("sync").stderr


def test_a_failed_task_retried_by_hand_gets_its_attempts_again(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ops.sync import writeback

    # the person edits the file after the moment in which a change is read as a stale copy of the
    # text before hb's export (tests/sync/test_writeback.py has those)
    monkeypatch.setattr(writeback, "STALE_WRITE", 0)
    path = _exported(hb_db, workspace, {"pending": [{"id": "f", "priority": "low"}], "failed": []})
    hb_db("pop")
    hb_db("fail", "f", "--final")
    doc = json.loads(path.read_text())
    doc["pending"].append(doc["failed"].pop())
    path.write_text(json.dumps(doc, indent=2))
    hb_db("sync")
    assert hb_db.json("show", "f")["attempts"] == 0
    hb_db("pop")
    assert "returned to the queue for a retry" in hb_db("fail", "f").stdout


def test_a_failed_re_render_after_the_commit_does_not_hide_the_claim(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat import Ledger

    path = _exported(hb, workspace, LEGACY_DOC)
    before = path.read_text()

    def disk_full(target: Path, text: str, expected: str | None, **_kw: object) -> None:
        raise OSError(28, "No space left on device", str(target))

    with monkeypatch.context() as patched:
        patched.setattr("heartbeat.ops.sync.queue_files.export.replace_if", disk_full)
        with Ledger.open(workspace=workspace) as ledger:
            assert ledger.pop(worker="w1")["id"] == "a"  # the caller gets its task
            assert ledger.notices == [
                f"the queue files were not re-rendered ({path}: No space left on device); hb sync retries"
            ]
    assert path.read_text() == before
    hb("sync")  # the next sync writes what the failed re-render could not
    assert [t["id"] for t in json.loads(path.read_text())["in_progress"]] == ["a"]


def test_a_failure_of_the_export_after_the_commit_does_not_hide_the_claim(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """auto_export runs after the pop's commit: whatever goes wrong there (an internal error
    included), the caller gets the task and its claim token, with a warning, not exit 70 for a
    claim that is then held by nobody who knows it."""
    from heartbeat.ops.sync.queue_files import export as queue_files

    _exported(hb, workspace, LEGACY_DOC)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the export")

    monkeypatch.setattr(queue_files, "_export_tasks", broken)
    popped = hb("pop", "--json")
    task = json.loads(popped.stdout)
    assert task["id"] == "a" and task["claim"]
    assert "the queue files were not re-rendered (internal error: RuntimeError: a bug in the export)" in (
        popped.stderr
    )
    assert hb.json("show", "a")["claim"] == task["claim"]


def test_a_value_nested_as_deep_as_json_reads_goes_through_every_command(hb: Runner, workspace: Path) -> None:
    """Python's json reads about 990 levels; hb's comparison of documents recursed and gave up
    at about 330, so sync, export, heartbeat.py's commands and every auto_export after a pop
    were internal errors (exit 70), the pop's claim already committed."""
    deep = "[" * 900 + "]" * 900
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True)
    text = '{"pending": [{"id": "a", "x": ' + deep + '}, {"id": "b"}], "completed": []}\n'
    path.write_text(text)
    hb("sync")
    assert path.read_text() == text
    assert json.loads(hb("export", "tasks-json", "-").stdout)["pending"][0]["x"] == json.loads(deep)
    hb("compat", "heartbeat-py", "list")
    hb("config", "set", "sync.auto_export", "true")
    assert hb.json("pop")["id"] == "a"
    hb("complete", "a", "--outcome", deep)
    assert hb.json("pop")["id"] == "b"
    hb("sync")
    doc = json.loads(path.read_text())
    assert doc["completed"][0]["x"] == json.loads(deep)
    # an --outcome deeper than 500 levels is text (see tasks_json.outcome_value)
    assert json.loads((path.parent / "last-run.json").read_text())["outcome"] == {"result": deep}


@pytest.mark.parametrize(
    ("kind", "name", "text"),
    [
        (
            "errors-json",
            "errors.json",
            '[{"timestamp":"2026-05-01T00:00:00Z","task_id":"x","assigned_skill":null,"reason":"r",'
            '"trace_id":null,"decision_log":{"n":1e999},"resolved":false}]',
        ),
        (
            "last-run",
            "last-run.json",
            '{"timestamp":"2026-05-01T00:00:00Z","task_id":"x","status":"completed","outcome":{"a":1e999}}',
        ),
    ],
)
def test_an_export_to_stdout_is_the_file_hb_read_as_tasks_json_is(
    hb: Runner, workspace: Path, kind: str, name: str, text: str
) -> None:
    """``hb export errors-json -`` rendered the log afresh (``json.dumps``' layout, ``1e999`` as
    ``Infinity``) where the export onto the file found it unchanged: with no file to lay the
    ledger over, it is laid over the text hb last read, as tasks.json's is."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / name).write_text(text)
    hb("import", kind)
    assert hb("export", kind, "-").stdout == text
    assert hb("export", kind).stdout == f"{state / name}: unchanged\n"
    assert (state / name).read_text() == text
