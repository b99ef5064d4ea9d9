"""The heartbeat round's entry reasons, risk levels and check times (SPEC.md section 5)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.rules.round import (
    CheckUpdate,
    EntryReason,
    Risk,
    ScanWatermark,
    TaskState,
    after_check,
    assess_risk,
    entry_reasons,
    parse_risk,
    scan_watermark,
)

SH = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 5, 1, 10, 0, tzinfo=SH)
HOUR = timedelta(hours=1)


def task(**changes: Any) -> TaskState:
    base = TaskState(id="task-1a2b3c4d", title="Send the report", status="doing")
    return replace(base, **changes)


# --- entry reasons ---------------------------------------------------------


def test_a_task_with_nothing_scheduled_does_not_enter() -> None:
    assert entry_reasons(task(), NOW) == []


def test_next_check_reached_is_inclusive() -> None:
    assert entry_reasons(task(next_check_at=NOW), NOW) == ["next_check"]
    assert entry_reasons(task(next_check_at=NOW + timedelta(seconds=1)), NOW) == []


def test_overdue_only_after_the_due_time() -> None:
    assert entry_reasons(task(due_at=NOW - timedelta(minutes=1)), NOW) == ["overdue"]
    assert entry_reasons(task(due_at=NOW), NOW) == []


def test_blocked_check_needs_the_next_check_reached() -> None:
    blocked = task(status="blocked", next_check_at=NOW - HOUR)
    assert entry_reasons(blocked, NOW) == ["next_check", "blocked_check"]
    assert entry_reasons(replace(blocked, next_check_at=NOW + HOUR), NOW) == []


def test_waiting_check_needs_the_next_check_reached() -> None:
    waiting = task(status="waiting", next_check_at=NOW)
    assert entry_reasons(waiting, NOW) == ["next_check", "waiting_check"]
    assert entry_reasons(replace(waiting, next_check_at=None), NOW) == []


def test_stale_is_strictly_longer_than_stale_after() -> None:
    t = task(last_update_at=NOW - timedelta(hours=48), stale_after=timedelta(hours=48))
    assert entry_reasons(t, NOW) == []
    t = replace(t, last_update_at=NOW - timedelta(hours=48, seconds=1))
    assert entry_reasons(t, NOW) == ["stale"]


def test_stale_needs_both_a_last_update_and_a_limit() -> None:
    assert entry_reasons(task(last_update_at=NOW - timedelta(days=30)), NOW) == []
    assert entry_reasons(task(stale_after=HOUR), NOW) == []


def test_all_reasons_combined_come_in_the_fixed_order() -> None:
    t = task(
        status="blocked",
        next_check_at=NOW - HOUR,
        due_at=NOW - HOUR,
        last_update_at=NOW - timedelta(days=3),
        stale_after=timedelta(days=2),
    )
    assert entry_reasons(t, NOW) == ["next_check", "overdue", "blocked_check", "stale"]


@pytest.mark.parametrize("status", ["done", "cancelled", "failed"])
def test_finished_tasks_never_enter(status: str) -> None:
    t = task(status=status, next_check_at=NOW - HOUR, due_at=NOW - HOUR)
    assert entry_reasons(t, NOW) == []


@pytest.mark.parametrize("status", ["todo", "doing", "waiting", "blocked", "snoozed"])
def test_every_active_status_can_enter(status: str) -> None:
    assert EntryReason.OVERDUE in entry_reasons(task(status=status, due_at=NOW - HOUR), NOW)


def test_times_in_other_zones_compare_as_instants() -> None:
    # 02:00 UTC is 10:00 in Shanghai: the check is reached, not eight hours away.
    t = task(next_check_at=datetime(2026, 5, 1, 2, 0, tzinfo=UTC))
    assert entry_reasons(t, NOW) == ["next_check"]


def test_a_naive_time_is_refused_as_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="due_at"):
        task(due_at=datetime(2026, 5, 1, 10, 0))
    with pytest.raises(InvalidInput, match="now"):
        entry_reasons(task(), datetime(2026, 5, 1, 10, 0))


# --- risk ----------------------------------------------------------------


def risk_of(t: TaskState) -> Risk:
    return assess_risk(t, entry_reasons(t, NOW), NOW)


def test_routine_check_is_p2() -> None:
    assert risk_of(task(next_check_at=NOW, next_action="draft section 2")) == Risk.P2


def test_overdue_is_p0() -> None:
    assert risk_of(task(due_at=NOW - HOUR, next_action="send it")) == Risk.P0


def test_blocked_critical_task_is_p0() -> None:
    t = task(status="blocked", priority="critical", next_action="call vendor")
    assert risk_of(t) == Risk.P0


def test_critical_task_with_a_blocker_text_is_p0_even_while_doing() -> None:
    assert risk_of(task(priority="Critical", blocker="API key revoked")) == Risk.P0
    assert risk_of(task(priority="high", blocker="API key revoked")) == Risk.P2


def test_waiting_with_the_deadline_within_a_day_is_a_lost_dependency_p0() -> None:
    t = task(status="waiting", due_at=NOW + timedelta(hours=23), next_action="ping John")
    assert risk_of(t) == Risk.P0
    assert risk_of(replace(t, due_at=NOW + timedelta(hours=24))) == Risk.P2
    # The same deadline while the task is simply in progress is not a dependency.
    assert risk_of(replace(t, status="doing")) == Risk.P2


def test_failed_recently_is_p0() -> None:
    assert risk_of(task(failed_recently=True)) == Risk.P0


def test_one_try_left_is_p0() -> None:
    assert risk_of(task(attempts=2, max_attempts=3)) == Risk.P0
    assert risk_of(task(attempts=1, max_attempts=3)) == Risk.P2
    assert risk_of(task(attempts=0, max_attempts=1)) == Risk.P2


def test_stale_is_p1() -> None:
    t = task(last_update_at=NOW - timedelta(days=3), stale_after=timedelta(days=2))
    assert risk_of(replace(t, next_action="write the summary")) == Risk.P1


def test_waiting_past_its_check_is_p1() -> None:
    assert risk_of(task(status="waiting", next_check_at=NOW, next_action="ping")) == Risk.P1


def test_blocked_past_its_check_is_p1() -> None:
    assert risk_of(task(status="blocked", next_check_at=NOW, next_action="ask")) == Risk.P1


def test_blocked_without_a_next_step_needs_the_user_p1() -> None:
    assert risk_of(task(status="blocked", next_action="  ")) == Risk.P1
    assert risk_of(task(status="blocked", next_action="ask Mary")) == Risk.P2


def test_p0_outranks_p1() -> None:
    t = task(status="waiting", next_check_at=NOW, due_at=NOW - HOUR)
    assert risk_of(t) == Risk.P0


def test_explicit_risk_wins_both_ways() -> None:
    assert risk_of(task(due_at=NOW - HOUR, risk="P2")) == Risk.P2
    assert risk_of(task(risk=" p1 ")) == Risk.P1


def test_finished_tasks_are_p2_even_with_an_explicit_risk() -> None:
    assert risk_of(task(status="done", risk="P0", due_at=NOW - HOUR)) == Risk.P2


def test_a_bad_explicit_risk_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="P3"):
        risk_of(task(risk="P3"))


def test_parse_risk_and_severity() -> None:
    assert parse_risk("p0") is Risk.P0
    assert [r.severity for r in (Risk.P0, Risk.P1, Risk.P2)] == [2, 1, 0]
    with pytest.raises(InvalidInput):
        parse_risk("urgent")


# --- after a check -------------------------------------------------------


def test_next_check_moves_by_the_interval_keeping_phase() -> None:
    t = task(next_check_at=NOW - timedelta(hours=7, minutes=30), check_interval=timedelta(hours=3))
    # 02:30 + 3h steps: 05:30, 08:30, 11:30 -> the first after 10:00.
    assert after_check(t, NOW) == CheckUpdate(
        last_checked_at=NOW, next_check_at=datetime(2026, 5, 1, 11, 30, tzinfo=SH)
    )


def test_a_check_exactly_on_time_moves_one_interval() -> None:
    t = task(next_check_at=NOW, check_interval=timedelta(hours=6))
    assert after_check(t, NOW).next_check_at == NOW + timedelta(hours=6)


def test_a_future_next_check_is_kept() -> None:
    t = task(next_check_at=NOW + HOUR, check_interval=timedelta(hours=6))
    assert after_check(t, NOW).next_check_at == NOW + HOUR


def test_without_interval_a_reached_next_check_is_cleared() -> None:
    assert after_check(task(next_check_at=NOW - HOUR), NOW) == CheckUpdate(NOW, None)


def test_without_a_previous_check_the_next_is_one_interval_from_now() -> None:
    t = task(check_interval=timedelta(days=1))
    assert after_check(t, NOW).next_check_at == NOW + timedelta(days=1)


def test_interval_is_elapsed_time_across_daylight_saving() -> None:
    ny = ZoneInfo("America/New_York")
    # 2026-03-08 02:00 EST -> EDT: 01:00 EST + 2 h elapsed is 04:00 EDT.
    prev = datetime(2026, 3, 8, 1, 0, tzinfo=ny)
    t = task(next_check_at=prev, check_interval=timedelta(hours=2))
    assert after_check(t, prev).next_check_at == datetime(2026, 3, 8, 4, 0, tzinfo=ny)


def test_non_positive_interval_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="check_interval"):
        after_check(task(next_check_at=NOW, check_interval=timedelta(0)), NOW)


@given(
    offset_minutes=st.integers(min_value=-100_000, max_value=0),
    interval_minutes=st.integers(min_value=1, max_value=20_000),
)
def test_after_check_lands_on_the_grid_just_after_now(offset_minutes: int, interval_minutes: int) -> None:
    prev = NOW + timedelta(minutes=offset_minutes)
    interval = timedelta(minutes=interval_minutes)
    got = after_check(task(next_check_at=prev, check_interval=interval), NOW).next_check_at
    assert got is not None
    assert NOW < got <= NOW + interval
    assert (got - prev) % interval == timedelta(0)


def test_scan_watermark() -> None:
    last, nxt = scan_watermark(NOW, HOUR)
    assert (last, nxt) == (NOW, datetime(2026, 5, 1, 11, 0, tzinfo=SH))
    assert scan_watermark(NOW, HOUR) == ScanWatermark(last_scan_at=NOW, next_scan_at=nxt)
    assert nxt.utcoffset() == timedelta(hours=8)  # written back in the workspace offset
    with pytest.raises(InvalidInput):
        scan_watermark(NOW, -HOUR)


def test_a_deferred_task_enters_no_round_before_its_time() -> None:
    """``--not-before`` (issue 15): overdue, stale or checked, a deferred task waits until then."""
    overdue = task(
        due_at=NOW - HOUR, next_check_at=NOW, stale_after=timedelta(minutes=1), last_update_at=NOW - HOUR
    )
    later = replace(overdue, not_before=NOW + timedelta(minutes=5))
    assert entry_reasons(overdue, NOW) == ["next_check", "overdue", "stale"]
    assert entry_reasons(later, NOW) == []
    assert entry_reasons(later, NOW + timedelta(minutes=5)) == ["next_check", "overdue", "stale"]
