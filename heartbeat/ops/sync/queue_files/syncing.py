"""``hb sync`` of tasks.json (the targeted sync of a few changed records first, else the full
three-way merge), and each queue file kind's importer, renderer and syncer."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.db.rows import TaskRow
from heartbeat.db.store import Db
from heartbeat.formats import tasks_json
from heartbeat.ops.sync.queue_files.base import (
    SOURCE,
    SQL,
    base_records,
    key_text,
    read_storable,
    remember,
    unchanged_warnings,
)
from heartbeat.ops.sync.queue_files.logs import (
    import_errors,
    import_last_run,
    render_errors,
    render_last_run,
    sync_errors,
    sync_last_run,
)
from heartbeat.ops.sync.queue_files.merge import (
    merge_records,
    remove_task,
    render_written,
    set_positions,
)
from heartbeat.ops.sync.queue_files.targeted import sync_changed
from heartbeat.ops.sync.queue_files.tasks import import_tasks, render_tasks
from heartbeat.ops.sync.report import SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context


def sync_tasks(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """tasks.json both ways, keyed by (scope, id), three-way against the text hb last synced.

    Changed only in the file: imported. Changed only in the ledger: written.
    Changed on both sides: the file wins, the ledger's version goes to the
    task's history (kind ``conflict``). A record gone from the file removes its
    task (history kept); a file that is missing is written from the ledger.
    """
    report = SyncReport(kind=SOURCE, path=str(path))
    if text is not None and (warnings := unchanged_warnings(db, path, text)) is not None:
        report.preserved = [f"{path}: {w}" for w in warnings]
        remember(db, SOURCE, path, text, now, rendered={"warnings": warnings})
        return report, None
    if text is not None:
        done = sync_changed(db, path, text, now)  # a few records changed: only those read
        if done is not None:
            return done
    tasks = {(t.scope, t.id): t for t in db.load(TaskRow, SQL.tasks_json_tasks)}
    doc: tasks_json.TasksDocument | None = None
    if text is not None:
        doc = read_storable(db, path, text, SOURCE, tasks_json.parse)
        report.preserved = [f"{path}: {w}" for w in doc.warnings]
        base = base_records(db, SOURCE, path) or {}
        seen = {(r.scope, r.id) for r in doc.records}
        # the file's order is the queue's: a pop or an add by heartbeat.py moves the tasks after
        # it without changing them (bookkeeping, not a change of a task), written in one statement
        set_positions(
            db, [(t, r.position) for r in doc.records if (t := tasks.get((r.scope, r.id))) is not None]
        )
        merge_records(db, tasks, ((r, base.get((r.scope, r.id))) for r in doc.records), now, path, report)
        for key, base_digest in base.items():
            task = tasks.get(key)
            if key in seen or task is None:
                continue
            if remove_task(db, task, base_digest, now, path, report):
                del tasks[key]
        for key in tasks:
            if key not in seen and key not in base:
                report.added.append(key_text(*key))  # new in the ledger: written below
    elif tasks:
        report.added.extend(key_text(*key) for key in tasks)
    db.flush()
    if doc is None and not tasks:
        return report, None
    return render_written(db, path, text, doc or tasks_json.empty_document(), tasks.values(), now, report)


# each kind's importer, renderer and syncer
IMPORTERS = {"tasks-json": import_tasks, "errors-json": import_errors, "last-run": import_last_run}
RENDERERS = {"tasks-json": render_tasks, "errors-json": render_errors, "last-run": render_last_run}
SYNCERS = {"tasks-json": sync_tasks, "errors-json": sync_errors, "last-run": sync_last_run}
