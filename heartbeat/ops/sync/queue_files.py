"""tasks.json, errors.json and last-run.json <-> the ledger (FORMATS.md section 2).

The files are views of the ledger: import reads them into rows in one
transaction (all or nothing); export renders rows back through
:mod:`heartbeat.formats.tasks_json`, which keeps every field, key order and
metadata list it did not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat import progress
from heartbeat.bulk import collector_paused
from heartbeat.db.queue import last_run_of, record_from_row
from heartbeat.db.rows import ErrorRow, RunRow, SyncStateRow, TaskRow
from heartbeat.db.shape import TASK_EVENTS, TASKS
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import Db, statements
from heartbeat.db.tasks import record_event, snapshot
from heartbeat.errors import FileFormatError, HbError, InvalidState, one_line
from heartbeat.formats import tasks_json, tasks_splice
from heartbeat.formats.json_edit import Layout, same
from heartbeat.formats.tasks_json import (
    LEGACY_LIST_OF_STATUS,
    STATUS_OF_LEGACY_LIST,
    Blocker,
    blocked_by_value,
    priority_rank,
    scoped_status,
)
from heartbeat.formats.tasks_outline import Item, blockers, outline, read_items
from heartbeat.formats.tasks_splice import Edit
from heartbeat.formats.timestamps import timestamp_or_none
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import (
    default_path,
    digest,
    file_lock,
    known_text,
    lock_timeout,
    measure,
    measure_ahead,
    read_text,
)
from heartbeat.ops.sync.report import ImportReport, SyncReport
from heartbeat.ops.sync.swap import replace_if

if TYPE_CHECKING:
    from heartbeat.context import Context

SQL = statements("queue_files")

SOURCE = "tasks-json"


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


def _key(scope: str, task_id: str) -> str:
    return f"{scope}:{task_id}" if scope else task_id


Key = tuple[str, str]  # a task's (scope, id)

# a history entry to insert: the task (a row, or the index of a new one among those inserted),
# its kind, the version it replaced, the detail
_Event = tuple[TaskRow | int, str, dict[str, Any] | None, dict[str, Any]]


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
    try:
        doc = tasks_json.parse(text)
        _storable(db, text, SOURCE)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    report = ImportReport(SOURCE, str(path), warnings=list(doc.warnings))
    existing = {(t.scope, t.id): t for t in db.load(TaskRow, SQL.tasks_json_tasks)}
    fresh: list[tasks_json.QueueRecord] = []
    events: list[_Event] = []
    created = {"file": str(path)}
    for record in progress.each(f"importing {path.name}", doc.records, len(doc.records)):
        task = existing.get((record.scope, record.id))
        if task is None:
            events.append((len(fresh), "created", None, created))
            fresh.append(record)
            report.added.append(_key(record.scope, record.id))
            continue
        if not _take_file_version(db, task, record, now, path, actor=actor, events=events):
            report.unchanged += 1
            continue
        report.updated.append(_key(record.scope, record.id))
    _insert_fresh(db, fresh, events, now, actor)
    remember(db, SOURCE, path, text, now)
    return report


def _insert_fresh(
    db: Db, fresh: list[tasks_json.QueueRecord], events: list[_Event], now: datetime, actor: str
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
    values = _fresh_binder(db, now)
    rows = [values(record, pk) for record, pk in zip(records, pks, strict=True)]
    db.insert_many(TASKS.name, FRESH_COLUMNS, rows, json=TASKS.json)
    return pks


# the columns :func:`_fresh` sets, as :func:`_fresh_binder`'s function binds them
_FRESH = (
    "pk id scope source title status priority priority_rank position blocked_by extra created_at "
    "completed_at skill project_id agent_id user_id follow_up attempts version updated_at last_update_at"
)
FRESH_COLUMNS = tuple(_FRESH.split())


def _fresh_binder(db: Db, now: datetime) -> Callable[[tasks_json.QueueRecord, int], tuple[Any, ...]]:
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
    db: Db, events: list[_Event], fresh: list[tuple[int, str, str]], now: datetime, actor: str
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
    db.insert_many(
        TASK_EVENTS.name,
        EVENT_COLUMNS,
        rows,
        json=TASK_EVENTS.json,
    )


def remember(
    db: Db,
    kind: str,
    path: Path,
    text: str,
    now: datetime,
    *,
    rendered: dict[str, Any] | None = None,
    edits: list[Edit] | None = None,
) -> None:
    """Record what the file held when hb last read or wrote it (for sync and exports).

    ``rendered`` (tasks.json rendered from the ledger, see :func:`_rendered`): the stamp of the
    tasks it shows, and what is known of the text itself: the layout ``json.dumps`` wrote it in
    and the warnings reading it gives. With them the next export after a queue operation
    rewrites only what the operation moved, and a sync that finds neither side changed reads
    nothing. The same text remembered again keeps what was known of it. ``edits``: ``text`` is
    the text remembered now with these edits made (:func:`tasks_splice.apply`); a large one is
    then kept as those edits beside the older text (:func:`bookmarks.keep_edits`)."""
    content_hash, size = measure(text)
    row = db.get(SyncStateRow, kind)
    same = row is not None and row.content_hash == content_hash and row.path == str(path)
    old = (row.skeleton or {}) if same and row is not None else {}
    # the same text again: kept as it was (a large one is not compressed a second time)
    kept = {k: v for k in ("text", "zlib", "edits") if isinstance(v := old.get(k), str | dict)}
    skeleton = kept if len(kept) == 1 else None
    if skeleton is None and edits is not None and row is not None and row.path == str(path):
        skeleton = bookmarks.keep_edits(
            db, kind, row.skeleton or {}, row.content_hash, edits, path=str(path), now=now
        )
    if skeleton is None:
        skeleton = bookmarks.keep(text)
    known = old.get("rendered")
    if isinstance(known, dict):  # facts of this text stay true; a new stamp replaces the old
        rendered = {**known, **{k: v for k, v in (rendered or {}).items() if v is not None}}
    if rendered is not None:
        skeleton["rendered"] = rendered
    if row is None:
        db.add(
            SyncStateRow(
                kind=kind,
                path=str(path),
                synced_at=now,
                content_hash=content_hash,
                size=size,
                skeleton=skeleton,
            )
        )
        return
    row.path = str(path)
    row.content_hash = content_hash
    row.size = size
    row.synced_at = now
    row.skeleton = skeleton


def _stamp(tasks: Iterable[TaskRow]) -> list[int]:
    """What tasks.json's tasks are: how many, their versions summed plainly and by pk (every
    change of a task adds one to its version); the statement ``tasks_json_stamp`` counts the same."""
    count = versions = weighted = 0
    for task in tasks:
        count += 1
        versions += task.version
        weighted += (task.pk or 0) * task.version
    return [count, versions, weighted]


def _rendered(layout: Layout | None, stamp: list[int], warnings: list[str] | None = None) -> dict[str, Any]:
    """What :func:`remember` keeps of a tasks.json text rendered from the ledger whose tasks had
    ``stamp``: its layout (None: not json.dumps's, or not known) and the warnings reading it
    gives (None: not known)."""
    shape = None if layout is None else [layout.unit, layout.ascii_only, layout.tail]
    return {"layout": shape, "stamp": stamp, "warnings": warnings}


def _kept_rendered(db: Db) -> dict[str, Any] | None:
    """What :func:`remember` keeps of the tasks.json text hb last rendered (None: hb did not
    render the text it keeps, or it has none)."""
    row = db.get(SyncStateRow, SOURCE)
    rendered = (row.skeleton or {}).get("rendered") if row is not None else None
    return rendered if isinstance(rendered, dict) and isinstance(rendered.get("stamp"), list) else None


def _ledger_stamp(db: Db) -> list[int]:
    """:func:`_stamp` of the ledger's tasks.json tasks now, counted by the database."""
    return [int(v) for v in db.rows(SQL.tasks_json_stamp)[0]]


def _unchanged(db: Db, path: Path, text: str) -> list[str] | None:
    """The warnings of ``text`` when neither it nor the ledger's tasks changed since hb rendered
    it (a sync has nothing to do), else None. Warnings not known yet (hb wrote the whole file from
    the ledger, and the splices after it kept not knowing) are learnt by reading the text alone:
    a fraction of the three-way merge, which would find nothing to do."""
    if _edited(db, SOURCE, path, text):
        return None
    rendered = _kept_rendered(db)
    if rendered is None or _ledger_stamp(db) != rendered["stamp"]:
        return None
    if isinstance(rendered.get("warnings"), list):
        return [str(w) for w in rendered["warnings"]]
    try:
        return tasks_json.parse(text).warnings
    except FileFormatError:
        return None  # the merge says what is wrong with it


def last_document(db: Db) -> tasks_json.TasksDocument:
    """tasks.json as hb last read or wrote it (the four empty legacy lists when never)."""
    row = db.get(SyncStateRow, SOURCE)
    return _skeleton_document(db, row.skeleton if row is not None else None)


def _skeleton_document(db: Db, skeleton: dict[str, Any] | None) -> tasks_json.TasksDocument:
    text = bookmarks.kept_text(skeleton, db)
    if text is not None:
        try:
            return tasks_json.parse(text)
        except FileFormatError:
            pass
    return tasks_json.empty_document()


def _document(db: Db, kind: str) -> tasks_json.TasksDocument:
    row = db.get(SyncStateRow, kind)
    return _skeleton_document(db, row.skeleton if row is not None else None)


def _current_text(path: Path | None) -> str | None:
    """The text of the file an export writes over, to keep what it does not change (None: none)."""
    if path is None:
        return None
    try:
        return read_text(path)
    except (HbError, OSError):
        return None


def render_tasks(ctx: Context, db: Db, path: Path | None = None) -> str:
    """tasks.json as the ledger has it now, laid over ``path``'s text when that file exists."""
    return _render_tasks(db, _current_text(path))[0]


def _render_tasks(db: Db, current: str | None) -> tuple[str, dict[str, Any]]:
    """tasks.json as the ledger has it now, laid over ``current``; what :func:`remember` keeps of it."""
    doc = _document(db, SOURCE)
    if current is not None:
        doc = replace(doc, source=current)
    rows = db.load(TaskRow, SQL.tasks_json_tasks_in_order)
    text, layout = tasks_json.render_layout(doc, [record_from_row(t) for t in rows])
    return text, _rendered(layout, _stamp(rows))


def _export_tasks(
    db: Db,
    path: Path,
    current: str | None,
    now: datetime,
    moved: Sequence[Key] | None,
    *,
    alone: bool = False,
) -> tuple[str, Callable[[], None]]:
    """tasks.json after a queue operation, and the call that remembers it (the caller makes it
    once the text is written, which it hashes meanwhile: see :func:`_export_one`). ``current`` is
    the file's text, which the caller found unedited since hb last read or wrote it: when hb
    rendered that text and the ledger changed since only in the tasks the operation ``moved``
    (each changed once), those tasks are spliced into it (:mod:`heartbeat.formats.tasks_splice`);
    else the whole file is rendered. ``alone``: the caller knows the operation was the ledger's
    only change since hb rendered that text (see :func:`_alone`); else the ledger's tasks are
    counted to know it."""
    clean: list[str] | None = None  # the new text reads without warnings (None: not known)
    # the file holds the text remembered (the caller checked): did hb render it, and when?
    rendered = _kept_rendered(db) if moved is not None and current is not None else None
    if rendered is not None and moved is not None and current is not None:
        tasks = [
            t
            for scope, task_id in moved
            for t in db.load(TaskRow, SQL.tasks_json_task, {"scope": scope, "id": task_id})
        ]
        count, versions, weighted = rendered["stamp"]
        # every change of a task adds one to its version: the moved tasks, each changed once
        expected = [count, versions + len(tasks), weighted + sum(t.pk or 0 for t in tasks)]
        stamp = expected if alone and len(tasks) == len(moved) else _ledger_stamp(db)
        only_moved = len(tasks) == len(moved) and stamp == expected
        if only_moved and rendered.get("warnings") == []:
            clean = []  # a text that read without warnings still does with hb's objects for them
        if only_moved and rendered.get("layout"):
            tasks.sort(key=lambda t: (t.scope, t.position, t.pk))
            layout = Layout(*rendered["layout"])
            found = tasks_splice.splice_edits(current, layout, [record_from_row(t) for t in tasks])
            if found is not None:
                text, edits = found
                facts = _rendered(layout, stamp, clean)
                return text, partial(remember, db, SOURCE, path, text, now, rendered=facts, edits=edits)
    text, rendered = _render_tasks(db, current)
    rendered["warnings"] = clean
    return text, partial(remember, db, SOURCE, path, text, now, rendered=rendered)


# --- errors.json ------------------------------------------------------------------


def import_errors(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    """Read errors.json; an item the ledger already holds (the same object) is not added twice.

    errors.json is a log: two identical items are two failures, each kept.
    """
    try:
        items = tasks_json.parse_errors(text)
        _storable(db, text, "errors-json")
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    report = ImportReport("errors-json", str(path))
    known = _Items(_shown(e) for e in db.load(ErrorRow, SQL.errors))
    tasks = _legacy_tasks(db)
    fresh = []
    dated: list[tuple[tuple[int], dict[str, Any]]] = []  # the new items, for unread_times
    for index, item in enumerate(map(tasks_json.fix_malformed, items)):
        if item in known:
            known.remove(item)  # each row stands for one item of the file
            report.unchanged += 1
            continue
        fresh.append(_error_row(item, tasks, now))
        report.added.append(f"[{index}]")
        dated.append(((index,), item))
    db.add_all(fresh)
    report.warnings.extend(tasks_json.unread_times(text, dated))
    remember(db, "errors-json", path, text, now)
    return report


def _storable(db: Db, text: str, kind: str) -> None:
    """FileFormatError when the text (of a ``kind`` read already) holds a NUL character in a
    text the ledger stores as text (both backends); on PostgreSQL, also when it holds a number
    its ``json`` columns cannot."""
    tasks_json.refuse_nul(text, kind)
    if not db.sqlite:
        tasks_json.refuse_not_finite(text)


def _legacy_tasks(db: Db) -> dict[str, int]:
    """The pks of the legacy lists' tasks, by id."""
    return {task_id: pk for task_id, pk in db.rows(SQL.legacy_task_pks)}


def _error_row(item: dict[str, Any], tasks: Mapping[str, int], now: datetime) -> ErrorRow:
    """An errors.json item as an ``errors`` row (the item itself kept as written), to insert."""
    at = timestamp_or_none(item.get("timestamp")) or now
    task_id = item.get("task_id")
    return ErrorRow(
        task_pk=tasks.get(str(task_id)) if task_id is not None else None,
        task_id=None if task_id is None else str(task_id),
        scope="",
        skill=tasks_json.text_or_none(item.get("assigned_skill")),  # (the item keeps what it holds)
        at=at,
        reason=str(item.get("reason") or "Unknown failure"),
        trace_id=tasks_json.text_or_none(item.get("trace_id")),
        decision_log=item.get("decision_log"),
        resolved=bool(item.get("resolved", False)),
        final=False,
        extra=item,
    )


def _shown(e: ErrorRow) -> dict[str, Any]:
    """The errors.json item of a row as hb writes it: the item it was read from (a malformed
    ``+00:00Z`` time written ``Z``), or heartbeat.py's entry."""
    if e.extra is not None:
        return tasks_json.fix_malformed(e.extra)
    return tasks_json.error_entry(
        timestamp=e.at,
        task_id=e.task_id,
        assigned_skill=e.skill,
        reason=e.reason,
        trace_id=e.trace_id,
        decision_log=e.decision_log,
        resolved=e.resolved,
    )


def render_errors(ctx: Context, db: Db, path: Path | None = None) -> str:
    """errors.json as the ledger has it now, laid over ``path``'s text when that file exists."""
    return _errors_text(db, _current_text(path))


def _errors_text(db: Db, source: str | None) -> str:
    items = [_shown(e) for e in db.load(ErrorRow, SQL.errors)]
    return tasks_json.render_errors(items, source)


# --- last-run.json ----------------------------------------------------------------


def import_last_run(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    try:
        obj = tasks_json.parse_last_run(text)
        _storable(db, text, "last-run")
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    report = ImportReport("last-run", str(path))
    if last_run_of(db) == obj:
        report.unchanged = 1
    else:
        at = timestamp_or_none(obj.get("timestamp")) or now
        db.add(
            RunRow(
                kind="import",
                scope=tasks_json.text_or_none(obj.get("scope")),  # (the record keeps what it holds)
                status=str(obj.get("status") or "unknown"),
                started_at=at,
                finished_at=at,
                task_id=None if obj.get("task_id") is None else str(obj.get("task_id")),
                record=obj,
            )
        )
        report.added.append("last-run")
        report.warnings.extend(tasks_json.unread_times(text, [((), obj)]))
    remember(db, "last-run", path, text, now)
    return report


def render_last_run(ctx: Context, db: Db, path: Path | None = None) -> str | None:
    """last-run.json as the ledger has it now, laid over ``path``'s text when that file exists."""
    return _last_run_text(db, _current_text(path))


def _last_run_text(db: Db, source: str | None) -> str | None:
    latest = last_run_of(db)
    return None if latest is None else tasks_json.render_last_run(latest, source)


RENDERERS = {"tasks-json": render_tasks, "errors-json": render_errors, "last-run": render_last_run}
IMPORTERS = {"tasks-json": import_tasks, "errors-json": import_errors, "last-run": import_last_run}


def export_queue_files(
    ctx: Context,
    *,
    edits_only: bool = False,
    moved: Sequence[Key] | None = None,
    changes: tuple[int | None, int | None] | None = None,
) -> list[str]:
    """Re-render tasks.json / errors.json / last-run.json in the workspace (sync.auto_export).

    A file edited since hb last read or wrote it is synced instead, as ``hb sync`` would
    (its edits imported first, conflicts going the file's way), so a re-render never
    drops a hand edit; a file that cannot be read is left as it is, with a notice in
    ``ledger.notices``. ``edits_only``: only sync the edited files (before a queue
    operation, so that it sees them); nothing is locked when none was edited. ``moved``: the
    tasks the queue operation just changed, each once: tasks.json is then rewritten where they
    are, when nothing else changed (see :func:`_export_tasks`). ``changes`` (SQLite): the rows
    the context's connection had changed before and after the operation (see :func:`_alone`).

    Serialised by a workspace file lock; each render reads the ledger inside the
    lock, so the last writer always writes the newest state.
    """
    if edits_only and not _edited_kinds(ctx):
        return []
    written = []
    with (
        file_lock(ctx.workspace, timeout=lock_timeout(ctx.settings.sync_lock_timeout)),
        ctx.write() as db,
    ):
        now = ctx.now()
        alone = moved is not None and _alone(ctx, changes)
        for kind in RENDERERS:
            path = default_path(ctx.workspace, kind)
            if _export_one(ctx, db, kind, path, now, edits_only=edits_only, moved=moved, alone=alone):
                written.append(str(path))
    _mark(ctx)
    return written


# SQLite: where the ledger stood after the last export on the context's connection, as
# (PRAGMA data_version, the rows the connection had changed): see _alone
_MARK = "queue-files-exported"


def _mark(ctx: Context) -> None:
    """Note where the ledger stands now that this export committed (SQLite only)."""
    if ctx.sqlite:
        raw = ctx.raw
        ctx.kept[_MARK] = (raw.execute("PRAGMA data_version").fetchone()[0], raw.total_changes)


def _alone(ctx: Context, changes: tuple[int | None, int | None] | None) -> bool:
    """Whether the queue operation just done is all that changed the ledger since the last export
    on this connection (SQLite; inside the export's write transaction): no other connection
    committed since (``PRAGMA data_version`` is as it was then), and this one changed no row
    before the operation began nor after it ended. Then the tasks it moved are all that changed,
    and the export needs no count of the ledger's tasks to know it."""
    mark = ctx.kept.get(_MARK)
    if mark is None or changes is None or changes[0] is None:
        return False
    raw = ctx.raw
    version = raw.execute("PRAGMA data_version").fetchone()[0]
    return bool(changes[0] == mark[1] and raw.total_changes == changes[1] and version == mark[0])


_TRIES = 5  # renders of one file that another program keeps changing meanwhile


def _export_one(
    ctx: Context,
    db: Db,
    kind: str,
    path: Path,
    now: datetime,
    *,
    edits_only: bool,
    moved: Sequence[Key] | None = None,
    alone: bool = False,
) -> bool:
    """Sync or re-render one queue file; whether it was written.

    The old script and people write these files without hb's lock. A file that changed
    while hb rendered it is read again (its new edit taken in, against the text hb
    rendered from) instead of being replaced; after :data:`_TRIES` it is left alone.
    """
    for _ in range(_TRIES):
        remember_it: Callable[[], None] = _nothing  # what a render leaves to remember once written
        row = db.get(SyncStateRow, kind)
        before = None if row is None else (row.path, row.skeleton)  # its text: read if needed
        kept: dict[str, Any] | None = None  # how the record keeps the file's text, when it holds it
        try:
            current = known_text(path) if path.exists() else None
        except (HbError, OSError) as exc:
            _notice(ctx, f"{_reason(exc, path)}: left as it is (fix it, then run hb sync)")
            return False
        if current is not None and _edited(db, kind, path, current):
            _rebase_stale_copy(db, kind, path, current, now)
            try:
                report, text = SYNCERS[kind](ctx, db, path, current, now)
            except HbError as exc:
                _notice(ctx, f"{_reason(exc, path)}: left as it is (fix it, then run hb sync)")
                return False
            for notice in sync_notices(report):
                _notice(ctx, notice)
        elif edits_only:
            return False
        elif kind == SOURCE:
            kept = None if before is None or current is None else before[1]
            text, remember_it = _export_tasks(db, path, current, now, moved, alone=alone)
            moved = None  # a second round (the file changed meanwhile) renders it all
            if current != text:
                measure_ahead(text)  # hashed on another thread while replace_if writes it
        else:
            text = RENDERERS[kind](ctx, db, path)
            if text is None or (current is None and kind == "errors-json" and text.strip() == "[]"):
                return False  # (no errors and no file: heartbeat.py writes errors.json on a failure only)
            remember(db, kind, path, text, now)
        if text is None or current == text:
            remember_it()
            return False
        done = replace_if(path, text, current, valid=_parses)
        remember_it()
        if done.kept is not None:
            _notice(ctx, f"{path}: a concurrent edit hb could not merge is kept in {done.kept}")
        if done.written:
            _written_back(db, kind, path, current, text, now, kept=kept)
            return True
        # changed meanwhile: the next round diffs against the text this one read (its edits are
        # in the ledger now), or, when there was none, against what hb knew before
        if current is not None:
            remember(db, kind, path, current, now)
            continue
        known = None if before is None else bookmarks.kept_text(before[1], db)
        if before is None or known is None:
            _forget(db, kind)
        else:
            remember(db, kind, Path(before[0]), known, now)
    _notice(ctx, f"{path}: kept changing while hb wrote it; left as it is (run hb sync)")
    return False


def _nothing() -> None:
    pass


# The largest file whose text before an export is stored whole to sync a stale copy against (the
# text is stored in the export's transaction; past this, a queue operation's export would write
# more than the operation itself). A larger one is referred to where the file's record keeps it.
STALE_COPY_TEXT_MAX = 256 * 1024


def _written_back(
    db: Db,
    kind: str,
    path: Path,
    before: str | None,
    after: str,
    now: datetime,
    *,
    kept: dict[str, Any] | None = None,
) -> None:
    """An export wrote ``after`` over ``before``: noted as a write-back that landed (see
    :mod:`heartbeat.ops.sync.writeback`), so that a copy a runtime saves just after it, made from
    ``before`` (heartbeat.py's read-modify-write racing a queue operation), is synced against
    ``before`` and cannot undo what the operation did (a completed task reopened).

    A ``before`` past :data:`STALE_COPY_TEXT_MAX` characters is not stored again: ``kept``, the
    skeleton the file's record kept it as before the export (``before`` was that text), tells
    where it stays (:func:`_kept_before`). Without one, no write-back is kept."""
    from heartbeat.ops.sync import writeback

    large = before is not None and len(before) > STALE_COPY_TEXT_MAX
    reference = _kept_before(db, kind, kept) if large and kept is not None else None
    if large and reference is None:
        writeback.clear(db, [kind])
        return
    # (``before`` None: the export created the file; see Pending.made_from_nothing)
    writeback.record(db, kind, path, before, after, now, kept=reference)
    writeback.mark_landed(db, {kind: path})


def _kept_before(db: Db, kind: str, kept: dict[str, Any]) -> dict[str, Any] | None:
    """Where a large text that the record of ``kind`` kept as ``kept`` stays now that an export
    wrote over it, as a skeleton :func:`bookmarks.kept_text` reads: the older text and the edits
    it was kept as (still kept: an export only adds edits); the older text alone, when the export
    moved it to a row of its own to keep its edits beside it; else the compressed text itself
    (a whole render of a large file, which costs far more than storing it)."""
    edits = kept.get("edits")
    if isinstance(edits, dict):
        return {"edits": edits}
    packed = kept.get("zlib")
    if not isinstance(packed, str):
        return None
    row = db.get(SyncStateRow, kind)
    now_kept = (row.skeleton or {}).get("edits") if row is not None else None
    base = bookmarks.base_kind(kind)
    if isinstance(now_kept, dict) and now_kept.get("base") == base:
        return {"edits": {"base": base, "hash": now_kept.get("hash"), "steps": []}}
    return {"zlib": packed}


def _rebase_stale_copy(db: Db, kind: str, path: Path, current: str, now: datetime) -> None:
    """Before an edited queue file is synced on an export: a copy saved within moments of hb's
    last write, made from the text before it, is synced against that text (as hb sync does)."""
    from heartbeat.ops.sync import writeback

    pending = writeback.pending(db, [kind]).get(kind)
    if pending is None or pending.landed is None:
        return
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return
    # (a file hb's write created: synced against no text only when made from none, as hb sync does)
    if pending.state(current, mtime) == "edited" and (
        pending.before is not None or pending.made_from_nothing(writeback.remembered_text(db, kind), current)
    ):
        writeback.rebase(db, kind, path, pending.source_of(current), now)
        db.forget(SyncStateRow, kind)  # the syncer reads the baseline rebased here
    writeback.clear(db, [kind])


def _forget(db: Db, kind: str) -> None:
    row = db.get(SyncStateRow, kind)
    if row is not None:
        db.delete(row)
    db.execute("DELETE FROM sync_state WHERE kind = :kind", {"kind": bookmarks.base_kind(kind)})


def _edited(db: Db, kind: str, path: Path, text: str) -> bool:
    """Whether ``text`` is not what hb last read or wrote at ``path`` (its record's hash, not
    the text it keeps, is read)."""
    known = db.rows(SQL.sync_state_hash, {"kind": kind})
    return not known or known[0][1] != digest(text) or Path(known[0][0]) != path


class _Probed(Exception):
    """Ends a probe's transaction (rolled back) with what the import would have done."""

    def __init__(self, report: ImportReport) -> None:
        super().__init__("probe")
        self.report = report


def known_digest(ctx: Context, kind: str, path: Path, *, synced: bool) -> str | None:
    """The digest of the text hb last read from or wrote to ``path`` as ``kind`` (``synced``: the
    workspace's own file; ``""`` when the record holds none); None when hb's record of the kind is
    of another file, or there is none."""
    with ctx.read() as db:
        known = db.rows(SQL.sync_state_hash, {"kind": kind})
    if known and (synced or Path(known[0][0]).resolve() == path.resolve()):
        return str(known[0][1] or "")
    return None


def check_export_target(ctx: Context, kind: str, path: Path, current: str, *, synced: bool) -> None:
    """Before ``hb export`` writes tasks.json, errors.json or last-run.json over ``current``, the
    text at ``path`` (``synced``: the workspace's own file): refused (InvalidState, or
    FileFormatError naming the place; nothing written) when hb would lose what it holds. The text
    hb itself last read or wrote there is written over. Otherwise the workspace's own file, edited
    since, must be synced first; any other file must read as this kind (a typo's notes.txt, or
    errors.json over tasks.json, is not one), and tasks.json or errors.json must hold no entry the
    ledger has not imported (an import of it, tried and rolled back, adds none)."""
    known = known_digest(ctx, kind, path, synced=synced)
    if known is not None:
        if known == digest(current):
            return
        raise InvalidState(
            f"{path}: edited since hb last read or wrote it; run hb sync first (it takes the edits "
            "in), then export; nothing written"
        )
    try:
        with ctx.write() as db:  # the import, to see what it would add; always rolled back
            raise _Probed(IMPORTERS[kind](ctx, db, current, path, ctx.now()))
    except _Probed as probed:
        report = probed.report
    if kind != "last-run" and report.added:
        raise InvalidState(
            f"{path}: {report.added[0]} is not in the ledger, and hb export writes over entries it "
            f"has imported only (hb import {kind} {path}, or move the file away); nothing written"
        )


def _edited_kinds(ctx: Context) -> list[str]:
    """The queue files edited since hb last read or wrote them (a read: no lock, no transaction)."""
    found = []
    with ctx.read() as db:
        for kind in RENDERERS:
            path = default_path(ctx.workspace, kind)
            try:
                text = known_text(path) if path.exists() else None
            except (HbError, OSError):
                continue  # reported by the export after the operation
            if text is not None and _edited(db, kind, path, text):
                found.append(kind)
    return found


def _notice(ctx: Context, message: str) -> None:
    if message not in ctx.notices:  # the check before an operation and the export after it
        ctx.notices.append(message)


def _reason(exc: HbError | OSError, path: Path) -> str:
    text = one_line(exc)
    return text if str(path) in text else f"{path}: {text}"


def sync_notices(report: SyncReport) -> list[str]:
    """What an edited file's sync did that the caller should hear of (hb sync would report it)."""
    path = report.path
    notices = [f"{path}: changed here and in the ledger, the file won: {k}" for k in report.conflicts]
    notices.extend(f"{path}: deleted from the file, removed from the ledger: {k}" for k in report.removed)
    notices.extend(report.preserved)
    return notices


# --- hb sync (two-way; added for the sync engine) -----------------------------------


def _record_digest(record: tasks_json.QueueRecord) -> str:
    """What a task looks like in tasks.json: its queue, its status, its blockers and its object.

    The blockers are the ``blocked_on_*`` lists that name the entry, outside its object.
    """
    shown = [record.scope, record.status, record.blocked_by, tasks_json.render_task(record)]
    return digest(json.dumps(shown, sort_keys=False, default=str))


def _base_records(db: Db, kind: str, path: Path) -> dict[tuple[str, str], str] | None:
    """The records of the file as hb last read or wrote it (None: no such text)."""
    row = db.get(SyncStateRow, kind)
    if row is None or Path(row.path).resolve() != path.resolve():
        return None
    text = bookmarks.kept_text(row.skeleton, db)
    if text is None:
        return None
    try:
        doc = tasks_json.parse(text)
    except FileFormatError:
        return None
    return {(r.scope, r.id): _record_digest(r) for r in doc.records}


def _take_file_version(
    db: Db,
    task: TaskRow,
    record: tasks_json.QueueRecord,
    now: datetime,
    path: Path,
    *,
    actor: str = "sync",
    conflict: bool = False,
    events: list[_Event] | None = None,
) -> list[str]:
    """Give ``task`` the file's version of its record; the fields that changed.

    The previous version goes to the history (kind ``conflict`` when the ledger had
    changed too; ``events``: kept there for the caller to insert); a record that reads
    the same as the task changes nothing.
    """
    changed = {k: v for k, v in _columns(record, now).items() if k != "created_at" and getattr(task, k) != v}
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


def set_positions(db: Db, places: Sequence[tuple[TaskRow, int]]) -> None:
    """Give each task its place in the file (``places``: the task and its position there), as
    assigning and flushing each would, in a few statements (see :func:`_write_positions`)."""
    moved = [(task, position) for task, position in places if task.position != position]
    _write_positions(db, [(t.pk or 0, t.position, p) for t, p in moved])
    for task, position in moved:
        db.written(task, position=position)


def _write_positions(db: Db, moves: Sequence[tuple[int, int, int]]) -> None:
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
    events: list[_Event],
) -> None:
    """One record of the file whose task the ledger holds, three-way against ``base_digest`` (its
    digest in the text hb last synced; None: it was not there); the task is already at the
    record's position."""
    key = (record.scope, record.id)
    file_digest = _record_digest(record)
    ledger_digest = _record_digest(record_from_row(task))
    if file_digest == ledger_digest:
        return
    if base_digest is not None and file_digest == base_digest:
        # only the ledger changed: rendered below
        target = report.completed if task.status is TaskStatus.DONE else report.updated
        target.append(_key(*key))
        return
    if record.status == TaskStatus.TODO.value and _live_claim(task, now):
        # a live claim is not returned to the queue by the file (a stale copy the old
        # script wrote back would have it handed out twice): the claim stands, the rest
        # applies; a task the file completes or fails is taken as done by hand
        report.preserved.append(
            f"{path}: {_key(*key)}: {_claim_text(task)}; it stays claimed "
            "(hb fail or hb clear-stale returns it to the queue)"
        )
        record = replace(record, status=TaskStatus.DOING.value, completed_at=None)
        if _record_digest(record) == ledger_digest:
            report.updated.append(_key(*key))  # written back as the ledger has it
            return
    if task.status is TaskStatus.DONE and record.status != TaskStatus.DONE.value:
        report.preserved.append(f"{path}: {_key(*key)}: was done; the file reopens it")
    conflict = base_digest is None or ledger_digest != base_digest
    was_done = task.status is TaskStatus.DONE
    _take_file_version(db, task, record, now, path, conflict=conflict, events=events)
    if conflict:
        report.conflicts.append(_key(*key))
    elif task.status is TaskStatus.DONE and not was_done:
        report.completed.append(_key(*key))
    else:
        report.updated.append(_key(*key))


def _remove_task(
    db: Db, task: TaskRow, base_digest: str, now: datetime, path: Path, report: SyncReport
) -> bool:
    """A task whose record (``base_digest`` in the text hb last synced) is gone from the file:
    removed, its history kept; whether it was (a live claim keeps it, to be written back)."""
    key = _key(task.scope, task.id)
    if _live_claim(task, now):  # its worker holds it: written back, not removed
        report.preserved.append(f"{path}: {key}: {_claim_text(task)}; not removed")
        return False
    before = snapshot(task)
    detail: dict[str, Any] = {"reason": "the record was deleted from tasks.json", "file": str(path)}
    if _record_digest(record_from_row(task)) != base_digest:
        detail["note"] = "changed in the ledger too; the file won"
        report.conflicts.append(key)
    record_event(db, task, "removed", now, before=before, actor="sync", detail=detail)
    db.delete(task)
    report.removed.append(key)
    return True


def _merge_records(
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
    events: list[_Event] = []
    created = {"file": str(path)}
    for record, base_digest in records:
        key = (record.scope, record.id)
        task = tasks.get(key)
        if task is None:
            events.append((len(fresh), "created", None, created))
            fresh.append(record)
            report.added.append(_key(*key))
            continue
        _merge_record(db, task, record, base_digest, now, path, report, events)
    pks = _insert_fresh(db, fresh, events, now, "sync")
    for record, pk in zip(fresh, pks, strict=True):
        tasks[(record.scope, record.id)] = db.track(_task_of(record, now, pk))


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
    if text is not None and (warnings := _unchanged(db, path, text)) is not None:
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
        try:
            doc = tasks_json.parse(text)
            _storable(db, text, SOURCE)
        except FileFormatError as exc:
            raise exc.at_path(str(path)) from None
        report.preserved = [f"{path}: {w}" for w in doc.warnings]
        base = _base_records(db, SOURCE, path) or {}
        seen = {(r.scope, r.id) for r in doc.records}
        # the file's order is the queue's: a pop or an add by heartbeat.py moves the tasks after
        # it without changing them (bookkeeping, not a change of a task), written in one statement
        set_positions(
            db, [(t, r.position) for r in doc.records if (t := tasks.get((r.scope, r.id))) is not None]
        )
        _merge_records(db, tasks, ((r, base.get((r.scope, r.id))) for r in doc.records), now, path, report)
        for key, base_digest in base.items():
            task = tasks.get(key)
            if key in seen or task is None:
                continue
            if _remove_task(db, task, base_digest, now, path, report):
                del tasks[key]
        for key in tasks:
            if key not in seen and key not in base:
                report.added.append(_key(*key))  # new in the ledger: written below
    elif tasks:
        report.added.extend(_key(*key) for key in tasks)
    db.flush()
    if doc is None and not tasks:
        return report, None
    return _render_written(db, path, text, doc or tasks_json.empty_document(), tasks.values(), now, report)


def _render_written(
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
    changed records can then read only those (:func:`sync_changed`). Else they are not known."""
    ordered = sorted(tasks, key=lambda t: (t.scope, t.position, t.pk))
    out, layout = tasks_json.render_layout(doc, [record_from_row(t) for t in ordered])
    known = doc.warnings if out == text or not doc.warnings else None
    rendered = _rendered(layout, _stamp(ordered), known)
    return _written(db, SOURCE, path, text, out, now, report, rendered=rendered)


def _claim_text(task: TaskRow) -> str:
    return f"claimed by {task.claimed_by or 'a worker'} until {task.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC"


def _live_claim(task: TaskRow, now: datetime) -> bool:
    """Whether ``task`` is claimed under a lease that has not expired."""
    lease = task.lease_expires_at
    return task.status is TaskStatus.DOING and lease is not None and lease > now


def _same_json(a: str, b: str) -> bool:
    """Whether two JSON texts hold the same values in the same key order (layout aside)."""
    try:
        return bool(json.loads(a, object_pairs_hook=list) == json.loads(b, object_pairs_hook=list))
    except ValueError:
        return False


def _written(
    db: Db,
    kind: str,
    path: Path,
    text: str | None,
    out: str,
    now: datetime,
    report: SyncReport,
    *,
    rendered: dict[str, Any] | None = None,
) -> tuple[SyncReport, str | None]:
    """Remember the file and say what to write: nothing when it already holds these values.
    ``rendered``: see :func:`remember` (it describes ``out``)."""
    if text is not None and out == text:
        remember(db, kind, path, text, now, rendered=rendered)
        return report, None
    if text is not None and _same_json(out, text):
        remember(db, kind, path, text, now)
        return report, None
    remember(db, kind, path, out, now, rendered=rendered)
    return report, out


def _task_of(record: tasks_json.QueueRecord, now: datetime, pk: int) -> TaskRow:
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


_IDENTITY_KEYS = ("timestamp", "task_id", "reason", "trace_id")  # an errors.json item's


def _error_identity(item: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(item.get(k)) for k in _IDENTITY_KEYS)


class _Items:
    """errors.json items as a multiset under Python's equality (what ``in`` and ``remove`` on a
    list of them compared), kept in buckets that equal items share: a log of thousands of
    items is matched in linear time (a list's scans made it quadratic: 14 s at 8,000 items)."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._by: dict[tuple[Any, ...], list[Any]] = {}
        for item in items:
            self._by.setdefault(_bucket(item), []).append(item)

    def __contains__(self, item: Any) -> bool:
        return any(known == item for known in self._by.get(_bucket(item), ()))

    def remove(self, item: Any) -> None:
        """Take out one item equal to ``item`` (ValueError when none is)."""
        bucket = self._by.get(_bucket(item), [])
        bucket.remove(item)


def _bucket(item: Any) -> tuple[Any, ...]:
    """A key that equal items share: their identity fields, numbers by value (1, 1.0 and True
    are equal items), anything else by kind; unequal items may share it."""
    if not isinstance(item, dict):
        return ("", _part(item))
    return tuple(_part(item.get(k)) for k in _IDENTITY_KEYS)


def _part(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):  # bool included: True == 1 == 1.0
        try:
            return float(value)
        except OverflowError:
            return "big"
    return type(value).__name__ if value is not None else None


def sync_errors(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """errors.json is a log: new items in the file are added, an item edited in the file
    (e.g. ``resolved``) updates its row, and the ledger's full list is written back."""
    report = SyncReport(kind="errors-json", path=str(path))
    state = db.get(SyncStateRow, "errors-json")
    if text is not None and (state is None or state.content_hash != digest(text) or state.path != str(path)):
        try:
            items = [tasks_json.fix_malformed(item) for item in tasks_json.parse_errors(text)]
            _storable(db, text, "errors-json")
        except FileFormatError as exc:
            raise exc.at_path(str(path)) from None
        rows = db.load(ErrorRow, SQL.errors)
        shown = {e.pk: _shown(e) for e in rows}
        by_identity: dict[tuple[str, ...], list[ErrorRow]] = {}
        for e in rows:
            by_identity.setdefault(_error_identity(shown[e.pk]), []).append(e)
        known = _Items(shown.values())
        in_file = _Items(items)
        fresh = []
        for index, item in enumerate(items):
            if item in known:
                known.remove(item)
                continue
            same = by_identity.get(_error_identity(item)) or []
            target = next((e for e in same if shown[e.pk] not in in_file), None)
            if target is not None:
                same.remove(target)  # one file item edits one row
                target.extra = item
                target.resolved = bool(item.get("resolved", False))
                shown[target.pk] = item
                report.updated.append(f"[{index}]")
            else:
                fresh.append((index, item))
        tasks = _legacy_tasks(db) if fresh else {}
        db.add_all([_error_row(item, tasks, now) for _index, item in fresh])
        report.added.extend(f"[{index}]" for index, _item in fresh)
        for warning in tasks_json.unread_times(text, [((index,), item) for index, item in fresh]):
            _notice(ctx, f"{path}: {warning}")  # once, as the item comes in (not a note of the file)
    if text is None and db.value(SQL.any_error) is None:
        return report, None
    return _written(db, "errors-json", path, text, _errors_text(db, text), now, report)


def sync_last_run(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """last-run.json: a run record written in the file is imported; the ledger's last one is written."""
    report = SyncReport(kind="last-run", path=str(path))
    state = db.get(SyncStateRow, "last-run")
    if text is not None and (state is None or state.content_hash != digest(text) or state.path != str(path)):
        imported = import_last_run(ctx, db, text, path, now)
        report.added.extend(imported.added)
        for warning in imported.warnings:
            _notice(ctx, f"{path}: {warning}")
    out = _last_run_text(db, text)
    if out is None:
        return report, None
    return _written(db, "last-run", path, text, out, now, report)


# --- a few records changed: the targeted sync -------------------------------------------
#
# A few records of tasks.json changed, nothing in the ledger: hb sync reads only those records.
#
# heartbeat.py rewrites the whole file for each pop, completion or add; in a large queue that moves
# one record (and shifts the places of the ones after it). :func:`sync_changed` compares the file
# with the text hb last synced record by record, by the text each task object is written as
# (:mod:`heartbeat.formats.tasks_outline`), and runs the three-way merge of
# :func:`heartbeat.ops.sync.queue_files.sync_tasks` for the records whose text changed, came or
# went. Every other record reads as it did then, and the ledger's task of it is as hb rendered it
# then (the ledger's stamp says its tasks did not change since): its row stays as it is, but for its
# position, which follows the file's order. The result is the full sync's, row for row and byte for
# byte: the file is written back only when the ledger's tasks render otherwise than it reads, and
# then rendered as the full sync renders it.
#
# :func:`sync_changed` answers None, having changed nothing, whenever it cannot be sure: no text
# kept of the last sync, or not one hb rendered from the ledger, or not known to read without
# warnings; the ledger changed since; the file's frame (anything but the task objects) changed;
# the text is not laid out as the outline reads it; a changed record reads with a warning. The
# caller then runs the full sync.


def sync_changed(db: Db, path: Path, text: str, now: datetime) -> tuple[SyncReport, str | None] | None:
    """:func:`heartbeat.ops.sync.queue_files.sync_tasks` of ``text``, which differs from the text hb
    last synced, reading only the records that changed; None (nothing done) when that cannot be
    sure to give the full sync's result (see the module docstring)."""
    state = db.get(SyncStateRow, SOURCE)
    if state is None or Path(state.path).resolve() != path.resolve():
        return None
    rendered = (state.skeleton or {}).get("rendered")
    if (
        not isinstance(rendered, dict)
        or rendered.get("warnings") != []
        or not isinstance(rendered.get("stamp"), list)
    ):
        return None  # hb did not render the text it keeps, or does not know it reads without warnings
    if _ledger_stamp(db) != rendered["stamp"]:
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
    try:
        _storable(db, text, SOURCE)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    base_digests = {(r.scope, r.id): _record_digest(r) for r in (*bases, *gone_records)}
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
    _write_positions(db, moves)
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
                target.append(_key(*key))

    _merge_records(db, tasks, merged(), now, path, report)
    kept = False  # a task gone from the file stays (a live claim): written back
    for key in gone:
        task = tasks[key]
        if _remove_task(db, task, base_digests[key], now, path, report):
            del tasks[key]
        else:
            kept = True
    db.flush()
    if not kept and all(_reads_as(tasks[k], new.items[k]) for k in changed):
        # every task renders as the file reads: the full sync would write the file as it is
        return _written(
            db, SOURCE, path, text, text, now, report, rendered=_rendered(None, _ledger_stamp(db), [])
        )
    everyone = db.load(TaskRow, SQL.tasks_json_tasks)
    return _render_written(db, path, text, tasks_json.parse(text), everyone, now, report)


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


SYNCERS = {"tasks-json": sync_tasks, "errors-json": sync_errors, "last-run": sync_last_run}


def _parses(text: str) -> bool:
    """A line-merged JSON file is written only when it is still JSON."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
