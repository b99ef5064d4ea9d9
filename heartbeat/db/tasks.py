"""Task CRUD inside one transaction: the operations behind add/list/show/update/done/cancel.

Also what `hb add` / `hb update` set besides a task's own fields: its idempotency key (``--key``,
one task per key and scope) and the tasks it waits for (``--after``, rows of
``task_dependencies``; a cycle is refused, naming it).
"""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from heartbeat.clock import format_duration, isoformat, parse_duration, parse_when
from heartbeat.db.rows import OutcomeRow, TaskDependencyRow, TaskEventRow, TaskRow
from heartbeat.db.shape import TASKS
from heartbeat.db.status import ACTIVE_STATUSES, TaskStatus
from heartbeat.db.store import Db, statements
from heartbeat.errors import NUL, InvalidInput, InvalidState, NotFound, nul_reason
from heartbeat.formats.tasks_json import PRIORITY_RANK, priority_rank
from heartbeat.formats.timestamps import MAX_DURATION

SQL = statements("tasks")

# Fields `hb add` / `hb update` accept, by kind of value.
TEXT_FIELDS = (
    "title",
    "priority",
    "last_progress_note",
    "next_action",
    "fallback_action",
    "blocker",
    "skill",
    "project_id",
    "agent_id",
    "user_id",
    "chat_id",
)
TIME_FIELDS = ("due_at", "next_check_at", "not_before")
DURATION_FIELDS = ("check_interval", "stale_after")
CLEAR = ("", "none", "null")


def parse_status(value: str) -> TaskStatus:
    try:
        return TaskStatus(value.strip().lower())
    except ValueError:
        allowed = ", ".join(s.value for s in TaskStatus)
        raise InvalidInput(f"unknown status {value!r} (expected one of: {allowed})") from None


def parse_risk(value: str | None) -> str | None:
    if value is None or value.strip().lower() in CLEAR:
        return None
    risk = value.strip().upper()
    if risk not in ("P0", "P1", "P2"):
        raise InvalidInput(f"bad risk {value!r} (expected P0, P1 or P2)")
    return risk


@dataclass(frozen=True)
class Changes:
    """Validated field values for a task (None means: leave as it is)."""

    values: Mapping[str, Any]

    @classmethod
    def from_input(cls, raw: Mapping[str, Any], zone: tzinfo) -> Changes:
        """Read user input (strings from the CLI, or Python values from the API)."""
        out: dict[str, Any] = {}
        for name, value in raw.items():
            if value is None:
                continue
            out[name] = _convert(name, value, zone)
        return cls(out)


def _convert(name: str, value: Any, zone: tzinfo) -> Any:
    clear = isinstance(value, str) and value.strip().lower() in CLEAR
    if isinstance(value, str) and not value.strip() and (name not in TEXT_FIELDS or name == "priority"):
        # an unset shell variable must not clear a time, a duration, a priority or a risk
        raise InvalidInput(f"empty --{name.replace('_at', '').replace('_', '-')}; use none to clear it")
    if name == "status":
        return value if isinstance(value, TaskStatus) else parse_status(str(value))
    if name == "risk":
        return parse_risk(str(value))
    if name == "follow_up":
        return bool(value)
    if name == "priority":
        if clear:
            return _CLEARED
        priority = str(value).strip().lower()
        if priority not in PRIORITY_RANK:
            raise InvalidInput(f"priority {value!r} is not one of {', '.join(PRIORITY_RANK)}")
        return priority
    if name in TIME_FIELDS:
        if clear:
            return _CLEARED
        if isinstance(value, datetime):
            return value if value.tzinfo else parse_when(value.isoformat(), zone)
        return parse_when(str(value), zone, what=name.replace("_at", "").replace("_", "-") + " time")
    if name in DURATION_FIELDS:
        if clear:
            return _CLEARED
        return _duration_seconds(name.replace("_", "-"), value)
    if name in TEXT_FIELDS:
        if name == "title" and (not isinstance(value, str) or not value.strip()):
            raise InvalidInput("a task needs a non-empty title")
        if clear and name != "title":
            return _CLEARED
        return no_nul(name.replace("_", "-"), str(value))
    raise InvalidInput(f"unknown task field {name!r}")


_MAX_SECONDS = int(MAX_DURATION.total_seconds())


def _duration_seconds(what: str, value: Any) -> int:
    """A duration field's value in whole seconds: a timedelta or a number of seconds (the Python
    API's), else a duration's text (``30m``, ``PT6H``). Each is at least a second and at most
    100 years, as ``--check-interval`` reads them: a negative or zero one stored made every round
    of the workspace fail, and one past what the database holds was a raw OverflowError."""
    if isinstance(value, timedelta):
        seconds = round(value.total_seconds())
        if seconds < 1 and value > timedelta(0):
            raise InvalidInput(f"bad {what} {value}: shorter than a second")
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    else:
        return int(parse_duration(str(value), what=what).total_seconds())
    if seconds > _MAX_SECONDS:
        raise InvalidInput(f"bad {what}: longer than 100 years")
    if seconds < 1:
        shown = f"{seconds} s" if seconds > -_MAX_SECONDS else "a large negative number of seconds"
        raise InvalidInput(f"bad {what}: {shown} is not a positive duration (at least a second)")
    return seconds


def check_title(title: Any) -> None:
    """InvalidInput unless ``title`` is text with a character that is not blank (the Python API
    could pass a number, which failed with an AttributeError)."""
    if not isinstance(title, str):
        raise InvalidInput(f"title: {type(title).__name__} is not text (a task's title is a string)")
    if not title.strip():
        raise InvalidInput("a task needs a non-empty title")


def no_nul(what: str, text: str) -> str:
    """``text``, unless it holds a NUL character (from the Python API or an MCP client; a command
    line cannot pass one): InvalidInput naming ``what``. PostgreSQL's text columns cannot hold it,
    and refusing it on SQLite too keeps the two ledgers alike."""
    if NUL in text:
        raise InvalidInput(nul_reason(what, text))
    return text


def check_task_id(task_id: Any) -> str:
    """A task id a caller chose (``hb add --id``, the API, an MCP client): text that is not blank,
    holds no control character (a newline or escape would break every line a person or agent
    reads it in; the files hb reads may hold such ids, and keep them). InvalidInput otherwise,
    naming the id."""
    if not isinstance(task_id, str):
        raise InvalidInput(f"task id: {type(task_id).__name__} is not text")
    if not task_id.strip():
        raise InvalidInput("a task id cannot be empty (tasks.json could not hold it)")
    no_nul("task id", task_id)
    if (bad := next((c for c in task_id if unicodedata.category(c) == "Cc"), None)) is not None:
        raise InvalidInput(
            f"task id {task_id!r} holds the control character U+{ord(bad):04X}; give an id without it"
        )
    return task_id


class _Cleared:
    def __repr__(self) -> str:
        return "CLEARED"


_CLEARED = _Cleared()


def new_task_id(db: Db, scope: str) -> str:
    """``task-`` + 8 hex digits, unique in the scope (as heartbeat.py names tasks)."""
    while True:
        candidate = "task-" + secrets.token_hex(4)
        if db.value(SQL.task_pk_in_scope, {"scope": scope, "id": candidate}) is None:
            return candidate


def snapshot(task: Any) -> dict[str, Any]:
    """Every column of the task, JSON-safe (for history)."""
    out: dict[str, Any] = {}
    for column in TASKS.columns:
        value = getattr(task, column)
        if isinstance(value, datetime):
            value = isoformat(value)
        elif isinstance(value, TaskStatus):
            value = value.value
        out[column] = value
    return out


def record_event(
    db: Db,
    task: Any,
    kind: str,
    now: datetime,
    *,
    before: dict[str, Any] | None = None,
    actor: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    db.add(
        TaskEventRow(
            task_pk=task.pk,
            task_id=task.id,
            scope=task.scope,
            at=now,
            kind=kind,
            actor=actor,
            before=before,
            detail=detail,
        )
    )


def add(
    db: Db,
    title: str,
    changes: Changes,
    now: datetime,
    *,
    scope: str = "",
    source: str = "cli",
    task_id: str | None = None,
    actor: str = "cli",
    key: str | None = None,
) -> TaskRow:
    """Create a task (status todo unless given), with its history entry; ``key`` is its idempotency
    key (the caller has looked for a task holding it: see :func:`by_key`)."""
    values = dict(changes.values)
    values.pop("title", None)
    check_title(title)
    no_nul("title", title)
    if task_id is None:
        task_id = new_task_id(db, scope)
    elif db.value(SQL.task_pk_in_scope, {"scope": scope, "id": check_task_id(task_id)}) is not None:
        raise InvalidState(f"task {task_id!r} already exists" + (f" in {scope}" if scope else ""))
    last = db.value(SQL.last_position, {"scope": scope})
    task = TaskRow(
        id=task_id,
        scope=scope,
        source=source,
        title=title,
        status=TaskStatus.TODO,
        priority_rank=priority_rank(None),
        position=(last + 1) if last is not None else 0,
        follow_up=False,
        attempts=0,
        version=1,
        created_at=now,
        updated_at=now,
        last_update_at=now,
        idempotency_key=key,
    )
    _apply(task, values, now)
    db.add(task)
    record_event(db, task, "created", now, actor=actor)
    return task


def _apply(task: TaskRow, values: Mapping[str, Any], now: datetime) -> list[str]:
    changed = []
    for name, value in values.items():
        new = None if value is _CLEARED else value
        if getattr(task, name) != new:
            setattr(task, name, new)
            changed.append(name)
    if "priority" in changed:
        task.priority_rank = priority_rank(task.priority)
    if "status" in changed:
        if task.status is TaskStatus.DONE:
            task.completed_at = now
        elif task.status.active:
            task.completed_at = None
        if task.status is not TaskStatus.DOING:
            # the claim ends with the status: its holder's --claim is refused from now on (exit 15)
            task.claimed_at = task.claimed_by = task.lease_expires_at = task.claim = None
    return changed


def check_key(key: str) -> str:
    """An idempotency key as given (``hb add --key``): not blank, at most 255 characters."""
    if not key.strip():
        raise InvalidInput("empty --key: give the add a key that names it (e.g. the request's id)")
    if len(key) > 255:
        raise InvalidInput(f"--key is {len(key)} characters long; at most 255")
    return no_nul("--key", key)


def by_key(db: Db, scope: str, key: str) -> TaskRow | None:
    """The task added with idempotency key ``key`` in ``scope``, if any (whatever its status)."""
    return db.first(TaskRow, SQL.by_key, {"scope": scope, "key": key})


# --- dependencies (--after) -------------------------------------------------------------


def resolve_after(db: Db, ids: Sequence[str], scope: str) -> list[TaskRow]:
    """The tasks ``--after ID ...`` names: an id in the task's own queue first, else the one task
    anywhere with that id (several: pass an id that is unique, exit 1)."""
    found: list[TaskRow] = []
    for task_id in ids:
        if not task_id.strip():
            raise InvalidInput("empty --after: name the task to wait for (or none to clear)")
        own = db.first(TaskRow, SQL.in_scope, {"scope": scope, "id": task_id})
        target = own if own is not None else _find_for_after(db, task_id)
        if all(t.pk != target.pk for t in found):
            found.append(target)
    return found


def _find_for_after(db: Db, task_id: str) -> TaskRow:
    try:
        return find(db, task_id)
    except NotFound:
        raise NotFound(f"--after {task_id}: no task with that id") from None
    except InvalidInput:
        raise InvalidInput(
            f"--after {task_id}: that id exists in several queues and none is this task's"
        ) from None


def dependencies(db: Db, pks: Sequence[int]) -> dict[int, list[str]]:
    """The ids each task waits for (done or not), in the order they were added."""
    out: dict[int, list[str]] = {}
    if not pks:
        return out
    for pk, dep_id in db.rows(SQL.dependencies, {"pks": list(pks)}):
        out.setdefault(pk, []).append(dep_id)
    return out


def set_after(db: Db, task: TaskRow, after: Sequence[TaskRow]) -> bool:
    """Make ``task`` wait for exactly ``after``; False when that is what it waited for already.

    A dependency that would close a cycle is refused (InvalidInput naming the cycle) and nothing
    changes. Concurrent edits take turns (:meth:`Db.take_turns`).
    """
    db.take_turns("dependencies")  # so that two edits together close no cycle
    wanted = [t.pk for t in after]
    existing = {pk for (pk,) in db.rows(SQL.awaited, {"pk": task.pk})}
    if existing == set(wanted):
        return False
    for target in after:
        cycle = _cycle(db, task, target)
        if cycle is not None:
            chain = " -> ".join(cycle)
            raise InvalidInput(f"--after would make a cycle: {chain} (each waits for the next)")
    db.execute(SQL.clear_dependencies, {"pk": task.pk})
    for pk in wanted:
        db.add(TaskDependencyRow(task_pk=task.pk, depends_on_pk=pk))  # type: ignore[arg-type]
    return True


def _cycle(db: Db, task: TaskRow, target: TaskRow) -> list[str] | None:
    """The ids of the cycle ``task`` waiting for ``target`` would close, or None.

    A walk from ``target`` along what each task waits for; reaching ``task`` is a cycle.
    """
    if target.pk == task.pk:
        return [task.id, task.id]
    assert target.pk is not None and task.pk is not None
    parent: dict[int, int] = {target.pk: task.pk}
    frontier = [target.pk]
    while frontier:
        edges = db.rows(SQL.dependency_edges, {"pks": frontier})
        frontier = []
        for waiting, awaited in edges:
            if awaited in parent:
                continue
            parent[awaited] = waiting
            if awaited == task.pk:
                return _cycle_ids(db, parent, task.pk)
            frontier.append(awaited)
    return None


def _cycle_ids(db: Db, parent: Mapping[int, int], start: int) -> list[str]:
    """``start -> ... -> start`` as ids, from the walk's parent links."""
    chain = [start]
    node = parent[start]
    while node != start:
        chain.append(node)
        node = parent[node]
    chain.append(start)
    chain.reverse()
    ids = dict(db.rows(SQL.ids_of, {"pks": sorted(set(chain))}))
    return [ids[pk] for pk in chain]


def find(db: Db, task_id: str, scope: str | None = None, *, lock: bool = False) -> TaskRow:
    """The task with this public id; ``scope`` disambiguates duplicates. ``lock``: PostgreSQL
    locks the row for the transaction (SQLite's write transaction holds the whole ledger)."""
    if scope is not None:
        query = SQL.find_in_scope_locked if lock else SQL.find_in_scope
        rows = db.load(TaskRow, query, {"id": task_id, "scope": scope})
    else:
        rows = db.load(TaskRow, SQL.find_locked if lock else SQL.find, {"id": task_id})
    if not rows:
        where = f" in scope {scope!r}" if scope else ""
        raise NotFound(f"no task with id {task_id!r}{where}")
    if len(rows) > 1:
        scopes = ", ".join(repr(r.scope) for r in rows)
        raise InvalidInput(f"task id {task_id!r} exists in several scopes ({scopes}); pass --scope")
    return rows[0]


def update(
    db: Db,
    task: TaskRow,
    changes: Changes,
    now: datetime,
    *,
    actor: str = "cli",
    touch: bool = True,
    after: Sequence[TaskRow] | None = None,
) -> list[str]:
    """Apply changes (``after``: the tasks it is to wait for, None = as they are); records the
    previous version in the history."""
    before = snapshot(task)
    if after is not None:
        assert task.pk is not None
        waited = dependencies(db, [task.pk]).get(task.pk, [])
        if set_after(db, task, after):
            before["after"] = waited
        else:
            after = None
    changed = _apply(task, changes.values, now)
    if after is not None:
        changed.append("after")
    if changed:
        task.version += 1
        task.updated_at = now
        if touch:
            task.last_update_at = now
        record_event(db, task, "updated", now, before=before, actor=actor, detail={"fields": changed})
    return changed


def finish(db: Db, task: TaskRow, status: TaskStatus, now: datetime, *, actor: str = "cli") -> TaskRow:
    """Mark a task done or cancelled (from any active status)."""
    if not task.status.active:
        raise InvalidState(f"task {task.id!r} is already {task.status.value}")
    claimed_at = task.claimed_at
    update(db, task, Changes({"status": status}), now, actor=actor)
    if status is TaskStatus.DONE:
        db.add(
            OutcomeRow(
                task_pk=task.pk,
                task_id=task.id,
                scope=task.scope,
                source=task.source,
                skill=task.skill,
                success=True,
                result=None,
                claimed_at=claimed_at,
                completed_at=now,
                duration_s=(now - claimed_at).total_seconds() if claimed_at else None,
                attempt=task.attempts or None,
            )
        )
    return task


@dataclass(frozen=True)
class Filters:
    statuses: tuple[TaskStatus, ...] | None = tuple(ACTIVE_STATUSES)  # None = every status
    scope: str | None = None
    source: str | None = None
    text: str | None = None
    due_before: datetime | None = None


def query(db: Db, filters: Filters, limit: int | None = None) -> list[TaskRow]:
    """The tasks matching ``filters``, by scope, then queue order (at most ``limit``)."""
    return db.load(TaskRow, SQL.list, _list_params(db, filters, limit))


def stream(db: Db, filters: Filters, zone: tzinfo, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The task objects :func:`query` finds, a batch at a time (memory stays flat however many)."""
    # (closed with this stream, not left to the collector: a stream closed after its connection
    # would close its cursor there, on a closed database)
    with closing(db.batches(SQL.list, _list_params(db, filters, limit), size=500)) as batches:
        for names, batch in batches:
            rows = db.rows_of(TaskRow, names, batch)
            after = dependencies(db, [r.pk for r in rows if r.pk is not None])
            for row in rows:
                yield as_dict(row, zone, after.get(row.pk, []) if row.pk is not None else [])


_NO_LIMIT = 2**63 - 1  # LIMIT takes a number on both backends; this one is "all of them"


def _list_params(db: Db, filters: Filters, limit: int | None) -> dict[str, Any]:
    pattern = None
    if filters.text:
        escaped = filters.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = "%" + escaped + "%"
    return {
        "all_statuses": int(filters.statuses is None),
        "statuses": [s.value for s in filters.statuses or ()],
        "scope": filters.scope,
        "source": filters.source,
        "pattern": pattern,
        "any_due": int(filters.due_before is None),
        "due_before": db.time(filters.due_before),
        "limit": _NO_LIMIT if limit is None else limit,
    }


def as_dict(task: TaskRow, zone: tzinfo, after: Sequence[str] = ()) -> dict[str, Any]:
    """The public task object (SPEC.md 2.1); times in the workspace zone with offset. ``after``:
    the ids the task waits for (:func:`dependencies`)."""

    def t(value: datetime | None) -> str | None:
        return isoformat(value, zone)

    def d(seconds: int | None) -> str | None:
        return format_duration(timedelta(seconds=seconds)) if seconds else None

    return {
        "id": task.id,
        "title": task.title,
        "status": task.status.value,
        "scope": task.scope or None,
        "source": task.source,
        "priority": task.priority,
        "risk": task.risk,
        "due_at": t(task.due_at),
        "next_check_at": t(task.next_check_at),
        "check_interval": d(task.check_interval),
        "stale_after": d(task.stale_after),
        "last_checked_at": t(task.last_checked_at),
        "last_update_at": t(task.last_update_at),
        "created_at": t(task.created_at),
        "updated_at": t(task.updated_at),
        "completed_at": t(task.completed_at),
        "attempts": task.attempts,
        "not_before": t(task.not_before),
        "last_progress_note": task.last_progress_note,
        "next_action": task.next_action,
        "fallback_action": task.fallback_action,
        "blocker": task.blocker,
        "blocked_by": task.blocked_by,
        "follow_up": task.follow_up,
        "skill": task.skill,
        "project_id": task.project_id,
        "agent_id": task.agent_id,
        "user_id": task.user_id,
        "chat_id": task.chat_id,
        "claimed_by": task.claimed_by,
        "claimed_at": t(task.claimed_at),
        "lease_expires_at": t(task.lease_expires_at),
        "claim": task.claim,
        "key": task.idempotency_key,
        "after": list(after),
        "version": task.version,
    }


def history(db: Db, task: TaskRow, zone: tzinfo) -> list[dict[str, Any]]:
    rows: Iterable[TaskEventRow] = db.load(TaskEventRow, SQL.history, {"pk": task.pk})
    return [
        {
            "at": isoformat(e.at, zone),
            "kind": e.kind,
            "actor": e.actor,
            "detail": e.detail,
            "before": e.before,
        }
        for e in rows
    ]
