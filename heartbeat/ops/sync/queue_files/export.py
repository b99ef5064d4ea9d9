"""The queue files after a queue operation (``sync.auto_export``): each re-rendered, or only
the tasks the operation moved spliced in, a file edited since hb last read or wrote it synced
first; and the check ``hb export`` makes before it writes over one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.queue import record_from_row
from heartbeat.db.rows import SyncStateRow, TaskRow
from heartbeat.db.store import Db
from heartbeat.errors import HbError, InvalidState, one_line
from heartbeat.formats import tasks_json, tasks_splice
from heartbeat.formats.json_edit import Layout
from heartbeat.ops.sync import bookmarks, leftovers
from heartbeat.ops.sync.files import (
    default_path,
    digest,
    file_lock,
    known_text,
    lock_timeout,
    measure_ahead,
    same_file,
)
from heartbeat.ops.sync.queue_files.base import (
    SOURCE,
    SQL,
    Key,
    add_notice,
    kept_rendered,
    ledger_stamp,
    remember,
    rendered_facts,
)
from heartbeat.ops.sync.queue_files.syncing import IMPORTERS, RENDERERS, SYNCERS
from heartbeat.ops.sync.queue_files.tasks import tasks_text
from heartbeat.ops.sync.report import ImportReport, sync_notices
from heartbeat.ops.sync.swap import replace_if

if TYPE_CHECKING:
    from heartbeat.context import Context


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
    rendered = kept_rendered(db) if moved is not None and current is not None else None
    if rendered is not None and moved is not None and current is not None:
        tasks = [
            t
            for scope, task_id in moved
            for t in db.load(TaskRow, SQL.tasks_json_task, {"scope": scope, "id": task_id})
        ]
        count, versions, weighted = rendered["stamp"]
        # every change of a task adds one to its version: the moved tasks, each changed once
        expected = [count, versions + len(tasks), weighted + sum(t.pk or 0 for t in tasks)]
        stamp = expected if alone and len(tasks) == len(moved) else ledger_stamp(db)
        only_moved = len(tasks) == len(moved) and stamp == expected
        if only_moved and rendered.get("warnings") == []:
            clean = []  # a text that read without warnings still does with hb's objects for them
        if only_moved and rendered.get("layout"):
            tasks.sort(key=lambda t: (t.scope, t.position, t.pk))
            layout = Layout(*rendered["layout"])
            found = tasks_splice.splice_edits(current, layout, [record_from_row(t) for t in tasks])
            if found is not None:
                text, edits = found
                facts = rendered_facts(layout, stamp, clean)
                return text, partial(remember, db, SOURCE, path, text, now, rendered=facts, edits=edits)
    text, rendered = tasks_text(db, current)
    rendered["warnings"] = clean
    return text, partial(remember, db, SOURCE, path, text, now, rendered=rendered)


def export_queue_files(
    ctx: Context,
    *,
    edits_only: bool = False,
    moved: Sequence[Key] | None = None,
    changes: tuple[int | None, int | None] | None = None,
    claimed: Key | None = None,
    taken: list[Key] | None = None,
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
    ``claimed``: the task a pop just claimed; when tasks.json, edited since hb last read it, moved
    that very task from pending to in_progress (heartbeat.py popped it between hb's read of the
    file and the claim), it is added to ``taken`` (see :func:`heartbeat.ops.queue.pop`).

    Serialised by a workspace file lock; each render reads the ledger inside the
    lock, so the last writer always writes the newest state.
    """
    paths = {kind: default_path(ctx.workspace, kind) for kind in RENDERERS}
    stale = leftovers.exist(paths.values())
    if edits_only and not stale and not _edited_kinds(ctx, paths):
        return []
    with file_lock(ctx.workspace, timeout=lock_timeout(ctx.settings.sync_lock_timeout)):
        if stale:  # a killed write's leftover: merged while hb still holds the text it was made from
            leftovers.settle(ctx, paths)
        written = _export_all(ctx, paths, edits_only, moved, changes, claimed, taken)
    _mark(ctx)
    return written


def _export_all(
    ctx: Context,
    paths: dict[str, Path],
    edits_only: bool,
    moved: Sequence[Key] | None,
    changes: tuple[int | None, int | None] | None,
    claimed: Key | None,
    taken: list[Key] | None,
) -> list[str]:
    """The queue files synced or re-rendered, in one write transaction (the caller holds the lock)."""
    written = []
    with ctx.write() as db:
        now = ctx.now()
        alone = moved is not None and _alone(ctx, changes)
        for kind, path in paths.items():
            caught = (
                (claimed, taken) if kind == SOURCE and claimed is not None and taken is not None else None
            )
            if _export_one(
                ctx, db, kind, path, now, edits_only=edits_only, moved=moved, alone=alone, caught=caught
            ):
                written.append(str(path))
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
    caught: tuple[Key, list[Key]] | None = None,
) -> bool:
    """Sync or re-render one queue file; whether it was written. ``caught``: a task a pop just
    claimed, and the list it goes to when the file's edit popped it too (:func:`_popped_too`).

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
            add_notice(ctx, f"{_reason(exc, path)}: left as it is (fix it, then run hb sync)")
            return False
        if current is not None and bookmarks.edited(db, kind, path, current):
            _rebase_stale_copy(db, kind, path, current, now)
            if (
                caught is not None
                and caught[0] not in caught[1]
                and _popped_too(db, kind, current, caught[0])
            ):
                caught[1].append(caught[0])
            try:
                report, text = SYNCERS[kind](ctx, db, path, current, now)
            except HbError as exc:
                add_notice(ctx, f"{_reason(exc, path)}: left as it is (fix it, then run hb sync)")
                return False
            for notice in sync_notices(report):
                add_notice(ctx, notice)
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
        done = replace_if(path, text, current, valid=tasks_json.is_json)
        remember_it()
        if done.kept is not None:
            add_notice(ctx, f"{path}: a concurrent edit hb could not merge is kept in {done.kept}")
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
    add_notice(ctx, f"{path}: kept changing while hb wrote it; left as it is (run hb sync)")
    return False


def _nothing() -> None:
    pass


def _popped_too(db: Db, kind: str, current: str, claimed: Key) -> bool:
    """Whether ``current``, tasks.json as edited since hb last read or wrote it, moved the task a
    pop just ``claimed`` from pending to in_progress: heartbeat.py popped it after hb read the file
    for the pop and before hb's claim. Both changed the task the same way (doing), so the sync
    alone would take the file's pop in without a word and both workers would hold the task.
    Read only for a file that was edited (the sync parses it anyway); heartbeat.py knows only
    the legacy lists."""
    from heartbeat.ops.sync import writeback

    scope, task_id = claimed
    if scope:
        return False
    base = writeback.remembered_text(db, kind)
    if base is None:
        return False
    was, now = tasks_json.task_places(base), tasks_json.task_places(current)
    if was is None or now is None:
        return False
    return bool(
        was["pending", task_id, None]
        and now["in_progress", task_id, None]
        and not now["pending", task_id, None]
    )


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
        recorded, content_hash = bookmarks.last_read(db, kind)
    if recorded is not None and (synced or same_file(recorded, path)):
        return str(content_hash or "")
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


def _edited_kinds(ctx: Context, paths: dict[str, Path]) -> list[str]:
    """The queue files edited since hb last read or wrote them (a read: no lock, no transaction)."""
    found = []
    with ctx.read() as db:
        for kind, path in paths.items():
            try:
                text = known_text(path) if path.exists() else None
            except (HbError, OSError):
                continue  # reported by the export after the operation
            if text is not None and bookmarks.edited(db, kind, path, text):
                found.append(kind)
    return found


def _reason(exc: HbError | OSError, path: Path) -> str:
    text = one_line(exc)
    return text if str(path) in text else f"{path}: {text}"
