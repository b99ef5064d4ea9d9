"""The queue: hb pop / complete / fail / renew / ready / clear-stale / scopes (SPEC.md section 3).

Each operation is one transaction on the driver connection (:mod:`heartbeat.db.queue` holds its
statements; on PostgreSQL pop and complete are one statement each), followed, with the
setting ``sync.auto_export``, by the export of the queue files it changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from heartbeat.clock import isoformat
from heartbeat.context import Context
from heartbeat.db import queue as queue_db
from heartbeat.errors import HbError, InvalidState, one_line
from heartbeat.ops import checked_limit


@cache
def _dialect(sqlite: bool) -> queue_db.Dialect:
    """The queue's statements for one backend, adapted once per process (with the column names
    each returns, read on its first run)."""
    return queue_db.Dialect("sqlite" if sqlite else "postgresql")


def transaction(
    ctx: Context, *, export: bool = True, lazy: bool = False
) -> AbstractContextManager[queue_db.Tx]:
    """A queue transaction, then (``sync.auto_export``) the queue files re-rendered.
    ``lazy``: see :func:`heartbeat.db.queue.transaction` (one-statement operations on PostgreSQL)."""
    if export and ctx.settings.sync_auto_export:
        return _exporting(ctx, lazy)
    return (ctx.kept.get("queue") or _tx(ctx)).open(lazy)


def reading(ctx: Context) -> AbstractContextManager[queue_db.Tx]:
    """A transaction that only reads the queue (hb ready, hb scopes): on SQLite a deferred one,
    which reads the last commit while a writer holds the ledger, instead of waiting for it."""
    return _tx(ctx).open(read=True)


def _tx(ctx: Context) -> queue_db.Tx:
    """The context's queue statements on its connection (made once per connection, with its cursor)."""
    tx: queue_db.Tx | None = ctx.kept.get("queue")
    if tx is None:
        tx = ctx.kept["queue"] = queue_db.Tx(ctx.raw, _dialect(ctx.sqlite), lambda: ctx.zone)
        # PostgreSQL: a one-statement operation leaves the connection in autocommit for the next
        # one (switching costs a round of psycopg's own); the context switches it back for any
        # other use
        tx.left_in_autocommit = ctx.lent_in_autocommit
    return tx


@contextmanager
def _exporting(ctx: Context, lazy: bool) -> Iterator[queue_db.Tx]:
    """The transaction between two exports of the queue files: the one before reads their hand
    edits, the one after the commit writes what the operation moved."""
    from heartbeat.ops.sync.queue_files import export_queue_files

    _read_edits(ctx)
    tx = _tx(ctx)
    before = _changes(tx)
    with tx.open(lazy):
        yield tx
    # after the commit: the operation stands, whatever writing the files does
    taken: list[tuple[str, str]] = []
    claimed = None if tx.claimed is None else tx.claimed[0]
    try:
        export_queue_files(ctx, moved=tx.moved, changes=(before, _changes(tx)), claimed=claimed, taken=taken)
    except (HbError, OSError) as exc:
        ctx.notices.append(f"the queue files were not re-rendered ({one_line(exc)}); hb sync retries")
    except Exception as exc:  # a bug must not hide a committed claim from its caller: said, not raised
        what = f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        ctx.notices.append(f"the queue files were not re-rendered ({what}); hb sync retries")
    tx.taken = bool(taken)


def _read_edits(ctx: Context) -> None:
    """The queue files' hand edits taken in before an operation, so that it sees them (a task
    heartbeat.py completed is no longer claimed): a sync of each file edited since hb last read it."""
    from heartbeat.ops.sync.queue_files import export_queue_files

    export_queue_files(ctx, edits_only=True)


def _changes(tx: queue_db.Tx) -> int | None:
    """SQLite: the rows this connection has changed since it opened (None on PostgreSQL)."""
    return tx.raw.total_changes if tx.driver is None else None


def _key(row: Mapping[str, Any]) -> tuple[str, str]:
    return (row["scope"] or "", row["id"])


POP_TRIES = 3  # pops of a task another program keeps popping from tasks.json at the same moment


def pop(
    ctx: Context,
    *,
    scope: str | None = None,
    task_id: str | None = None,
    worker: str | None = None,
    lease: str | timedelta | None = None,
    accept_stale: bool = False,
    check: Callable[[Mapping[str, Any]], object] | None = None,
) -> queue_db.PopResult:
    """``hb pop``: the claimed task (or none) with what was skipped and adopted. ``check`` sees
    the claimed task before the commit; what it raises undoes the claim (``hb pop --fields``
    naming a field the task lacks: the claim no one was shown is not made)."""
    duration = ctx.lease(lease)
    now = ctx.now()
    popped_too: list[str] = []
    for _try in range(POP_TRIES):
        # lazy: PostgreSQL commits the one-statement pop as it runs, before a check could undo it
        with transaction(ctx, lazy=check is None) as tx:
            result = queue_db.pop(
                tx,
                now,
                scope=scope,
                task_id=task_id,
                worker=worker,
                lease=duration,
                accept_stale=accept_stale,
                adopt="first",
            )
            tx.moved = [] if result.task is None else [_key(result.task)]
            if result.task is not None:
                tx.claimed = (_key(result.task), result.task["claim"])
            if check is not None and result.task is not None:
                check(result.task)
        if not tx.taken or result.task is None:
            break
        popped_too.append(_give_way(ctx, result.task, now))
    else:
        raise InvalidState(
            f"tasks.json: another program (heartbeat.py) popped each task hb claimed "
            f"({', '.join(popped_too)}); hb's claims undone, nothing popped (try again)"
        )
    if result.exhausted is not None:
        raise result.exhausted  # after the commit: the pop's runs row stays
    return result


def _give_way(ctx: Context, task: Mapping[str, Any], now: datetime) -> str:
    """A pop's task that heartbeat.py popped from tasks.json between hb's read of the file and
    the claim (the export after the commit found it moved to in_progress there): hb's claim is
    undone before anyone is handed it, and the task stays doing, heartbeat.py's (a claim without
    a record, as its pop reads when synced). The caller pops again."""
    with transaction(ctx, export=False) as tx:  # the files show no claim: nothing to re-render
        queue_db.yield_claim(tx, now, _key(task), task["claim"])
    ctx.notices.append(
        f"{task['id']}: another program (heartbeat.py) popped it from tasks.json as hb claimed it; "
        "it is that program's now, hb's claim is undone (popping again)"
    )
    return str(task["id"])


def complete(
    ctx: Context, task_id: str, scope: str | None = None, outcome: Any = None, *, claim: str | None = None
) -> dict[str, Any]:
    """``hb complete``: see :meth:`heartbeat.Ledger.complete`."""
    now = ctx.now()
    with transaction(ctx, lazy=True) as tx:
        row = queue_db.complete(tx, now, task_id, scope=scope, outcome=outcome, claim=claim)
        tx.moved = [_key(row)]
    return {"id": row["id"], "scope": row["scope"] or None, "status": "done", "claim": row["claim"]}


def fail(
    ctx: Context,
    task_id: str,
    scope: str | None = None,
    reason: str | None = None,
    final: bool = False,
    *,
    claim: str | None = None,
) -> dict[str, Any]:
    """``hb fail``: see :meth:`heartbeat.Ledger.fail`."""
    now = ctx.now()
    with transaction(ctx) as tx:
        row = queue_db.fail(
            tx,
            now,
            task_id,
            scope=scope,
            reason=reason,
            final=final,
            max_attempts=ctx.settings.queue_max_attempts,
            claim=claim,
        )
        tx.moved = [_key(row)]
    return {
        "id": row["id"],
        "scope": row["scope"] or None,
        "status": row["status"],
        "attempts": row["attempts"],
        "retry": row["retry"],
        "claim": row["claim"],
    }


def renew(
    ctx: Context, task_id: str, claim: str, *, scope: str | None = None, lease: str | timedelta | None = None
) -> dict[str, Any]:
    """``hb renew``: see :meth:`heartbeat.Ledger.renew`."""
    duration = ctx.lease(lease)
    now = ctx.now()
    if ctx.settings.sync_auto_export:
        _read_edits(ctx)  # a claim the files ended (heartbeat.py's complete or fail) is lost
    with transaction(ctx, export=False) as tx:  # the files hold no lease: nothing to re-render
        row = queue_db.renew(tx, now, task_id, claim=claim, lease=duration, scope=scope)
    return {
        "id": row["id"],
        "scope": row["scope"] or None,
        "claim": row["claim"],
        "claimed_by": row["claimed_by"],
        "lease_expires_at": isoformat(row["lease_expires_at"], ctx.zone),
    }


def ready(
    ctx: Context, *, scope: str | None = None, explain: bool = False, limit: int | None = None
) -> list[dict[str, Any]]:
    """``hb ready``: see :meth:`heartbeat.Ledger.ready`."""
    limit = checked_limit(limit)
    now = ctx.now()
    with reading(ctx) as tx:
        rows = queue_db.ready(tx, now, scope=scope, explain=explain, limit=limit)
        queues = queue_db.scopes(tx) if scope is None else []
        stale = queue_db.stale_ids(tx, now, scope) if not queues else []
    if queues:
        ctx.notices.append(
            f"scoped queues exist: a pop needs --scope (one of: {', '.join(queues)}; '' for the "
            "legacy list), and so does hb ready"
        )
    if stale:
        ctx.notices.append(
            f"stale claims ({', '.join(stale)}) hold the queue: pop exits 12 until hb clear-stale, "
            "or pop --accept-stale takes them over, one per pop"
        )
    return [_readiness(ctx, row) for row in rows]


def _readiness(ctx: Context, row: dict[str, Any]) -> dict[str, Any]:
    waiting = row["waiting"]
    return {
        "id": row["id"],
        "scope": row["scope"] or None,
        "title": row["title"],
        "status": row["status"],
        "priority": row["priority"],
        "ready": row["ready"],
        "reasons": row["reasons"],
        "claimed_by": row["claimed_by"] if row["status"] == "doing" else None,
        "lease_expires_at": isoformat(row["lease_expires_at"], ctx.zone),
        "not_before": isoformat(row["not_before"], ctx.zone),
        "blocked_on": row["blocked_by"],
        "waiting_for": [dep_id for dep_id, _status in waiting],
        "dependencies": [{"id": dep_id, "status": status} for dep_id, status in waiting],
    }


def clear_stale(ctx: Context, scope: str | None = None) -> list[str]:
    """``hb clear-stale``: the ids of the stale claims returned to todo."""
    now = ctx.now()
    with transaction(ctx) as tx:
        return queue_db.clear_stale(tx, now, scope=scope)


def scopes(ctx: Context) -> list[dict[str, Any]]:
    """``hb scopes``: each scoped queue with its counts."""
    with reading(ctx) as tx:
        return queue_db.scope_counts(tx)
