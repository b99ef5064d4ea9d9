"""The heartbeat skill's state files (tasks.json, errors.json, last-run.json), kept by the drop-in.

heartbeat.py rewrites these files on every operation, so the drop-in does too, and it must
stay fast: this path speaks plain SQL on the driver connection and never loads SQLAlchemy
(importing it costs more than a whole pop). A file is rendered from the ledger's rows through
:mod:`heartbeat.formats.tasks_json` (every field, key order and metadata list it did not
change kept, as ``hb export`` keeps them) and laid over the file's own text; hb's record of
what it last wrote (``sync_state``) is renewed in the same transaction.

A file that changed since hb last read or wrote it (a person, another tool, the old script)
is imported first through the sync engine's three-way merge
(:mod:`heartbeat.ops.sync.queue_files`, plain SQL too), so the operation sees the edit and the
render keeps it.

Layout: a file the drop-in creates, and a file already in the script's own layout
(``json.dump(doc, f, indent=2)``: ASCII with ``\\uXXXX`` escapes, no final newline), is
written in that layout, so the bytes are the script's; any other layout is kept as written.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.plain import Conn
from heartbeat.db.queue import TASK_COLUMNS, last_run_of, record_from_row
from heartbeat.errors import FileFormatError
from heartbeat.formats import tasks_json
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import default_path, digest, read_text
from heartbeat.ops.sync.swap import replace_if

if TYPE_CHECKING:
    from heartbeat.context import Context
    from heartbeat.db.store import Db

TASKS, ERRORS, LAST_RUN = "tasks-json", "errors-json", "last-run"

# tasks.json shows every queue task; the Markdown TODO entries (source todo) have their own files
_TASKS = (
    f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE scope <> '' OR source <> 'todo' "
    "ORDER BY scope, position, pk"
)
_ERRORS = "SELECT at, task_id, skill, reason, trace_id, decision_log, resolved, extra FROM errors ORDER BY pk"
_REMEMBERED = "SELECT kind, path, content_hash, skeleton FROM sync_state WHERE kind IN (:a, :b, :c)"
_REMEMBER = (
    "INSERT INTO sync_state (kind, path, content_hash, size, synced_at, skeleton) "
    "VALUES (:kind, :path, :hash, :size, :now, {json:skeleton}) "
    "ON CONFLICT (kind) DO UPDATE SET path = excluded.path, content_hash = excluded.content_hash, "
    "size = excluded.size, synced_at = excluded.synced_at, skeleton = excluded.skeleton"
)


@dataclass(frozen=True)
class StateFile:
    """One of the three files as the drop-in found it."""

    kind: str
    path: Path
    text: str | None  # None: there is no such file


@dataclass(frozen=True)
class Remembered:
    """What hb last read from or wrote to a file (its ``sync_state`` row)."""

    path: str
    content_hash: str | None
    text: str | None


def read(workspace: Path, kinds: Iterable[str]) -> dict[str, StateFile]:
    """The files of ``kinds`` in the workspace; FileFormatError (path:line:column) for one that is
    not UTF-8 text, NotFound / InvalidInput for a directory or a device in its place."""
    files = {}
    for kind in kinds:
        path = default_path(workspace, kind)
        text = read_text(path) if path.exists() else None  # a dangling link: written through
        files[kind] = StateFile(kind, path, text)
    return files


def remembered(db: Conn, *, texts: bool = True) -> dict[str, Remembered]:
    """hb's record of each file, by kind; without ``texts`` (enough to tell an edited file) the
    texts kept for the merge are not read (None)."""
    out = {}
    for kind, path, content_hash, skeleton in db.rows(_REMEMBERED, {"a": TASKS, "b": ERRORS, "c": LAST_RUN}):
        text = bookmarks.kept_text(_json(db, skeleton), db) if texts else None
        out[kind] = Remembered(path, content_hash, text)
    return out


def edited(files: Mapping[str, StateFile], known: Mapping[str, Remembered]) -> list[StateFile]:
    """The files whose text is not what hb last read or wrote there (a file hb never saw included)."""
    out = []
    for file in files.values():
        if file.text is None:
            continue
        last = known.get(file.kind)
        if last is None or last.content_hash != digest(file.text) or Path(last.path) != file.path:
            out.append(file)
    return out


def import_edits(ctx: Context, files: Sequence[StateFile], now: datetime) -> list[str]:
    """Take edited files into the ledger, all in one transaction (the sync engine's three-way merge:
    changed only in the file, imported; on both sides, the file wins and the ledger's version goes to
    the task's history). Returns what a person should hear of; FileFormatError for a file that cannot
    be read, with nothing changed."""
    from heartbeat.ops.sync.queue_files import SYNCERS, remember, sync_notices

    notices: list[str] = []
    with ctx.write() as db:
        for file in files:
            assert file.text is not None  # an edited file exists
            report, _ = SYNCERS[file.kind](ctx, db, file.path, file.text, now)
            notices.extend(sync_notices(report))
            if file.kind == TASKS:
                _take_list_order(db, file.text)
            # the file holds this text until the drop-in writes it: what the next merge starts from
            # (the merge's own rendering, never written, would make the ledger's changes look like
            # the file's deletions)
            remember(db, file.kind, file.path, file.text, now)
    return notices


def _take_list_order(db: Db, text: str) -> None:
    """Give the legacy tasks of an edited tasks.json the places its lists have them in (the merge
    takes in what a task holds; an edit that only moved it counts here: pop takes pending[0])."""
    from heartbeat.db.rows import TaskRow
    from heartbeat.ops.sync.queue_files import SQL

    places = {r.id: r.position for r in tasks_json.parse(text).records if not r.scope}
    for task in db.load(TaskRow, SQL.legacy_list_tasks):
        place = places.get(task.id)
        if place is not None and task.position != place:
            task.position = place


def render(
    db: Conn, files: Mapping[str, StateFile], known: Mapping[str, Remembered], *, saving: bool
) -> dict[str, str]:
    """The text each file should hold now, for the files that have something to show.

    ``saving``: the script saves tasks.json after this operation, and its save adds the
    ``failed`` list when the file has none.
    """
    out: dict[str, str] = {}
    for kind, file in files.items():
        if kind == TASKS:
            rows = [_task_row(db, row) for row in db.dicts(_TASKS)]
            last = known.get(TASKS)
            text = tasks_text(last.text if last else None, file.text, rows, saving=saving)
        elif kind == ERRORS:
            items = [_error_item(db, row) for row in db.dicts(_ERRORS)]
            text = None if not items and file.text is None else tasks_json.render_errors(items, file.text)
        else:
            record = last_run_of(db)
            text = None if record is None else tasks_json.render_last_run(record, file.text)
        if text is not None:
            out[kind] = in_script_layout(text, file.text)
    return out


def save(
    db: Conn,
    files: Mapping[str, StateFile],
    known: Mapping[str, Remembered],
    texts: Mapping[str, str],
    now: datetime,
) -> tuple[list[str], dict[str, StateFile]]:
    """Write each changed file as a compare-and-swap against the text it was rendered over, and
    remember what every file now holds: the kinds written, and the files another program
    changed meanwhile (as found; left as they are, not remembered: the caller merges them)."""
    written = []
    moved: dict[str, StateFile] = {}
    for kind, text in texts.items():
        file = files[kind]
        if text != file.text:
            done = replace_if(file.path, text, file.text, valid=tasks_json.is_json)
            if not done.written:
                moved[kind] = StateFile(kind, file.path, done.found)
                continue
            written.append(kind)
        last = known.get(kind)
        if last is None or last.content_hash != digest(text) or Path(last.path) != file.path:
            db.execute(
                _REMEMBER,
                {
                    "kind": kind,
                    "path": str(file.path),
                    "hash": digest(text),
                    "size": len(text.encode("utf-8")),
                    "now": db.time(now),
                    "skeleton": json.dumps(bookmarks.keep(text)),
                },
            )
    return written, moved


# --- pure: the texts ------------------------------------------------------------------------------


def tasks_text(
    remembered_text: str | None, current: str | None, rows: Sequence[Mapping[str, Any]], *, saving: bool
) -> str | None:
    """tasks.json for these task rows, laid over ``current`` (None: nothing to show, no file).

    The legacy lists follow the queue's own order (``position``), as the script keeps them
    (the drop-in moves a task to the end of the list it enters, and sorts pending by priority
    when it adds); scoped entries keep their place in their queue.
    """
    records = [record_from_row(row) for row in rows]
    if not records and current is None:
        return None
    doc = tasks_json.empty_document()
    if remembered_text is not None:
        with contextlib.suppress(FileFormatError):  # unreadable: laid out as a new file
            doc = tasks_json.parse(remembered_text)
    if current is not None:
        doc = replace(doc, source=current)
    # every legacy record counts as in its place already, so its list is laid out by position
    doc = replace(doc, records=[r for r in doc.records if r.scope] + [r for r in records if not r.scope])
    if saving and doc.skeleton.missing_failed:  # load_tasks adds it at the end; the save writes it
        doc = replace(
            doc, skeleton=tasks_json.Skeleton([*doc.skeleton.slots, tasks_json.LegacyList("failed")])
        )
    return tasks_json.render(doc, records)


def in_script_layout(text: str, current: str | None) -> str:
    """``text`` (laid over ``current``) in the layout of the script's ``json.dump(doc, f, indent=2)``
    when the file is new, or when it is ASCII without a final newline as that call writes it: new
    non-ASCII text then gets ``\\uXXXX`` escapes like the rest of the file. Any other file keeps its
    own layout (hb's own ends with a newline)."""
    if current is None:
        return _ascii(text.removesuffix("\n"))
    if _NON_ASCII.search(current) is None and not current.endswith("\n"):
        return _ascii(text)
    return text


# what json.dumps (ensure_ascii) escapes besides the control characters JSON escapes anyway:
# everything past "~", DEL (U+007F) included
_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def _ascii(text: str) -> str:
    """JSON text with every character past ``~`` escaped, as ``json.dumps`` (ensure_ascii)
    escapes it: outside strings there are none, so only string contents change."""
    return _NON_ASCII.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _json(db: Conn, value: Any) -> Any:
    """A JSON column's value: SQLite hands back its text, psycopg the decoded value (a JSON string
    comes back as a ``str`` that must not be decoded again)."""
    return json.loads(value) if db.sqlite and isinstance(value, str) else value


def _task_row(db: Conn, row: dict[str, Any]) -> dict[str, Any]:
    for name in ("created_at", "completed_at", "claimed_at", "lease_expires_at"):
        row[name] = db.read_time(row[name])
    row["extra"] = _json(db, row["extra"])
    return row


def _error_item(db: Conn, row: Mapping[str, Any]) -> dict[str, Any]:
    """An errors.json item: the item it was read from (``+00:00Z`` times written ``Z``), or the
    script's entry for a failure hb recorded."""
    extra = _json(db, row["extra"])
    if isinstance(extra, dict):
        return tasks_json.fix_malformed(extra)
    at = db.read_time(row["at"])
    assert at is not None  # errors.at is NOT NULL
    return tasks_json.error_entry(
        timestamp=at,
        task_id=row["task_id"],
        assigned_skill=row["skill"],
        reason=row["reason"],
        trace_id=row["trace_id"],
        decision_log=_json(db, row["decision_log"]),
        resolved=bool(row["resolved"]),
    )
