"""The reminder throttle and the proactive-chat limits (SPEC.md section 5, OpenClaw)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from heartbeat.errors import InvalidInput
from heartbeat.rules.quiet_hours import QuietHours, is_quiet
from heartbeat.rules.round import Risk, TaskState
from heartbeat.rules.throttle import (
    Decision,
    LastReminder,
    Outcome,
    Suppression,
    decide_proactive,
    decide_reminder,
)

SH = ZoneInfo("Asia/Shanghai")
NIGHT = QuietHours.parse("23:00-08:00")
TASK = TaskState(
    id="task-1a2b3c4d",
    title="Send the report",
    status="waiting",
    blocker="waiting for John's numbers",
    next_action="ping John on Slack",
)
SENT = Decision(Outcome.SENT, None)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 5, day, hour, minute, tzinfo=SH)


def remind(
    risk: Risk,
    now: datetime,
    *,
    task: TaskState = TASK,
    last_sent: LastReminder | None = None,
) -> Decision:
    return decide_reminder(
        task, risk, last_sent=last_sent, quiet=is_quiet(NIGHT, now), repeat_hours=6, now=now
    )


P1_AT_TEN = LastReminder(at=at(1, 10), risk=Risk.P1, blocker="waiting for John's numbers")


# --- reminders -------------------------------------------------------------


def test_decision_shape() -> None:
    assert Decision.send() == SENT and SENT.sent
    suppressed = Decision.suppress(Suppression.QUIET_HOURS)
    assert (suppressed.decision, suppressed.reason, suppressed.sent) == (
        "suppressed",
        "quiet_hours",
        False,
    )


def test_p2_never_messages() -> None:
    assert remind(Risk.P2, at(1, 10)) == Decision.suppress(Suppression.RISK_P2)


def test_p1_in_quiet_hours_is_suppressed() -> None:
    assert remind(Risk.P1, at(1, 23, 30)) == Decision.suppress(Suppression.QUIET_HOURS)


def test_p0_breaks_through_quiet_hours() -> None:
    assert remind(Risk.P0, at(1, 23, 30)) == SENT


def test_quiet_hours_boundaries() -> None:
    assert remind(Risk.P1, at(2, 7, 59)) == Decision.suppress(Suppression.QUIET_HOURS)
    assert remind(Risk.P1, at(2, 8, 0)) == SENT


def test_no_next_action_means_no_generic_reminder() -> None:
    vague = replace(TASK, next_action="   ")
    assert remind(Risk.P0, at(1, 10), task=vague) == Decision.suppress(Suppression.NO_SUGGESTION)


def test_order_p2_before_suggestion_before_quiet_hours() -> None:
    vague = replace(TASK, next_action=None)
    assert remind(Risk.P2, at(1, 23, 30), task=vague).reason == "risk_p2"
    assert remind(Risk.P1, at(1, 23, 30), task=vague).reason == "no_suggestion"
    recent = LastReminder(at=at(1, 23), risk=Risk.P1)
    assert remind(Risk.P1, at(1, 23, 30), last_sent=recent).reason == "quiet_hours"


def test_repeat_window_suppresses_the_same_reminder_for_six_hours() -> None:
    assert remind(Risk.P1, at(1, 13), last_sent=P1_AT_TEN) == Decision.suppress(Suppression.REPEAT_WINDOW)
    assert remind(Risk.P1, at(1, 15, 59), last_sent=P1_AT_TEN).reason == "repeat_window"
    assert remind(Risk.P1, at(1, 16, 0), last_sent=P1_AT_TEN) == SENT  # at least 6 h
    assert remind(Risk.P1, at(1, 16, 1), last_sent=P1_AT_TEN) == SENT


def test_repeat_window_opens_when_the_risk_rose() -> None:
    assert remind(Risk.P0, at(1, 13), last_sent=P1_AT_TEN) == SENT


def test_repeat_window_stays_closed_when_the_risk_fell() -> None:
    was_p0 = replace(P1_AT_TEN, risk=Risk.P0)
    assert remind(Risk.P1, at(1, 13), last_sent=was_p0).reason == "repeat_window"


def test_repeat_window_opens_for_a_changed_blocker() -> None:
    moved = replace(TASK, blocker="John is on leave until Monday")
    assert remind(Risk.P1, at(1, 13), task=moved, last_sent=P1_AT_TEN) == SENT


def test_repeat_window_opens_for_a_new_blocker() -> None:
    unblocked = replace(P1_AT_TEN, blocker=None)
    assert remind(Risk.P1, at(1, 13), last_sent=unblocked) == SENT


def test_a_cleared_or_reworded_blocker_is_not_news() -> None:
    cleared = replace(TASK, blocker=None)
    assert remind(Risk.P1, at(1, 13), task=cleared, last_sent=P1_AT_TEN).reason == ("repeat_window")
    spaced = replace(TASK, blocker="  waiting for John's\nnumbers ")
    assert remind(Risk.P1, at(1, 13), task=spaced, last_sent=P1_AT_TEN).reason == ("repeat_window")


def test_repeat_window_opens_when_the_user_asked_to_be_kept_posted() -> None:
    posted = replace(TASK, follow_up=True)
    assert remind(Risk.P1, at(1, 13), task=posted, last_sent=P1_AT_TEN) == SENT


def test_exceptions_do_not_override_quiet_hours() -> None:
    posted = replace(TASK, follow_up=True)
    last = replace(P1_AT_TEN, at=at(1, 22))
    assert remind(Risk.P1, at(1, 23, 30), task=posted, last_sent=last).reason == "quiet_hours"


def test_bad_repeat_hours_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="repeat_hours"):
        decide_reminder(TASK, Risk.P1, last_sent=None, quiet=False, repeat_hours=-1, now=at(1, 10))


# --- proactive chat --------------------------------------------------------


def proactive(now: datetime, **changes: Any) -> Decision:
    settings: dict[str, Any] = {
        "enabled": True,
        "quiet": is_quiet(NIGHT, now),
        "max_per_day": 1,
        "sent_today": 0,
        "min_hours_between": 12,
        "last_proactive_at": None,
        "min_hours_since_conversation": 4,
        "last_conversation_at": None,
        "topic": "Quarterly report",
        "suggestion": "Send the draft to John today; fallback: ask Mary to review it",
    }
    settings.update(changes)
    return decide_proactive(now=now, **settings)


def test_proactive_sends_when_every_limit_allows() -> None:
    assert proactive(at(2, 10), last_proactive_at=at(1, 10), last_conversation_at=at(2, 6)) == SENT


def test_proactive_disabled() -> None:
    assert proactive(at(2, 10), enabled=False) == Decision.suppress(Suppression.DISABLED)


@pytest.mark.parametrize(
    ("topic", "suggestion"), [("Report", ""), ("", "Send it"), ("  ", "Send it"), (None, "x")]
)
def test_proactive_needs_a_topic_and_a_suggestion(topic: str | None, suggestion: str) -> None:
    decision = proactive(at(2, 10), topic=topic, suggestion=suggestion)
    assert decision == Decision.suppress(Suppression.NO_SUGGESTION)


def test_proactive_never_in_quiet_hours() -> None:
    assert proactive(at(1, 23, 30)) == Decision.suppress(Suppression.QUIET_HOURS)


def test_second_proactive_the_same_local_day_hits_the_daily_cap() -> None:
    decision = proactive(at(1, 21), sent_today=1, last_proactive_at=at(1, 8))
    assert decision == Decision.suppress(Suppression.DAILY_CAP)


def test_proactive_eleven_hours_after_the_last_across_midnight_is_too_soon() -> None:
    # 22:00 yesterday -> 09:00 today: a new local day, but only 11 h apart.
    decision = proactive(at(2, 9), sent_today=0, last_proactive_at=at(1, 22))
    assert decision == Decision.suppress(Suppression.MIN_GAP)
    assert proactive(at(2, 10), last_proactive_at=at(1, 22)) == SENT  # exactly 12 h


def test_proactive_one_hour_after_the_user_spoke_waits() -> None:
    decision = proactive(at(2, 10), last_conversation_at=at(2, 9))
    assert decision == Decision.suppress(Suppression.RECENT_CONVERSATION)
    assert proactive(at(2, 13), last_conversation_at=at(2, 9)) == SENT  # exactly 4 h


def test_proactive_checks_run_in_the_documented_order() -> None:
    # Everything is wrong at first; fixing one cause at a time reveals the next.
    wrong: dict[str, Any] = {
        "enabled": False,
        "topic": "",
        "sent_today": 1,
        "last_proactive_at": at(2, 0),
        "last_conversation_at": at(2, 6),
    }
    night, morning = at(1, 23, 30), at(2, 8)
    assert proactive(night, **wrong).reason == "disabled"
    wrong["enabled"] = True
    assert proactive(night, **wrong).reason == "no_suggestion"
    wrong["topic"] = "Report"
    assert proactive(night, **wrong).reason == "quiet_hours"
    assert proactive(morning, **wrong).reason == "daily_cap"
    wrong["sent_today"] = 0
    assert proactive(morning, **wrong).reason == "min_gap"
    wrong["last_proactive_at"] = None
    assert proactive(morning, **wrong).reason == "recent_conversation"
    wrong["last_conversation_at"] = None
    assert proactive(morning, **wrong) == SENT


def test_a_zero_daily_cap_never_sends() -> None:
    assert proactive(at(2, 10), max_per_day=0).reason == "daily_cap"


def test_negative_limits_are_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        proactive(at(2, 10), max_per_day=-1)
    with pytest.raises(InvalidInput, match="min_hours_between"):
        proactive(at(2, 10), min_hours_between=float("nan"))
