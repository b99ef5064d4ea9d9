"""The ledger's rows as plain Python objects, for the plain-SQL data path.

One dataclass per table, its fields the table's columns (in the order of
:mod:`heartbeat.db.shape`, with the schema's server defaults), so that code
reads and changes a row as it reads and changes any object. A row loaded by a
:class:`heartbeat.db.store.Db` is attached to it: assigning a field marks the
row dirty, and the Db writes the changed columns before its next statement
and at commit. ``tests/unit/test_rows.py`` holds these classes to the models.
Free of SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from heartbeat.db import shape
from heartbeat.db.status import TaskStatus

_TRACKER = "_tracker"  # the set of dirty rows of the Db a row is attached to
_LOADED = "_loaded"  # the row's column values as last read or written


class Row:
    """A table row; see the module docstring. Subclasses are dataclasses."""

    shape: ClassVar[shape.Shape]

    def __setattr__(self, name: str, value: Any) -> None:
        state = self.__dict__
        state[name] = value
        tracker = state.get(_TRACKER)
        if tracker is not None:
            tracker.add(self)

    def identity(self) -> tuple[Any, ...]:
        """The primary key's values."""
        return tuple(self.__dict__[c] for c in self.shape.key)

    def values(self) -> dict[str, Any]:
        """Every column's current value."""
        state = self.__dict__
        return {c: state[c] for c in self.shape.columns}

    def changed(self) -> dict[str, Any]:
        """The columns whose value differs from the one last read or written."""
        state = self.__dict__
        loaded: dict[str, Any] = state.get(_LOADED) or {}
        return {c: state[c] for c in self.shape.columns if c not in loaded or loaded[c] != state[c]}

    __hash__ = object.__hash__  # rows are entities: equal only to themselves


# the task columns a completion's last-run.json record reads (heartbeat.db.queue.LAST_RUN)
LAST_RUN_COLUMNS = frozenset({"title", "project_id", "agent_id", "user_id", "extra"})


@dataclass(eq=False)
class TaskRow(Row):
    """A unit of work from any source (see :class:`heartbeat.db.models.Task`)."""

    shape: ClassVar[shape.Shape] = shape.TASKS

    id: str
    title: str
    status: TaskStatus
    source: str
    created_at: datetime
    updated_at: datetime
    pk: int | None = None
    scope: str = ""
    external_key: str | None = None
    priority: str | None = None
    priority_rank: int = 2
    position: int = 0
    risk: str | None = None
    blocked_by: str | None = None
    due_at: datetime | None = None
    next_check_at: datetime | None = None
    check_interval: int | None = None
    stale_after: int | None = None
    last_update_at: datetime | None = None
    last_checked_at: datetime | None = None
    last_progress_note: str | None = None
    next_action: str | None = None
    fallback_action: str | None = None
    blocker: str | None = None
    follow_up: bool = False
    skill: str | None = None
    project_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    chat_id: str | None = None
    completed_at: datetime | None = None
    claimed_at: datetime | None = None
    claimed_by: str | None = None
    lease_expires_at: datetime | None = None
    attempts: int = 0
    claim: str | None = None
    not_before: datetime | None = None
    idempotency_key: str | None = None
    version: int = 1
    extra: dict[str, Any] | None = None
    synced_hash: str | None = None


@dataclass(eq=False)
class TaskDependencyRow(Row):
    """``--after``: ``task_pk`` is not popped before ``depends_on_pk`` is done."""

    shape: ClassVar[shape.Shape] = shape.TASK_DEPENDENCIES

    task_pk: int
    depends_on_pk: int


@dataclass(eq=False)
class TaskEventRow(Row):
    """One change to a task, with the version it replaced."""

    shape: ClassVar[shape.Shape] = shape.TASK_EVENTS

    task_id: str
    at: datetime
    kind: str
    pk: int | None = None
    task_pk: int | None = None
    scope: str = ""
    actor: str | None = None
    before: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None


@dataclass(eq=False)
class RecurrenceRow(Row):
    """A repeating rule: a TODO.RECUR.md entry, a PROACTIVE.md task, or `hb recur add`."""

    shape: ClassVar[shape.Shape] = shape.RECURRENCES

    id: str
    source: str
    title: str
    rule: str
    created_at: datetime
    updated_at: datetime
    pk: int | None = None
    external_key: str | None = None
    tz: str | None = None
    next_local: str | None = None
    next_at: datetime | None = None
    time_of_day: str | None = None
    day: str | None = None
    enabled: bool = True
    priority: int | None = None
    permission_tier: int | None = None
    conditions: list[Any] | None = None
    instruction: str | None = None
    chat_id: str | None = None
    missed_policy: str = "once"
    run_count: int = 0
    last_run_at: datetime | None = None
    claimed_period: str | None = None
    claimed_at: datetime | None = None
    evaluation: dict[str, Any] | None = None
    position: int = 0
    extra: dict[str, Any] | None = None
    synced_hash: str | None = None


@dataclass(eq=False)
class OutcomeRow(Row):
    """A completion (or a recorded recurrence result), with how long it took."""

    shape: ClassVar[shape.Shape] = shape.OUTCOMES

    task_id: str
    success: bool
    completed_at: datetime
    pk: int | None = None
    task_pk: int | None = None
    recurrence_pk: int | None = None
    scope: str = ""
    source: str | None = None
    skill: str | None = None
    result: Any = None
    claimed_at: datetime | None = None
    duration_s: float | None = None
    attempt: int | None = None
    worker: str | None = None
    claim: str | None = None
    after_run: int | None = None  # a completion that is a last-run.json record (see heartbeat.db.queue)


@dataclass(eq=False)
class ErrorRow(Row):
    """A failure (an errors.json entry): a `hb fail`, or imported."""

    shape: ClassVar[shape.Shape] = shape.ERRORS

    at: datetime
    reason: str
    pk: int | None = None
    task_pk: int | None = None
    task_id: str | None = None
    scope: str = ""
    skill: str | None = None
    trace_id: str | None = None
    decision_log: Any = None
    resolved: bool = False
    attempt: int | None = None
    final: bool = False
    claim: str | None = None
    extra: dict[str, Any] | None = None


@dataclass(eq=False)
class NotificationRow(Row):
    """A decision to send or hold back a message, with its reason."""

    shape: ClassVar[shape.Shape] = shape.NOTIFICATIONS

    at: datetime
    local_day: str
    kind: str
    decision: str
    pk: int | None = None
    task_pk: int | None = None
    task_id: str | None = None
    topic: str | None = None
    risk: str | None = None
    reason: str | None = None
    blocker: str | None = None
    suggestion: str | None = None
    message: str | None = None
    run_pk: int | None = None


@dataclass(eq=False)
class RunRow(Row):
    """One operation (pop, complete, heartbeat, sync, ...); a heartbeat's guard while it runs."""

    shape: ClassVar[shape.Shape] = shape.RUNS

    kind: str
    status: str
    started_at: datetime
    pk: int | None = None
    scope: str | None = None
    finished_at: datetime | None = None
    task_id: str | None = None
    worker: str | None = None
    pid: int | None = None
    guard: str | None = None
    expires_at: datetime | None = None
    record: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None


@dataclass(eq=False)
class SettingRow(Row):
    """A workspace setting that was set (the rest take their defaults)."""

    shape: ClassVar[shape.Shape] = shape.SETTINGS

    key: str
    value: Any
    updated_at: datetime


@dataclass(eq=False)
class LockRow(Row):
    """A kind of write transaction that runs one at a time on PostgreSQL (``Db.take_turns``)."""

    shape: ClassVar[shape.Shape] = shape.LOCKS

    name: str


@dataclass(eq=False)
class SyncStateRow(Row):
    """What hb last read from or wrote to a workspace file."""

    shape: ClassVar[shape.Shape] = shape.SYNC_STATE

    kind: str
    path: str
    synced_at: datetime
    content_hash: str | None = None
    size: int | None = None
    mtime_ns: int | None = None
    skeleton: dict[str, Any] | None = None


ROWS: tuple[type[Row], ...] = (
    TaskRow,
    TaskDependencyRow,
    TaskEventRow,
    RecurrenceRow,
    OutcomeRow,
    ErrorRow,
    NotificationRow,
    RunRow,
    SettingRow,
    LockRow,
    SyncStateRow,
)
