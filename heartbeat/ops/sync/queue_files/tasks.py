"""tasks.json's tasks as rows: the import (new tasks and their history inserted in bulk), the
whole file rendered from the ledger, and the file's version of one task taken in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat import progress
from heartbeat.bulk import collector_paused
from heartbeat.db.queue import record_from_row
from heartbeat.db.rows import TaskRow
from heartbeat.db.shape import TASK_EVENTS, TASKS
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import Db
from heartbeat.db.tasks import record_event, snapshot
from heartbeat.formats import tasks_json
from heartbeat.formats.tasks_json import priority_rank
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.queue_files.base import (
    SOURCE,
    SQL,
    Event,
    base_records,
    current_text,
    key_text,
    last_document,
    read_storable,
    remember,
    rendered_facts,
    tasks_stamp,
)
from heartbeat.ops.sync.report import ImportReport

if TYPE_CHECKING:
    from heartbeat.context import Context


def _columns(record: tasks_json.QueueRecord, now: datetime) -> dict[str, Any]:
    return {
        "title": record.title,
        "status": TaskStatus(record.status),
        "priority": record.priority,
        "priority_rank": priority_rank(record.priority),
        "position": record.position,
        "blocked_by": record.blocked_by,
        "extra": record.fields,
        "created_at": record.created_at or now,
        "completed_at": record.completed_at,
        "skill": record.skill,
        "project_id": record.project_id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
    }


def import_tasks(
    ctx: Context, db: Db, text: str, path: Path, now: datetime, *, actor: str = "import"
) -> ImportReport:
    """Read tasks.json into the ledger: new records added, changed ones updated (history kept).

    The new tasks and the history entries are inserted in bulk, after the loop: each with
    the pk it would have had inserted on its own, the history in the file's order.
    """
    with collector_paused():  # a large file is many small objects and no cycles (heartbeat.bulk)
        return _import_tasks(db, text, path, now, actor)


def _import_tasks(db: Db, text: str, path: Path, now: datetime, actor: str) -> ImportReport:
    doc = read_storable(db, path, text, SOURCE, tasks_json.parse)
    report = ImportReport(SOURCE, str(path), warnings=list(doc.warnings))
    existing = {(t.scope, t.id): t for t in db.load(TaskRow, SQL.tasks_json_tasks)}
    fresh: list[tasks_json.QueueRecord] = []
    events: list[Event] = []
    created = {"file": str(path)}
    for record in progress.each(f"importing {path.name}", doc.records, len(doc.records)):
        task = existing.get((record.scope, record.id))
        if task is None:
            events.append((len(fresh), "created", None, created))
            fresh.append(record)
            report.added.append(key_text(record.scope, record.id))
            continue
        if not take_file_version(db, task, record, now, path, actor=actor, events=events):
            report.unchanged += 1
            continue
        report.updated.append(key_text(record.scope, record.id))
    # tasks the file lacks, which the import keeps: ones the text hb read before held were
    # deleted from the file by hand, and stay so for the next sync (that text is read only then)
    lacking = existing.keys() - {(r.scope, r.id) for r in doc.records}
    before = base_records(db, SOURCE, path) if lacking else None
    insert_fresh(db, fresh, events, now, actor)
    remember(db, SOURCE, path, text, now)
    dropped = [[*key, was] for key, was in (before or {}).items() if key in lacking]
    if dropped:
        bookmarks.note_dropped(db, SOURCE, dropped)
    return report


def insert_fresh(
    db: Db, fresh: list[tasks_json.QueueRecord], events: list[Event], now: datetime, actor: str
) -> list[int]:
    """The tasks new in tasks.json and the history of the pass that found them (the events name
    a new task by its index in ``fresh``), each with one executemany; the new tasks' pks."""
    pks = _insert_records(db, fresh, now)
    _insert_events(db, events, [(pk, r.id, r.scope) for pk, r in zip(pks, fresh, strict=True)], now, actor)
    return pks


def _insert_records(db: Db, records: list[tasks_json.QueueRecord], now: datetime) -> list[int]:
    """INSERT a task for each record new in tasks.json with one executemany (the columns
    :func:`_fresh` gives it; the others keep their defaults), each with the pk it would have got
    inserted on its own (the transaction holds the write lock: SQLite numbers rows after the
    highest pk, PostgreSQL takes them from the table's sequence); their pks, in order."""
    if not records:
        return []
    if db.sqlite:
        start = (db.value(SQL.last_task_pk) or 0) + 1
        pks: list[int] = list(range(start, start + len(records)))
    else:
        pks = sorted(pk for (pk,) in db.rows(SQL.next_task_pks_pg, {"n": len(records)}))
    values = fresh_binder(db, now)
    rows = [values(record, pk) for record, pk in zip(records, pks, strict=True)]
    db.insert_many(TASKS.name, FRESH_COLUMNS, rows, json=TASKS.json)
    return pks


# the columns :func:`_fresh` sets, as :func:`fresh_binder`'s function binds them
_FRESH = (
    "pk id scope source title status priority priority_rank position blocked_by extra created_at "
    "completed_at skill project_id agent_id user_id follow_up attempts version updated_at last_update_at"
)


FRESH_COLUMNS = tuple(_FRESH.split())


def fresh_binder(db: Db, now: datetime) -> Callable[[tasks_json.QueueRecord, int], tuple[Any, ...]]:
    """For one import, the function that gives :func:`_fresh`'s columns of a record (and its pk)
    as bound values, in :data:`FRESH_COLUMNS`' order: the import's inner loop, written out, with
    what is the same for every task bound once (tests hold it to :func:`_fresh`)."""
    time, json_of = db.time, db.json
    at, no, doing = time(now), db.flag(False), TaskStatus.DOING
    stamps: dict[datetime, Any] = {}  # a file's creation times are often a few: each bound once

    def bound(value: datetime | None) -> Any:
        if value is None:
            return None
        text = stamps.get(value)
        if text is None:
            text = stamps[value] = time(value)
        return text

    def values(record: tasks_json.QueueRecord, pk: int) -> tuple[Any, ...]:
        status = TaskStatus(record.status)
        return (
            pk,
            record.id,
            record.scope,
            SOURCE,
            record.title,
            status.value,
            record.priority,
            priority_rank(record.priority),
            record.position,
            record.blocked_by,
            json_of(record.fields),
            bound(record.created_at or now),
            bound(record.completed_at),
            record.skill,
            record.project_id,
            record.agent_id,
            record.user_id,
            no,
            1 if status is doing else 0,
            1,
            at,
            at,
        )

    return values


EVENT_COLUMNS = ("task_pk", "task_id", "scope", "at", "kind", "actor", "before", "detail")


def _insert_events(
    db: Db, events: list[Event], fresh: list[tuple[int, str, str]], now: datetime, actor: str
) -> None:
    """The history entries' rows with one executemany, in order (as
    :func:`heartbeat.db.tasks.record_event` writes each); ``fresh``: the (pk, id, scope) of the
    new tasks the events name by index."""
    at = db.time(now)
    detail_json: dict[int, str | None] = {}  # one import's "created" details are one object
    rows = []
    for task, kind, before, detail in events:
        pk, task_id, scope = fresh[task] if isinstance(task, int) else (task.pk, task.id, task.scope)
        text = detail_json.get(id(detail))
        if text is None:
            text = detail_json[id(detail)] = db.json(detail)
        rows.append((pk, task_id, scope, at, kind, actor, db.json(before), text))
    db.insert_many(TASK_EVENTS.name, EVENT_COLUMNS, rows, json=TASK_EVENTS.json)


def render_tasks(ctx: Context, db: Db, path: Path | None = None) -> str:
    """tasks.json as the ledger has it now, laid over ``path``'s text when that file exists."""
    return tasks_text(db, current_text(path))[0]


def tasks_text(db: Db, current: str | None) -> tuple[str, dict[str, Any]]:
    """tasks.json as the ledger has it now, laid over ``current``; what :func:`.base.remember` keeps of it."""
    doc = last_document(db)
    if current is not None:
        doc = replace(doc, source=current)
    rows = db.load(TaskRow, SQL.tasks_json_tasks_in_order)
    text, layout = tasks_json.render_layout(doc, [record_from_row(t) for t in rows])
    return text, rendered_facts(layout, tasks_stamp(rows))


def take_file_version(
    db: Db,
    task: TaskRow,
    record: tasks_json.QueueRecord,
    now: datetime,
    path: Path,
    *,
    actor: str = "sync",
    conflict: bool = False,
    events: list[Event] | None = None,
) -> list[str]:
    """Give ``task`` the file's version of its record; the fields that changed.

    The previous version goes to the history (kind ``conflict`` when the ledger had
    changed too; ``events``: kept there for the caller to insert); a record that reads
    the same as the task changes nothing.
    """
    changed = {k: v for k, v in _columns(record, now).items() if k != "created_at" and getattr(task, k) != v}
    if "extra" in changed and not task.extra and _written_by_hb(record):
        del changed["extra"]  # the object hb writes for a task it holds no object of: nothing new
    if "position" in changed:
        # the record's place in its list, as a sync gives it before the merge: no change of the
        # task's (each list counts from 0, so a task the file moved between lists moves anyway)
        task.position = changed.pop("position")
    if not changed and not conflict:
        return []
    before = snapshot(task)
    for name, value in changed.items():
        setattr(task, name, value)
    if "status" in changed and task.status is not TaskStatus.DOING:
        # the claim ends with the status, as by hand: its holder's --claim is refused (exit 15)
        task.claimed_at = task.claimed_by = task.lease_expires_at = task.claim = None
    if before.get("status") == TaskStatus.FAILED.value and task.status is TaskStatus.TODO:
        task.attempts = 0  # retried by hand: its attempts start again
    task.version += 1
    task.updated_at = now
    detail: dict[str, Any] = {"fields": sorted(changed), "file": str(path)}
    if conflict:
        detail["note"] = "changed in the file and in the ledger; the file won"
    kind = "conflict" if conflict else "updated"
    if events is not None:
        events.append((task, kind, before, detail))
    else:
        record_event(db, task, kind, now, before=before, actor=actor, detail=detail)
    return sorted(changed)


def _written_by_hb(record: tasks_json.QueueRecord) -> bool:
    """Whether the record's object is the one hb writes for a task it holds no object of (a task
    made by ``hb add``, kept with ``extra`` null): it tells nothing the record's fields do not, so
    an import of the file hb wrote finds that task unchanged. A key added, removed, reordered or
    written otherwise makes it an object of the file's own, kept as the task's ``extra``."""
    if not record.fields:
        return False
    plain = tasks_json.render_task(replace(record, fields={}))
    return list(plain.items()) == list(record.fields.items()) and all(
        type(plain[k]) is type(v) for k, v in record.fields.items()
    )


def task_of(record: tasks_json.QueueRecord, now: datetime, pk: int) -> TaskRow:
    """The task of a record new in tasks.json, as :func:`_insert_records` inserted it."""
    return TaskRow(pk=pk, **_fresh(record, now))


def _fresh(record: tasks_json.QueueRecord, now: datetime) -> dict[str, Any]:
    """The columns of a task new in tasks.json that are not the row's defaults."""
    values = _columns(record, now)
    values.update(
        id=record.id,
        scope=record.scope,
        source=SOURCE,
        follow_up=False,
        # someone is (or was) working on a task the file has in progress: that is an attempt
        attempts=1 if values["status"] is TaskStatus.DOING else 0,
        version=1,
        updated_at=now,
        last_update_at=now,
    )
    return values
