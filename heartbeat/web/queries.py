"""The dashboard's reads: plain SQL in one read-only snapshot, each statement an index range.

A page over a ledger of a million outcomes must not read them all, so every
statement here is bounded by an index and a window:

- the queue through its own partial indexes (``ix_tasks_ready``,
  ``ix_tasks_claimed``, ``ix_tasks_scope_status_created_at``): the statements
  repeat the indexes' conditions word for word, which is how SQLite proves a
  partial index may serve them;
- outcomes, notifications and errors by time ranges with both ends (a range
  open at one end reads, to SQLite's planner, like most of the table);
- heartbeat ticks and pokes through ``ix_runs_tick_started_at`` (migration
  0007): the ``runs`` table also holds a row per queue operation, so it grows
  with the outcomes.

Standard library and :mod:`heartbeat.db.plain` only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from heartbeat.db import plain

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

MMAP_BYTES = 1 << 30  # read the file through a memory map: pages walk index ranges
# the conditions of the partial indexes ix_tasks_ready and ix_tasks_scope_status_created_at
READY = "status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"
IDLE = f"status <> 'doing' AND NOT ({READY})"
# a ready task a pop would hand out now: not deferred, waiting for no unfinished task
POPPABLE = (
    f"{READY} AND (not_before IS NULL OR not_before <= :now) AND NOT EXISTS "
    "(SELECT 1 FROM task_dependencies dependency JOIN tasks awaited ON awaited.pk = dependency.depends_on_pk "
    "WHERE dependency.task_pk = tasks.pk AND awaited.status <> 'done')"
)
STALE = "lease_expires_at IS NULL OR lease_expires_at <= :now"
HELD_STATUSES = ("todo", "waiting", "blocked", "snoozed")  # active, and neither ready nor claimed
# the round looks at an active task only when one of these holds (then the rules decide)
ENTERS_ROUND = "(next_check_at <= :now OR due_at < :now OR stale_after IS NOT NULL)"
# the runs kinds of ix_runs_tick_started_at (its condition names them as literals)
TICK_KINDS = ("heartbeat", "poke")
ROUND_KIND = "check"  # a round's own runs row, in ix_runs_kind_started_at

TASK_STATE_COLUMNS = (
    "pk",
    "id",
    "scope",
    "title",
    "status",
    "priority",
    "priority_rank",
    "position",
    "risk",
    "due_at",
    "next_check_at",
    "last_update_at",
    "created_at",
    "last_checked_at",
    "check_interval",
    "stale_after",
    "blocker",
    "next_action",
    "fallback_action",
    "last_progress_note",
    "follow_up",
    "attempts",
    "not_before",
)
_TIMES = frozenset(
    {
        "due_at",
        "next_check_at",
        "last_update_at",
        "created_at",
        "last_checked_at",
        "not_before",
        "claimed_at",
        "lease_expires_at",
        "completed_at",
        "at",
        "started_at",
        "finished_at",
        "expires_at",
    }
)


class Reads(plain.Conn):
    """The driver connection inside a page's snapshot: rows as dicts, times aware UTC."""

    def records(self, text: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        rows = self.dicts(text, params)
        for row in rows:
            for name in _TIMES.intersection(row):
                row[name] = plain.read_time(row[name])
        return rows

    def scalar(self, text: str, params: dict[str, Any] | None = None) -> Any:
        row = self.one(text, params)
        return None if row is None else row[0]


@contextmanager
def snapshot(ledger: Ledger) -> Iterator[Reads]:
    """One read-only transaction on the ledger's driver connection: every read of a page sees
    the same data, and the database refuses a write (SQLite ``query_only``, PostgreSQL a
    ``READ ONLY`` transaction)."""
    sqlite = ledger.engine_dialect() == "sqlite"
    raw = ledger.raw
    if sqlite:
        raw.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        raw.execute("PRAGMA query_only = ON")
        raw.execute("BEGIN")  # deferred: a WAL read snapshot, no lock on writers
    else:
        raw.rollback()  # end any implicit transaction left by an earlier read
        cur = raw.cursor()
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cur.close()
    try:
        yield Reads(raw, sqlite=sqlite)
    finally:
        raw.rollback()
        if sqlite:
            raw.execute("PRAGMA query_only = OFF")


def _in(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    return plain.in_list(name, list(values))


# --- the queue ------------------------------------------------------------------------------------


def scopes(db: Reads) -> list[str]:
    """Every scope tasks are in ('' = the legacy list first): one index seek per scope."""
    return [
        r[0]
        for r in db.rows(
            "WITH RECURSIVE found(scope) AS (SELECT MIN(scope) FROM tasks UNION ALL "
            "SELECT (SELECT MIN(t.scope) FROM tasks t WHERE t.scope > found.scope) FROM found "
            "WHERE found.scope IS NOT NULL) SELECT scope FROM found WHERE scope IS NOT NULL"
        )
    ]


def ready_count(db: Reads, scope: str, now: datetime) -> tuple[int, int]:
    """(tasks a pop would hand out now, tasks in the ready index) of a queue."""
    at = db.time(now)
    poppable = db.scalar(
        f"SELECT COUNT(*) FROM tasks WHERE scope = :scope AND {POPPABLE}", {"scope": scope, "now": at}
    )
    indexed = db.scalar(f"SELECT COUNT(*) FROM tasks WHERE scope = :scope AND {READY}", {"scope": scope})
    return int(poppable or 0), int(indexed or 0)


def next_ready(db: Reads, scope: str, now: datetime, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` tasks a pop would hand out, in its order (priority, then the queue's)."""
    return db.records(
        "SELECT id, scope, title, priority, skill, created_at FROM tasks "
        f"WHERE scope = :scope AND {POPPABLE} ORDER BY priority_rank, position, pk LIMIT :limit",
        {"scope": scope, "now": db.time(now), "limit": limit},
    )


def claim_counts(db: Reads, scope: str, now: datetime) -> tuple[int, int]:
    """(claimed tasks, of which stale) of a queue."""
    row = db.one(
        f"SELECT COUNT(*), SUM(CASE WHEN {STALE} THEN 1 ELSE 0 END) FROM tasks "
        "WHERE scope = :scope AND status = 'doing'",
        {"scope": scope, "now": db.time(now)},
    )
    assert row is not None
    return int(row[0] or 0), int(row[1] or 0)


def claims(db: Reads, scope: str, limit: int) -> list[dict[str, Any]]:
    """A queue's claimed tasks, the lease that runs out first (or is gone) first."""
    return db.records(
        "SELECT id, scope, title, claimed_by, claimed_at, lease_expires_at, attempts, claim FROM tasks "
        "WHERE scope = :scope AND status = 'doing' "
        "ORDER BY CASE WHEN lease_expires_at IS NULL THEN 0 ELSE 1 END, lease_expires_at, pk LIMIT :limit",
        {"scope": scope, "limit": limit},
    )


def held_count(db: Reads, scope: str) -> int:
    """Active queue tasks outside the ready and claimed indexes (waiting, blocked, snoozed, ...)."""
    total = 0
    for status in HELD_STATUSES:
        total += int(
            db.scalar(
                f"SELECT COUNT(*) FROM tasks WHERE scope = :scope AND status = '{status}' AND {IDLE} "
                "AND source <> 'todo'",
                {"scope": scope},
            )
            or 0
        )
    return total


def done_between(db: Reads, since: datetime, until: datetime) -> dict[str, int]:
    """Per scope: queue tasks completed (successful outcomes of tasks) in [since, until)."""
    return {
        scope: int(n)
        for scope, n in db.rows(
            "SELECT scope, COUNT(*) FROM outcomes WHERE completed_at >= :since AND completed_at < :until "
            "AND success AND task_pk IS NOT NULL GROUP BY scope",
            {"since": db.time(since), "until": db.time(until)},
        )
    }


# --- what enters the round --------------------------------------------------------------------------


def round_candidates(db: Reads, now: datetime, scope_names: Sequence[str]) -> list[dict[str, Any]]:
    """Active tasks the round would look at now (the rules then say which enter it), found
    through the queue's indexes: ready, claimed, and the rest of each scope per status."""
    columns = ", ".join(TASK_STATE_COLUMNS)
    at = db.time(now)
    rows = db.records(f"SELECT {columns} FROM tasks WHERE {READY} AND {ENTERS_ROUND}", {"now": at})
    rows += db.records(f"SELECT {columns} FROM tasks WHERE status = 'doing' AND {ENTERS_ROUND}", {"now": at})
    for scope in scope_names:
        for status in HELD_STATUSES:
            rows += db.records(
                f"SELECT {columns} FROM tasks WHERE scope = :scope AND status = '{status}' AND {IDLE} "
                f"AND {ENTERS_ROUND}",
                {"scope": scope, "now": at},
            )
    rows.sort(key=lambda r: (r["scope"], r["priority_rank"], r["position"], r["pk"]))
    return rows


def failed_since_success(db: Reads, pks: Sequence[int]) -> set[int]:
    """Tasks with an error recorded after their last successful outcome (the round's
    ``failed_recently``)."""
    if not pks:
        return set()
    errors: dict[int, datetime] = {}
    for start in range(0, len(pks), 500):
        names, params = _in("pk", pks[start : start + 500])
        for pk, at in db.rows(
            f"SELECT task_pk, MAX(at) FROM errors WHERE task_pk IN {names} GROUP BY task_pk", params
        ):
            errors[pk] = plain.read_time(at)  # type: ignore[assignment]
    if not errors:
        return set()
    successes: dict[int, datetime | None] = {}
    failed = list(errors)
    for start in range(0, len(failed), 500):
        names, params = _in("pk", failed[start : start + 500])
        for pk, at in db.rows(
            f"SELECT task_pk, MAX(completed_at) FROM outcomes WHERE task_pk IN {names} AND success "
            "GROUP BY task_pk",
            params,
        ):
            successes[pk] = plain.read_time(at)
    return {pk for pk, at in errors.items() if successes.get(pk) is None or at > successes[pk]}  # type: ignore[operator]


# --- decisions (notifications) ------------------------------------------------------------------------


def _decision_filter(
    ranges: Sequence[tuple[datetime, datetime]], filters: dict[str, str | None], db: Reads, prefix: str = ""
) -> tuple[str, dict[str, Any]]:
    """The WHERE of a decisions query: any of the time ranges, and each filter given."""
    params: dict[str, Any] = {}
    spans = []
    for i, (since, until) in enumerate(ranges):
        spans.append(f"({prefix}at >= :since{i} AND {prefix}at < :until{i})")
        params[f"since{i}"], params[f"until{i}"] = db.time(since), db.time(until)
    where = [f"({' OR '.join(spans)})" if spans else "1 = 0"]
    if filters.get("task"):
        where.append(f"{prefix}task_id = :task")
        params["task"] = filters["task"]
    if filters.get("kind"):
        where.append(f"{prefix}kind = :kind")
        params["kind"] = filters["kind"]
    reason = filters.get("reason")
    if reason == "sent":
        where.append(f"{prefix}decision = 'sent'")
    elif reason:
        where.append(f"{prefix}decision = 'suppressed' AND {prefix}reason = :reason")
        params["reason"] = reason
    return " AND ".join(where), params


def decision_counts(
    db: Reads, ranges: Sequence[tuple[datetime, datetime]], filters: dict[str, str | None]
) -> list[tuple[str, str, str | None, int]]:
    """(local day, decision, reason, count) of the decisions in the ranges that match."""
    where, params = _decision_filter(ranges, filters, db)
    return [
        (day, decision, reason, int(n))
        for day, decision, reason, n in db.rows(
            f"SELECT local_day, decision, reason, COUNT(*) FROM notifications WHERE {where} "
            "GROUP BY local_day, decision, reason",
            params,
        )
    ]


def decision_times(
    db: Reads, ranges: Sequence[tuple[datetime, datetime]], filters: dict[str, str | None]
) -> list[tuple[datetime, str, str | None]]:
    """(at, decision, reason) of every matching decision in the ranges (one day's worth)."""
    where, params = _decision_filter(ranges, filters, db)
    return [
        (plain.read_time(at), decision, reason)  # type: ignore[misc]
        for at, decision, reason in db.rows(
            f"SELECT at, decision, reason FROM notifications WHERE {where}", params
        )
    ]


def decisions(
    db: Reads, ranges: Sequence[tuple[datetime, datetime]], filters: dict[str, str | None], limit: int
) -> list[dict[str, Any]]:
    """The newest ``limit`` matching decisions, with the task they were about."""
    where, params = _decision_filter(ranges, filters, db, prefix="n.")
    return db.records(
        "SELECT n.at, n.local_day, n.kind, n.task_id, n.topic, n.risk, n.decision, n.reason, n.blocker, "
        "n.suggestion, n.message, t.title, t.scope FROM notifications n "
        f"LEFT JOIN tasks t ON t.pk = n.task_pk WHERE {where} ORDER BY n.at DESC, n.pk DESC LIMIT :limit",
        {**params, "limit": limit},
    )


def run_times(db: Reads, kind: str, since: datetime, until: datetime) -> list[datetime]:
    """When runs of ``kind`` (a heartbeat tick, a poke or a round) started in [since, until)."""
    if kind not in (*TICK_KINDS, ROUND_KIND):
        raise ValueError(f"no index serves runs of kind {kind!r}")
    return [
        plain.read_time(at)  # type: ignore[misc]
        for (at,) in db.rows(
            f"SELECT started_at FROM runs WHERE kind = '{kind}' AND started_at >= :since "
            "AND started_at < :until",
            {"since": db.time(since), "until": db.time(until)},
        )
    ]


# --- runs -----------------------------------------------------------------------------------------------

_RUN_COLUMNS = (
    "pk, kind, scope, status, started_at, finished_at, task_id, worker, pid, expires_at, record, detail"
)


def ticks(
    db: Reads, kinds: Sequence[str], since: datetime, until: datetime, limit: int
) -> list[dict[str, Any]]:
    """The newest ``limit`` heartbeat ticks and pokes (``kinds``) started in [since, until)."""
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        if kind not in TICK_KINDS:
            raise ValueError(f"no index serves runs of kind {kind!r}")
        rows += db.records(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE kind = '{kind}' AND started_at >= :since "
            "AND started_at < :until ORDER BY started_at DESC, pk DESC LIMIT :limit",
            {"since": db.time(since), "until": db.time(until), "limit": limit},
        )
    rows.sort(key=lambda r: (r["started_at"], r["pk"]), reverse=True)
    for row in rows:
        row["detail"], row["record"] = db.read_json(row["detail"]), db.read_json(row["record"])
    return rows[:limit]


def tick_outcomes(
    db: Reads, kinds: Sequence[str], since: datetime, until: datetime
) -> list[tuple[datetime, str, str]]:
    """(started_at, kind, status) of every tick and poke started in [since, until)."""
    out: list[tuple[datetime, str, str]] = []
    for kind in kinds:
        if kind not in TICK_KINDS:
            raise ValueError(f"no index serves runs of kind {kind!r}")
        out += [
            (plain.read_time(at), kind, status)  # type: ignore[misc]
            for at, status in db.rows(
                f"SELECT started_at, status FROM runs WHERE kind = '{kind}' AND started_at >= :since "
                "AND started_at < :until",
                {"since": db.time(since), "until": db.time(until)},
            )
        ]
    return out


def last_tick(db: Reads, kind: str) -> dict[str, Any] | None:
    """The latest run of a tick kind (``heartbeat`` or ``poke``)."""
    if kind not in TICK_KINDS:
        raise ValueError(f"no index serves runs of kind {kind!r}")
    rows = db.records(
        f"SELECT {_RUN_COLUMNS} FROM runs WHERE kind = '{kind}' ORDER BY started_at DESC, pk DESC LIMIT 1"
    )
    if not rows:
        return None
    rows[0]["detail"], rows[0]["record"] = db.read_json(rows[0]["detail"]), db.read_json(rows[0]["record"])
    return rows[0]


# --- outcomes ---------------------------------------------------------------------------------------

OUTCOME_GROUPS = ("skill", "scope", "source")


def outcome_values(
    db: Reads, by: str, since: datetime, until: datetime
) -> list[tuple[Any, bool, float | None]]:
    """(group value, success, duration) of every outcome completed in [since, until)."""
    if by not in OUTCOME_GROUPS:
        raise ValueError(f"outcomes cannot be grouped by {by!r}")
    return [
        (value, bool(success), duration)
        for value, success, duration in db.rows(
            f"SELECT {by}, success, duration_s FROM outcomes "
            "WHERE completed_at >= :since AND completed_at < :until",
            {"since": db.time(since), "until": db.time(until)},
        )
    ]


# --- one task ----------------------------------------------------------------------------------------


def task_pk(db: Reads, scope: str, task_id: str) -> int | None:
    value = db.scalar(
        "SELECT pk FROM tasks WHERE scope = :scope AND id = :id", {"scope": scope, "id": task_id}
    )
    return None if value is None else int(value)


def task_outcomes(db: Reads, pk: int, limit: int) -> list[dict[str, Any]]:
    rows = db.records(
        "SELECT completed_at, claimed_at, success, duration_s, attempt, worker, claim, result FROM outcomes "
        "WHERE task_pk = :pk ORDER BY completed_at DESC, pk DESC LIMIT :limit",
        {"pk": pk, "limit": limit},
    )
    for row in rows:
        row["success"] = bool(row["success"])
        row["result"] = db.read_json(row["result"])
    return rows


def task_errors(db: Reads, pk: int, limit: int) -> list[dict[str, Any]]:
    rows = db.records(
        "SELECT at, reason, attempt, final, resolved, claim, trace_id FROM errors "
        "WHERE task_pk = :pk ORDER BY at DESC, pk DESC LIMIT :limit",
        {"pk": pk, "limit": limit},
    )
    for row in rows:
        row["final"], row["resolved"] = bool(row["final"]), bool(row["resolved"])
    return rows


def task_decisions(db: Reads, pk: int, task_id: str, limit: int) -> list[dict[str, Any]]:
    return db.records(
        "SELECT at, kind, risk, decision, reason, message FROM notifications "
        "WHERE task_id = :id AND task_pk = :pk ORDER BY at DESC, pk DESC LIMIT :limit",
        {"id": task_id, "pk": pk, "limit": limit},
    )
