"""The heartbeat round (SPEC.md section 5, OpenClaw): which tasks enter, and how risky they are.

Everything here is a pure function of a task's state and ``now``. Time spans
(``stale_after``, ``check_interval``, the scan interval) are elapsed time, so
arithmetic is done in UTC and a daylight-saving change never stretches them.

Choices the spec leaves open, made here:

- ``overdue`` means ``now > due_at``: a task due at 10:00 is due, not late, at 10:00.
- ``stale`` needs a ``last_update_at``; a task with none is never stale (the
  caller passes its creation time when it wants that counted).
- A **key dependency is lost** when a ``blocked``/``waiting`` task's ``due_at``
  is less than 24 hours away (or passed): what it waits for can no longer
  arrive in time without someone stepping in.
- Finished tasks (``done``, ``cancelled``, ``failed``) are always P2, even with
  an explicit risk: OpenClaw's rules forbid reminding about them.
- A task deferred with ``--not-before`` does not enter a round before that time,
  whatever its checks, due time or staleness say: the user put it out of mind
  until then (and a pop does not hand it out either).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from heartbeat.errors import InvalidInput

ACTIVE_STATUSES = frozenset({"todo", "doing", "waiting", "blocked", "snoozed"})
DEPENDENCY_HORIZON = timedelta(hours=24)  # due this soon while blocked/waiting: dependency lost


class EntryReason(StrEnum):
    """Why a task enters the round; the values are the names `hb due` prints."""

    NEXT_CHECK = "next_check"  # now >= next_check_at
    OVERDUE = "overdue"  # due_at has passed
    BLOCKED_CHECK = "blocked_check"  # blocked, and its next check is reached
    WAITING_CHECK = "waiting_check"  # waiting, and its next check is reached
    STALE = "stale"  # no update for longer than stale_after


class Risk(StrEnum):
    """A task's risk level; the higher the level, the more a reminder may interrupt."""

    P0 = "P0"  # urgent: may break through quiet hours
    P1 = "P1"  # needs the user: remind, outside quiet hours
    P2 = "P2"  # routine: never a message, state update only

    @property
    def severity(self) -> int:
        """2 for P0, 1 for P1, 0 for P2: a larger number is a higher risk."""
        return 2 - int(self.value[1])


@dataclass(frozen=True)
class TaskState:
    """What the round's rules need from a task row (times are aware datetimes)."""

    id: str
    title: str
    status: str  # todo|doing|waiting|blocked|snoozed|done|cancelled|failed
    priority: str | None = None  # critical|high|medium|low
    risk: str | None = None  # an explicit P0/P1/P2 that overrides the assessment
    due_at: datetime | None = None
    next_check_at: datetime | None = None
    last_update_at: datetime | None = None
    last_checked_at: datetime | None = None
    check_interval: timedelta | None = None
    stale_after: timedelta | None = None
    blocker: str | None = None
    next_action: str | None = None
    fallback_action: str | None = None
    last_progress_note: str | None = None
    follow_up: bool = False  # the user asked to be kept posted
    attempts: int = 0
    max_attempts: int = 3
    failed_recently: bool = False  # an error was recorded since the last success
    not_before: datetime | None = None  # deferred: enters no round before this

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                _require_aware(value, f"task {self.id}: {f.name}")

    @property
    def is_active(self) -> bool:
        """Active tasks are inspected and reminded about; finished ones never are."""
        return self.status in ACTIVE_STATUSES


@dataclass(frozen=True)
class CheckUpdate:
    """The task fields a completed check writes back."""

    last_checked_at: datetime
    next_check_at: datetime | None


class ScanWatermark(NamedTuple):
    """``todoWatch.lastScanAt`` / ``todoWatch.nextScanAt`` of heartbeat-state.json."""

    last_scan_at: datetime
    next_scan_at: datetime


def parse_risk(text: str) -> Risk:
    """Read ``P0``/``P1``/``P2`` (any case, surrounding spaces); InvalidInput otherwise."""
    norm = text.strip().upper()
    try:
        return Risk(norm)
    except ValueError:
        raise InvalidInput(f"risk {text!r}: expected P0, P1 or P2") from None


def entry_reasons(task: TaskState, now: datetime) -> list[EntryReason]:
    """Why ``task`` enters this round, in the fixed order of :class:`EntryReason`.

    Empty when the task is not active, deferred past ``now``, or no rule applies.
    """
    _require_aware(now, "now")
    if not task.is_active:
        return []
    if task.not_before is not None and _utc(now) < _utc(task.not_before):
        return []
    check_reached = task.next_check_at is not None and _utc(now) >= _utc(task.next_check_at)
    reasons: list[EntryReason] = []
    if check_reached:
        reasons.append(EntryReason.NEXT_CHECK)
    if task.due_at is not None and _utc(now) > _utc(task.due_at):
        reasons.append(EntryReason.OVERDUE)
    if check_reached and task.status == "blocked":
        reasons.append(EntryReason.BLOCKED_CHECK)
    if check_reached and task.status == "waiting":
        reasons.append(EntryReason.WAITING_CHECK)
    if _is_stale(task, now):
        reasons.append(EntryReason.STALE)
    return reasons


def assess_risk(task: TaskState, reasons: Sequence[str], now: datetime) -> Risk:
    """The task's risk this round: P0 for urgent trouble, P1 when it needs the user, else P2.

    An explicit ``task.risk`` wins for active tasks; finished tasks are P2.
    ``reasons`` are the task's entry reasons this round (see :func:`entry_reasons`).
    """
    _require_aware(now, "now")
    if not task.is_active:
        return Risk.P2
    if task.risk is not None and task.risk.strip():
        return parse_risk(task.risk)
    if _is_urgent(task, reasons, now):
        return Risk.P0
    if _needs_user(task, reasons):
        return Risk.P1
    return Risk.P2


def after_check(task: TaskState, now: datetime) -> CheckUpdate:
    """The check times after checking ``task`` at ``now``.

    ``next_check_at`` stays on its grid (previous + k * ``check_interval``): it
    becomes the first grid point strictly after ``now``, so a late round keeps the
    phase and never schedules a burst of catch-up checks. A future
    ``next_check_at`` is kept as is. Without a ``check_interval`` a reached
    ``next_check_at`` was a one-off and is cleared (None); with no previous one,
    the next check is ``now + check_interval``.
    """
    _require_aware(now, "now")
    interval = task.check_interval
    if interval is not None:
        _require_positive(interval, f"task {task.id}: check_interval")
    previous = task.next_check_at
    if previous is not None and _utc(previous) > _utc(now):
        return CheckUpdate(last_checked_at=now, next_check_at=previous)
    if interval is None:
        return CheckUpdate(last_checked_at=now, next_check_at=None)
    if previous is None:
        return CheckUpdate(last_checked_at=now, next_check_at=_add_elapsed(now, interval))
    steps = (_utc(now) - _utc(previous)) // interval + 1
    return CheckUpdate(last_checked_at=now, next_check_at=_add_elapsed(previous, interval * steps))


def scan_watermark(now: datetime, interval: timedelta) -> ScanWatermark:
    """The scan watermark after a round at ``now``: last = now, next = now + interval."""
    _require_aware(now, "now")
    _require_positive(interval, "scan interval")
    return ScanWatermark(last_scan_at=now, next_scan_at=_add_elapsed(now, interval))


def _is_stale(task: TaskState, now: datetime) -> bool:
    if task.last_update_at is None or task.stale_after is None:
        return False
    return _utc(now) - _utc(task.last_update_at) > task.stale_after


def _is_urgent(task: TaskState, reasons: Sequence[str], now: datetime) -> bool:
    """P0: overdue, a critical blocker, a key dependency lost, or an explicit failure risk."""
    return (
        EntryReason.OVERDUE in reasons
        or _has_critical_blocker(task)
        or _dependency_lost(task, now)
        or _at_risk_of_failing(task)
    )


def _needs_user(task: TaskState, reasons: Sequence[str]) -> bool:
    """P1: stale, waiting/blocked past its check, or stuck with no next step."""
    user_reasons = (EntryReason.STALE, EntryReason.WAITING_CHECK, EntryReason.BLOCKED_CHECK)
    if any(reason in reasons for reason in user_reasons):
        return True
    return task.status in ("blocked", "waiting") and not _text(task.next_action)


def _has_critical_blocker(task: TaskState) -> bool:
    critical = (task.priority or "").strip().lower() == "critical"
    return critical and (task.status == "blocked" or bool(_text(task.blocker)))


def _dependency_lost(task: TaskState, now: datetime) -> bool:
    if task.status not in ("blocked", "waiting") or task.due_at is None:
        return False
    return _utc(task.due_at) - _utc(now) < DEPENDENCY_HORIZON


def _at_risk_of_failing(task: TaskState) -> bool:
    # One try left (or none) after at least one failed attempt.
    last_try = task.attempts > 0 and task.attempts >= task.max_attempts - 1
    return task.failed_recently or last_try


def _text(value: str | None) -> str:
    return (value or "").strip()


def _utc(moment: datetime) -> datetime:
    # Same-zone aware datetimes compare by wall clock; UTC makes a DST fold harmless.
    return moment.astimezone(UTC)


def _add_elapsed(moment: datetime, span: timedelta) -> datetime:
    # In UTC, so a daylight-saving change does not stretch or shrink the span.
    return (_utc(moment) + span).astimezone(moment.tzinfo)


def _require_aware(moment: datetime, what: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(f"{what}: {moment.isoformat()} has no timezone")


def _require_positive(span: timedelta, what: str) -> None:
    if span <= timedelta(0):
        raise InvalidInput(f"{what}: must be positive, got {span}")
