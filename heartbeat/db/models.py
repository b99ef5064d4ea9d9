"""The ledger's schema as SQLAlchemy 2 typed ORM models.

Alembic (migrations/) owns the schema; these models must match it, which
``hb db check`` and the migration tests verify. Times are UTC instants
(:class:`UTCDateTime`); durations are whole seconds; JSON columns keep key
order so that files round-trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from heartbeat.db.status import ACTIVE_STATUSES as ACTIVE_STATUSES
from heartbeat.db.status import TaskStatus as TaskStatus
from heartbeat.db.types import UTCDateTime
from heartbeat.formats.tasks_json import PRIORITY_RANK as PRIORITY_RANK  # critical 0 ... low 3, as written
from heartbeat.formats.tasks_json import priority_rank as priority_rank  # anything else: medium

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# Texts that files, people and agents give (ids, scopes, skills, workers, ...): VARCHAR(n) on
# SQLite, which stores them whatever their length, and text on PostgreSQL (migration 0011), where
# a VARCHAR(255) refused a longer one ("value too long", naming nothing) that SQLite kept.
Name = String(255).with_variant(Text(), "postgresql")
Name32 = String(32).with_variant(Text(), "postgresql")
Name64 = String(64).with_variant(Text(), "postgresql")
# A duration in seconds, up to the 100 years hb reads (past int4's 68 years on PostgreSQL)
Seconds = Integer().with_variant(BigInteger(), "postgresql")
# A file's size in bytes or its mtime in nanoseconds (past int4's 2 GiB and 2.1 s; migration 0014)
Big = Integer().with_variant(BigInteger(), "postgresql")


def one_of(column: str, values: Iterable[str], *, nullable: bool = False) -> str:
    """A CHECK that ``column`` holds one of ``values``, as comparisons joined by OR.

    SQLite builds a temporary B-tree for a constant ``IN (...)`` list every
    time it evaluates a CHECK, that is on every insert and on every update of
    the column (about 3.5 µs per row, 5% of a first sync of TODO.md). The
    ORs accept exactly the same values and cost a comparison each.
    """
    compared = " OR ".join(f"{column} = '{v}'" for v in values)
    return f"{column} IS NULL OR {compared}" if nullable else compared


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
    }


_status_enum = Enum(
    TaskStatus,
    name="status",
    native_enum=False,
    create_constraint=False,  # the check is ck_tasks_status below, written without IN
    length=16,
    values_callable=lambda e: [m.value for m in e],
    validate_strings=True,
)


class Task(Base):
    """A unit of work from any source: CLI, tasks.json, TODO.md, poke."""

    __tablename__ = "tasks"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    id: Mapped[str] = mapped_column(
        Name
    )  # the public id: tasks.json id/task_id, task-xxxxxxxx, todo-xxxxxxxx
    scope: Mapped[str] = mapped_column(Name, server_default="")  # '' = legacy lists / no queue
    source: Mapped[str] = mapped_column(String(16))  # cli | tasks-json | todo | poke | recur
    external_key: Mapped[str | None] = mapped_column(Name)  # identity in its file (Markdown key)
    title: Mapped[str] = mapped_column(Text)
    status: Mapped[TaskStatus] = mapped_column(_status_enum)
    priority: Mapped[str | None] = mapped_column(Name32)  # as written: critical/high/medium/low/...
    priority_rank: Mapped[int] = mapped_column(Integer, server_default=text("2"))
    position: Mapped[int] = mapped_column(Integer, server_default=text("0"))  # scoped `order` or list index
    risk: Mapped[str | None] = mapped_column(String(2))  # explicit override: P0 | P1 | P2
    blocked_by: Mapped[str | None] = mapped_column(Text)  # a blocked_on_* filter naming this entry

    due_at: Mapped[datetime | None]
    next_check_at: Mapped[datetime | None]
    check_interval: Mapped[int | None] = mapped_column(Seconds)
    stale_after: Mapped[int | None] = mapped_column(Seconds)
    last_update_at: Mapped[datetime | None]
    last_checked_at: Mapped[datetime | None]
    last_progress_note: Mapped[str | None] = mapped_column(Text)
    next_action: Mapped[str | None] = mapped_column(Text)
    fallback_action: Mapped[str | None] = mapped_column(Text)
    blocker: Mapped[str | None] = mapped_column(Text)
    follow_up: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))

    skill: Mapped[str | None] = mapped_column(Name)
    project_id: Mapped[str | None] = mapped_column(Name)
    agent_id: Mapped[str | None] = mapped_column(Name)
    user_id: Mapped[str | None] = mapped_column(Name)
    chat_id: Mapped[str | None] = mapped_column(Name)

    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    claimed_at: Mapped[datetime | None]
    claimed_by: Mapped[str | None] = mapped_column(Name)
    lease_expires_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    claim: Mapped[str | None] = mapped_column(
        String(32)
    )  # the token of the current claim, or of the last if its own holder ended it; else null
    not_before: Mapped[datetime | None]  # deferred: not popped (nor due) before this
    idempotency_key: Mapped[str | None] = mapped_column(Name)  # `hb add --key`: one task per key

    version: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    extra: Mapped[dict[str, Any] | None]  # the record's original fields, in file order
    synced_hash: Mapped[str | None] = mapped_column(String(64))  # file-relevant fields at the last sync

    __table_args__ = (
        UniqueConstraint("scope", "id"),
        CheckConstraint(one_of("risk", ("P0", "P1", "P2"), nullable=True), name="risk"),
        CheckConstraint(one_of("status", [s.value for s in TaskStatus]), name="status"),
        CheckConstraint("attempts >= 0", name="attempts"),
        # the pop claim: the first ready task of a scope in queue order
        Index(
            "ix_tasks_ready",
            "scope",
            "priority_rank",
            "position",
            "pk",
            sqlite_where=text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"),
            postgresql_where=text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"),
        ),
        # stale-claim detection
        Index(
            "ix_tasks_claimed",
            "scope",
            "lease_expires_at",
            sqlite_where=text("status = 'doing'"),
            postgresql_where=text("status = 'doing'"),
        ),
        # the heartbeat's due scan
        Index(
            "ix_tasks_status_next_check_at",
            "status",
            "next_check_at",
            sqlite_where=text("next_check_at IS NOT NULL"),
            postgresql_where=text("next_check_at IS NOT NULL"),
        ),
        # `hb add --key`: two processes racing on one key make one task (0005)
        Index(
            "uq_tasks_scope_idempotency_key",
            "scope",
            "idempotency_key",
            unique=True,
            sqlite_where=text("idempotency_key IS NOT NULL"),
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
        # the Markdown entries' keys (0008: only tasks with one, so a queue task's claim and
        # completion write no entry of it on PostgreSQL)
        Index(
            "ix_tasks_source_external_key",
            "source",
            "external_key",
            sqlite_where=text("external_key IS NOT NULL"),
            postgresql_where=text("external_key IS NOT NULL"),
        ),
        Index("ix_tasks_id", "id"),  # ids are unique per scope; commands find them without one
        # hb report queue (0002); since 0003 without the ready and claimed tasks (read through the
        # two indexes above), so that a pop does not move it
        Index(
            "ix_tasks_scope_status_created_at",
            "scope",
            "status",
            "created_at",
            sqlite_where=text(
                "status <> 'doing' AND NOT (status = 'todo' AND blocked_by IS NULL AND source <> 'todo')"
            ),
            postgresql_where=text(
                "status <> 'doing' AND NOT (status = 'todo' AND blocked_by IS NULL AND source <> 'todo')"
            ),
        ),
    )


class TaskDependency(Base):
    """`hb add/update --after`: task_pk is not popped before depends_on_pk is done."""

    __tablename__ = "task_dependencies"

    task_pk: Mapped[int] = mapped_column(ForeignKey("tasks.pk", ondelete="CASCADE"), primary_key=True)
    depends_on_pk: Mapped[int] = mapped_column(ForeignKey("tasks.pk", ondelete="CASCADE"), primary_key=True)

    __table_args__ = (
        # what waits for a task (the cycle check walks both ways; a deleted task's rows go with it)
        Index("ix_task_dependencies_depends_on_pk", "depends_on_pk"),
    )


class TaskEvent(Base):
    """History: every change to a task, with the version it replaced."""

    __tablename__ = "task_events"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_pk: Mapped[int | None] = mapped_column(ForeignKey("tasks.pk", ondelete="SET NULL"))
    task_id: Mapped[str] = mapped_column(Name)
    scope: Mapped[str] = mapped_column(Name, server_default="")
    at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(
        String(24)
    )  # created | updated | claimed | completed | failed | conflict | removed | ...
    actor: Mapped[str | None] = mapped_column(Name64)  # cli | sync | pop worker name | ...
    before: Mapped[dict[str, Any] | None]  # the task as it was (None for created)
    detail: Mapped[dict[str, Any] | None]

    __table_args__ = (
        Index("ix_task_events_task_pk_at", "task_pk", "at"),
        Index("ix_task_events_task_id", "task_id"),
    )


class Recurrence(Base):
    """A repeating rule: TODO.RECUR.md entry, PROACTIVE.md task, or `hb recur add`."""

    __tablename__ = "recurrences"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    id: Mapped[str] = mapped_column(Name, unique=True)
    source: Mapped[str] = mapped_column(String(16))  # recur | proactive | cli
    external_key: Mapped[str | None] = mapped_column(Name)
    title: Mapped[str] = mapped_column(Text)
    rule: Mapped[str] = mapped_column(Name)  # as written: "every 6 hours", "cron 0 9 * * 1-5", "weekly"
    tz: Mapped[str | None] = mapped_column(String(64))  # None = the workspace zone
    next_local: Mapped[str | None] = mapped_column(String(16))  # the phase: "YYYY-MM-DD HH:MM" wall-clock
    next_at: Mapped[datetime | None]  # next_local resolved to an instant (due scan)
    time_of_day: Mapped[str | None] = mapped_column(String(5))  # PROACTIVE time
    day: Mapped[str | None] = mapped_column(String(16))  # PROACTIVE day
    enabled: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    priority: Mapped[int | None] = mapped_column(Integer)
    permission_tier: Mapped[int | None] = mapped_column(Integer)
    conditions: Mapped[list[Any] | None]
    instruction: Mapped[str | None] = mapped_column(Text)
    chat_id: Mapped[str | None] = mapped_column(Name)
    missed_policy: Mapped[str] = mapped_column(String(8), server_default="once")
    run_count: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_run_at: Mapped[datetime | None]
    claimed_period: Mapped[str | None] = mapped_column(String(32))  # handed out for this period
    claimed_at: Mapped[datetime | None]
    evaluation: Mapped[dict[str, Any] | None]  # last rubric scores and answer
    position: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    extra: Mapped[dict[str, Any] | None]
    synced_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint(one_of("missed_policy", ("skip", "once", "all")), name="missed_policy"),
        Index("ix_recurrences_enabled_next_at", "enabled", "next_at"),
    )


class Outcome(Base):
    """A completion (or a recorded recurrence result), with how long it took."""

    __tablename__ = "outcomes"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_pk: Mapped[int | None] = mapped_column(ForeignKey("tasks.pk", ondelete="SET NULL"))
    recurrence_pk: Mapped[int | None] = mapped_column(ForeignKey("recurrences.pk", ondelete="SET NULL"))
    task_id: Mapped[str] = mapped_column(Name)
    scope: Mapped[str] = mapped_column(Name, server_default="")
    source: Mapped[str | None] = mapped_column(String(16))
    skill: Mapped[str | None] = mapped_column(Name)
    success: Mapped[bool] = mapped_column(Boolean)
    result: Mapped[Any | None] = mapped_column(JSON)
    claimed_at: Mapped[datetime | None]
    completed_at: Mapped[datetime]
    duration_s: Mapped[float | None] = mapped_column(Float)
    attempt: Mapped[int | None] = mapped_column(Integer)
    worker: Mapped[str | None] = mapped_column(Name)
    claim: Mapped[str | None] = mapped_column(String(32))  # the claim the completion closed
    # a completion that is a last-run.json record (hb's own complete; it writes no runs row): the
    # newest runs row when it was written, which orders it among the runs rows' records (0008)
    after_run: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        Index("ix_outcomes_task_pk", "task_pk"),
        # the newest completion that is a last-run.json record, one index step away (0008)
        Index(
            "ix_outcomes_last_run",
            "pk",
            sqlite_where=text("after_run IS NOT NULL"),
            postgresql_where=text("after_run IS NOT NULL"),
        ),
        # hb report: covering indexes (revision 0002, the second one 0003). Per local day: a
        # range of the first (it replaces 0001's ix_outcomes_completed_at, its prefix; the
        # outcomes_by_day view of 0009 reads each UTC day as such a range too). Per
        # skill, scope or source: the (scope, skill, source) groups of the second, each
        # ordered by duration, so medians / p95 are short index walks.
        Index("ix_outcomes_completed_at_duration_s", "completed_at", "duration_s", "success"),
        Index(
            "ix_outcomes_scope_skill_source_duration_s",
            "scope",
            "skill",
            "source",
            "duration_s",
            "completed_at",
            "success",
        ),
        # replaces 0001's ix_outcomes_recurrence_pk (its prefix): hb report recurrences
        Index(
            "ix_outcomes_recurrence_pk_completed_at",
            "recurrence_pk",
            "completed_at",
            "success",
            sqlite_where=text("recurrence_pk IS NOT NULL"),
            postgresql_where=text("recurrence_pk IS NOT NULL"),
        ),
    )


class Error(Base):
    """A failure (errors.json entry): a `hb fail`, or imported."""

    __tablename__ = "errors"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_pk: Mapped[int | None] = mapped_column(ForeignKey("tasks.pk", ondelete="SET NULL"))
    task_id: Mapped[str | None] = mapped_column(Name)
    scope: Mapped[str] = mapped_column(Name, server_default="")
    skill: Mapped[str | None] = mapped_column(Name)
    at: Mapped[datetime]
    reason: Mapped[str] = mapped_column(Text)
    trace_id: Mapped[str | None] = mapped_column(Name)
    decision_log: Mapped[Any | None] = mapped_column(JSON)
    resolved: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    attempt: Mapped[int | None] = mapped_column(Integer)
    final: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    claim: Mapped[str | None] = mapped_column(String(32))  # the claim that failed
    extra: Mapped[dict[str, Any] | None]  # the errors.json object as read, in order

    __table_args__ = (
        Index("ix_errors_at", "at"),
        Index("ix_errors_task_pk", "task_pk"),
        Index("ix_errors_scope_task_id_at", "scope", "task_id", "at"),  # hb report failures (0002)
    )


class Notification(Base):
    """A decision to send or hold back a message, with its reason."""

    __tablename__ = "notifications"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime]
    local_day: Mapped[str] = mapped_column(String(10))  # YYYY-MM-DD in the workspace zone (daily caps)
    kind: Mapped[str] = mapped_column(String(16))  # reminder | proactive
    task_pk: Mapped[int | None] = mapped_column(ForeignKey("tasks.pk", ondelete="SET NULL"))
    task_id: Mapped[str | None] = mapped_column(Name)
    topic: Mapped[str | None] = mapped_column(Text)
    risk: Mapped[str | None] = mapped_column(String(2))
    decision: Mapped[str] = mapped_column(String(12))  # sent | suppressed
    reason: Mapped[str | None] = mapped_column(String(32))  # None when sent
    blocker: Mapped[str | None] = mapped_column(Text)  # the blocker when decided (repeat-window exceptions)
    suggestion: Mapped[str | None] = mapped_column(Text)
    message: Mapped[str | None] = mapped_column(Text)
    run_pk: Mapped[int | None] = mapped_column(ForeignKey("runs.pk", ondelete="SET NULL"))

    __table_args__ = (
        CheckConstraint(one_of("decision", ("sent", "suppressed")), name="decision"),
        Index("ix_notifications_task_id_at", "task_id", "at"),
        Index("ix_notifications_kind_decision_at", "kind", "decision", "at"),
        Index("ix_notifications_at", "at"),
    )


class Run(Base):
    """One operation (pop, complete, heartbeat, sync, ...): the last-run record.

    A heartbeat or poke in progress holds the workspace guard by setting
    ``guard``; the unique index makes a second holder impossible.
    """

    __tablename__ = "runs"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(24))
    scope: Mapped[str | None] = mapped_column(Name)
    status: Mapped[str] = mapped_column(String(16))  # running | ok | empty | error | expired | ...
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    task_id: Mapped[str | None] = mapped_column(Name)
    worker: Mapped[str | None] = mapped_column(Name)
    pid: Mapped[int | None] = mapped_column(Integer)
    guard: Mapped[str | None] = mapped_column(String(64))
    expires_at: Mapped[datetime | None]
    record: Mapped[dict[str, Any] | None]  # the last-run.json object
    detail: Mapped[dict[str, Any] | None]

    __table_args__ = (
        # the heartbeat's latest run of a kind; the runs row of every queue operation stays out
        Index(
            "ix_runs_kind_started_at",
            "kind",
            "started_at",
            sqlite_where=text("kind = 'seen' OR kind = 'hygiene' OR kind = 'check'"),
            postgresql_where=text("kind = 'seen' OR kind = 'hygiene' OR kind = 'check'"),
        ),
        # heartbeat ticks and pokes by time (the dashboard); queue runs stay out of the index
        Index(
            "ix_runs_tick_started_at",
            "kind",
            "started_at",
            sqlite_where=text("kind = 'heartbeat' OR kind = 'poke'"),
            postgresql_where=text("kind = 'heartbeat' OR kind = 'poke'"),
        ),
        # one holder per guard; queue runs (guard NULL) stay out of the index
        Index(
            "uq_runs_guard",
            "guard",
            unique=True,
            sqlite_where=text("guard IS NOT NULL"),
            postgresql_where=text("guard IS NOT NULL"),
        ),
    )


class Setting(Base):
    """A workspace setting that was set (the rest take their defaults)."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    updated_at: Mapped[datetime]


class Lock(Base):
    """A kind of write transaction that runs one at a time on PostgreSQL, by locking its row.

    A row lock needs UPDATE on the table, which ``hb_reader`` lacks; an advisory lock, which hb
    took before migration 0014, was open to every role that could connect.
    """

    __tablename__ = "locks"

    name: Mapped[str] = mapped_column(Name32, primary_key=True)


class SyncState(Base):
    """What hb last read from or wrote to a workspace file."""

    __tablename__ = "sync_state"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # todo | done | recur | tasks-json | ...
    path: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    size: Mapped[int | None] = mapped_column(Big)
    mtime_ns: Mapped[int | None] = mapped_column(Big)
    synced_at: Mapped[datetime]
    skeleton: Mapped[dict[str, Any] | None]  # the file's non-record structure, for exports
