"""hb notify / hb proactive / hb seen: quiet hours, the repeat window, the proactive-chat limits.

Every case runs with --now; the workspace is in Asia/Shanghai while the machine
(TZ) is UTC, so a quiet-hours bug that reads the machine's clock shows up.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from heartbeat import Ledger
from tests.conftest import Runner
from tests.round.conftest import add, decisions, open_ledger


def notify(hb: Runner, now: str, tid: str, *args: str, code: int = 0) -> dict[str, object]:
    result = hb("--now", now, "notify", tid, *args, "--json", code=code)
    got: dict[str, object] = json.loads(result.stdout)
    return got


@pytest.fixture
def local_task(sh: Runner) -> str:
    """The task on SQLite only, for the cases where the backend does not matter."""
    return add(sh, "Tax return", "--next-action", "fill in form B", "--fallback-action", "ask the accountant")


@pytest.fixture
def task(sh_db: Runner) -> str:
    return add(
        sh_db, "Tax return", "--next-action", "fill in form B", "--fallback-action", "ask the accountant"
    )


# --- quiet hours ---------------------------------------------------------------------


def test_quiet_hours_2330_p1_suppressed_p0_sent(sh_db: Runner, task: str) -> None:
    held = notify(sh_db, "2026-05-01T23:30", task, "--risk", "P1", code=20)
    assert held["decision"] == "suppressed" and held["reason"] == "quiet_hours"
    assert held["message"] is None  # nothing a runtime could send by mistake
    sent = notify(sh_db, "2026-05-01T23:30", task, "--risk", "P0")
    assert sent["decision"] == "sent" and sent["reason"] is None
    assert str(sent["message"]).startswith(f"Task: {task} Tax return\n")
    assert [(r["decision"], r["reason"], r["risk"]) for r in decisions(sh_db)] == [
        ("suppressed", "quiet_hours", "P1"),
        ("sent", None, "P0"),
    ]
    held_message = str(sent["message"]).replace("risk: P0", "risk: P1")
    assert decisions(sh_db)[0]["message"] == held_message  # the row keeps it, for reports


def test_quiet_hours_end_is_exclusive_at_0800(sh: Runner, local_task: str) -> None:
    assert notify(sh, "2026-05-02T07:59:59", local_task, "--risk", "P1", code=20)["reason"] == "quiet_hours"
    assert notify(sh, "2026-05-02T08:00", local_task, "--risk", "P1")["decision"] == "sent"


def test_quiet_hours_start_is_inclusive_at_2300(sh: Runner, local_task: str) -> None:
    assert notify(sh, "2026-05-01T22:59", local_task, "--risk", "P1")["decision"] == "sent"
    other = add(sh, "Other", "--next-action", "x")
    assert notify(sh, "2026-05-01T23:00", other, "--risk", "P1", code=20)["reason"] == "quiet_hours"


def test_window_that_does_not_wrap(sh: Runner, local_task: str) -> None:
    sh("config", "set", "quiet_hours", "12:00-14:00")
    assert notify(sh, "2026-05-01T13:00", local_task, "--risk", "P1", code=20)["reason"] == "quiet_hours"
    assert notify(sh, "2026-05-01T23:30", local_task, "--risk", "P1")["decision"] == "sent"


def test_start_equal_to_end_is_never_quiet(sh: Runner, local_task: str) -> None:
    sh("config", "set", "quiet_hours", "08:00-08:00")
    assert notify(sh, "2026-05-01T03:00", local_task, "--risk", "P1")["decision"] == "sent"


def test_quiet_hours_follow_the_workspace_zone_not_the_machine(sh: Runner, local_task: str) -> None:
    # 16:00 UTC is 00:00 in Shanghai: quiet there, though the machine's (UTC) afternoon
    assert notify(sh, "2026-05-01T16:00:00Z", local_task, "--risk", "P1", code=20)["reason"] == "quiet_hours"
    # 01:00 UTC is 09:00 in Shanghai: the machine's night, the workspace's morning
    assert notify(sh, "2026-05-02T01:00:00Z", local_task, "--risk", "P1")["decision"] == "sent"
    sh("config", "set", "timezone", "America/New_York")
    # 16:00 UTC is 12:00 in New York (EDT)
    other = add(sh, "Other", "--next-action", "x")
    assert notify(sh, "2026-05-01T16:00:00Z", other, "--risk", "P1")["decision"] == "sent"


# --- repeat window -------------------------------------------------------------------


def test_repeat_window_p1_at_10_suppressed_at_13_sent_at_1601(sh_db: Runner, task: str) -> None:
    assert notify(sh_db, "2026-05-01T10:00", task, "--risk", "P1")["decision"] == "sent"
    held = notify(sh_db, "2026-05-01T13:00", task, "--risk", "P1", code=20)
    assert held["reason"] == "repeat_window"
    assert notify(sh_db, "2026-05-01T16:01", task, "--risk", "P1")["decision"] == "sent"


def test_repeat_window_counts_from_the_last_sent_not_the_last_suppressed(sh: Runner, local_task: str) -> None:
    notify(sh, "2026-05-01T10:00", local_task, "--risk", "P1")
    notify(sh, "2026-05-01T15:00", local_task, "--risk", "P1", code=20)
    assert notify(sh, "2026-05-01T16:00", local_task, "--risk", "P1")["decision"] == "sent"


def test_repeat_window_broken_when_risk_rose(sh_db: Runner, task: str) -> None:
    notify(sh_db, "2026-05-01T10:00", task, "--risk", "P1")
    assert notify(sh_db, "2026-05-01T13:00", task, "--risk", "P0")["decision"] == "sent"


def test_repeat_window_broken_when_the_blocker_changed(sh_db: Runner, task: str) -> None:
    sh_db("update", task, "--blocker", "waiting for the W-2")
    notify(sh_db, "2026-05-01T10:00", task, "--risk", "P1")
    assert notify(sh_db, "2026-05-01T12:00", task, "--risk", "P1", code=20)["reason"] == "repeat_window"
    sh_db("update", task, "--blocker", "the accountant is ill")
    assert notify(sh_db, "2026-05-01T13:00", task, "--risk", "P1")["decision"] == "sent"


def test_repeat_window_broken_when_follow_up_was_asked(sh_db: Runner, task: str) -> None:
    notify(sh_db, "2026-05-01T10:00", task, "--risk", "P1")
    sh_db("update", task, "--follow-up")
    assert notify(sh_db, "2026-05-01T13:00", task, "--risk", "P1")["decision"] == "sent"


def test_repeat_hours_setting(sh: Runner, local_task: str) -> None:
    sh("config", "set", "reminder.repeat_hours", "2")
    notify(sh, "2026-05-01T10:00", local_task, "--risk", "P1")
    assert notify(sh, "2026-05-01T12:00", local_task, "--risk", "P1")["decision"] == "sent"


def test_a_reminder_recorded_later_than_now_holds_back_only_as_long_as_the_window(
    sh_db: Runner, task: str
) -> None:
    """A reminder sent by a clock a year ahead, the clock set right since: every reminder of the
    task was held back as inside the repeat window until the clock caught up, a year on. The
    window now reaches as far either side of now."""
    assert notify(sh_db, "2027-05-01T10:00", task, "--risk", "P1")["decision"] == "sent"
    assert notify(sh_db, "2026-05-01T10:00", task, "--risk", "P1")["decision"] == "sent"
    # within the window of that one, and of one recorded three hours ahead (a clock set back)
    assert notify(sh_db, "2026-05-01T13:00", task, "--risk", "P1", code=20)["reason"] == "repeat_window"
    assert notify(sh_db, "2026-05-01T16:01", task, "--risk", "P1")["decision"] == "sent"
    assert notify(sh_db, "2026-05-01T14:00", task, "--risk", "P1", code=20)["reason"] == "repeat_window"


def test_notify_other_reasons_and_exit_codes(sh: Runner) -> None:
    bare = add(sh, "No plan yet")
    result = sh("--now", "2026-05-01T10:00", "notify", bare, "--risk", "P1", code=20)
    assert result.stdout == ""
    assert "suppressed: no_suggestion" in result.stderr
    # a suggestion given on the command line is enough
    got = notify(sh, "2026-05-01T10:00", bare, "--risk", "P1", "--suggestion", "pick a date")
    assert got["decision"] == "sent" and got["suggestion"] == "pick a date"
    routine = add(sh, "Routine", "--next-action", "x")
    assert notify(sh, "2026-05-01T10:00", routine, "--risk", "P2", code=20)["reason"] == "risk_p2"
    # without --risk the task's own assessment counts: a routine task is P2
    assert notify(sh, "2026-05-01T10:00", routine, code=20)["risk"] == "P2"
    sh("done", routine)
    assert notify(sh, "2026-05-01T10:00", routine, "--risk", "P0", code=20)["reason"] == "risk_p2"
    missing = sh("notify", "task-00000000", "--risk", "P1", code=1)
    assert missing.stderr == "hb: no task with id 'task-00000000'\n"
    sh("notify", bare, "--risk", "P7", code=2)


def test_notify_human_output_is_the_message_and_reason_joins_status(sh: Runner, local_task: str) -> None:
    out = sh(
        "--now", "2026-05-01T10:00", "notify", local_task, "--risk", "P1", "--reason", "form due Friday"
    ).stdout
    assert out == (
        f"Task: {local_task} Tax return\n"
        "Status: todo, form due Friday / blocker: none / risk: P1\n"
        "Suggestion: fill in form B; fallback: ask the accountant\n"
    )


# --- proactive chat ------------------------------------------------------------------


def proactive(hb: Runner, now: str, *args: str, code: int = 0) -> dict[str, object]:
    result = hb("--now", now, "proactive", *args, "--json", code=code)
    got: dict[str, object] = json.loads(result.stdout)
    return got


TOPIC = ("--topic", "flight to Osaka", "--suggestion", "book the 09:10 airport train")


@pytest.fixture
def chatty(sh_db: Runner) -> Runner:
    sh_db("config", "set", "proactive.enabled", "true")
    return sh_db


def test_proactive_disabled_by_default(sh_db: Runner) -> None:
    got = proactive(sh_db, "2026-05-01T10:00", *TOPIC, code=20)
    assert (got["decision"], got["reason"]) == ("suppressed", "disabled")


def test_proactive_sent_then_daily_cap_the_same_local_day(chatty: Runner) -> None:
    sent = proactive(chatty, "2026-05-01T09:00", *TOPIC)
    assert sent["decision"] == "sent"
    assert sent["message"] == "Open loop: flight to Osaka\nSuggestion: book the 09:10 airport train"
    # 13 h later: past the 12 h gap, still the same day in Shanghai (22:00)
    assert proactive(chatty, "2026-05-01T22:00", *TOPIC, code=20)["reason"] == "daily_cap"
    # a new local day
    assert proactive(chatty, "2026-05-02T21:01", *TOPIC)["decision"] == "sent"
    rows = decisions(chatty, "proactive")
    assert [(r["decision"], r["reason"], r["local_day"]) for r in rows] == [
        ("sent", None, "2026-05-01"),
        ("suppressed", "daily_cap", "2026-05-01"),
        ("sent", None, "2026-05-02"),
    ]
    assert rows[0]["topic"] == "flight to Osaka"


def test_proactive_min_gap_11_hours_after_the_last(chatty: Runner) -> None:
    chatty("config", "set", "quiet_hours", "off")  # 11 h after 20:00 falls in the default quiet hours
    proactive(chatty, "2026-05-01T20:00", *TOPIC)
    assert proactive(chatty, "2026-05-02T07:00", *TOPIC, code=20)["reason"] == "min_gap"
    assert proactive(chatty, "2026-05-02T08:00", *TOPIC)["decision"] == "sent"


def test_proactive_recent_conversation(chatty: Runner) -> None:
    chatty("--now", "2026-05-01T14:00", "seen")
    got = proactive(chatty, "2026-05-01T15:00", *TOPIC, code=20)
    assert got["reason"] == "recent_conversation"
    assert got["last_conversation_at"] == "2026-05-01T14:00:00+08:00"
    assert proactive(chatty, "2026-05-01T18:00", *TOPIC)["decision"] == "sent"


def test_seen_at_a_given_time(chatty: Runner) -> None:
    got = chatty.json("--now", "2026-05-01T16:00", "seen", "--at", "2026-05-01T12:30")
    assert got == {"kind": "seen", "at": "2026-05-01T12:30:00+08:00"}
    assert proactive(chatty, "2026-05-01T16:00", *TOPIC, code=20)["reason"] == "recent_conversation"
    assert proactive(chatty, "2026-05-01T16:30", *TOPIC)["decision"] == "sent"


def test_seen_at_a_time_to_come_is_refused(chatty: Runner) -> None:
    """``hb seen --at 2062-...`` (a typo) held proactive chat back until 2062, and no later time
    undid it; the same for ``hb hygiene done --at``. A time past now is refused, and nothing is
    recorded."""
    result = chatty("--now", "2026-05-01T16:00", "seen", "--at", "2062-05-01T12:30", code=1)
    assert result.stderr == (
        "hb: --at time 2062-05-01T12:30:00+08:00 is later than now (2026-05-01T16:00:00+08:00): "
        "it records something that happened\n"
    )
    chatty("--now", "2026-05-01T16:00", "hygiene", "done", "--at", "2026-05-02T09:00", code=1)
    assert proactive(chatty, "2026-05-01T16:00", *TOPIC)["decision"] == "sent"
    # (a few minutes ahead is the same clock read a moment later)
    assert chatty.json("--now", "2026-05-01T16:00", "seen", "--at", "2026-05-01T16:05")["at"] == (
        "2026-05-01T16:05:00+08:00"
    )


def test_a_proactive_message_recorded_later_than_now_holds_back_only_the_gap(chatty: Runner) -> None:
    chatty("config", "set", "quiet_hours", "off")
    assert proactive(chatty, "2027-05-01T10:00", *TOPIC)["decision"] == "sent"
    assert proactive(chatty, "2026-05-01T10:00", *TOPIC)["decision"] == "sent"


def test_proactive_without_a_suggestion(chatty: Runner) -> None:
    got = proactive(chatty, "2026-05-01T10:00", "--topic", "just saying hi", code=20)
    assert got["reason"] == "no_suggestion"
    got = proactive(chatty, "2026-05-01T10:00", "--topic", "", "--suggestion", "  ", code=20)
    assert got["reason"] == "no_suggestion"


def test_proactive_never_in_quiet_hours(chatty: Runner) -> None:
    assert proactive(chatty, "2026-05-01T23:30", *TOPIC, code=20)["reason"] == "quiet_hours"


def test_proactive_limits_are_settings(chatty: Runner) -> None:
    chatty("config", "set", "proactive.max_per_day", "2")
    chatty("config", "set", "proactive.min_hours_between", "1")
    assert proactive(chatty, "2026-05-01T09:00", *TOPIC)["decision"] == "sent"
    assert proactive(chatty, "2026-05-01T10:00", *TOPIC)["decision"] == "sent"
    assert proactive(chatty, "2026-05-01T12:00", *TOPIC, code=20)["reason"] == "daily_cap"


def test_proactive_chinese(chatty: Runner) -> None:
    out = chatty(
        "--now",
        "2026-05-01T10:00",
        "proactive",
        "--topic",
        "大阪机票",
        "--suggestion",
        "订9:10的机场快线",
        "--lang",
        "zh",
    ).stdout
    assert out == "事项：大阪机票\n建议：订9:10的机场快线\n"


# --- concurrent asks -------------------------------------------------------------------


def _at_once(runner: Runner, n: int, ask: Callable[[Ledger], dict[str, Any]]) -> list[str]:
    """``n`` threads, each with its own ledger, ask at the same moment; the decisions."""
    barrier = threading.Barrier(n)

    def one(_: int) -> str:
        with open_ledger(runner, "2026-05-01T10:00") as ledger:
            ledger.settings  # noqa: B018 - connect before the race starts
            barrier.wait()
            return str(ask(ledger)["decision"])

    with ThreadPoolExecutor(n) as pool:
        return sorted(pool.map(one, range(n)))


def test_concurrent_proactive_asks_send_one(chatty: Runner) -> None:
    got = _at_once(chatty, 6, lambda ledger: ledger.proactive("flight", "book the train"))
    assert got == ["sent"] + ["suppressed"] * 5
    assert [r["decision"] for r in decisions(chatty, "proactive")].count("sent") == 1


def test_concurrent_reminders_for_one_task_send_one(sh_db: Runner, task: str) -> None:
    got = _at_once(sh_db, 6, lambda ledger: ledger.notify(task, "P1"))
    assert got == ["sent"] + ["suppressed"] * 5
    reasons = {r["reason"] for r in decisions(sh_db) if r["decision"] == "suppressed"}
    assert reasons == {"repeat_window"}
