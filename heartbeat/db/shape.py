"""The columns the plain-SQL paths read and write, with the types they need converted.

:mod:`heartbeat.db.models` is the schema; this is what code that must not load
SQLAlchemy (``hb sync`` when only TODO files moved, the queue) needs to know
of it. ``tests/unit/test_shape.py`` checks every table here against the models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from heartbeat.clock import isoformat
from heartbeat.db.plain import read_time


@dataclass(frozen=True)
class Shape:
    """One table: its columns in model order, and which hold times, JSON and booleans."""

    name: str
    columns: tuple[str, ...]
    times: frozenset[str]
    json: frozenset[str]
    flags: frozenset[str]
    key: tuple[str, ...] = ("pk",)  # the primary key's columns

    def select(self, alias: str = "") -> str:
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + c for c in self.columns)

    def decode(self, values: Sequence[Any], names: Sequence[str] | None = None) -> dict[str, Any]:
        """A row as Python values (times aware UTC, JSON decoded, booleans as bool)."""
        out = dict(zip(names or self.columns, values, strict=True))
        for name in self.times.intersection(out):
            out[name] = read_time(out[name])
        for name in self.json.intersection(out):
            if isinstance(value := out[name], str):
                out[name] = json.loads(value)
        for name in self.flags.intersection(out):
            if out[name] is not None:
                out[name] = bool(out[name])
        return out

    def snapshot(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Every column, JSON-safe (what the history keeps as ``before``)."""
        return {c: isoformat(v) if isinstance(v := row[c], datetime) else v for c in self.columns if c in row}


def _shape(name: str, columns: str, times: str, json_: str = "", flags: str = "", key: str = "pk") -> Shape:
    return Shape(
        name,
        tuple(columns.split()),
        frozenset(times.split()),
        frozenset(json_.split()),
        frozenset(flags.split()),
        tuple(key.split()),
    )


TASKS = _shape(
    "tasks",
    "pk id scope source external_key title status priority priority_rank position risk blocked_by "
    "due_at next_check_at check_interval stale_after last_update_at last_checked_at last_progress_note "
    "next_action fallback_action blocker follow_up skill project_id agent_id user_id chat_id created_at "
    "updated_at completed_at claimed_at claimed_by lease_expires_at attempts claim not_before "
    "idempotency_key version extra synced_hash",
    times="due_at next_check_at last_update_at last_checked_at created_at updated_at completed_at "
    "claimed_at lease_expires_at not_before",
    json_="extra",
    flags="follow_up",
)
RECURRENCES = _shape(
    "recurrences",
    "pk id source external_key title rule tz next_local next_at time_of_day day enabled priority "
    "permission_tier conditions instruction chat_id missed_policy run_count last_run_at claimed_period "
    "claimed_at evaluation position extra synced_hash created_at updated_at",
    times="next_at last_run_at claimed_at created_at updated_at",
    json_="conditions evaluation extra",
    flags="enabled",
)
TASK_EVENTS = _shape(
    "task_events",
    "pk task_pk task_id scope at kind actor before detail",
    times="at",
    json_="before detail",
)
SYNC_STATE = _shape(
    "sync_state",
    "kind path content_hash size mtime_ns synced_at skeleton",
    times="synced_at",
    json_="skeleton",
    key="kind",
)
TASK_DEPENDENCIES = _shape(
    "task_dependencies", "task_pk depends_on_pk", times="", key="task_pk depends_on_pk"
)
OUTCOMES = _shape(
    "outcomes",
    "pk task_pk recurrence_pk task_id scope source skill success result claimed_at completed_at duration_s "
    "attempt worker claim after_run",
    times="claimed_at completed_at",
    json_="result",
    flags="success",
)
ERRORS = _shape(
    "errors",
    "pk task_pk task_id scope skill at reason trace_id decision_log resolved attempt final claim extra",
    times="at",
    json_="decision_log extra",
    flags="resolved final",
)
NOTIFICATIONS = _shape(
    "notifications",
    "pk at local_day kind task_pk task_id topic risk decision reason blocker suggestion message run_pk",
    times="at",
)
RUNS = _shape(
    "runs",
    "pk kind scope status started_at finished_at task_id worker pid guard expires_at record detail",
    times="started_at finished_at expires_at",
    json_="record detail",
)
SETTINGS = _shape("settings", "key value updated_at", times="updated_at", json_="value", key="key")
LOCKS = _shape("locks", "name", times="", key="name")
SHAPES = (
    TASKS,
    TASK_DEPENDENCIES,
    TASK_EVENTS,
    RECURRENCES,
    OUTCOMES,
    ERRORS,
    NOTIFICATIONS,
    RUNS,
    SETTINGS,
    LOCKS,
    SYNC_STATE,
)
