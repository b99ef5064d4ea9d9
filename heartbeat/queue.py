"""The queue: pop, complete, fail, clear-stale, scopes, each one transaction.

This is hb's hot path, so it speaks plain SQL on the driver connection (the
same SQL on both backends, with each driver's parameter style) instead of
building SQLAlchemy statements per call.

The claim is one statement. On SQLite the transaction begins with
``BEGIN IMMEDIATE`` and a single ``UPDATE ... RETURNING`` picks the first
ready task through the partial index ``ix_tasks_ready``; on PostgreSQL the
sub-select takes the row ``FOR UPDATE SKIP LOCKED``. Concurrent workers never
receive the same task and never lose one; no Python-side lock is involved.
The checks a pop makes first (scoped queues without ``--scope``, stale
claims) are conditions of that same statement; only a pop that claims
nothing runs them one by one, to say why.

Every index a queue operation touches is a page written per commit, so the
indexes the reports read leave the queue's rows out where they can (see
migration 0003): a pop writes four pages, a completion about nine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from heartbeat.db import plain
from heartbeat.errors import (
    BlockedEntry,
    InvalidState,
    NotFound,
    QueueExhausted,
    ScopeNotFound,
    ScopeRequired,
    StaleClaims,
)
from heartbeat.formats import tasks_json
from heartbeat.formats.timestamps import timestamp_or_none

LEGACY = ""

# The columns a claimed task comes back with (what `hb pop` prints needs).
TASK_COLUMNS = (
    "pk",
    "id",
    "scope",
    "source",
    "status",
    "title",
    "priority",
    "position",
    "blocked_by",
    "extra",
    "created_at",
    "completed_at",
    "skill",
    "project_id",
    "agent_id",
    "user_id",
    "claimed_at",
    "claimed_by",
    "lease_expires_at",
    "attempts",
)
_RETURNING = ", ".join(TASK_COLUMNS)
_STALE = "scope = :scope AND status = 'doing' AND (lease_expires_at IS NULL OR lease_expires_at <= :now)"
_RELEASE = "lease_expires_at = NULL, updated_at = :now, version = version + 1"
_TARGET_ID = (
    "id = :id AND status = 'doing' AND NOT EXISTS "
    "(SELECT 1 FROM tasks other WHERE other.id = :id AND other.pk <> tasks.pk)"
)
_TARGET_SCOPE_ID = "scope = :scope AND id = :id AND status = 'doing'"
_CLAIM_SET = (
    "claimed_at = :now, claimed_by = :worker, lease_expires_at = :lease_until, "
    "attempts = attempts + 1, updated_at = :now, version = version + 1"
)
# Markdown TODO entries are the agent's checklist, not queue work: never popped.
# READY and IDLE are the conditions of the partial indexes ix_tasks_ready and
# ix_tasks_scope_status_created_at; a query names them to read through them.
READY = "status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"
IDLE = f"status <> 'doing' AND NOT ({READY})"
_READY = f"SELECT pk FROM tasks WHERE scope = :scope AND {READY} ORDER BY {{order}} LIMIT 1"
# The order a pop takes ready tasks in: hb's (priority first, then the queue's own order), or the
# file's own (the claude-skills heartbeat.py takes pending[0]; its add keeps pending sorted).
PRIORITY_ORDER = "priority_rank, position, pk"
FILE_ORDER = "position, pk"

# The claim with the preflight's checks folded in: it takes a task only when the
# pop may not fail (no stale claims in the queue; for a pop without --scope, no
# scoped queues), so the common pop is one statement. When it takes nothing,
# :func:`pop` runs the checks one by one to say why (or that nothing is ready).
# (two seeks on ix_tasks_claimed, however many claims are in flight)
_CLAIM_GUARD = (
    "NOT EXISTS (SELECT 1 FROM tasks WHERE scope = :scope AND status = 'doing' AND lease_expires_at IS NULL) "
    "AND NOT EXISTS (SELECT 1 FROM tasks WHERE scope = :scope AND status = 'doing' "
    "AND lease_expires_at <= :now)"
)
_NO_SCOPED = "NOT EXISTS (SELECT 1 FROM tasks WHERE scope > '')"

SQL = {
    "any_scoped": "SELECT 1 FROM tasks WHERE scope > '' LIMIT 1",
    # when the checked claim took nothing, in one round trip: are there queues, is this one
    # known, are claims stale?
    "preflight": (
        "SELECT (SELECT 1 FROM tasks WHERE scope > '' LIMIT 1) AS scoped, "
        "(SELECT 1 FROM tasks WHERE scope = :scope LIMIT 1) AS known, "
        f"(SELECT count(*) FROM tasks WHERE {_STALE}) AS stale"
    ),
    "scopes": "SELECT scope FROM tasks WHERE scope > '' GROUP BY scope ORDER BY min(pk)",
    "scope_exists": "SELECT 1 FROM tasks WHERE scope = :scope LIMIT 1",
    "stale": f"SELECT id FROM tasks WHERE {_STALE} ORDER BY position, pk",
    "adopt": f"UPDATE tasks SET {_CLAIM_SET} WHERE {_STALE}",
    "claim": (
        f"UPDATE tasks SET status = 'doing', {_CLAIM_SET} "
        f"WHERE pk = ({_READY}{{lock}}) RETURNING {_RETURNING}"
    ),
    "claim_checked": (
        f"UPDATE tasks SET status = 'doing', {_CLAIM_SET} "
        f"WHERE pk = ({_READY}{{lock}}) AND {_CLAIM_GUARD} RETURNING {_RETURNING}"
    ),
    "claim_checked_legacy": (
        f"UPDATE tasks SET status = 'doing', {_CLAIM_SET} "
        f"WHERE pk = ({_READY}{{lock}}) AND {_CLAIM_GUARD} AND {_NO_SCOPED} RETURNING {_RETURNING}"
    ),
    "claim_id": (
        f"UPDATE tasks SET status = 'doing', {_CLAIM_SET} "
        f"WHERE scope = :scope AND id = :id AND status = 'todo' RETURNING {_RETURNING}"
    ),
    "lookup": "SELECT status, blocked_by FROM tasks WHERE scope = :scope AND id = :id",
    "blocked": (
        "SELECT id, blocked_by, position FROM tasks WHERE scope = :scope AND status = 'todo' "
        f"AND blocked_by IS NOT NULL AND {IDLE} ORDER BY position, pk"
    ),
    "by_id": f"SELECT {_RETURNING} FROM tasks WHERE id = :id LIMIT 2",
    "by_scope_id": f"SELECT {_RETURNING} FROM tasks WHERE scope = :scope AND id = :id",
    # complete / fail: one statement on the claimed row; the id must name exactly one task
    "done": (
        f"UPDATE tasks SET status = 'done', completed_at = :now, {_RELEASE} "
        f"WHERE {{target}} RETURNING {_RETURNING}"
    ),
    "failed": (
        "UPDATE tasks SET status = "
        "CASE WHEN :final OR attempts >= :max_attempts THEN 'failed' ELSE 'todo' END, "
        f"{_RELEASE} WHERE {{target}} RETURNING {_RETURNING}"
    ),
    "clear": (
        f"UPDATE tasks SET status = 'todo', claimed_at = NULL, claimed_by = NULL, lease_expires_at = NULL, "
        f"updated_at = :now, version = version + 1 WHERE {_STALE}"
    ),
    "run": (
        "INSERT INTO runs (kind, scope, status, started_at, finished_at, task_id, worker, record, detail) "
        "VALUES (:kind, :scope, :status, :now, :now, :task_id, :worker, {json:record}, {json:detail})"
    ),
    "outcome": (
        "INSERT INTO outcomes (task_pk, task_id, scope, source, skill, success, result, claimed_at, "
        "completed_at, duration_s, attempt, worker) VALUES (:task_pk, :task_id, :scope, :source, :skill, "
        ":success, {json:result}, :claimed_at, :now, :duration_s, :attempt, :worker)"
    ),
    "error": (
        "INSERT INTO errors (task_pk, task_id, scope, skill, at, reason, trace_id, decision_log, resolved, "
        "attempt, final) VALUES (:task_pk, :task_id, :scope, :skill, :now, :reason, :trace_id, "
        "{json:decision_log}, :false, :attempt, :final)"
    ),
    "counts": (
        "SELECT scope, count(*) AS total, "
        "sum(CASE WHEN status = 'todo' AND blocked_by IS NULL THEN 1 ELSE 0 END) AS ready, "
        "sum(CASE WHEN status = 'doing' THEN 1 ELSE 0 END) AS in_progress, "
        "sum(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS completed, "
        "sum(CASE WHEN status = 'todo' AND blocked_by IS NOT NULL THEN 1 ELSE 0 END) AS blocked "
        "FROM tasks WHERE scope > '' GROUP BY scope ORDER BY min(pk)"
    ),
}


for _key in [k for k, v in SQL.items() if "{target}" in v]:
    _text = SQL.pop(_key)
    SQL[f"{_key}_by_id"] = _text.replace("{target}", _TARGET_ID)
    SQL[f"{_key}_by_scope_id"] = _text.replace("{target}", _TARGET_SCOPE_ID)
for _key in [k for k, v in SQL.items() if "{order}" in v]:
    _text = SQL[_key]
    SQL[_key] = _text.replace("{order}", PRIORITY_ORDER)
    SQL[f"{_key}_in_file_order"] = _text.replace("{order}", FILE_ORDER)


class Dialect:
    """The SQL of this module for one backend: parameter style, JSON and time values."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sqlite = name == "sqlite"
        self._sql: dict[str, str] = {key: self._adapt(text) for key, text in SQL.items()}

    def _adapt(self, text: str) -> str:
        text = text.replace("{lock}", "" if self.sqlite else " FOR UPDATE SKIP LOCKED")
        return plain.adapt(text, sqlite=self.sqlite)

    def sql(self, key: str) -> str:
        return self._sql[key]

    def time(self, value: datetime | None) -> Any:
        return plain.bind_time(value, sqlite=self.sqlite)

    read_time = staticmethod(plain.read_time)

    def read_json(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    def json(self, value: Any) -> str | None:
        return None if value is None else _encode(value)


# json.dumps(value, ensure_ascii=False) without building an encoder per call
_encode = json.JSONEncoder(ensure_ascii=False).encode
_TIMES = ("created_at", "completed_at", "claimed_at", "lease_expires_at")


class Tx:
    """One transaction on a driver connection, speaking :data:`SQL` by key."""

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw
        self.d = dialect
        self.cur = raw.cursor()

    def execute(self, key: str, params: Mapping[str, Any] | None = None) -> Any:
        self.cur.execute(self.d.sql(key), params if isinstance(params, dict) else dict(params or {}))
        return self.cur

    def rows(self, key: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self.execute(key, params)
        found = cur.fetchall()
        if not found:
            return []
        names = [c[0] for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in found]

    def task(self, row: dict[str, Any]) -> dict[str, Any]:
        """Normalise a task row read through this module (times aware UTC, JSON decoded)."""
        read_time = self.d.read_time
        for name in _TIMES:
            value = row.get(name)
            if value is not None:
                row[name] = read_time(value)
        row["extra"] = self.d.read_json(row.get("extra"))
        return row


@contextmanager
def transaction(raw: Any, dialect: Dialect) -> Iterator[Tx]:
    """A write transaction on ``raw`` (SQLite: BEGIN IMMEDIATE; PostgreSQL: implicit BEGIN)."""
    tx = Tx(raw, dialect)
    if dialect.sqlite:
        tx.cur.execute("BEGIN IMMEDIATE")
    try:
        yield tx
    except BaseException:
        raw.rollback()
        raise
    else:
        raw.commit()
    finally:
        tx.cur.close()


# Builds a finished task's last-run.json object from its row (the row as the operation left it).
LastRun = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Trace:
    """What the caller says of one run (heartbeat.py's --trace-id / --decision-log), in place of
    the task's own ``trace_id`` / ``decision_log`` fields."""

    trace_id: str | None = None
    decision_log: Any = None


@dataclass
class PopResult:
    task: dict[str, Any] | None  # the claimed row, None = nothing to pop
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, blocker) passed over
    adopted: list[str] = field(default_factory=list)  # stale claims re-leased to this worker
    exhausted: QueueExhausted | None = None  # exit 10, raised once the pop (and its runs row) committed


def default_worker() -> str:
    """Who a pop claims for when the caller names no one: ``HB_WORKER``, else ``host:pid``."""
    import os
    import socket

    return os.environ.get("HB_WORKER") or f"{socket.gethostname()}:{os.getpid()}"


def scopes(tx: Tx) -> list[str]:
    """The scoped queues, in the order they first appeared."""
    return [r["scope"] for r in tx.rows("scopes")]


def scope_line(counts: Mapping[str, Any]) -> str:
    """One queue of :func:`scope_counts` as the heartbeat skill's ``scopes`` prints it."""
    return (
        f"{counts['scope']}  ({counts['ready']} ready / {counts['in_progress']} in_progress / "
        f"{counts['completed']} completed / {counts['total']} total)"
    )


def scope_counts(tx: Tx) -> list[dict[str, Any]]:
    """Per queue: ready / in_progress / completed / blocked / total (the seed script's `scopes`)."""
    return [
        {
            "scope": r["scope"],
            "ready": int(r["ready"] or 0),
            "in_progress": int(r["in_progress"] or 0),
            "completed": int(r["completed"] or 0),
            "blocked": int(r["blocked"] or 0),
            "total": int(r["total"]),
        }
        for r in tx.rows("counts")
    ]


def _preflight(tx: Tx, scope: str | None, at: Any, accept_stale: bool) -> str:
    """The checks before a claim, in one query: exit 11, 14 and 12 in that order."""
    row = tx.execute("preflight", {"scope": scope or LEGACY, "now": at}).fetchone()
    scoped, known, stale = row
    if scope is None and scoped:
        raise ScopeRequired(scopes(tx))
    scope = scope or LEGACY
    if scope != LEGACY and not known:
        _check_scope(tx, scope)
    if stale and not accept_stale:
        raise StaleClaims([r[0] for r in tx.execute("stale", {"scope": scope, "now": at}).fetchall()])
    return scope


def _check_scope(tx: Tx, scope: str | None) -> str:
    if scope is None or scope == LEGACY:
        if scope is None and tx.execute("any_scoped").fetchone() is not None:
            raise ScopeRequired(scopes(tx))
        return LEGACY
    if tx.execute("scope_exists", {"scope": scope}).fetchone() is None:
        known = scopes(tx)
        hint = f" (queues: {', '.join(known)})" if known else " (there are no scoped queues)"
        raise ScopeNotFound(f"--scope {scope!r} is not a queue{hint}")
    return scope


def pop(
    tx: Tx,
    now: datetime,
    *,
    scope: str | None = None,
    task_id: str | None = None,
    worker: str | None = None,
    lease: timedelta,
    accept_stale: bool = False,
    file_order: bool = False,
) -> PopResult:
    """Claim the next task (or ``task_id``); raises the queue errors (exit 10-14).

    The next task is the first ready one by priority, then in the queue's order; with
    ``file_order``, the first in the queue's order whatever its priority.
    """
    at = tx.d.time(now)
    lease_until = tx.d.time(now + lease)
    result = PopResult(task=None)
    order = "_in_file_order" if file_order else ""
    if task_id is None and not accept_stale:
        # the common pop: one statement that claims only when no check would fail
        claim = {"scope": scope or LEGACY, "now": at, "worker": worker, "lease_until": lease_until}
        rows = tx.rows(("claim_checked" if scope is not None else "claim_checked_legacy") + order, claim)
        if rows:
            result.task = tx.task(rows[0])
            return _popped(tx, result, claim["scope"], now, at, worker, None)
    scope = _preflight(tx, scope, at, accept_stale)
    claim = {"scope": scope, "now": at, "worker": worker, "lease_until": lease_until}
    if accept_stale:
        stale = [r[0] for r in tx.execute("stale", {"scope": scope, "now": at}).fetchall()]
        if stale:
            tx.execute("adopt", claim)
            result.adopted = stale

    if task_id is not None:
        found = tx.rows("lookup", {"scope": scope, "id": task_id})
        if not found:
            raise NotFound(f"no task with id {task_id!r}" + (f" in {scope}" if scope else ""))
        if found[0]["blocked_by"] is not None:
            raise BlockedEntry(f"task {task_id!r} is blocked ({found[0]['blocked_by']})")
        if found[0]["status"] != "todo":
            raise InvalidState(f"task {task_id!r} is {found[0]['status']}, not todo")
        rows = tx.rows("claim_id", {**claim, "id": task_id})
    else:
        rows = tx.rows("claim" + order, claim)
    if rows:
        result.task = tx.task(rows[0])
    return _popped(tx, result, scope, now, at, worker, task_id)


def _popped(
    tx: Tx, result: PopResult, scope: str, now: datetime, at: Any, worker: str | None, task_id: str | None
) -> PopResult:
    """After the claim: the blocked entries passed over, the runs row, exit 10 when exhausted."""
    if scope != LEGACY:
        upto = result.task["position"] if result.task else None
        result.skipped = [
            (r["id"], r["blocked_by"])
            for r in tx.rows("blocked", {"scope": scope})
            if upto is None or r["position"] <= upto
        ]
    got = result.task["id"] if result.task else None
    status = "ok" if got else ("exhausted" if scope else "empty")
    # a claimed task is this run's last-run.json (the seed script records every run that
    # handled a task); a pop that took nothing leaves the last one as it is
    record = last_run_record(result.task, now, "in_progress", None) if result.task else None
    _run(tx, "pop", scope, at, status=status, worker=worker, task_id=got, record=record)
    if got is None and scope != LEGACY and task_id is None:
        result.exhausted = QueueExhausted(f"queue {scope} is exhausted: write the evidence report and stop")
        result.exhausted.skipped = result.skipped
        result.exhausted.adopted = result.adopted
    return result


def _run(
    tx: Tx,
    kind: str,
    scope: str,
    at: Any,
    *,
    status: str,
    worker: str | None = None,
    task_id: str | None = None,
    record: Any = None,
    detail: Any = None,
) -> None:
    """The operation's runs row; ``record`` is its last-run.json object (operations on a task)."""
    tx.execute(
        "run",
        {
            "kind": kind,
            "scope": scope or None,
            "status": status,
            "now": at,
            "task_id": task_id,
            "worker": worker,
            "record": tx.d.json(record),
            "detail": tx.d.json(detail),
        },
    )


def _finish(tx: Tx, key: str, task_id: str, scope: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """Update the claimed task ``task_id`` with statement ``key``; explain why when nothing matched."""
    if scope is None:
        rows = tx.rows(f"{key}_by_id", {**params, "id": task_id})
    else:
        rows = tx.rows(f"{key}_by_scope_id", {**params, "id": task_id, "scope": scope})
    if rows:
        return tx.task(rows[0])
    found = (
        tx.rows("by_id", {"id": task_id})
        if scope is None
        else tx.rows("by_scope_id", {"scope": scope, "id": task_id})
    )
    if not found:
        if scope:
            _check_scope(tx, scope)  # exit 14 when --scope is not a queue at all
        raise NotFound(f"no task with id {task_id!r}" + (f" in {scope}" if scope else ""))
    if len(found) > 1:
        raise InvalidState(f"task id {task_id!r} exists in several queues; pass --scope")
    raise InvalidState(f"task {task_id!r} is {found[0]['status']}, not claimed (pop it first)")


def last_run_record(row: Mapping[str, Any], now: datetime, status: str, outcome: Any) -> dict[str, Any]:
    """The seed script's last-run.json object for this operation."""
    from heartbeat.formats.tasks_json import last_run_entry

    extra = row.get("extra") or {}
    return last_run_entry(
        timestamp=now,
        task_id=row["id"],
        status=status,
        description=row["title"],
        assigned_skill=row["skill"],
        project_id=row["project_id"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        outcome=outcome,
        trace_id=extra.get("trace_id"),
        decision_log=extra.get("decision_log"),
        scope=row["scope"] or None,
    )


def complete(
    tx: Tx,
    now: datetime,
    task_id: str,
    *,
    scope: str | None = None,
    outcome: Any = None,
    last_run: LastRun | None = None,
) -> dict[str, Any]:
    """Finish a claimed task: status done, an outcome row, a runs row (its last-run.json object:
    ``last_run``'s, else hb's own)."""
    at = tx.d.time(now)
    row = _finish(tx, "done", task_id, scope, {"now": at})
    _outcome(tx, row, at, now, success=True, result=outcome)
    record = last_run(row) if last_run is not None else last_run_record(row, now, "completed", outcome)
    _run(
        tx,
        "complete",
        row["scope"],
        at,
        status="ok",
        worker=row["claimed_by"],
        task_id=row["id"],
        record=record,
    )
    return {**row, "status": "done", "completed_at": now}


def _outcome(tx: Tx, row: dict[str, Any], at: Any, now: datetime, *, success: bool, result: Any) -> None:
    """The outcome row of a task that ended (completed, or failed for good)."""
    claimed_at = row["claimed_at"]
    tx.execute(
        "outcome",
        {
            "task_pk": row["pk"],
            "task_id": row["id"],
            "scope": row["scope"],
            "source": row["source"],
            "skill": row["skill"],
            "success": success,
            "result": tx.d.json(result),
            "claimed_at": tx.d.time(claimed_at),
            "now": at,
            "duration_s": (now - claimed_at).total_seconds() if claimed_at else None,
            "attempt": row["attempts"],
            "worker": row["claimed_by"],
        },
    )


def fail(
    tx: Tx,
    now: datetime,
    task_id: str,
    *,
    scope: str | None = None,
    reason: str | None = None,
    final: bool = False,
    max_attempts: int,
    trace: Trace | None = None,
    last_run: LastRun | None = None,
) -> dict[str, Any]:
    """Record a failure; the task returns to todo for a retry until max attempts, then failed.

    The error row's trace id and decision log are ``trace``'s, else the task's own fields; the
    runs row's last-run.json object is ``last_run``'s, else hb's own.
    """
    at = tx.d.time(now)
    row = _finish(tx, "failed", task_id, scope, {"now": at, "final": final, "max_attempts": max_attempts})
    status = row["status"]
    gives_up = status == "failed"
    reason = reason or "Unknown failure"
    extra = row.get("extra") or {}
    if trace is not None:
        extra = {"trace_id": trace.trace_id, "decision_log": trace.decision_log}
    tx.execute(
        "error",
        {
            "task_pk": row["pk"],
            "task_id": row["id"],
            "scope": row["scope"],
            "skill": row["skill"],
            "now": at,
            "reason": reason,
            "trace_id": extra.get("trace_id"),
            "decision_log": tx.d.json(extra.get("decision_log")),
            "false": False,
            "attempt": row["attempts"],
            "final": gives_up,
        },
    )
    if gives_up:  # the task has ended, unsuccessfully: an outcome the reports count as a failure
        _outcome(tx, row, at, now, success=False, result={"error": reason})
    record = last_run(row) if last_run is not None else last_run_record(row, now, "failed", {"error": reason})
    _run(
        tx,
        "fail",
        row["scope"],
        at,
        status="failed" if gives_up else "retry",
        worker=row["claimed_by"],
        task_id=row["id"],
        record=record,
    )
    return {**row, "status": status, "retry": not gives_up}


def clear_stale(tx: Tx, now: datetime, *, scope: str | None = None) -> list[str]:
    """Stale claims (lease expired, or no claim record) go back to todo; returns their ids."""
    if scope is not None:
        _check_scope(tx, scope)
    at = tx.d.time(now)
    scope_list: Sequence[str] = [scope] if scope is not None else [LEGACY, *scopes(tx)]
    cleared: list[str] = []
    for s in scope_list:
        ids = [r[0] for r in tx.execute("stale", {"scope": s, "now": at}).fetchall()]
        if ids:
            tx.execute("clear", {"scope": s, "now": at})
            cleared.extend(ids)
        _run(tx, "clear-stale", s, at, status="ok", detail={"cleared": ids})
    return cleared


# --- what `hb pop` prints -------------------------------------------------------


def record_from_row(row: Any) -> tasks_json.QueueRecord:
    """A task row (ORM object or column mapping) as a tasks.json record."""
    get = row.get if isinstance(row, Mapping) else lambda k: getattr(row, k)
    status = get("status")
    fields = dict(get("extra") or {})
    created_at, completed_at = get("created_at"), get("completed_at")
    if fields:
        # the file's own stamps: hb's bookkeeping times are not written into objects that lacked them
        created_at = timestamp_or_none(fields.get("created_at")) if "created_at" in fields else None
        if "completed_at" not in fields and get("scope"):
            completed_at = None
    return tasks_json.QueueRecord(
        id=str(get("id")),
        scope=get("scope") or "",
        status=str(getattr(status, "value", status)),
        title=str(get("title")),
        priority=get("priority"),
        position=get("position") or 0,
        blocked_by=get("blocked_by"),
        fields=fields,
        created_at=created_at,
        completed_at=completed_at,
        skill=get("skill"),
        project_id=get("project_id"),
        agent_id=get("agent_id"),
        user_id=get("user_id"),
    )


def task_object(row: Any) -> dict[str, Any]:
    """The task as ``hb pop`` prints it: its tasks.json object, current status included."""
    return tasks_json.render_task(record_from_row(row))
