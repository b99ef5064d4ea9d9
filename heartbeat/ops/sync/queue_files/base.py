"""What hb knows of each queue file (tasks.json, errors.json, last-run.json), shared by the
package's modules: the record of the text hb last read or wrote (:func:`remember`), the stamp of
the ledger's tasks that text was rendered from, and the checks a file is held to before its
text is stored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from heartbeat.db.rows import SyncStateRow, TaskRow
from heartbeat.db.store import Db, statements
from heartbeat.errors import FileFormatError, HbError
from heartbeat.formats import tasks_json
from heartbeat.formats.json_edit import Layout
from heartbeat.formats.tasks_splice import Edit
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import digest, measure, read_text, same_place
from heartbeat.ops.sync.report import SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context


SQL = statements("queue_files")
SOURCE = "tasks-json"
T = TypeVar("T")  # what read_storable's parser reads


def key_text(scope: str, task_id: str) -> str:
    return f"{scope}:{task_id}" if scope else task_id


Key = tuple[str, str]  # a task's (scope, id)


# a history entry to insert: the task (a row, or the index of a new one among those inserted),
# its kind, the version it replaced, the detail
Event = tuple[TaskRow | int, str, dict[str, Any] | None, dict[str, Any]]


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

    ``rendered`` (tasks.json rendered from the ledger, see :func:`rendered_facts`): the stamp of the
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


def tasks_stamp(tasks: Iterable[TaskRow]) -> list[int]:
    """What tasks.json's tasks are: how many, their versions summed plainly and by pk (every
    change of a task adds one to its version); the statement ``tasks_json_stamp`` counts the same."""
    count = versions = weighted = 0
    for task in tasks:
        count += 1
        versions += task.version
        weighted += (task.pk or 0) * task.version
    return [count, versions, weighted]


def rendered_facts(
    layout: Layout | None, stamp: list[int], warnings: list[str] | None = None
) -> dict[str, Any]:
    """What :func:`remember` keeps of a tasks.json text rendered from the ledger whose tasks had
    ``stamp``: its layout (None: not json.dumps's, or not known) and the warnings reading it
    gives (None: not known)."""
    shape = None if layout is None else [layout.unit, layout.ascii_only, layout.tail]
    return {"layout": shape, "stamp": stamp, "warnings": warnings}


def kept_rendered(db: Db) -> dict[str, Any] | None:
    """What :func:`remember` keeps of the tasks.json text hb last rendered (None: hb did not
    render the text it keeps, or it has none)."""
    row = db.get(SyncStateRow, SOURCE)
    rendered = (row.skeleton or {}).get("rendered") if row is not None else None
    return rendered if isinstance(rendered, dict) and isinstance(rendered.get("stamp"), list) else None


def ledger_stamp(db: Db) -> list[int]:
    """:func:`tasks_stamp` of the ledger's tasks.json tasks now, counted by the database."""
    return [int(v) for v in db.rows(SQL.tasks_json_stamp)[0]]


def unchanged_warnings(db: Db, path: Path, text: str) -> list[str] | None:
    """The warnings of ``text`` when neither it nor the ledger's tasks changed since hb rendered
    it (a sync has nothing to do), else None. Warnings not known yet (hb wrote the whole file from
    the ledger, and the splices after it kept not knowing) are learnt by reading the text alone:
    a fraction of the three-way merge, which would find nothing to do."""
    if bookmarks.edited(db, SOURCE, path, text):
        return None
    rendered = kept_rendered(db)
    if rendered is None or ledger_stamp(db) != rendered["stamp"]:
        return None
    if isinstance(rendered.get("warnings"), list):
        return [str(w) for w in rendered["warnings"]]
    try:
        return tasks_json.parse(text).warnings
    except FileFormatError:
        return None  # the merge says what is wrong with it


def last_text(db: Db, kind: str) -> str | None:
    """The text of the file of ``kind`` as hb last read or wrote it (None: none kept)."""
    row = db.get(SyncStateRow, kind)
    return bookmarks.kept_text(row.skeleton if row is not None else None, db)


def last_document(db: Db) -> tasks_json.TasksDocument:
    """tasks.json as hb last read or wrote it (the four empty legacy lists when never, or when
    the text kept does not read)."""
    text = last_text(db, SOURCE)
    if text is not None:
        try:
            return tasks_json.parse(text)
        except FileFormatError:
            pass
    return tasks_json.empty_document()


def current_text(path: Path | None) -> str | None:
    """The text of the file an export writes over, to keep what it does not change (None: none)."""
    if path is None:
        return None
    try:
        return read_text(path)
    except (HbError, OSError):
        return None


def storable(db: Db, path: Path, text: str, kind: str) -> None:
    """FileFormatError naming ``path`` when the text (of a ``kind`` read already) holds a NUL
    character in a text the ledger stores as text (both backends); on PostgreSQL, also when it
    holds a number its ``json`` columns cannot."""
    try:
        tasks_json.refuse_nul(text, kind)
        if not db.sqlite:
            tasks_json.refuse_not_finite(text)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None


def read_storable(db: Db, path: Path, text: str, kind: str, parse: Callable[[str], T]) -> T:
    """``parse(text)`` (a reader of :mod:`heartbeat.formats.tasks_json`), the text then held to
    :func:`storable`; FileFormatError naming ``path`` for either."""
    try:
        read = parse(text)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    storable(db, path, text, kind)
    return read


def add_notice(ctx: Context, message: str) -> None:
    if message not in ctx.notices:  # the check before an operation and the export after it
        ctx.notices.append(message)


def _same_json(a: str, b: str) -> bool:
    """Whether two JSON texts hold the same values in the same key order (layout aside)."""
    try:
        return bool(json.loads(a, object_pairs_hook=list) == json.loads(b, object_pairs_hook=list))
    except (ValueError, RecursionError):
        return False


def what_to_write(
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


def record_digest(record: tasks_json.QueueRecord) -> str:
    """What a task looks like in tasks.json: its queue, its status, its blockers and its object.

    The blockers are the ``blocked_on_*`` lists that name the entry, outside its object.
    """
    shown = [record.scope, record.status, record.blocked_by, tasks_json.render_task(record)]
    return digest(json.dumps(shown, sort_keys=False, default=str))


def base_records(db: Db, kind: str, path: Path) -> dict[tuple[str, str], str] | None:
    """The records of the file as hb last read or wrote it (None: no such text)."""
    row = db.get(SyncStateRow, kind)
    if row is None or not same_place(db, row.path, path):
        return None
    text = bookmarks.kept_text(row.skeleton, db)
    if text is None:
        return None
    try:
        doc = tasks_json.parse(text)
    except FileFormatError:
        return None
    records = {(r.scope, r.id): record_digest(r) for r in doc.records}
    # the entries an import of this text kept in the ledger, the text before it held
    for scope, task_id, was in (row.skeleton or {}).get("dropped", []):
        records.setdefault((str(scope), str(task_id)), str(was))
    return records
