"""The reporting views: their names and what their columns mean.

The views themselves are created by migrations 0002, 0006, 0009 and 0012 (migrations/versions); this
module names them for Alembic's comparison (views are not tables) and
describes them for docs/schema.md. Standard library only: every ``hb``
invocation that migrates imports it.
"""

from __future__ import annotations

from typing import Any

_OUTCOME_COLUMNS = {
    "outcomes": "outcome rows in the group",
    "successes": "outcomes with success true",
    "failures": "outcomes with success false",
    "success_rate": "successes / outcomes (0..1)",
    "median_duration_s": "median seconds from claim to completion (mean of the middle two)",
    "p95_duration_s": "95th percentile seconds, nearest rank (the ceil(0.95 n)-th smallest)",
    "first_completed_at": "earliest completion (UTC)",
    "last_completed_at": "latest completion (UTC)",
}

# name -> (what it answers, {column: meaning}) in creation order
VIEWS: dict[str, tuple[str, dict[str, str]]] = {
    "outcomes_by_task": (
        "Outcomes per task (scope + id): counts, success rate, median and p95 duration.",
        {"scope": "the queue ('' = legacy lists)", "task_id": "the task's public id", **_OUTCOME_COLUMNS},
    ),
    "outcomes_by_skill": (
        "Outcomes per skill (the task's assigned skill; NULL = none).",
        {"skill": "assigned skill", **_OUTCOME_COLUMNS},
    ),
    "outcomes_by_scope": (
        "Outcomes per queue scope.",
        {"scope": "the queue ('' = legacy lists)", **_OUTCOME_COLUMNS},
    ),
    "outcomes_by_source": (
        "Outcomes per task source (cli, tasks-json, todo, poke, recur, ...).",
        {"source": "where the task came from", **_OUTCOME_COLUMNS},
    ),
    "outcomes_by_day": (
        "Outcomes per UTC calendar day (`hb report outcomes --by day` uses workspace-local days).",
        {"day": "YYYY-MM-DD, UTC", **_OUTCOME_COLUMNS},
    ),
    "failures_by_task": (
        "Failures and retries per task, with the task's status and attempts now.",
        {
            "scope": "the queue",
            "task_id": "the task's public id",
            "failures": "error rows (hb fail or imported errors.json entries)",
            "retries": "failures after which the task went back to todo",
            "final_failures": "failures that left the task failed",
            "max_attempt": "highest attempt number a failure was recorded at",
            "status": "the task's status now (NULL if the task is gone)",
            "attempts": "times the task has been claimed",
            "last_reason": "reason of the latest failure",
            "first_failed_at": "earliest failure (UTC)",
            "last_failed_at": "latest failure (UTC)",
        },
    ),
    "failure_reasons": (
        "Failure reasons ranked by how often they occur.",
        {
            "rank": "1 = the most frequent reason (ties share a rank)",
            "reason": "the error text",
            "failures": "error rows with this reason",
            "tasks": "distinct tasks (scope and id) that failed this way",
            "final_failures": "of those, failures that left the task failed",
            "first_failed_at": "earliest (UTC)",
            "last_failed_at": "latest (UTC)",
        },
    ),
    "notifications_by_day": (
        "Reminder and proactive decisions per local day and kind: sent vs each suppression reason.",
        {
            "day": "the workspace-local day of the decision (YYYY-MM-DD)",
            "kind": "reminder | proactive",
            "notifications": "decisions recorded",
            "sent": "decisions to send",
            "suppressed": "decisions to hold back",
            "quiet_hours": "held back: quiet hours",
            "repeat_window": "held back: reminded within the repeat window",
            "daily_cap": "held back: the daily proactive cap was reached",
            "min_gap": "held back: too soon after the last proactive message",
            "recent_conversation": "held back: the user spoke recently",
            "no_suggestion": "held back: no concrete suggestion",
            "disabled": "held back: proactive chat is disabled",
            "risk_p2": "held back: routine (P2) risk",
            "other_reason": "held back for a reason not listed above",
        },
    ),
    "notification_decisions": (
        "Decisions per local day, kind, decision and reason (one row per combination).",
        {
            "day": "the workspace-local day of the decision (YYYY-MM-DD)",
            "kind": "reminder | proactive",
            "decision": "sent | suppressed",
            "reason": "NULL when sent, else the suppression reason",
            "notifications": "decisions recorded",
        },
    ),
    "queue_depth": (
        "Tasks per queue scope and status, with the oldest and newest creation time.",
        {
            "scope": "the queue ('' = legacy lists)",
            "status": "todo, doing, waiting, blocked, snoozed, done, cancelled, failed",
            "tasks": "tasks in this scope and status",
            "oldest_created_at": "creation time of the oldest (UTC)",
            "newest_created_at": "creation time of the newest (UTC)",
        },
    ),
    "recurrence_runs": (
        "Recurrences with their run count, last run, next run and recorded outcomes.",
        {
            "id": "the recurrence id",
            "source": "recur | proactive | cli",
            "title": "what it does",
            "rule": "the rule as written",
            "enabled": "whether it fires",
            "missed_policy": "skip | once | all",
            "run_count": "runs recorded",
            "last_run_at": "the last run (UTC)",
            "next_at": "the stored Next, the rule's phase, as an instant (UTC)",
            "outcomes": "outcome rows recorded for it",
            "successes": "of those, successes",
            "failures": "of those, failures",
            "last_outcome_at": "the latest outcome (UTC)",
        },
    ),
}


def _browse(table: str, columns: str) -> tuple[str, dict[str, str]]:
    return (
        f"The {table} table with every time as ISO 8601 UTC text ending in Z (for Datasette and other "
        "browsers that show SQLite's stored times without a zone).",
        {
            c: "as in " + table + (" (ISO 8601, UTC, Z)" if c.endswith("_at") or c == "at" else "")
            for c in columns.split()
        },
    )


# the *_utc views (0006)
VIEWS.update(
    {
        "tasks_utc": _browse(
            "tasks",
            "pk id scope source title status priority risk blocked_by due_at next_check_at check_interval "
            "stale_after last_update_at last_checked_at last_progress_note next_action fallback_action "
            "blocker follow_up skill project_id agent_id user_id chat_id created_at updated_at completed_at "
            "claimed_at claimed_by lease_expires_at attempts claim not_before idempotency_key version",
        ),
        "outcomes_utc": _browse(
            "outcomes",
            "pk task_pk recurrence_pk task_id scope source skill success result claimed_at completed_at "
            "duration_s attempt worker claim",
        ),
        "errors_utc": _browse(
            "errors",
            "pk task_pk task_id scope skill at reason trace_id decision_log resolved attempt final claim",
        ),
        "notifications_utc": _browse(
            "notifications",
            "pk at local_day kind task_pk task_id topic risk decision reason blocker suggestion message "
            "run_pk",
        ),
        "runs_utc": _browse(
            "runs", "pk kind scope status started_at finished_at task_id worker pid expires_at record detail"
        ),
        "recurrences_utc": _browse(
            "recurrences",
            "pk id source title rule tz next_local next_at time_of_day day enabled priority permission_tier "
            "conditions instruction chat_id missed_policy run_count last_run_at claimed_period claimed_at "
            "evaluation created_at updated_at",
        ),
    }
)

VIEW_NAMES: tuple[str, ...] = tuple(VIEWS)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's autogenerate filter: the reporting views are not tables to compare."""
    return not (type_ == "table" and reflected and compare_to is None and name in VIEW_NAMES)
