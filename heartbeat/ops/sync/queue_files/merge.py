"""tasks.json's three-way merge, record by record: each record against its task and the text
hb last synced (the file wins a conflict; the ledger's version goes to the history), a record
gone from the file removing its task, and the file rendered back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from heartbeat.db.queue import record_from_row
from heartbeat.db.rows import TaskRow
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import Db
from heartbeat.db.tasks import record_event, snapshot
from heartbeat.formats import tasks_json
from heartbeat.ops.sync.queue_files.base import (
    SOURCE,
    SQL,
    Event,
    key_text,
    record_digest,
    rendered_facts,
    tasks_stamp,
    what_to_write,
)
from heartbeat.ops.sync.queue_files.tasks import insert_fresh, take_file_version, task_of
from heartbeat.ops.sync.report import SyncReport


def set_positions(db: Db, places: Sequence[tuple[TaskRow, int]]) -> None:
    """Give each task its place in the file (``places``: the task and its position there), as
    assigning and flushing each would, in a few statements (see :func:`write_positions`)."""
    moved = [(task, position) for task, position in places if task.position != position]
    write_positions(db, [(t.pk or 0, t.position, p) for t, p in moved])
    for task, position in moved:
        db.written(task, position=position)


def write_positions(db: Db, moves: Sequence[tuple[int, int, int]]) -> None:
    """Move tasks in their queue (``moves``: pk, position now, new position). A pop or an add by
    heartbeat.py shifts every task after it by one: the tasks shifted alike move with one
    statement, the few others with one executemany."""
    shifts: dict[int, list[tuple[int, int]]] = {}
    for pk, was, position in moves:
        shifts.setdefault(position - was, []).append((pk, position))
    alone: list[dict[str, int]] = []
    for shift, group in shifts.items():
        if len(group) < 8:
            alone.extend({"pk": pk, "position": position} for pk, position in group)
        else:
            db.execute(SQL.shift_task_positions, {"shift": shift, "pks": [pk for pk, _ in group]})
    db.executemany(SQL.set_task_position, alone)


def _merge_record(
    db: Db,
    task: TaskRow,
    record: tasks_json.QueueRecord,
    base_digest: str | None,
    now: datetime,
    path: Path,
    report: SyncReport,
    events: list[Event],
) -> None:
    """One record of the file whose task the ledger holds, three-way against ``base_digest`` (its
    digest in the text hb last synced; None: it was not there); the task is already at the
    record's position."""
    key = (record.scope, record.id)
    file_digest = record_digest(record)
    ledger_digest = record_digest(record_from_row(task))
    if file_digest == ledger_digest:
        return
    if base_digest is not None and file_digest == base_digest:
        # only the ledger changed: rendered below
        target = report.completed if task.status is TaskStatus.DONE else report.updated
        target.append(key_text(*key))
        return
    if record.status == TaskStatus.TODO.value and _live_claim(task, now):
        # a live claim is not returned to the queue by the file (a stale copy the old
        # script wrote back would have it handed out twice): the claim stands, the rest
        # applies; a task the file completes or fails is taken as done by hand
        report.preserved.append(
            f"{path}: {key_text(*key)}: {_claim_text(task)}; it stays claimed "
            "(hb fail or hb clear-stale returns it to the queue)"
        )
        record = replace(record, status=TaskStatus.DOING.value, completed_at=None)
        if record_digest(record) == ledger_digest:
            report.updated.append(key_text(*key))  # written back as the ledger has it
            return
    if task.status is TaskStatus.DONE and record.status != TaskStatus.DONE.value:
        report.preserved.append(f"{path}: {key_text(*key)}: was done; the file reopens it")
    conflict = base_digest is None or ledger_digest != base_digest
    was_done = task.status is TaskStatus.DONE
    take_file_version(db, task, record, now, path, conflict=conflict, events=events)
    if conflict:
        report.conflicts.append(key_text(*key))
    elif task.status is TaskStatus.DONE and not was_done:
        report.completed.append(key_text(*key))
    else:
        report.updated.append(key_text(*key))


def remove_task(
    db: Db, task: TaskRow, base_digest: str, now: datetime, path: Path, report: SyncReport
) -> bool:
    """A task whose record (``base_digest`` in the text hb last synced) is gone from the file:
    removed, its history kept; whether it was (a live claim keeps it, to be written back)."""
    key = key_text(task.scope, task.id)
    if _live_claim(task, now):  # its worker holds it: written back, not removed
        report.preserved.append(f"{path}: {key}: {_claim_text(task)}; not removed")
        return False
    before = snapshot(task)
    detail: dict[str, Any] = {"reason": "the record was deleted from tasks.json", "file": str(path)}
    if record_digest(record_from_row(task)) != base_digest:
        detail["note"] = "changed in the ledger too; the file won"
        report.conflicts.append(key)
    record_event(db, task, "removed", now, before=before, actor="sync", detail=detail)
    db.delete(task)
    report.removed.append(key)
    return True


def merge_records(
    db: Db,
    tasks: dict[tuple[str, str], TaskRow],
    records: Iterable[tuple[tasks_json.QueueRecord, str | None]],
    now: datetime,
    path: Path,
    report: SyncReport,
) -> None:
    """Each (record, its digest at the last sync) merged into its task of ``tasks`` three ways,
    or made a new task. The new tasks and the history are inserted in bulk after the loop, in
    the file's order (as hb import inserts them), each task with the pk it would have had on its
    own; ``tasks`` gains them."""
    fresh: list[tasks_json.QueueRecord] = []
    events: list[Event] = []
    created = {"file": str(path)}
    for record, base_digest in records:
        key = (record.scope, record.id)
        task = tasks.get(key)
        if task is None:
            events.append((len(fresh), "created", None, created))
            fresh.append(record)
            report.added.append(key_text(*key))
            continue
        _merge_record(db, task, record, base_digest, now, path, report, events)
    pks = insert_fresh(db, fresh, events, now, "sync")
    for record, pk in zip(fresh, pks, strict=True):
        tasks[(record.scope, record.id)] = db.track(task_of(record, now, pk))


def render_written(
    db: Db,
    path: Path,
    text: str | None,
    doc: tasks_json.TasksDocument,
    tasks: Iterable[TaskRow],
    now: datetime,
    report: SyncReport,
) -> tuple[SyncReport, str | None]:
    """The end of a sync of tasks.json: the file rendered from ``tasks`` (in the file's order)
    over ``doc`` (read from ``text``, the file as it is), written when it differs.

    The text written reads with the warnings ``text`` read with when that is none (hb's objects
    for the tasks give none, and the rest of the file stays as it was): the next sync of a few
    changed records can then read only those (:func:`.targeted.sync_changed`). Else they are not known."""
    ordered = sorted(tasks, key=lambda t: (t.scope, t.position, t.pk))
    out, layout = tasks_json.render_layout(doc, [record_from_row(t) for t in ordered])
    known = doc.warnings if out == text or not doc.warnings else None
    rendered = rendered_facts(layout, tasks_stamp(ordered), known)
    return what_to_write(db, SOURCE, path, text, out, now, report, rendered=rendered)


def _claim_text(task: TaskRow) -> str:
    return f"claimed by {task.claimed_by or 'a worker'} until {task.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC"


def _live_claim(task: TaskRow, now: datetime) -> bool:
    """Whether ``task`` is claimed under a lease that has not expired."""
    lease = task.lease_expires_at
    return task.status is TaskStatus.DOING and lease is not None and lease > now
