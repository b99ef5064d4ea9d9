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

Every claim has a token (``tasks.claim``), drawn in Python and set by the
claiming statement itself. ``complete`` / ``fail`` / ``renew`` given a token
make it a condition of their one UPDATE (``... AND claim = :claim``); only
when that matched nothing does a second query find out why, to name who holds
the task now (:class:`~heartbeat.errors.ClaimLost`, exit 15). A fenced
completion or failure leaves its token on the row, so that a retry of it is
told the claim ended by its own holder's hand (exit 1); ``complete`` / ``fail``
without a token act on the id and clear the task's claim (the outcome or error
row names the claim closed), so that its holder's token is refused as lost.
PostgreSQL clears it in the same statement, SQLite by a second one on the same
row (no page more). A deferred task (``not_before``) and one with an
unfinished dependency (``task_dependencies``) are conditions of the claim too:
a time comparison on the row and a NOT EXISTS probe of the dependency table's
primary key per candidate.

Every index a queue operation touches is a page written per commit, so the
indexes the reports read leave the queue's rows out where they can (see
migration 0003), and a claim writes nothing but its task row (its token,
holder and lease are there, and then on the outcome or error row that ends
it): a pop writes about four pages, a completion about nine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from heartbeat.db import plain
from heartbeat.errors import (
    BlockedEntry,
    ClaimLost,
    HbError,
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
    "claim",
    "not_before",
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
    "claim = :claim, claimed_at = :now, claimed_by = :worker, lease_expires_at = :lease_until, "
    "attempts = attempts + 1, updated_at = :now, version = version + 1"
)
# Markdown TODO entries are the agent's checklist, not queue work: never popped.
# READY and IDLE are the conditions of the partial indexes ix_tasks_ready and
# ix_tasks_scope_status_created_at; a query names them to read through them.
READY = "status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"
IDLE = f"status <> 'doing' AND NOT ({READY})"
# A ready task is also not deferred past now and waits for no unfinished task (a dependency
# that failed or was cancelled keeps it waiting: only done releases it).
NOT_DEFERRED = "(not_before IS NULL OR not_before <= :now)"
NO_OPEN_DEPENDENCY = (
    "NOT EXISTS (SELECT 1 FROM task_dependencies dependency JOIN tasks awaited "
    "ON awaited.pk = dependency.depends_on_pk WHERE dependency.task_pk = tasks.pk "
    "AND awaited.status <> 'done')"
)
_POPPABLE = f"{READY} AND {NOT_DEFERRED} AND {NO_OPEN_DEPENDENCY}"
_READY = f"SELECT pk FROM tasks WHERE scope = :scope AND {_POPPABLE} ORDER BY {{order}} LIMIT 1"
_ACTIVE = "status IN ('todo', 'doing', 'waiting', 'blocked', 'snoozed')"
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
# "no scoped queue exists" as the greatest scope being '' (the legacy list): one step down the end of
# uq_tasks_scope_id on both backends (PostgreSQL's planner may read `scope > ''` with a sequential
# scan of every task, which it did on a ledger of legacy tasks: a millisecond per 5,000 tasks)
_SCOPED = "(SELECT max(scope) FROM tasks) > ''"
_NO_SCOPED = "coalesce((SELECT max(scope) FROM tasks), '') = ''"

SQL = {
    "any_scoped": f"SELECT 1 WHERE {_SCOPED}",
    # when the checked claim took nothing, in one round trip: are there queues, is this one
    # known, are claims stale?
    "preflight": (
        f"SELECT {_SCOPED} AS scoped, "
        "(SELECT 1 FROM tasks WHERE scope = :scope LIMIT 1) AS known, "
        f"(SELECT count(*) FROM tasks WHERE {_STALE}) AS stale"
    ),
    "scopes": "SELECT scope FROM tasks WHERE scope > '' GROUP BY scope ORDER BY min(pk)",
    "scope_exists": "SELECT 1 FROM tasks WHERE scope = :scope LIMIT 1",
    "stale": f"SELECT id FROM tasks WHERE {_STALE} ORDER BY position, pk",
    # a takeover: the stale claims in queue order (SKIP LOCKED: one a renewal or another
    # takeover holds is not stale for long), then a new claim on each one taken
    "stale_claims": (
        f"SELECT pk, id, claimed_by FROM tasks WHERE {_STALE} ORDER BY position, pk LIMIT :limit{{lock}}"
    ),
    "stale_claim_id": f"SELECT pk, id, claimed_by FROM tasks WHERE {_STALE} AND id = :id{{lock}}",
    "take_over": f"UPDATE tasks SET {_CLAIM_SET} WHERE pk = :pk AND {_STALE} RETURNING {_RETURNING}",
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
        f"WHERE scope = :scope AND id = :id AND status = 'todo' AND {NOT_DEFERRED} "
        f"AND {NO_OPEN_DEPENDENCY} RETURNING {_RETURNING}"
    ),
    "lookup": (
        "SELECT pk, status, blocked_by, not_before, claimed_by, lease_expires_at "
        "FROM tasks WHERE scope = :scope AND id = :id"
    ),
    # the unfinished tasks a task waits for, in the order they were named
    "waiting_for": (
        "SELECT awaited.id, awaited.status FROM task_dependencies dependency JOIN tasks awaited "
        "ON awaited.pk = dependency.depends_on_pk WHERE dependency.task_pk = :pk "
        "AND awaited.status <> 'done' ORDER BY awaited.pk"
    ),
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
    # a task that gives up has ended: its completed_at is set, as heartbeat.py sets it on fail
    "failed": (
        "UPDATE tasks SET status = "
        "CASE WHEN :final OR attempts >= :max_attempts THEN 'failed' ELSE 'todo' END, "
        "completed_at = CASE WHEN :final OR attempts >= :max_attempts THEN :now ELSE completed_at END, "
        f"{_RELEASE} WHERE {{target}} RETURNING {_RETURNING}"
    ),
    # a renewal is bookkeeping, like a check time: no new version, no updated_at
    "renew": f"UPDATE tasks SET lease_expires_at = :lease_until WHERE {{target}} RETURNING {_RETURNING}",
    # a claim another program's pop of the same task beat (see yield_claim): the task stays doing,
    # the other program's, with no claim of hb's (as its pop reads when synced), its attempt undone
    "yield_claim": (
        "UPDATE tasks SET claim = NULL, claimed_at = NULL, claimed_by = NULL, lease_expires_at = NULL, "
        "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = :now, "
        "version = version + 1 WHERE scope = :scope AND id = :id AND status = 'doing' AND claim = :claim "
        "RETURNING id"
    ),
    # SQLite: a completion or failure without a token clears the task's claim once its own
    # statement has returned the claim it closed (see _finish_row)
    "unclaim": "UPDATE tasks SET claim = NULL WHERE pk = :pk",
    "clear": (
        "UPDATE tasks SET status = 'todo', claim = NULL, claimed_at = NULL, claimed_by = NULL, "
        f"lease_expires_at = NULL, updated_at = :now, version = version + 1 WHERE {_STALE}"
    ),
    # hb ready: what a pop would hand out, in its order; with --explain every active queue task
    "ready": (
        f"SELECT {_RETURNING} FROM tasks WHERE scope = :scope AND {_POPPABLE} ORDER BY {{order}} LIMIT :limit"
    ),
    "active": (
        f"SELECT {_RETURNING} FROM tasks WHERE {_ACTIVE} AND source <> 'todo' "
        "ORDER BY scope, priority_rank, position, pk"
    ),
    "active_in_scope": (
        f"SELECT {_RETURNING} FROM tasks WHERE scope = :scope AND {_ACTIVE} AND source <> 'todo' "
        "ORDER BY priority_rank, position, pk"
    ),
    "open_dependencies": (
        "SELECT dependency.task_pk, awaited.id, awaited.status FROM task_dependencies dependency "
        "JOIN tasks awaited ON awaited.pk = dependency.depends_on_pk "
        "JOIN tasks waiting ON waiting.pk = dependency.task_pk "
        f"WHERE awaited.status <> 'done' AND waiting.{_ACTIVE} "
        "ORDER BY dependency.task_pk, awaited.pk"
    ),
    "run": (
        "INSERT INTO runs (kind, scope, status, started_at, finished_at, task_id, worker, record, detail) "
        "VALUES (:kind, :scope, :status, :now, :now, :task_id, :worker, {json:record}, {json:detail})"
    ),
    "outcome": (
        "INSERT INTO outcomes (task_pk, task_id, scope, source, skill, success, result, claimed_at, "
        "completed_at, duration_s, attempt, worker, claim) VALUES (:task_pk, :task_id, :scope, :source, "
        ":skill, :success, {json:result}, :claimed_at, :now, :duration_s, :attempt, :worker, :claim)"
    ),
    "error": (
        "INSERT INTO errors (task_pk, task_id, scope, skill, at, reason, trace_id, decision_log, resolved, "
        "attempt, final, claim, extra) VALUES (:task_pk, :task_id, :scope, :skill, :now, :reason, :trace_id, "
        "{json:decision_log}, :false, :attempt, :final, :claim, {json:item})"
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


# hb's own completion is its outcome row: the last-run.json record is read from it (with its task)
# when last-run.json is rendered, so no runs row is written. after_run, the newest runs row when the
# completion was written, orders it among the records the runs rows hold (see LAST_RUN).
_AFTER_RUN = "(SELECT coalesce(max(pk), 0) FROM runs)"
_OUTCOME_COLUMNS = (
    "task_pk, task_id, scope, source, skill, success, result, claimed_at, completed_at, duration_s, "
    "attempt, worker, claim, after_run"
)
# the completion's row, as the outcome row built from it needs it: the caller's few columns
SQL["done_short"] = (
    f"UPDATE tasks SET status = 'done', completed_at = :now, {_RELEASE} "
    "WHERE {target} RETURNING pk, id, scope, claim, claimed_at"
)
# the outcome row of a task just completed, built by the database from the task's row; its claim
# is the caller's (the one the completion closed: without a token, the row no longer holds it)
SQL["outcome_of_task"] = (
    f"INSERT INTO outcomes ({_OUTCOME_COLUMNS}) SELECT pk, id, scope, source, skill, :true, "
    "{json:result}, claimed_at, :now, :duration_s, attempts, claimed_by, :claim, "
    f"{_AFTER_RUN} FROM tasks WHERE pk = :pk"
)


def _done_pg(done: str) -> str:
    """PostgreSQL's completion: the completing update ``done`` and the outcome row, in one
    statement. The common pop and every completion are ONE statement each, sent in autocommit (one
    round trip, like a bare SKIP LOCKED queue): a pop is its claim alone (the claim lives on the
    task row), a completion a data-modifying CTE that writes the outcome row with it."""
    return (
        f"WITH c AS ({done}), "
        f"outcome AS (INSERT INTO outcomes ({_OUTCOME_COLUMNS}) SELECT c.pk, c.id, c.scope, c.source, "
        "c.skill, true, CAST(:result AS json), c.claimed_at, :now, "
        "EXTRACT(EPOCH FROM CAST(:now AS timestamptz) - c.claimed_at), c.attempts, c.claimed_by, c.claim, "
        f"{_AFTER_RUN} FROM c) "
        "SELECT c.pk, c.id, c.scope, c.claim, c.claimed_at FROM c"  # what the caller still needs
    )


SQL["done_pg"] = _done_pg(SQL["done"])


def _unclaiming(ending: str) -> str:
    """PostgreSQL's form of ``ending`` (``UPDATE tasks SET ... WHERE {target} RETURNING ...``, a
    completion or failure) for a caller without a token: it also clears the task's claim, so that
    the claim's holder is told another hand ended it (exit 15, see :func:`claim_lost`), and returns
    the claim it closed as ``claim`` for the outcome and error rows (RETURNING gives new values).
    The closed claim is read from the row locked first, so it is the one the update ends even
    when a takeover committed in between."""
    update, _, returning = ending.partition(" WHERE {target} RETURNING ")
    closed = ", ".join("ended_claim AS claim" if c == "claim" else c for c in returning.split(", "))
    return (
        f"{update}, claim = NULL FROM (SELECT pk AS ended_pk, claim AS ended_claim FROM tasks "
        f"WHERE {{target}} FOR UPDATE) ended WHERE pk = ended_pk RETURNING {closed}"
    )


# PostgreSQL's statements, by key, in place of SQL's for a completion or failure without a token
# (SQLite runs SQL's, which leave the claim, then "unclaim"); keyed like SQL's (_by_id, ...)
UNCLAIMED_PG = {key: _unclaiming(SQL[key]) for key in ("done", "failed", "done_short")}
UNCLAIMED_PG["done_pg"] = _done_pg(UNCLAIMED_PG["done"])

# last-run.json: the newest record, of a runs row (a failure, the heartbeat.py drop-in's records, a
# hand edit taken in) or of a completion hb recorded without one (its outcome row and its task). A
# completion is the newer when it saw the run: after_run >= the run's pk (on PostgreSQL a run
# committed while the completion ran is not seen, and the two, concurrent, may count either way).
LAST_RUN = {
    "record": "SELECT pk, record FROM runs WHERE record IS NOT NULL ORDER BY pk DESC LIMIT 1",
    "completion": (
        # named as a task row's columns, for last_run_record
        "SELECT o.after_run, o.task_id AS id, o.scope, o.skill, o.result, o.completed_at, t.title, "
        "t.project_id, t.agent_id, t.user_id, t.extra FROM outcomes o LEFT JOIN tasks t ON t.pk = o.task_pk "
        "WHERE o.after_run IS NOT NULL ORDER BY o.pk DESC LIMIT 1"
    ),
    # the task of the newest such completion (one step of ix_outcomes_last_run)
    "completed_task": "SELECT task_pk FROM outcomes WHERE after_run IS NOT NULL ORDER BY pk DESC LIMIT 1",
    # the record kept as it reads now, before the task it is read from changes or goes
    "kept": (
        "INSERT INTO runs (kind, scope, status, started_at, finished_at, task_id, record) "
        "VALUES ('last-run', :scope, 'ok', :at, :at, :task_id, {json:record})"
    ),
}


for _key in [k for k, v in SQL.items() if "{target}" in v]:
    _text = SQL.pop(_key)
    _unclaimed = UNCLAIMED_PG.pop(_key, None)
    for _suffix, _target in (("_by_id", _TARGET_ID), ("_by_scope_id", _TARGET_SCOPE_ID)):
        SQL[_key + _suffix] = _text.replace("{target}", _target)
        # the fenced form: the caller's token must still be the task's claim
        SQL[_key + _suffix + "_claimed"] = _text.replace("{target}", f"{_target} AND claim = :claim")
        if _unclaimed is not None:
            UNCLAIMED_PG[_key + _suffix] = _unclaimed.replace("{target}", _target)
for _key in [k for k, v in SQL.items() if "{order}" in v]:
    _text = SQL[_key]
    SQL[_key] = _text.replace("{order}", PRIORITY_ORDER)
    SQL[f"{_key}_in_file_order"] = _text.replace("{order}", FILE_ORDER)


class Dialect:
    """The SQL of this module for one backend: parameter style, JSON and time values."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sqlite = name == "sqlite"
        self.statements: dict[str, str] = {key: self._adapt(text) for key, text in SQL.items()}
        if not self.sqlite:
            self.statements.update((key, self._adapt(text)) for key, text in UNCLAIMED_PG.items())
        self.names: dict[str, list[str]] = {}  # the column names of each statement's rows
        # a time parameter (plain.bind_time for this backend)
        self.time: Callable[[datetime | None], Any] = plain.postgres_time
        if self.sqlite:
            self.time = plain.sqlite_time

    def _adapt(self, text: str) -> str:
        text = text.replace("{lock}", "" if self.sqlite else " FOR UPDATE SKIP LOCKED")
        return plain.adapt(text, sqlite=self.sqlite)

    def sql(self, key: str) -> str:
        return self.statements[key]

    read_time = staticmethod(plain.read_time)

    def read_json(self, value: Any) -> Any:
        """As :meth:`heartbeat.db.plain.Conn.read_json`: psycopg decoded the value already."""
        return plain.json_value(value) if self.sqlite and isinstance(value, str) else value

    def json(self, value: Any) -> str | None:
        if not self.sqlite:
            return plain.postgres_json(value)
        return None if value is None else _encode(value)


_encode = plain.json_text
_TIMES = ("created_at", "completed_at", "claimed_at", "lease_expires_at", "not_before")
_CLAIMED_TIMES = ("created_at", "completed_at", "not_before")  # a claim set the other two


# The workspace's zone, asked for only when a message names a time (a pop need not load it).
Zone = Callable[[], tzinfo] | None


class Tx:
    """The queue's statements on one driver connection, by key, one transaction at a time
    (:class:`transaction` opens and ends each): a Tx and its cursor can serve every transaction of
    their connection in turn."""

    __slots__ = (
        "_zone",
        "autocommit",
        "claimed",
        "cur",
        "d",
        "driver",
        "lazy",
        "left_in_autocommit",
        "moved",
        "raw",
        "read",
        "taken",
    )

    def __init__(self, raw: Any, dialect: Dialect, zone: Zone = None) -> None:
        self.raw = raw
        self.d = dialect
        self.cur = raw.cursor()
        self.driver: Any = None if dialect.sqlite else plain.driver(raw)  # psycopg's connection itself
        self._zone = zone
        # PostgreSQL in autocommit: each statement its own transaction until begin() (see
        # transaction(lazy=True)); False once a transaction is open (always on SQLite)
        self.autocommit = False
        # called when a lazy transaction ends with the connection still in autocommit, where it is
        # left for the next one: the connection's other users must take it back first (None: the
        # connection is put back in transaction mode at once)
        self.left_in_autocommit: Callable[[], None] | None = None
        # the (scope, id) of the tasks the operation changed, each once, when it says so: the
        # export after it then rewrites only those (None: it does not say; all is rendered)
        self.moved: list[tuple[str, str]] | None = None
        # a pop's claimed task, (scope, id), and its token; ``taken``: the export after the commit
        # found that another program (heartbeat.py) popped that task from tasks.json meanwhile
        self.claimed: tuple[tuple[str, str], str] | None = None
        self.taken = False
        self.lazy = False
        self.read = False

    # --- one transaction at a time: ``with tx.open(lazy) as tx: ...`` (the Tx is its own context
    # manager, made once: every queue operation opens one, and an object per opening costs more
    # than the rest of the bookkeeping)

    def open(self, lazy: bool = False, *, read: bool = False) -> Tx:
        """This Tx, ready to open a write transaction on ``with`` (SQLite: BEGIN IMMEDIATE;
        PostgreSQL: implicit BEGIN). ``lazy`` (PostgreSQL): the statements run in autocommit, each
        its own transaction, until the operation calls :meth:`begin`: an operation that is one
        statement costs one round trip (no BEGIN, no COMMIT). On SQLite ``lazy`` changes nothing.
        ``read``: a transaction that only reads (SQLite: a deferred BEGIN, which waits for no
        writer)."""
        self.lazy = lazy
        self.read = read
        return self

    def __enter__(self) -> Tx:
        self.moved = None
        self.claimed = None
        self.taken = False
        if self.driver is None:  # SQLite
            self.cur.execute("BEGIN" if self.read else "BEGIN IMMEDIATE")
        elif self.lazy:
            if not self.driver.autocommit:  # (a lazy transaction before this one may have left it so)
                self.driver.autocommit = True
            self.autocommit = True
        elif self.driver.autocommit:
            self.driver.autocommit = False
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.read = False  # the next opening says again what it is
        if self.autocommit:  # every statement stood alone: nothing to commit
            self.autocommit = False
            if self.left_in_autocommit is None:
                self.driver.autocommit = False
            else:
                self.left_in_autocommit()
        elif kind is None:
            self.raw.commit()
        else:
            self.raw.rollback()

    def begin(self) -> None:
        """Open the transaction now (after statements that each stood alone in autocommit)."""
        if self.autocommit:
            self.driver.autocommit = False  # the next statement begins a transaction
            self.autocommit = False

    @property
    def zone(self) -> tzinfo | None:
        """The workspace's zone, for the times a message names (None: UTC); looked up on first use."""
        return self._zone() if self._zone is not None else None

    def execute(self, key: str, params: Mapping[str, Any] | None = None) -> Any:
        self.cur.execute(self.d.statements[key], params if isinstance(params, dict) else dict(params or {}))
        return self.cur

    def rows(self, key: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self.execute(key, params)
        found = cur.fetchall()
        if not found:
            return []
        names = self.d.names.get(key) or self._names(key)
        return [dict(zip(names, row, strict=True)) for row in found]

    def row(self, key: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The one row of statement ``key`` as a dict (None: no row). The statement is read to its
        end, so that nothing of it stays open on the cursor after the transaction."""
        cur = self.cur
        cur.execute(self.d.statements[key], params)
        found = cur.fetchall()
        if not found:
            return None
        names = self.d.names.get(key) or self._names(key)
        return dict(zip(names, found[0], strict=True))

    def _names(self, key: str) -> list[str]:
        """The column names of statement ``key``'s rows, from the cursor that just ran it, kept
        (a statement's columns never change: psycopg builds them at a cost)."""
        names = self.d.names[key] = [c[0] for c in self.cur.description]
        return names

    def task(self, row: dict[str, Any], times: tuple[str, ...] = ()) -> dict[str, Any]:
        """Normalise a task row read through this module (times aware UTC, JSON decoded);
        ``times``: only these time columns are still as stored (the caller set the others)."""
        read_time = self.d.read_time
        for name in times or _TIMES:
            value = row.get(name)
            if value is not None:
                row[name] = read_time(value)
        row["extra"] = self.d.read_json(row.get("extra"))
        return row


def transaction(tx: Tx, *, lazy: bool = False) -> Tx:
    """``tx`` as the context manager of one write transaction (see :meth:`Tx.open`)."""
    return tx.open(lazy)


# Builds a finished task's last-run.json object from its row (the row as the operation left it).
LastRun = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Trace:
    """What the caller says of one run (heartbeat.py's --trace-id / --decision-log), in place of
    the task's own ``trace_id`` / ``decision_log`` fields."""

    trace_id: str | None = None
    decision_log: Any = None


class PopResult:
    """What a pop did. (A plain class: one is made for every pop.)"""

    __slots__ = ("adopted", "adopted_from", "exhausted", "skipped", "task")

    def __init__(self, task: dict[str, Any] | None) -> None:
        self.task = task  # the claimed row (its ``claim`` is the token), None = nothing to pop
        self.skipped: list[tuple[str, str]] = []  # (id, blocker) passed over
        self.adopted: list[str] = []  # stale claims re-leased to this worker
        self.adopted_from: dict[str, str | None] = {}  # adopted id -> its last holder
        self.exhausted: QueueExhausted | None = None  # exit 10, raised once the pop committed


def new_claim() -> str:
    """A fresh claim token: 96 random bits as hex (no character a shell or an option parser minds),
    from the system's randomness as secrets.token_hex(12) draws it."""
    return os.urandom(12).hex()


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
    """Per queue: ready / in_progress / completed / blocked / total (heartbeat.py's `scopes`)."""
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
    adopt: str = "all",
) -> PopResult:
    """Claim the next task (or ``task_id``) under a new claim token; raises the queue errors (exit 10-14).

    The next task is the first ready one by priority, then in the queue's order; with
    ``file_order``, the first in the queue's order whatever its priority. A ready task is not
    deferred past ``now`` and waits for no unfinished task. ``accept_stale`` takes stale claims
    over: with ``adopt="all"`` (the heartbeat.py drop-in) every one, each under its own token,
    then the pop goes on; with ``adopt="first"`` (hb's own pop) the first one in queue order is
    the task this pop returns, and a ready task is popped only when no stale claim is left.
    """
    time = tx.d.time
    at = time(now)
    until = now + lease
    order = "_in_file_order" if file_order else ""
    claim = {"scope": scope or LEGACY, "now": at, "worker": worker, "lease_until": time(until)}
    claim["claim"] = new_claim()
    if task_id is None and not accept_stale:
        # the common pop: one statement that claims only when no check would fail (PostgreSQL:
        # in autocommit, one round trip); the claim lives on the task row, so nothing else is written
        key = ("claim_checked" if scope is not None else "claim_checked_legacy") + order
        row = tx.row(key, claim)
        if row is not None:
            # the claim's times are the ones it was given (the stored text of these instants)
            row["claimed_at"], row["lease_expires_at"] = now, until
            task = tx.task(row, _CLAIMED_TIMES)
            result = PopResult(task)
            if scope:
                result.skipped = _skipped(tx, scope, task["position"])
            return result
    result = PopResult(None)
    tx.begin()
    scope = _preflight(tx, scope, at, accept_stale)
    claim["scope"] = scope
    if accept_stale:
        taken = _take_over(tx, result, claim, task_id=task_id, adopt=adopt)
        if taken is not None:
            result.task = taken
            return _popped(tx, result, scope, at, worker, taken["id"])

    if task_id is not None:
        found = tx.rows("lookup", {"scope": scope, "id": task_id})
        if not found:
            raise NotFound(f"no task with id {task_id!r}" + (f" in {scope}" if scope else ""))
        row = found[0]
        if row["blocked_by"] is not None:
            raise BlockedEntry(f"task {task_id!r} is blocked ({row['blocked_by']})")
        if row["status"] != "todo":
            raise InvalidState(f"task {task_id!r} is {row['status']}, not todo")
        _check_poppable(tx, task_id, row, now)
        rows = tx.rows("claim_id", {**claim, "id": task_id})
    else:
        rows = tx.rows("claim" + order, claim)
    if rows:
        result.task = tx.task(rows[0])
    return _popped(tx, result, scope, at, worker, task_id)


def _take_over(
    tx: Tx, result: PopResult, claim: dict[str, Any], *, task_id: str | None, adopt: str
) -> dict[str, Any] | None:
    """Stale claims re-leased under new tokens (recorded in ``result``); the one this pop returns.

    ``adopt="first"``: the first stale claim in queue order (or ``task_id``'s, if it is one)
    becomes this pop's task. ``adopt="all"``: every stale claim is re-leased, and none is
    returned: the pop goes on to a ready task.
    """
    if adopt not in ("all", "first"):
        raise ValueError(f"adopt={adopt!r}: expected 'all' or 'first'")
    where = {"scope": claim["scope"], "now": claim["now"]}
    if adopt == "all":
        stale = tx.rows("stale_claims", {**where, "limit": _NO_LIMIT})
    elif task_id is not None:
        stale = tx.rows("stale_claim_id", {**where, "id": task_id})
    else:
        stale = tx.rows("stale_claims", {**where, "limit": 1})
    taken = None
    for candidate in stale:
        rows = tx.rows("take_over", {**claim, "pk": candidate["pk"], "claim": new_claim()})
        if not rows:
            continue
        result.adopted.append(candidate["id"])
        result.adopted_from[candidate["id"]] = candidate["claimed_by"]
        if adopt == "first":
            taken = tx.task(rows[0])
    return taken


_NO_LIMIT = 2**31 - 1  # LIMIT takes a number on both backends; this one is "all of them"


def _check_poppable(tx: Tx, task_id: str, row: Mapping[str, Any], now: datetime) -> None:
    """``pop --id`` of a task a pop would pass over: exit 13, saying until when or for what."""
    from heartbeat.clock import isoformat

    not_before = tx.d.read_time(row["not_before"])
    if not_before is not None and not_before > now:
        raise BlockedEntry(f"task {task_id!r} is deferred until {isoformat(not_before, tx.zone)}")
    waiting = tx.rows("waiting_for", {"pk": row["pk"]})
    if waiting:
        names = ", ".join(f"{w['id']} ({w['status']})" for w in waiting)
        raise BlockedEntry(f"task {task_id!r} waits for {names}")


def _skipped(tx: Tx, scope: str, upto: int | None) -> list[tuple[str, str]]:
    """The blocked entries of a scoped queue a pop passed over (up to the position it took)."""
    return [
        (r["id"], r["blocked_by"])
        for r in tx.rows("blocked", {"scope": scope})
        if upto is None or r["position"] <= upto
    ]


def _popped(
    tx: Tx, result: PopResult, scope: str, at: Any, worker: str | None, task_id: str | None
) -> PopResult:
    """After a claim that was not the common one: the blocked entries passed over, a runs row
    when the pop took nothing or took stale claims over, exit 10 when exhausted.

    A claim needs no runs row of its own: its token, holder and time live on the task row, then on
    the outcome or error row that ends it. last-run.json is not a pop's to change (heartbeat.py's
    pop does not log a run either)."""
    if scope != LEGACY:
        result.skipped = _skipped(tx, scope, result.task["position"] if result.task else None)
    got = result.task["id"] if result.task else None
    if got is None or result.adopted:
        detail: dict[str, Any] | None = None
        if result.task is not None:
            detail = {"claim": result.task["claim"]}
            if got in result.adopted_from:
                detail["took_over_from"] = result.adopted_from[got]
        others = {tid: held for tid, held in result.adopted_from.items() if tid != got}
        if others:
            detail = {**(detail or {}), "adopted": others}
        status = "ok" if got else ("exhausted" if scope else "empty")
        _run(tx, "pop", scope, at, status=status, worker=worker, task_id=got, detail=detail)
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


def _finish(
    tx: Tx, key: str, task_id: str, scope: str | None, params: dict[str, Any], claim: str | None = None
) -> dict[str, Any]:
    """Update the claimed task ``task_id`` with statement ``key``; explain why when nothing matched.

    With ``claim``, the statement's own condition is that the token is still the task's claim.
    """
    return tx.task(_finish_row(tx, key, task_id, scope, params, claim))


def _finish_row(
    tx: Tx, key: str, task_id: str, scope: str | None, params: dict[str, Any], claim: str | None = None
) -> dict[str, Any]:
    """:func:`_finish`'s row as the statement returned it (``params`` gain the id, scope and claim).

    Without ``claim`` (a completion or failure by id alone: a renewal always has one) the task's
    claim ends as another hand's: the row is left without it, so that its holder's token is
    refused as lost (exit 15) rather than as ended by its own hand (exit 1), and the row returned
    names the claim closed, for the outcome and error rows. PostgreSQL's statement does both
    (:data:`UNCLAIMED_PG`); on SQLite, whose RETURNING gives new values, the statement leaves the
    claim for RETURNING to give and a second one clears it (the same row: no page more to write).
    """
    params["id"] = task_id
    if claim is not None:
        params["claim"] = claim
    if scope is None:
        row = tx.row(f"{key}_by_id_claimed" if claim is not None else f"{key}_by_id", params)
    else:
        params["scope"] = scope
        row = tx.row(f"{key}_by_scope_id_claimed" if claim is not None else f"{key}_by_scope_id", params)
    if row is not None:
        if claim is None and tx.d.sqlite and row["claim"] is not None:
            tx.execute("unclaim", {"pk": row["pk"]})
        return row
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
    if claim is not None:
        raise claim_lost(tx.task(found[0]), claim, tx.zone)
    raise InvalidState(f"task {task_id!r} is {found[0]['status']}, not claimed (pop it first)")


def claim_lost(row: Mapping[str, Any], claim: str, zone: tzinfo | None = None) -> HbError:
    """Why ``claim`` no longer holds the task ``row`` (as it is now): who holds it, or what ended it.

    ClaimLost (exit 15) when someone else took the task over, cleared or finished it; InvalidState
    (exit 1) when the claim ended by its own holder's hand (completed, or failed back to the queue,
    with its token: the row keeps it). A completion or failure by id alone clears the row's claim
    and leaves its holder and time; a hand, a file's edit and clear-stale clear all three.
    """
    from heartbeat.clock import isoformat

    task = f"task {row['id']!r}" + (f" in {row['scope']}" if row.get("scope") else "")
    status = row["status"]
    if row["claim"] == claim:
        return InvalidState(f"{task}: this claim has ended already (the task is {status}); nothing changed")
    holder = row.get("claimed_by")
    if status == "doing":
        since = isoformat(row.get("claimed_at"), zone) or "?"
        until = isoformat(row.get("lease_expires_at"), zone)
        lease = f", leased until {until}" if until else ""
        return ClaimLost(
            f"claim lost: {task} is held by {holder or 'an unnamed worker'} under a newer claim "
            f"since {since}{lease}; nothing changed"
        )
    by_id_alone = row["claim"] is None and row.get("claimed_at") is not None
    if status == "done":
        by = f" by {holder}" if holder and row["claim"] else ""
        if row["claim"]:
            how = "under another claim"
        elif by_id_alone:
            how = "without a claim (complete by id alone), not under this one"
        else:
            how = "without a claim (by hand or by a file)"
        return ClaimLost(f"claim lost: {task} was completed{by} {how}; nothing changed")
    if status == "todo" and row["claim"] is None and not row.get("attempts"):
        return ClaimLost(f"claim lost: {task} was never claimed: the token is not its claim; nothing changed")
    if status == "todo" and by_id_alone:
        return ClaimLost(
            f"claim lost: {task} was failed without a claim (fail by id alone) and returned to the queue; "
            "nobody holds it now; nothing changed"
        )
    if status == "todo" and row["claim"] is None:
        return ClaimLost(
            f"claim lost: {task} was returned to the queue (clear-stale, or by hand); nobody holds it "
            "now; nothing changed"
        )
    if status == "failed" and by_id_alone:
        return ClaimLost(
            f"claim lost: {task} was failed without a claim (fail by id alone), not under this one; "
            "nothing changed"
        )
    return ClaimLost(f"claim lost: {task} is {status} now, no longer under this claim; nothing changed")


def last_run_record(row: Mapping[str, Any], now: datetime, status: str, outcome: Any) -> dict[str, Any]:
    """heartbeat.py's last-run.json object for this operation: its ``outcome`` ``{}`` for none (the
    script writes ``outcome or {}``), its ``description`` the task's (null for a task whose
    object in tasks.json has none, whose title is its id)."""
    from heartbeat.formats.tasks_json import as_written, last_run_entry, title_of

    extra = row.get("extra") or {}
    description = row["title"]
    # the script writes the object's own "description": none, or one that is no text, while the
    # title hb holds is what the object reads as without it
    if extra and not isinstance(extra.get("description"), str) and title_of(extra, row["id"]) == row["title"]:
        description = extra.get("description")
    return last_run_entry(
        timestamp=now,
        task_id=row["id"],
        status=status,
        description=description,
        assigned_skill=as_written(extra, "assigned_skill", row["skill"]),
        project_id=as_written(extra, "project_id", row["project_id"]),
        agent_id=as_written(extra, "agent_id", row["agent_id"]),
        user_id=as_written(extra, "user_id", row["user_id"]),
        outcome={} if outcome is None else outcome,
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
    claim: str | None = None,
) -> dict[str, Any]:
    """Finish a claimed task: status done and an outcome row, which is last-run.json's record
    (read back with the task, see :func:`last_run_of`). With ``last_run`` (the heartbeat.py
    drop-in, whose record names the trace its caller gave) a runs row holds that record instead.

    With ``claim``, only while that token is the task's claim (else ClaimLost, exit 15, and
    nothing changes); without it, whoever holds the task. The outcome row names the claim closed.
    """
    at = tx.d.time(now)
    if last_run is None:
        if tx.autocommit:  # PostgreSQL: the completion and its outcome row, one statement
            row = _finish_row(tx, "done_pg", task_id, scope, {"now": at, "result": tx.d.json(outcome)}, claim)
            row["claimed_at"] = tx.d.read_time(row["claimed_at"])
        else:  # the database builds the outcome row from the task's
            row = _finish_row(tx, "done_short", task_id, scope, {"now": at}, claim)
            claimed_at = row["claimed_at"] = tx.d.read_time(row["claimed_at"])
            params = {
                "now": at,
                "pk": row["pk"],
                "true": True,
                "result": tx.d.json(outcome),
                "duration_s": (now - claimed_at).total_seconds() if claimed_at else None,
                "claim": row["claim"],
            }
            tx.execute("outcome_of_task", params)
        row["status"], row["completed_at"] = "done", now
        return row
    tx.begin()
    row = _finish(tx, "done", task_id, scope, {"now": at}, claim)
    _outcome(tx, row, at, now, success=True, result=outcome)
    _run(
        tx,
        "complete",
        row["scope"],
        at,
        status="ok",
        worker=row["claimed_by"],
        task_id=row["id"],
        record=last_run(row),
    )
    return {**row, "status": "done", "completed_at": now}


def last_run_of(db: plain.Conn) -> dict[str, Any] | None:
    """last-run.json's object as the ledger has it now (see :data:`LAST_RUN`), or None."""
    return _last_run(db)[0]


def _last_run(db: plain.Conn) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(last-run.json's object, the completion's row when the object is read from one)."""
    found = db.rows(LAST_RUN["record"])
    run = found[0] if found else None
    got = db.dicts(LAST_RUN["completion"])
    if not got or (run is not None and got[0]["after_run"] < run[0]):
        return (None if run is None else db.read_json(run[1])), None
    done = got[0]
    done["extra"] = db.read_json(done["extra"])
    completed_at = done["completed_at"] = db.read_time(done["completed_at"])  # never null here
    record = last_run_record(done, completed_at, "completed", db.read_json(done["result"]))  # type: ignore[arg-type]
    return record, done


def keep_last_run(db: plain.Conn, pks: Collection[int]) -> None:
    """Before the tasks ``pks`` go or change a column the record reads (rows.LAST_RUN_COLUMNS):
    when last-run.json's record is read from the completion of one of them, it is kept as a
    runs row (kind ``last-run``) as it reads now, so that the file goes on saying what that
    completion said (heartbeat.py wrote it once), whatever happens to the task later. One
    index step when the newest completion is another task's."""
    newest = db.one(LAST_RUN["completed_task"]) if pks else None
    if newest is None or newest[0] not in pks:
        return
    record, done = _last_run(db)
    if record is None or done is None:  # a runs row holds the record already
        return
    at = db.time(done["completed_at"])
    params = {"scope": done["scope"] or None, "at": at, "task_id": done["id"], "record": db.json(record)}
    db.execute(LAST_RUN["kept"], params)


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
            "claim": row["claim"],
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
    claim: str | None = None,
) -> dict[str, Any]:
    """Record a failure; the task returns to todo for a retry until max attempts, then failed.

    The error row's trace id and decision log are ``trace``'s, else the task's own fields; the
    runs row's last-run.json object is ``last_run``'s, else hb's own. With ``claim``, only while
    that token is the task's claim (else ClaimLost, exit 15, and nothing changes).
    """
    at = tx.d.time(now)
    params = {"now": at, "final": final, "max_attempts": max_attempts}
    row = _finish(tx, "failed", task_id, scope, params, claim)
    status = row["status"]
    gives_up = status == "failed"
    outcome = {"reason": reason} if reason else {}  # last-run.json's, as heartbeat.py writes it
    reason = reason or "Unknown failure"
    fields = extra = row.get("extra") or {}
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
            "claim": row["claim"],
            "item": tx.d.json(_error_item(fields, row, now, reason, extra)),
        },
    )
    if gives_up:  # the task has ended, unsuccessfully: an outcome the reports count as a failure
        _outcome(tx, row, at, now, success=False, result={"error": reason})
    record = last_run(row) if last_run is not None else last_run_record(row, now, "failed", outcome)
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


def _error_item(
    fields: Mapping[str, Any], row: Mapping[str, Any], now: datetime, reason: str, trace: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The errors.json item of a failure whose task object holds a skill that is no text (an
    object, a number): heartbeat.py copies ``task.get("assigned_skill")`` as it is, which the
    row's text column cannot hold, so the item is kept whole on the row. None otherwise: the
    item is made from the row's columns."""
    from heartbeat.formats.tasks_json import as_written, error_entry

    skill = as_written(fields, "assigned_skill", row["skill"])
    if skill is row["skill"]:
        return None
    return error_entry(
        timestamp=now,
        task_id=row["id"],
        assigned_skill=skill,
        reason=reason,
        trace_id=trace.get("trace_id"),
        decision_log=trace.get("decision_log"),
    )


def renew(
    tx: Tx, now: datetime, task_id: str, *, claim: str, lease: timedelta, scope: str | None = None
) -> dict[str, Any]:
    """Extend the claim ``claim`` on ``task_id`` to ``now + lease``; ClaimLost (exit 15) when the
    token is no longer the task's claim. A claim whose lease ran out is renewed as long as nobody
    took it over or cleared it. The runs row keeps last-run.json as it is (no task was handled)."""
    at = tx.d.time(now)
    row = _finish(tx, "renew", task_id, scope, {"lease_until": tx.d.time(now + lease)}, claim)
    _run(
        tx,
        "renew",
        row["scope"],
        at,
        status="ok",
        worker=row["claimed_by"],
        task_id=row["id"],
        detail={"claim": claim},
    )
    return row


def yield_claim(tx: Tx, now: datetime, key: tuple[str, str], claim: str) -> bool:
    """Undo the claim ``claim`` of the task ``key`` ((scope, id)), which another program popped
    from tasks.json between hb's read of the file and its claim: the task stays doing, as that
    pop reads once synced (no claim of hb's: a claim without a record), its attempt undone.
    False when the claim is no longer the task's."""
    scope, task_id = key
    at = tx.d.time(now)
    return bool(tx.rows("yield_claim", {"scope": scope or LEGACY, "id": task_id, "claim": claim, "now": at}))


def clear_stale(tx: Tx, now: datetime, *, scope: str | None = None) -> list[str]:
    """Stale claims (lease expired, or no claim record) go back to todo; returns their ids.

    Their tokens are void: a holder that comes back with one is told its claim was lost."""
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


def stale_ids(tx: Tx, now: datetime, scope: str | None) -> list[str]:
    """The stale claims of a queue (``scope`` None: the legacy list), in queue order."""
    return [r[0] for r in tx.execute("stale", {"scope": scope or LEGACY, "now": tx.d.time(now)}).fetchall()]


def ready(
    tx: Tx, now: datetime, *, scope: str | None = None, explain: bool = False, limit: int | None = None
) -> list[dict[str, Any]]:
    """What a pop would hand out, in pop order (rows with ``ready``/``reasons``); with ``explain``,
    after them every active queue task that is not ready, with its reasons (:mod:`heartbeat.rules.ready`).

    Without ``scope`` while scoped queues exist, a pop would refuse (exit 11): nothing is ready,
    and every task's reasons start with ``scoped``. TODO.md entries (never popped) are left out.
    """
    from heartbeat.rules.ready import QueueTask, reasons_for

    at = tx.d.time(now)
    needs_scope = scope is None and tx.execute("any_scoped").fetchone() is not None
    if not needs_scope:
        scope = _check_scope(tx, scope)
    count = _NO_LIMIT if limit is None else limit
    out: list[dict[str, Any]] = []
    if not needs_scope:
        rows = tx.rows("ready", {"scope": scope, "now": at, "limit": count})
        out = [{**tx.task(r), "ready": True, "reasons": [], "waiting": []} for r in rows]
    if not explain or len(out) >= count:
        return out[:count]
    ready_pks = {r["pk"] for r in out}
    rows = tx.rows("active") if needs_scope else tx.rows("active_in_scope", {"scope": scope})
    waits: dict[int, list[tuple[str, str]]] = {}
    for dep in tx.rows("open_dependencies"):
        waits.setdefault(dep["task_pk"], []).append((dep["id"], dep["status"]))
    for raw in rows:
        if raw["pk"] in ready_pks:
            continue
        row = tx.task(raw)
        state = QueueTask(
            status=row["status"],
            blocked_by=row["blocked_by"],
            not_before=row["not_before"],
            lease_expires_at=row["lease_expires_at"],
            waiting_for=tuple(waits.get(row["pk"], ())),
        )
        reasons = reasons_for(state, now, needs_scope=needs_scope)
        if not reasons:  # ready, though not among the first `limit` the ready query returned
            continue
        out.append({**row, "ready": False, "reasons": reasons, "waiting": list(state.waiting_for)})
        if len(out) >= count:
            break
    return out


# --- what `hb pop` prints -------------------------------------------------------


def record_from_row(row: Any) -> tasks_json.QueueRecord:
    """A task row (ORM object or column mapping) as a tasks.json record."""
    get = row.get if type(row) is dict or isinstance(row, Mapping) else lambda k: getattr(row, k)
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
    fields = row.get("extra") if type(row) is dict else None
    if not fields:
        return tasks_json.render_task(record_from_row(row))
    # what render_task(record_from_row(row)) gives, without the record: a row with its file's
    # object keeps that object's created_at (record_from_row takes it from there)
    scope = row["scope"]
    completed_at = row["completed_at"]
    if scope and "completed_at" not in fields:
        completed_at = None
    status = row["status"]
    return tasks_json.render_over(
        fields,
        scoped=bool(scope),
        task_id=str(row["id"]),
        title=str(row["title"]),
        priority=row["priority"],
        status=str(getattr(status, "value", status)),
        position=row["position"] or 0,
        assigned=(row["skill"], row["project_id"], row["agent_id"], row["user_id"]),
        completed_at=completed_at,
    )


def popped_object(row: Mapping[str, Any]) -> dict[str, Any]:
    """What ``hb pop`` prints: the task's tasks.json object, then ``claim``, its claim token (the
    token ``complete`` / ``fail`` / ``renew --claim`` take). The heartbeat.py drop-in prints
    :func:`task_object` alone, as the script does."""
    obj = task_object(row)  # a new object, ours to add to
    obj["claim"] = row["claim"]
    return obj
