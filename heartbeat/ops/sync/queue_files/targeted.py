"""The targeted sync of tasks.json: a few records changed, nothing in the ledger; hb sync reads
only those records.

heartbeat.py rewrites the whole file for each pop, completion or add; in a large queue that moves
one record (and shifts the places of the ones after it). :func:`sync_changed` compares the file
with the text hb last synced record by record, by the text each task object is written as
(:mod:`heartbeat.formats.tasks_outline`), and runs the three-way merge of
:func:`heartbeat.ops.sync.queue_files.syncing.sync_tasks` for the records whose text changed, came or
went. Every other record reads as it did then, and the ledger's task of it is as hb rendered it
then (the ledger's stamp says its tasks did not change since): its row stays as it is, but for its
position, which follows the file's order. The result is the full sync's, row for row and byte for
byte: the file is written back only when the ledger's tasks render otherwise than it reads, and
then rendered as the full sync renders it.

:func:`sync_changed` answers None, having changed nothing, whenever it cannot be sure: no text
kept of the last sync, or not one hb rendered from the ledger, or not known to read without
warnings; the ledger changed since; the file's frame (anything but the task objects) changed;
the text is not laid out as the outline reads it; a changed record reads with a warning. The
caller then runs the full sync.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from heartbeat.db.queue import record_from_row
from heartbeat.db.rows import SyncStateRow, TaskRow
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import Db
from heartbeat.formats import tasks_json
from heartbeat.formats.json_edit import same
from heartbeat.formats.tasks_json import (
    LEGACY_LIST_OF_STATUS,
    STATUS_OF_LEGACY_LIST,
    Blocker,
    blocked_by_value,
    scoped_status,
)
from heartbeat.formats.tasks_outline import Item, blockers, outline, read_items
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import same_place
from heartbeat.ops.sync.queue_files.base import (
    SOURCE,
    SQL,
    key_text,
    ledger_stamp,
    record_digest,
    rendered_facts,
    storable,
    what_to_write,
)
from heartbeat.ops.sync.queue_files.merge import (
    merge_records,
    remove_task,
    render_written,
    write_positions,
)
from heartbeat.ops.sync.report import SyncReport


def sync_changed(db: Db, path: Path, text: str, now: datetime) -> tuple[SyncReport, str | None] | None:
    """:func:`heartbeat.ops.sync.queue_files.syncing.sync_tasks` of ``text``, which differs from the text hb
    last synced, reading only the records that changed; None (nothing done) when that cannot be
    sure to give the full sync's result (see the module docstring)."""
    state = db.get(SyncStateRow, SOURCE)
    if state is None or not same_place(db, state.path, path):
        return None
    rendered = (state.skeleton or {}).get("rendered")
    if (
        not isinstance(rendered, dict)
        or rendered.get("warnings") != []
        or not isinstance(rendered.get("stamp"), list)
    ):
        return None  # hb did not render the text it keeps, or does not know it reads without warnings
    if ledger_stamp(db) != rendered["stamp"]:
        return None  # the ledger changed since: the full sync compares every record with it
    base_text = bookmarks.kept_text(state.skeleton, db)
    if base_text is None:
        return None
    new = outline(text)
    if new is None:
        return None
    old = outline(base_text)
    if old is None or old.frame != new.frame:
        return None
    places = {
        (scope, task_id): (pk, position, status, blocked)
        for pk, scope, task_id, position, status, blocked in db.rows(SQL.tasks_json_places)
    }
    if places.keys() != old.items.keys():
        return None  # not every task of the ledger is a record of the text kept, or the reverse
    changed = [
        key
        for key, item in new.items.items()
        if (was := old.items.get(key)) is None or was.raw != item.raw or was.home != item.home
    ]
    gone = [key for key in old.items if key not in new.items]
    filters = blockers(new.frame)
    records = read_items(text, [new.items[k] for k in changed], filters)
    bases = read_items(base_text, [old.items[k] for k in changed if k in old.items], filters)
    gone_records = read_items(base_text, [old.items[k] for k in gone], filters)
    if records is None or bases is None or gone_records is None:
        return None
    storable(db, path, text, SOURCE)
    base_digests = {(r.scope, r.id): record_digest(r) for r in (*bases, *gone_records)}
    by_key = {(r.scope, r.id): r for r in records}
    loaded = [places[k][0] for k in (*changed, *gone) if k in places]
    tasks = (
        {(t.scope, t.id): t for t in db.load(TaskRow, SQL.tasks_json_tasks_by_pk, {"pks": loaded})}
        if loaded
        else {}
    )

    report = SyncReport(kind=SOURCE, path=str(path))
    moves = []
    for key, item in new.items.items():
        place = places.get(key)
        if place is not None and place[1] != item.position:
            moves.append((place[0], place[1], item.position))
    write_positions(db, moves)
    for key, task in tasks.items():
        if key in new.items:
            db.written(task, position=new.items[key].position)

    def merged() -> Iterator[tuple[tasks_json.QueueRecord, str | None]]:
        """The records to merge, in the file's order; the others reported as the full sync would."""
        for key, item in new.items.items():
            record = by_key.get(key)
            if record is not None:
                yield record, base_digests.get(key)
                continue
            _, _, status, blocked = places[key]  # as it was: the ledger's version stands
            if _drifts(item, status, blocked, filters):  # reported when it reads otherwise
                target = report.completed if status == TaskStatus.DONE.value else report.updated
                target.append(key_text(*key))

    merge_records(db, tasks, merged(), now, path, report)
    kept = False  # a task gone from the file stays (a live claim): written back
    for key in gone:
        task = tasks[key]
        if remove_task(db, task, base_digests[key], now, path, report):
            del tasks[key]
        else:
            kept = True
    db.flush()
    if not kept and all(_reads_as(tasks[k], new.items[k]) for k in changed):
        # every task renders as the file reads: the full sync would write the file as it is
        return what_to_write(
            db, SOURCE, path, text, text, now, report, rendered=rendered_facts(None, ledger_stamp(db), [])
        )
    everyone = db.load(TaskRow, SQL.tasks_json_tasks)
    return render_written(db, path, text, tasks_json.parse(text), everyone, now, report)


def _drifts(item: Item, status: str, blocked: str | None, filters: dict[str, list[Blocker]]) -> bool:
    """Whether the ledger's task of a record that reads as hb rendered it reads otherwise than the
    record all the same: a status the legacy lists cannot show (``waiting`` is written into
    ``pending``, which reads as ``todo``), or a blocker the file does not name."""
    if item.scope:
        shown = scoped_status(item.value.get("status")) or "todo"
        named = blocked_by_value(item.value, item.id, filters[str(item.where[0])])
    else:
        shown, named = STATUS_OF_LEGACY_LIST[item.home], None
    return shown != status or named != blocked


def _reads_as(task: TaskRow, item: Item) -> bool:
    """Whether ``task`` renders in the place and as the object ``item`` is in the file."""
    record = record_from_row(task)
    home = "" if record.scope else LEGACY_LIST_OF_STATUS[record.status]
    return (
        record.scope == item.scope and home == item.home and same(tasks_json.render_task(record), item.value)
    )
