"""Tasks: hb add / show / list / update / done / cancel (SPEC.md section 2), one transaction each."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from heartbeat.clock import isoformat, parse_when
from heartbeat.context import Context
from heartbeat.db import tasks as tasks_db
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import Db, is_unique_violation
from heartbeat.errors import InvalidInput


def shown(ctx: Context, task: Any, db: Db | None = None) -> dict[str, Any]:
    """A task as ``hb show --json`` prints it (with the ids it waits for, read in ``db``)."""
    after = tasks_db.dependencies(db, [task.pk]).get(task.pk, []) if db is not None else []
    out: dict[str, Any] = tasks_db.as_dict(task, ctx.zone, after)
    return out


def add(
    ctx: Context,
    title: str,
    *,
    scope: str | None = None,
    task_id: str | None = None,
    source: str = "cli",
    key: str | None = None,
    after: Sequence[str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """``hb add``: see :meth:`heartbeat.Ledger.add`."""
    changes = tasks_db.Changes.from_input(fields, ctx.zone)
    if key is not None:
        key = tasks_db.check_key(key)
    now = ctx.now()
    try:
        with ctx.write() as db:
            if key is not None and (existing := tasks_db.by_key(db, scope or "", key)) is not None:
                return _added_before(ctx, existing, key, db)
            if scope:
                from heartbeat.formats.tasks_json import check_scope
                from heartbeat.ops.sync.queue_files import last_document

                check_scope(scope, last_document(db))  # against tasks.json as hb last read it
            task = tasks_db.add(
                db, title, changes, now, scope=scope or "", source=source, task_id=task_id, key=key
            )
            if after:
                tasks_db.set_after(db, task, tasks_db.resolve_after(db, after, task.scope))
            return shown(ctx, task, db)
    except Exception as exc:
        if key is None or not is_unique_violation(exc):
            raise
        # PostgreSQL: a racing add with the same key committed first (the unique index said so)
        with ctx.read() as db:
            existing = tasks_db.by_key(db, scope or "", key)
            if existing is None:
                raise
            return _added_before(ctx, existing, key, db)


def _added_before(ctx: Context, task: Any, key: str, db: Db) -> dict[str, Any]:
    since = isoformat(task.created_at, ctx.zone)
    ctx.notices.append(f"key {key!r}: task {task.id} was added with it at {since}; not added again")
    return shown(ctx, task, db)


def add_todo(ctx: Context, title: str, *, chat_id: str | None = None, **fields: Any) -> dict[str, Any]:
    """``hb add --source todo``: see :meth:`heartbeat.Ledger.add_todo`."""
    from heartbeat.ops.sync.markdown import add_todo as add_entry

    tasks_db.check_title(title)
    now = ctx.now()
    with ctx.write() as db:
        task = add_entry(ctx, db, title, now, chat_id=chat_id, **fields)
        return shown(ctx, task)


def get(ctx: Context, task_id: str, *, scope: str | None = None, history: bool = False) -> dict[str, Any]:
    """``hb show``."""
    with ctx.read() as db:
        task = tasks_db.find(db, task_id, scope)
        out = shown(ctx, task, db)
        if history:
            out["history"] = tasks_db.history(db, task, ctx.zone)
        return out


def listed(ctx: Context, filters: tasks_db.Filters, limit: int | None = None) -> list[dict[str, Any]]:
    """``hb list``: the tasks ``filters`` select, at most ``limit``."""
    with ctx.read() as db:
        found = tasks_db.query(db, filters, limit)
        after = tasks_db.dependencies(db, [t.pk for t in found if t.pk is not None])
        return [tasks_db.as_dict(t, ctx.zone, after.get(t.pk or 0, [])) for t in found]


def stream(ctx: Context, filters: tasks_db.Filters, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """``hb list --json``, a batch at a time from one read transaction (memory stays flat)."""
    zone = ctx.zone
    with ctx.read() as db:
        yield from tasks_db.stream(db, filters, zone, limit)


def filters(
    ctx: Context,
    status: str | Sequence[str] | None,
    scope: str | None,
    source: str | None,
    text: str | None,
    due_before: datetime | str | None,
) -> tasks_db.Filters:
    """The filters of ``hb list``: by default the active tasks (``status="all"``: every one)."""
    statuses: tuple[TaskStatus, ...] | None
    wanted = [status] if isinstance(status, str) else list(status or [])
    if not wanted or wanted == ["active"]:
        statuses = tasks_db.Filters().statuses
    elif "all" in wanted:
        statuses = None
    else:
        statuses = tuple(tasks_db.parse_status(v) for v in wanted)
    if isinstance(due_before, str):
        due_before = parse_when(due_before, ctx.zone, what="--due-before time")
    return tasks_db.Filters(statuses, scope, source, text, due_before)


def update(
    ctx: Context,
    task_id: str,
    *,
    scope: str | None = None,
    after: Sequence[str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """``hb update``: see :meth:`heartbeat.Ledger.update`."""
    changes = tasks_db.Changes.from_input(fields, ctx.zone)
    cleared = after is not None and [a.strip().lower() for a in after] in ([], ["none"])
    if after is not None and not cleared and any(a.strip().lower() == "none" for a in after):
        raise InvalidInput("--after none clears the dependencies: give it alone")
    if not changes.values and after is None:
        raise InvalidInput("nothing to update: pass at least one field")
    now = ctx.now()
    with ctx.write() as db:
        task = tasks_db.find(db, task_id, scope, lock=True)
        if task.source == "todo" and ({"title", "chat_id"} & changes.values.keys()):
            changes = _todo_changes(task, changes)
        if task.source == "todo" and changes.values.get("status") is TaskStatus.DONE and task.status.active:
            _check_done_line(ctx, task, changes.values.get("title"), changes.values.get("chat_id", False))
        waits = None
        if after is not None:
            waits = [] if cleared else tasks_db.resolve_after(db, after, task.scope)
        tasks_db.update(db, task, changes, now, after=waits)
        return shown(ctx, task, db)


def _todo_changes(task: Any, changes: tasks_db.Changes) -> tasks_db.Changes:
    """``changes`` to a TODO.md entry, its ChatID stored as mistermorph stores one; InvalidInput
    naming the task when its line would not read as that entry."""
    from heartbeat.ops.sync.markdown import todo_chat_id, todo_title_problem

    values = dict(changes.values)
    chat_id = task.chat_id
    if "chat_id" in values:
        chat_id = values["chat_id"] if isinstance(values["chat_id"], str) else None  # or cleared
        try:
            chat_id = todo_chat_id(chat_id)
        except InvalidInput as exc:
            raise InvalidInput(f"{task.id}: {exc.message}") from None
        if chat_id is not None:
            values["chat_id"] = chat_id
    problem = todo_title_problem(values.get("title", task.title), chat_id)
    if problem is not None:
        raise InvalidInput(f"{task.id}: cannot be a TODO.md entry: {problem}")
    return tasks_db.Changes(values)


def finish(ctx: Context, task_id: str, status: TaskStatus, *, scope: str | None = None) -> dict[str, Any]:
    """``hb done`` / ``hb cancel``: the task finished with ``status`` (its outcome recorded)."""
    now = ctx.now()
    with ctx.write() as db:
        task = tasks_db.find(db, task_id, scope, lock=True)
        if task.source == "todo" and status is TaskStatus.DONE and task.status.active:
            _check_done_line(ctx, task)
        return shown(ctx, tasks_db.finish(db, task, status, now), db)


def _check_done_line(ctx: Context, task: Any, title: Any = None, chat_id: Any = False) -> None:
    """InvalidInput naming the task when its TODO.DONE.md line would stop mistermorph's reader: a
    TODO.md entry typed by hand can fit its file and not TODO.DONE.md (the Done stamp added), and
    written there it would lose that file's entries to the runtime (its next Complete rewrites
    the file with its own entry alone)."""
    from heartbeat.ops.sync.markdown import todo_done_problem

    extended = ctx.settings.todo_dialect == "extended"
    title = task.title if title is None else title  # or the one it is given with the change
    chat_id = task.chat_id if chat_id is False else chat_id if isinstance(chat_id, str) else None
    problem = todo_done_problem(title, chat_id, task.id if extended else None)
    if problem is not None:
        raise InvalidInput(f"{task.id}: cannot be completed: {problem}")
