"""The queue: pop, complete, fail, clear-stale, scopes, as single transactions.

The claim is one statement. On SQLite the write transaction begins with
``BEGIN IMMEDIATE`` (see db/engine.py) and a single ``UPDATE ... RETURNING``
picks the first ready task through ``ix_tasks_ready``; on PostgreSQL the
sub-select takes the row ``FOR UPDATE SKIP LOCKED``, so concurrent workers
never receive the same task and never lose one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, and_, func, insert, or_, select, update
from sqlalchemy.sql import Select

from heartbeat.db.models import Error, Outcome, Run, Task, TaskStatus
from heartbeat.errors import (
    BlockedEntry,
    InvalidState,
    NotFound,
    QueueExhausted,
    ScopeNotFound,
    ScopeRequired,
    StaleClaims,
)

T: Table = Task.__table__  # type: ignore[assignment]  # declarative tables are Tables
_RUNS: Table = Run.__table__  # type: ignore[assignment]
_OUTCOMES: Table = Outcome.__table__  # type: ignore[assignment]
_ERRORS: Table = Error.__table__  # type: ignore[assignment]
LEGACY = ""
# Markdown TODO entries are the agent's checklist, not queue work: pop never hands them out.
NOT_QUEUED_SOURCES = ("todo",)


@dataclass
class PopResult:
    task: dict[str, Any] | None  # the claimed row (column values), None = nothing to pop
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, blocker) passed over
    adopted: list[str] = field(default_factory=list)  # stale claims re-leased to this worker


def _stale(scope: str, now: datetime) -> Any:
    return and_(
        T.c.scope == scope,
        T.c.status == TaskStatus.DOING.value,
        or_(T.c.lease_expires_at.is_(None), T.c.lease_expires_at <= now),
    )


def scopes(conn: Connection) -> list[str]:
    """The scoped queues, in the order they first appeared."""
    rows = conn.execute(
        select(T.c.scope, func.min(T.c.pk))
        .where(T.c.scope != LEGACY)
        .group_by(T.c.scope)
        .order_by(func.min(T.c.pk))
    )
    return [r[0] for r in rows]


def scope_counts(conn: Connection) -> list[dict[str, Any]]:
    """Per queue: ready / in_progress / completed / total (the seed script's `scopes`)."""
    ready = and_(T.c.status == TaskStatus.TODO.value, T.c.blocked_by.is_(None))
    rows = conn.execute(
        select(
            T.c.scope,
            func.min(T.c.pk),
            func.count(),
            func.sum(func.cast(ready, type_=T.c.attempts.type)),
            func.sum(func.cast(T.c.status == TaskStatus.DOING.value, type_=T.c.attempts.type)),
            func.sum(func.cast(T.c.status == TaskStatus.DONE.value, type_=T.c.attempts.type)),
            func.sum(
                func.cast(T.c.blocked_by.is_not(None) & (T.c.status == "todo"), type_=T.c.attempts.type)
            ),
        )
        .where(T.c.scope != LEGACY)
        .group_by(T.c.scope)
        .order_by(func.min(T.c.pk))
    )
    return [
        {
            "scope": scope,
            "ready": int(ready_n or 0),
            "in_progress": int(doing or 0),
            "completed": int(done or 0),
            "blocked": int(blocked or 0),
            "total": int(total),
        }
        for scope, _first, total, ready_n, doing, done, blocked in rows
    ]


def _check_scope(conn: Connection, scope: str | None) -> str:
    if scope is None or scope == LEGACY:
        found = scopes(conn) if scope is None else []
        if found:
            raise ScopeRequired(found)
        return LEGACY
    exists = conn.execute(select(T.c.pk).where(T.c.scope == scope).limit(1)).first()
    if exists is None:
        known = scopes(conn)
        hint = f" (queues: {', '.join(known)})" if known else " (there are no scoped queues)"
        raise ScopeNotFound(f"--scope {scope!r} is not a queue{hint}")
    return scope


def _ready(scope: str) -> Select[Any]:
    return (
        select(T.c.pk)
        .where(
            T.c.scope == scope,
            T.c.status == TaskStatus.TODO.value,
            T.c.blocked_by.is_(None),
            T.c.source.not_in(NOT_QUEUED_SOURCES),
        )
        .order_by(T.c.priority_rank, T.c.position, T.c.pk)
        .limit(1)
    )


def _claim_values(now: datetime, worker: str | None, lease: timedelta) -> dict[str, Any]:
    return {
        "status": TaskStatus.DOING.value,
        "claimed_at": now,
        "claimed_by": worker,
        "lease_expires_at": now + lease,
        "attempts": T.c.attempts + 1,
        "updated_at": now,
        "version": T.c.version + 1,
    }


def pop(
    conn: Connection,
    now: datetime,
    *,
    scope: str | None = None,
    task_id: str | None = None,
    worker: str | None = None,
    lease: timedelta,
    accept_stale: bool = False,
) -> PopResult:
    """Claim the next task (or ``task_id``); raises the queue errors (exit 11-14, 10)."""
    scope = _check_scope(conn, scope)
    result = PopResult(task=None)
    stale = [
        r[0] for r in conn.execute(select(T.c.id).where(_stale(scope, now)).order_by(T.c.position, T.c.pk))
    ]
    if stale:
        if not accept_stale:
            raise StaleClaims(stale)
        conn.execute(update(T).where(_stale(scope, now)).values(_claim_values(now, worker, lease)))
        result.adopted = stale

    if task_id is not None:
        row = conn.execute(
            select(T.c.status, T.c.blocked_by).where(T.c.scope == scope, T.c.id == task_id)
        ).first()
        if row is None:
            raise NotFound(f"no task with id {task_id!r}" + (f" in {scope}" if scope else ""))
        if row.blocked_by is not None:
            raise BlockedEntry(f"task {task_id!r} is blocked ({row.blocked_by})")
        if row.status != TaskStatus.TODO.value:
            raise InvalidState(f"task {task_id!r} is {row.status}, not todo")
        target: Any = select(T.c.pk).where(T.c.scope == scope, T.c.id == task_id).scalar_subquery()
    else:
        sub = _ready(scope)
        if conn.dialect.name == "postgresql":
            sub = sub.with_for_update(skip_locked=True)
        target = sub.scalar_subquery()

    claimed = conn.execute(
        update(T).where(T.c.pk == target).values(_claim_values(now, worker, lease)).returning(*T.c)
    ).first()
    if claimed is not None:
        result.task = dict(claimed._mapping)

    if scope != LEGACY:
        before = result.task["position"] if result.task else None
        q = select(T.c.id, T.c.blocked_by, T.c.position).where(
            T.c.scope == scope, T.c.status == TaskStatus.TODO.value, T.c.blocked_by.is_not(None)
        )
        result.skipped = [
            (r.id, r.blocked_by)
            for r in conn.execute(q.order_by(T.c.position, T.c.pk))
            if before is None or r.position <= before
        ]
    _run(
        conn,
        "pop",
        scope,
        now,
        worker=worker,
        task_id=claimed.id if claimed else None,
        status="ok" if claimed else ("exhausted" if scope else "empty"),
    )
    if claimed is None and scope != LEGACY and task_id is None:
        raise QueueExhausted(f"queue {scope} is exhausted: write the evidence report and stop")
    return result


def _run(
    conn: Connection,
    kind: str,
    scope: str,
    now: datetime,
    *,
    status: str,
    worker: str | None = None,
    task_id: str | None = None,
    record: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        insert(_RUNS).values(
            kind=kind,
            scope=scope or None,
            status=status,
            started_at=now,
            finished_at=now,
            task_id=task_id,
            worker=worker,
            record=record,
        )
    )


def _claimed_row(conn: Connection, task_id: str, scope: str | None) -> Any:
    q = select(T).where(T.c.id == task_id)
    if scope is not None:
        q = q.where(T.c.scope == scope)
    rows = conn.execute(q.limit(2)).all()
    if not rows:
        raise NotFound(f"no task with id {task_id!r}" + (f" in {scope}" if scope else ""))
    if len(rows) > 1:
        raise InvalidState(f"task id {task_id!r} exists in several queues; pass --scope")
    row = rows[0]
    if row.status != TaskStatus.DOING.value:
        raise InvalidState(f"task {task_id!r} is {row.status}, not claimed (pop it first)")
    return row


def last_run_record(row: Any, now: datetime, status: str, outcome: Any, scope: str) -> dict[str, Any]:
    """The seed script's last-run.json object for this operation."""
    from heartbeat.formats.timestamps import format_timestamp

    extra = row.extra or {}
    return {
        "timestamp": format_timestamp(now),
        "task_id": row.id,
        "status": status,
        "description": row.title,
        "assigned_skill": row.skill,
        "project_id": row.project_id,
        "agent_id": row.agent_id,
        "user_id": row.user_id,
        "outcome": outcome,
        "trace_id": extra.get("trace_id"),
        "decision_log": extra.get("decision_log"),
        "scope": scope or None,
    }


def complete(
    conn: Connection, now: datetime, task_id: str, *, scope: str | None = None, outcome: Any = None
) -> dict[str, Any]:
    """Finish a claimed task: status done, an outcome row, a runs row."""
    row = _claimed_row(conn, task_id, scope)
    conn.execute(
        update(T)
        .where(T.c.pk == row.pk)
        .values(
            status=TaskStatus.DONE.value,
            completed_at=now,
            updated_at=now,
            lease_expires_at=None,
            version=T.c.version + 1,
        )
    )
    conn.execute(
        insert(_OUTCOMES).values(
            task_pk=row.pk,
            task_id=row.id,
            scope=row.scope,
            source=row.source,
            skill=row.skill,
            success=True,
            result=outcome,
            claimed_at=row.claimed_at,
            completed_at=now,
            duration_s=(now - row.claimed_at).total_seconds() if row.claimed_at else None,
            attempt=row.attempts,
            worker=row.claimed_by,
        )
    )
    record = last_run_record(row, now, "completed", outcome, row.scope)
    _run(conn, "complete", row.scope, now, status="ok", worker=row.claimed_by, task_id=row.id, record=record)
    return {**dict(row._mapping), "status": TaskStatus.DONE.value, "completed_at": now}


def fail(
    conn: Connection,
    now: datetime,
    task_id: str,
    *,
    scope: str | None = None,
    reason: str | None = None,
    final: bool = False,
    max_attempts: int,
) -> dict[str, Any]:
    """Record a failure; the task returns to todo for a retry until max attempts, then failed."""
    row = _claimed_row(conn, task_id, scope)
    gives_up = final or row.attempts >= max_attempts
    status = TaskStatus.FAILED if gives_up else TaskStatus.TODO
    conn.execute(
        update(T)
        .where(T.c.pk == row.pk)
        .values(
            status=status.value,
            updated_at=now,
            claimed_at=None,
            claimed_by=None,
            lease_expires_at=None,
            version=T.c.version + 1,
        )
    )
    reason = reason or "Unknown failure"
    extra = row.extra or {}
    conn.execute(
        insert(_ERRORS).values(
            task_pk=row.pk,
            task_id=row.id,
            scope=row.scope,
            skill=row.skill,
            at=now,
            reason=reason,
            trace_id=extra.get("trace_id"),
            decision_log=extra.get("decision_log"),
            resolved=False,
            attempt=row.attempts,
            final=gives_up,
        )
    )
    record = last_run_record(row, now, "failed" if gives_up else "retry", {"error": reason}, row.scope)
    _run(
        conn,
        "fail",
        row.scope,
        now,
        status="failed" if gives_up else "retry",
        worker=row.claimed_by,
        task_id=row.id,
        record=record,
    )
    return {**dict(row._mapping), "status": status.value, "retry": not gives_up}


def clear_stale(conn: Connection, now: datetime, *, scope: str | None = None) -> list[str]:
    """Stale claims (lease expired, or no claim record) go back to todo; returns their ids."""
    if scope is not None:
        _check_scope(conn, scope)
    scope_list = [scope] if scope is not None else [LEGACY, *scopes(conn)]
    cleared: list[str] = []
    for s in scope_list:
        ids = [
            r[0] for r in conn.execute(select(T.c.id).where(_stale(s, now)).order_by(T.c.position, T.c.pk))
        ]
        if ids:
            conn.execute(
                update(T)
                .where(_stale(s, now))
                .values(
                    status=TaskStatus.TODO.value,
                    claimed_at=None,
                    claimed_by=None,
                    lease_expires_at=None,
                    updated_at=now,
                    version=T.c.version + 1,
                )
            )
            cleared.extend(ids)
        _run(conn, "clear-stale", s, now, status="ok", record={"cleared": ids})
    return cleared


__all__ = ["PopResult", "clear_stale", "complete", "fail", "pop", "scope_counts", "scopes"]
