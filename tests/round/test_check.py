"""hb check: one round — decisions recorded, check times moved, messages or exactly HEARTBEAT_OK."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner
from tests.round.conftest import add, decisions, runs


def test_only_p2_tasks_update_check_fields_and_print_heartbeat_ok(sh_db: Runner) -> None:
    a = add(
        sh_db, "Inbox", "--next-check", "2026-05-01T09:00", "--check-interval", "2h", "--next-action", "x"
    )
    b = add(sh_db, "Backups", "--next-check", "2026-05-01T09:30", "--check-interval", "1d")
    result = sh_db("--now", "2026-05-01T10:00", "check")
    assert result.stdout == "HEARTBEAT_OK\n"
    first, second = sh_db.json("show", a), sh_db.json("show", b)
    assert first["last_checked_at"] == "2026-05-01T10:00:00+08:00"
    assert first["next_check_at"] == "2026-05-01T11:00:00+08:00"  # on the 09:00 + 2h grid
    assert second["next_check_at"] == "2026-05-02T09:30:00+08:00"
    assert first["version"] == 1 and first["updated_at"] == first["created_at"]  # bookkeeping, not an edit
    rows = decisions(sh_db)
    assert [(r["task_id"], r["decision"], r["reason"], r["risk"]) for r in rows] == [
        (a, "suppressed", "risk_p2", "P2"),
        (b, "suppressed", "risk_p2", "P2"),
    ]
    assert {r["local_day"] for r in rows} == {"2026-05-01"}
    [run] = runs(sh_db, "check")
    assert rows[0]["run_pk"] == run["pk"]
    assert run["detail"]["lastScanAt"] == "2026-05-01T10:00:00+08:00"
    assert run["detail"]["nextScanAt"] == "2026-05-01T11:00:00+08:00"  # setting check_interval, 1h


def test_sent_reminder_prints_three_part_message(sh_db: Runner) -> None:
    tid = add(
        sh_db,
        "Send the report",
        "--due",
        "2026-05-01T09:00",
        "--note",
        "draft ready",
        "--next-action",
        "email the PDF to John",
        "--fallback-action",
        "ask Mary to send it",
    )
    out = sh_db("--now", "2026-05-01T10:00", "check").stdout
    assert out == (
        f"Task: {tid} Send the report\n"
        "Status: todo, draft ready / blocker: none / risk: P0\n"
        "Suggestion: email the PDF to John; fallback: ask Mary to send it\n"
    )
    [row] = decisions(sh_db)
    assert (row["decision"], row["reason"], row["risk"]) == ("sent", None, "P0")
    assert row["suggestion"] == "email the PDF to John"
    assert row["message"] == out.rstrip("\n")


def test_chinese_labels(sh: Runner) -> None:
    tid = add(
        sh, "提交报告", "--due", "2026-05-01T09:00", "--blocker", "缺少数据", "--next-action", "找小王要数据"
    )
    out = sh("--now", "2026-05-01T10:00", "check", "--lang", "zh").stdout
    assert out == f"任务：{tid} 提交报告\n状态：todo / 阻塞：缺少数据 / 风险：P0\n建议：找小王要数据\n"


def test_lang_setting_is_the_default(sh: Runner) -> None:
    add(sh, "Report", "--due", "2026-05-01T09:00", "--next-action", "send it")
    sh("config", "set", "lang", "zh")
    assert sh("--now", "2026-05-01T10:00", "check", "--dry-run").stdout.startswith("任务：")
    assert sh("--now", "2026-05-01T10:00", "check", "--dry-run", "--lang", "en").stdout.startswith("Task: ")


def test_twice_in_the_same_minute_sends_nothing_new(sh_db: Runner) -> None:
    tid = add(sh_db, "Overdue thing", "--due", "2026-05-01T09:00", "--next-action", "do it now")
    first = sh_db("--now", "2026-05-01T10:00", "check").stdout
    assert first.startswith(f"Task: {tid} ")
    second = sh_db("--now", "2026-05-01T10:00:40", "check")
    assert second.stdout == "HEARTBEAT_OK\n"
    rows = decisions(sh_db)
    assert [(r["decision"], r["reason"]) for r in rows] == [("sent", None), ("suppressed", "repeat_window")]


def test_no_suggestion_means_no_message(sh_db: Runner) -> None:
    add(sh_db, "Vague worry", "--due", "2026-05-01T09:00")
    assert sh_db("--now", "2026-05-01T10:00", "check").stdout == "HEARTBEAT_OK\n"
    [row] = decisions(sh_db)
    assert (row["decision"], row["reason"], row["risk"], row["message"]) == (
        "suppressed",
        "no_suggestion",
        "P0",
        None,
    )


def test_quiet_hours_hold_p1_and_let_p0_through(sh_db: Runner) -> None:
    p0 = add(sh_db, "Server down", "--due", "2026-05-01T22:00", "--next-action", "restart it")
    p1 = add(
        sh_db,
        "Quote",
        "--status",
        "waiting",
        "--next-check",
        "2026-05-01T22:00",
        "--next-action",
        "chase vendor",
    )
    out = sh_db("--now", "2026-05-01T23:30", "check").stdout
    assert out.startswith(f"Task: {p0} Server down\n")
    assert p1 not in out
    reasons = {r["task_id"]: (r["decision"], r["reason"]) for r in decisions(sh_db)}
    assert reasons == {p0: ("sent", None), p1: ("suppressed", "quiet_hours")}


def test_dry_run_decides_and_prints_but_records_nothing(sh_db: Runner) -> None:
    tid = add(sh_db, "Report", "--due", "2026-05-01T09:00", "--next-check", "2026-05-01T09:00")
    sh_db("update", tid, "--next-action", "send it", "--check-interval", "1h")
    before = sh_db.json("show", tid)
    result = sh_db("--now", "2026-05-01T10:00", "check", "--dry-run")
    assert result.stdout.startswith(f"Task: {tid} Report\n")
    assert "dry run" in result.stderr
    assert decisions(sh_db) == []
    assert runs(sh_db, "check") == []
    assert sh_db.json("show", tid) == before
    # and the real round decides the same
    assert sh_db("--now", "2026-05-01T10:00", "check").stdout == result.stdout


def test_json_has_structured_decisions(sh_db: Runner) -> None:
    tid = add(sh_db, "Report", "--due", "2026-05-01T09:00", "--next-action", "send it")
    got = sh_db.json("--now", "2026-05-01T10:00", "check")
    assert got["ok"] is False
    assert got["sent"] == 1 and got["suppressed"] == 0 and got["checked"] == 1
    [decision] = got["decisions"]
    assert decision["id"] == tid
    assert decision["decision"] == "sent" and decision["reason"] is None
    assert decision["risk"] == "P0" and decision["reasons"] == ["overdue"]
    assert got["messages"] == [decision["message"]]
    assert got["todoWatch"] == {
        "lastScanAt": "2026-05-01T10:00:00+08:00",
        "nextScanAt": "2026-05-01T11:00:00+08:00",
    }
    empty = sh_db.json("--now", "2026-05-01T10:01", "check")
    assert empty["ok"] is True and empty["output"] == "HEARTBEAT_OK"


def test_memory_hygiene_due_until_done(sh_db: Runner) -> None:
    assert sh_db("--now", "2026-05-01T10:00", "check").stdout == "HEARTBEAT_OK\n"  # disabled by default
    sh_db("config", "set", "hygiene.enabled", "true")
    sh_db("config", "set", "hygiene.every_hours", "24")
    assert sh_db("--now", "2026-05-01T10:00", "check").stdout == "memory hygiene due\n"
    done = sh_db.json("--now", "2026-05-01T10:05", "hygiene", "done")
    assert done["next_due_at"] == "2026-05-02T10:05:00+08:00"
    assert sh_db("--now", "2026-05-02T10:04", "check").stdout == "HEARTBEAT_OK\n"
    got = sh_db.json("--now", "2026-05-02T10:05", "check")
    assert got["hygiene_due"] is True
    assert got["output"] == "memory hygiene due"
    assert got["hygiene_last_run_at"] == "2026-05-01T10:05:00+08:00"


def test_check_reads_what_the_runtime_wrote_to_the_state_file_first(sh_db: Runner, workspace: Path) -> None:
    """The agent notes memory hygiene done in memory/heartbeat-state.json itself: ``hb notify``
    and ``hb proactive`` read the file first, ``hb check`` said "memory hygiene due" until a sync
    ran."""
    sh_db("config", "set", "hygiene.enabled", "true")
    assert sh_db("--now", "2026-05-01T10:00", "check").stdout == "memory hygiene due\n"
    state = workspace / "memory" / "heartbeat-state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text('{"memoryHygiene": {"enabled": true, "lastRunAt": "2026-05-01T10:30:00+08:00"}}\n')
    got = sh_db.json("--now", "2026-05-01T11:00", "check")
    assert got["hygiene_due"] is False
    assert got["hygiene_last_run_at"] == "2026-05-01T10:30:00+08:00"
