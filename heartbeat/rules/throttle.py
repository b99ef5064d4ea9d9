"""Whether a reminder or a proactive message may go out now (SPEC.md section 5, OpenClaw).

Every decision names its reason, so the caller can record it as a
``notifications`` row. Checks run in a fixed order and the first that fails is
the reason; reasons that hold whatever the clock says come before the ones
that only ask to wait, so the user is told what to fix rather than to wait
and then be refused again.

Reminders: ``risk_p2`` -> ``no_suggestion`` -> ``quiet_hours`` -> ``repeat_window``.
Proactive chat: ``disabled`` -> ``no_suggestion`` -> ``quiet_hours`` ->
``daily_cap`` -> ``min_gap`` -> ``recent_conversation``.

Spans are "at least" (SPEC.md): a message exactly ``repeat_hours`` after the
last reminder, or exactly ``min_hours_*`` after the last event, may go out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from heartbeat.errors import InvalidInput
from heartbeat.rules.round import Risk, TaskState


class Outcome(StrEnum):
    """What was decided about a message."""

    SENT = "sent"  # the message may go out now
    SUPPRESSED = "suppressed"  # it must not; the reason says why


class Suppression(StrEnum):
    """Why a message was suppressed; the values are the names `hb notify --json` prints."""

    RISK_P2 = "risk_p2"  # routine risk: state update only, never a message
    DISABLED = "disabled"  # proactive chat is switched off
    NO_SUGGESTION = "no_suggestion"  # nothing concrete to suggest: no generic reminders
    QUIET_HOURS = "quiet_hours"  # inside quiet hours and not P0 (proactive: never)
    REPEAT_WINDOW = "repeat_window"  # the same task was reminded too recently
    DAILY_CAP = "daily_cap"  # the day's proactive messages are used up
    MIN_GAP = "min_gap"  # too soon after the last proactive message
    RECENT_CONVERSATION = "recent_conversation"  # the user spoke too recently


@dataclass(frozen=True)
class Decision:
    """A throttle decision: ``reason`` is None exactly when the message is sent."""

    decision: Outcome
    reason: Suppression | None = None

    @classmethod
    def send(cls) -> Decision:
        """The message may go out."""
        return cls(Outcome.SENT)

    @classmethod
    def suppress(cls, reason: Suppression) -> Decision:
        """The message must not go out, because of ``reason``."""
        return cls(Outcome.SUPPRESSED, reason)

    @property
    def sent(self) -> bool:
        """Whether the message may go out."""
        return self.decision is Outcome.SENT


@dataclass(frozen=True)
class LastReminder:
    """The last reminder actually sent for a task (not a suppressed one)."""

    at: datetime
    risk: Risk
    blocker: str | None = None


def decide_reminder(
    task: TaskState,
    risk: Risk,
    *,
    last_sent: LastReminder | None,
    quiet: bool,
    repeat_hours: float,
    now: datetime,
) -> Decision:
    """Whether a reminder about ``task`` at ``risk`` may go out at ``now``.

    ``quiet`` says whether ``now`` is inside quiet hours (only P0 passes). The
    repeat window lets a reminder through early when the risk rose since
    ``last_sent``, a blocker appeared or changed (a cleared blocker is not news),
    or the user asked to be kept posted (``task.follow_up``).
    """
    window = _hours(repeat_hours, "reminder.repeat_hours")
    if risk is Risk.P2:
        return Decision.suppress(Suppression.RISK_P2)
    if not _has_text(task.next_action):
        return Decision.suppress(Suppression.NO_SUGGESTION)
    if quiet and risk is not Risk.P0:
        return Decision.suppress(Suppression.QUIET_HOURS)
    if (
        last_sent is not None
        and _within(last_sent.at, window, now)
        and not _worth_repeating(task, risk, last_sent)
    ):
        return Decision.suppress(Suppression.REPEAT_WINDOW)
    return Decision.send()


def decide_proactive(
    *,
    enabled: bool,
    quiet: bool,
    max_per_day: int,
    sent_today: int,
    min_hours_between: float,
    last_proactive_at: datetime | None,
    min_hours_since_conversation: float,
    last_conversation_at: datetime | None,
    topic: str | None,
    suggestion: str | None,
    now: datetime,
) -> Decision:
    """Whether a proactive message on ``topic`` with ``suggestion`` may go out at ``now``.

    ``sent_today`` counts proactive messages sent in the workspace's local day
    (the caller knows the zone). A blank topic or suggestion is ``no_suggestion``:
    a greeting with nothing concrete to act on is never sent.
    """
    if max_per_day < 0 or sent_today < 0:
        raise InvalidInput("proactive.max_per_day and the day's count must not be negative")
    gap = _hours(min_hours_between, "proactive.min_hours_between")
    since_talk = _hours(min_hours_since_conversation, "proactive.min_hours_since_conversation")
    if not enabled:
        return Decision.suppress(Suppression.DISABLED)
    if not (_has_text(topic) and _has_text(suggestion)):
        return Decision.suppress(Suppression.NO_SUGGESTION)
    if quiet:
        return Decision.suppress(Suppression.QUIET_HOURS)
    if sent_today >= max_per_day:
        return Decision.suppress(Suppression.DAILY_CAP)
    if last_proactive_at is not None and _within(last_proactive_at, gap, now):
        return Decision.suppress(Suppression.MIN_GAP)
    if last_conversation_at is not None and _within(last_conversation_at, since_talk, now):
        return Decision.suppress(Suppression.RECENT_CONVERSATION)
    return Decision.send()


def _worth_repeating(task: TaskState, risk: Risk, last_sent: LastReminder) -> bool:
    """The exceptions to the repeat window: risk rose, a new blocker, follow-up asked."""
    if task.follow_up or risk.severity > last_sent.risk.severity:
        return True
    blocker = _norm(task.blocker)
    return bool(blocker) and blocker != _norm(last_sent.blocker)


def _within(since: datetime, window: timedelta, now: datetime) -> bool:
    """Whether the last event is within ``window`` of now, on either side: one recorded later
    than now (the clock was set back since) holds back only as long as an earlier one would, not
    until the clock catches up with it (a year, for a clock that was a year ahead)."""
    for moment, what in ((since, "last event"), (now, "now")):
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise InvalidInput(f"{what}: {moment.isoformat()} has no timezone")
    return abs(now.astimezone(UTC) - since.astimezone(UTC)) < window


def _hours(value: float, setting: str) -> timedelta:
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{setting}: must be a non-negative number of hours, got {value}")
    return timedelta(hours=value)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _has_text(text: str | None) -> bool:
    return bool(_norm(text))
