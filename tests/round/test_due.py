"""hb due: OpenClaw's entry rules and risk levels, each alone and combined (SPEC.md section 5)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Runner
from tests.round.conftest import add

NOW = "2026-05-01T10:00"  # Asia/Shanghai


def due(hb: Runner, now: str = NOW) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in hb.json("--now", now, "due")}


# --- entry rules, each alone ---------------------------------------------------------


def test_next_check_reached_enters_inclusive(sh_db: Runner) -> None:
    on_time = add(sh_db, "Ping John", "--next-check", NOW)
    later = add(sh_db, "Ping Mary", "--next-check", "2026-05-01T10:01")
    rows = due(sh_db)
    assert rows[on_time]["reasons"] == ["next_check"]
    assert later not in rows


def test_overdue_enters_only_after_due_time(sh_db: Runner) -> None:
    late = add(sh_db, "Submit expenses", "--due", "2026-05-01T09:59")
    on_the_dot = add(sh_db, "Pay invoice", "--due", NOW)
    rows = due(sh_db)
    assert rows[late]["reasons"] == ["overdue"]
    assert rows[late]["risk"] == "P0"
    assert on_the_dot not in rows


def test_blocked_enters_when_its_next_check_is_reached(sh_db: Runner) -> None:
    tid = add(sh_db, "Deploy", "--status", "blocked", "--next-check", "2026-05-01T09:00")
    waiting_early = add(sh_db, "Deploy later", "--status", "blocked", "--next-check", "2026-05-01T11:00")
    rows = due(sh_db)
    assert rows[tid]["reasons"] == ["next_check", "blocked_check"]
    assert rows[tid]["status"] == "blocked"
    assert waiting_early not in rows


def test_waiting_enters_when_its_next_check_is_reached(sh_db: Runner) -> None:
    tid = add(sh_db, "Vendor quote", "--status", "waiting", "--next-check", "2026-05-01T09:00")
    assert due(sh_db)[tid]["reasons"] == ["next_check", "waiting_check"]


def test_stale_after_no_update_for_longer_than_stale_after(sh_db: Runner) -> None:
    tid = add(sh_db, "Write chapter 3", "--stale-after", "2h", now="2026-05-01T08:00")
    assert tid not in due(sh_db, "2026-05-01T10:00")  # exactly 2 h: not yet
    assert due(sh_db, "2026-05-01T10:01")[tid]["reasons"] == ["stale"]
    sh_db("--now", "2026-05-01T10:30", "update", tid, "--note", "half done")
    assert tid not in due(sh_db, "2026-05-01T11:00")  # the update reset the clock


def test_finished_and_unscheduled_tasks_never_enter(sh_db: Runner) -> None:
    done = add(sh_db, "Old", "--due", "2026-04-01T09:00", "--next-check", "2026-04-01T09:00")
    sh_db("done", done)
    cancelled = add(sh_db, "Dropped", "--due", "2026-04-01T09:00")
    sh_db("cancel", cancelled)
    add(sh_db, "Someday")
    assert due(sh_db) == {}
    assert sh_db("--now", NOW, "due").stdout == "Nothing due.\n"


# --- combined --------------------------------------------------------------------------


def test_all_reasons_at_once_in_fixed_order(sh_db: Runner) -> None:
    tid = add(
        sh_db,
        "Contract signature",
        "--status",
        "waiting",
        "--due",
        "2026-05-01T09:00",
        "--next-check",
        "2026-05-01T09:30",
        "--stale-after",
        "1h",
        now="2026-05-01T07:00",
    )
    row = due(sh_db)[tid]
    assert row["reasons"] == ["next_check", "overdue", "waiting_check", "stale"]
    assert row["risk"] == "P0"  # overdue wins over the P1 signs


def test_due_json_shape_and_order_most_urgent_first(sh_db: Runner) -> None:
    routine = add(sh_db, "Routine", "--next-check", "2026-05-01T09:00")
    urgent = add(sh_db, "Urgent", "--due", "2026-05-01T09:00")
    rows = sh_db.json("--now", NOW, "due")
    assert [r["id"] for r in rows] == [urgent, routine]
    first = rows[0]
    assert {"id", "title", "risk", "reasons"} <= set(first)
    assert first["title"] == "Urgent"
    assert first["due_at"] == "2026-05-01T09:00:00+08:00"
    table = sh_db("--now", NOW, "due").stdout.splitlines()
    assert table[0].split() == ["id", "risk", "reasons", "status", "title"]
    assert table[2].split()[:3] == [urgent, "P0", "overdue"]


# --- risk levels -----------------------------------------------------------------------


def test_p0_critical_blocker(sh_db: Runner) -> None:
    tid = add(
        sh_db,
        "Prod DB",
        "--priority",
        "critical",
        "--blocker",
        "disk full",
        "--next-check",
        "2026-05-01T09:00",
    )
    same_but_high = add(
        sh_db,
        "Staging DB",
        "--priority",
        "high",
        "--blocker",
        "disk full",
        "--next-check",
        "2026-05-01T09:00",
    )
    rows = due(sh_db)
    assert rows[tid]["risk"] == "P0"
    assert rows[same_but_high]["risk"] == "P2"  # a blocker alone, with no other sign, is routine


def test_p0_key_dependency_lost(sh_db: Runner) -> None:
    tid = add(
        sh_db,
        "Visa papers",
        "--status",
        "waiting",
        "--due",
        "2026-05-02T09:00",  # 23 h away while still waiting
        "--next-action",
        "call the embassy",
        "--next-check",
        "2026-05-01T09:00",
    )
    far = add(
        sh_db,
        "Passport",
        "--status",
        "waiting",
        "--due",
        "2026-05-03T09:00",
        "--next-action",
        "call the office",
        "--next-check",
        "2026-05-01T09:00",
    )
    rows = due(sh_db)
    assert rows[tid]["risk"] == "P0"
    assert rows[far]["risk"] == "P1"  # waiting past its check: needs the user, not urgent


def test_p0_explicit_failure_risk_after_a_failed_attempt(sh_db: Runner) -> None:
    sh_db("config", "set", "queue.max_attempts", "5")  # keep "one try left" out of the way
    tid = add(sh_db, "Nightly export", "--next-check", "2026-05-01T09:00")
    assert due(sh_db)[tid]["risk"] == "P2"
    sh_db("--now", "2026-05-01T09:10", "pop")
    sh_db("--now", "2026-05-01T09:20", "fail", tid, "--reason", "timeout")
    assert due(sh_db)[tid]["risk"] == "P0"
    sh_db("--now", "2026-05-01T09:30", "pop")
    sh_db("--now", "2026-05-01T09:40", "complete", tid)
    sh_db("--now", "2026-05-01T09:50", "update", tid, "--status", "todo")
    assert due(sh_db)[tid]["risk"] == "P2"  # succeeded since the error: no longer at risk


def test_p0_on_the_last_try(sh_db: Runner) -> None:
    tid = add(sh_db, "Flaky upload", "--next-check", "2026-05-01T09:00")
    for minute in ("01", "03"):
        sh_db("--now", f"2026-05-01T09:{minute}", "pop")
        sh_db("--now", f"2026-05-01T09:{minute}:30", "fail", tid, "--reason", "HTTP 502")
    sh_db("--now", "2026-05-01T09:05", "pop")
    sh_db("--now", "2026-05-01T09:06", "complete", tid)
    sh_db("--now", "2026-05-01T09:07", "update", tid, "--status", "todo")
    row = due(sh_db)[tid]
    assert row["risk"] == "P0"  # 2 of 3 attempts used: one try left


def test_p1_stale_waiting_blocked_and_unclear_next_step(sh_db: Runner) -> None:
    stale = add(sh_db, "Essay", "--stale-after", "1h", "--next-action", "write intro", now="2026-05-01T08:00")
    blocked = add(
        sh_db,
        "Release",
        "--status",
        "blocked",
        "--next-check",
        "2026-05-01T09:00",
        "--next-action",
        "ask ops",
    )
    rows = due(sh_db)
    assert rows[stale]["risk"] == "P1"
    assert rows[blocked]["risk"] == "P1"


def test_p2_routine_check(sh_db: Runner) -> None:
    tid = add(sh_db, "Inbox zero", "--next-check", "2026-05-01T09:00", "--next-action", "archive")
    assert due(sh_db)[tid]["risk"] == "P2"


def test_explicit_risk_wins(sh_db: Runner) -> None:
    overdue_but_p2 = add(sh_db, "Late but fine", "--due", "2026-05-01T09:00", "--risk", "P2")
    routine_but_p0 = add(sh_db, "Routine but urgent", "--next-check", "2026-05-01T09:00", "--risk", "P0")
    rows = due(sh_db)
    assert rows[overdue_but_p2]["risk"] == "P2"
    assert rows[routine_but_p0]["risk"] == "P0"
