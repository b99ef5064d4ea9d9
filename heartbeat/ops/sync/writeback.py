"""Write-backs: what the workspace files must become, recorded with the commit that decided it.

A sync commits the ledger first and writes the files after (a file cannot join a database
transaction). If that write does not land — the process is killed, the directory is
read-only, the disk is full — the file still holds the text the sync read, while the ledger
already records the file as rewritten. Read as a user's edit, that old text would undo the
commit (a completed task reopened, a recurrence fired twice). So the sync records, in the same
transaction, a write-back per file: the text it read (``before``, kept whole) and the digest of
the text it is about to write (``after``). The next sync looks first:

- the file still holds ``before``: the write did not land. The file is read as the text hb
  meant to write (the kind's baseline), so the ledger's version is rendered again, not
  imported;
- it holds ``after``: the write landed; nothing to do;
- anything else, while the write has not landed: somebody edited the file since — the file
  that held the old text. It is synced against that old text, not against what hb meant to
  write, so entries hb added, which the editor never saw, are not taken as removed by them.

A landed write keeps its row, marked with the file's modification time, for one more sync, and
for as long after as the file still holds hb's text within :func:`stale_window` of its landing (a
later sync that leaves the file as it is keeps the row: see :meth:`Pending.guarding`): a
runtime that read the file just before hb's write and saved its own copy just after (the
claude-skills heartbeat.py, mistermorph: a read-modify-write without a lock) overwrites hb's
text with one made from the old text. A file changed within that window after hb's write
is therefore synced against the old text too; a write that created the file read an empty text.
The window is a second for the JSON files and PROACTIVE.md, and a minute for mistermorph's TODO
files, whose Add and Complete ask its LLM between reading the files and writing them whole.
Such a runtime's copy may be older than hb's last write: when hb writes the file again within
the window of its previous write, the texts read before those writes are kept too
(``older``, at most :data:`CHAIN`), and a stale copy is synced against the one it was made from
(a JSON file: told by its lines, :meth:`Pending.source_of`; a TODO file: by its entries, see
``engine._copy_base``). An entry hb added in between then reads as new in the ledger, not as
deleted in the file. Rows live in ``sync_state`` under ``wb:<kind>``.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from heartbeat.db.plain import Conn
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import digest, measure

PREFIX = "wb:"  # sync_state.kind holds 16 characters: "wb:errors-json" fits
STALE_WRITE = 1_000_000_000  # ns after hb's write within which a change may be a stale copy
# mistermorph's TODO files: its Add and Complete ask its LLM (a semantic dedupe, the entry to
# complete) between reading the files and writing them whole, so its copy lands seconds later
TODO_STALE_WRITE = 60_000_000_000
TODO_KINDS = frozenset({"todo", "done", "recur"})
CHAIN = 4  # texts kept from hb's writes in quick succession (see the module docstring)


def stale_window(kind: str) -> int:
    """How long (ns) after hb's write of ``kind``'s file a change may be a stale copy."""
    return TODO_STALE_WRITE if kind in TODO_KINDS else STALE_WRITE


@dataclass(frozen=True)
class Pending:
    """A write-back: the text the sync read and the digest of the text it wrote (or meant to);
    ``landed``: the file's modification time (ns) right after hb's write landed, else None.

    The texts read are kept whole, or (a large tasks.json an export rewrote in a few places) as
    a reference to the text the file's own record keeps (see :func:`record`): those are read on
    first use, from ``db``."""

    kind: str
    path: str
    before: str | None  # the digest of before_text; None: there was no file
    after: str
    kept_before: str | dict[str, Any] | None = None  # before_text, or where it is kept
    landed: int | None = None
    # the texts read before hb's writes just before this one, newest first (or where each is kept)
    kept_older: tuple[str | dict[str, Any], ...] = ()
    db: Conn | None = field(default=None, compare=False, repr=False)

    @cached_property
    def before_text(self) -> str | None:
        """The text read before hb's write (None: not kept, or no longer to be found)."""
        text = _text_of(self.kept_before, self.db)
        return text if text is not None and digest(text) == self.before else None

    @cached_property
    def older(self) -> tuple[str, ...]:
        """The texts read before hb's writes just before this one that are still to be found."""
        return tuple(t for t in (_text_of(kept, self.db) for kept in self.kept_older) if t is not None)

    @property
    def oldest_text(self) -> str | None:
        """The oldest text kept that a stale copy of the file may have been made from."""
        return self.older[-1] if self.older else self.before_text

    def source_of(self, edited: str | None) -> str | None:
        """The kept text ``edited`` was most likely made from: of the texts read before hb's
        writes in quick succession, the one fewest lines away from it (a copy of one of them with
        the runtime's own change differs from that one by the change alone, from the others by
        hb's writes in between too); the oldest when there is no copy to compare. A tasks.json is
        compared by its tasks' places instead (:func:`~heartbeat.formats.tasks_json.task_places`):
        heartbeat.py's change sits where hb's later writes changed lines too, so the lines of the
        wrong text could read closest (a task hb added then read as deleted by the copy)."""
        from heartbeat.ops.sync.textmerge import distance

        kept = [t for t in (self.before_text, *self.older) if t is not None]
        if edited is None or len(kept) < 2:
            source = self.oldest_text
        elif self.kind == "tasks-json" and (apart := _tasks_apart(edited)) is not None:
            source = min(kept, key=apart)  # a tie: the newer (the text hb's last write read)
        else:
            source = min(reversed(kept), key=lambda text: distance(text, edited))  # a tie: the older
        return source or None  # "": the file did not exist before hb's write: no text to sync against

    def made_from_nothing(self, ours: str | None, edited: str) -> bool:
        """Whether ``edited``, this tasks.json as changed moments after hb's write ``ours`` created
        it, is a copy made from no file rather than from hb's text: heartbeat.py's ``add`` reads a
        missing file as an empty queue and saves it with its one new task, so it holds fewer than
        half of hb's task ids. Such a copy is synced as a file hb never read; any other change of
        a file hb created is an edit of hb's text (a text that is no JSON too: it is refused as
        one)."""
        return (
            self.kind == "tasks-json"
            and self.before is None
            and ours is not None
            and not _holds_hbs_tasks(ours, edited)
        )

    def guarding(self, text: str | None) -> bool:
        """Whether the file, holding ``text``, still holds hb's write, landed moments ago: a stale
        copy of the text before it may land yet (:func:`stale_window`)."""
        return (
            self.landed is not None
            and text is not None
            and digest(text) == self.after
            and time.time_ns() - self.landed < stale_window(self.kind)
        )

    def state(self, text: str | None, mtime: int | None = None) -> str:
        """What the file's current ``text`` (modified at ``mtime``) says: ``landed`` (it holds
        hb's text), ``unwritten`` (still the text read, hb's write never landed), ``edited``
        (changed from the text read: sync against that), or ``done`` (a later edit of hb's)."""
        current = None if text is None else digest(text)
        if current == self.after:
            return "landed"
        if self.landed is None:
            return "unwritten" if current == self.before else "edited"
        if mtime is not None and mtime - self.landed < stale_window(self.kind):
            return "edited"  # within moments of hb's write: a copy made from the old text
        return "done"


def _tasks_apart(edited: str) -> Callable[[str], tuple[bool, int]] | None:
    """How far a kept tasks.json text is from ``edited``: first whether it holds a task the copy
    lacks (heartbeat.py moves tasks between its lists but never takes one out, so a copy made from
    a text has every task of it: one that lacks a task hb added was made before that, perhaps from
    an earlier copy hb never synced), then by how many task places
    (:func:`~heartbeat.formats.tasks_json.task_places`) the two differ; None when ``edited`` is no
    JSON. The empty text (no file before hb's write) holds no task; another text that is no JSON
    is as far as can be."""
    from heartbeat.formats.tasks_json import task_ids, task_places

    now = task_places(edited)
    if now is None:
        return None
    ids = task_ids(now)

    def apart(text: str) -> tuple[bool, int]:
        was: Counter[tuple[str, str, str | None]] | None = Counter() if text == "" else task_places(text)
        if was is None:
            return True, 2**62
        return not task_ids(was) <= ids, ((was - now) + (now - was)).total()

    return apart


def _holds_hbs_tasks(ours: str, edited: str) -> bool:
    """Whether the tasks.json ``edited`` holds at least half of the task ids ``ours`` holds (a text
    that is no JSON, or ``ours`` without a task, counts as holding them)."""
    from heartbeat.formats.tasks_json import task_ids, task_places

    mine, now = task_places(ours), task_places(edited)
    if mine is None or now is None or not mine:
        return True
    ids = task_ids(mine)
    return 2 * len(ids & task_ids(now)) >= len(ids)


def record(
    db: Conn,
    kind: str,
    path: Path,
    before: str | None,
    after: str,
    now: datetime,
    *,
    kept: dict[str, Any] | None = None,
) -> None:
    """In the sync's transaction: ``path`` must become ``after`` (it held ``before``).

    ``kept``: where ``before`` is kept already (a skeleton of :mod:`bookmarks` that refers to
    the text another row keeps), stored in its place. When ``before`` is hb's own previous
    write, landed moments ago (:func:`stale_window`, by the file system's clock, as the
    modification times it is compared with), the texts that write kept go along as ``older``."""
    older: list[str | dict[str, Any]] = []
    previous = bookmarks.load(db, PREFIX + kind)
    last = previous["skeleton"] if previous is not None else None
    if (
        previous is not None
        and isinstance(last, dict)
        and isinstance(last.get("landed"), int)
        and before is not None
        and previous["content_hash"] == digest(before)
        and time.time_ns() - last["landed"] < stale_window(kind)
        and (entry := _entry(last, created="")) is not None
    ):
        chain = last.get("older")
        older = [entry, *(chain if isinstance(chain, list) else [])][:CHAIN]
    skeleton: dict[str, Any] = {"before": None if before is None else digest(before), "older": older}
    if kept is None:
        skeleton["text"] = before
    else:
        skeleton["kept"] = kept
    after_hash, size = measure(after)
    bookmarks.save(
        db,
        PREFIX + kind,
        path=str(path),
        content_hash=after_hash,
        size=size,
        synced_at=now,
        skeleton=skeleton,
    )


def _entry(skeleton: dict[str, Any], created: str | None = None) -> str | dict[str, Any] | None:
    """A write-back's text read, as its row keeps it: the text, or where it is kept; ``created``
    for a write that created the file (there was no text to read)."""
    if "before" in skeleton and skeleton["before"] is None:
        return created
    text = skeleton.get("text")
    if isinstance(text, str):
        return text
    kept = skeleton.get("kept")
    return kept if isinstance(kept, dict) else None


def _text_of(entry: str | dict[str, Any] | None, db: Conn | None) -> str | None:
    if isinstance(entry, dict):
        return bookmarks.kept_text(entry, db)
    return entry


def pending(db: Conn, kinds: list[str] | tuple[str, ...]) -> dict[str, Pending]:
    """The write-backs of ``kinds`` on record."""
    out: dict[str, Pending] = {}
    for kind in kinds:
        row = bookmarks.load(db, PREFIX + kind)
        if row is None or row["content_hash"] is None:
            continue
        skeleton: dict[str, Any] = row["skeleton"] or {}
        landed = skeleton.get("landed")
        older = skeleton.get("older")
        out[kind] = Pending(
            kind,
            row["path"],
            skeleton.get("before"),
            row["content_hash"],
            _entry(skeleton),
            landed if isinstance(landed, int) else None,
            tuple(t for t in older if isinstance(t, str | dict)) if isinstance(older, list) else (),
            db,
        )
    return out


def mark_landed(db: Conn, written: dict[str, Path]) -> None:
    """The files now hold hb's text: note each one's modification time (see :func:`stale_window`)."""
    for kind, path in written.items():
        row = bookmarks.load(db, PREFIX + kind)
        if row is None:
            continue
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = 0
        bookmarks.save(
            db,
            PREFIX + kind,
            path=row["path"],
            content_hash=row["content_hash"],
            size=row["size"],
            synced_at=row["synced_at"],
            skeleton={**(row["skeleton"] or {}), "landed": mtime},
        )


def clear(db: Conn, kinds: list[str] | tuple[str, ...]) -> None:
    for kind in kinds:
        db.execute("DELETE FROM sync_state WHERE kind = :kind", {"kind": PREFIX + kind})


def remembered_text(db: Conn, kind: str) -> str | None:
    """The text hb last read or wrote for ``kind`` as the JSON files and PROACTIVE.md keep it
    (:func:`heartbeat.ops.sync.bookmarks.keep`, see :func:`heartbeat.ops.sync.queue_files.remember`), when
    its digest is the recorded one."""
    row = bookmarks.load(db, kind)
    if row is None:
        return None
    text = bookmarks.kept_text(row["skeleton"], db)
    if text is None or digest(text) != row["content_hash"]:
        return None
    return text


def rebase(db: Conn, kind: str, path: Path, text: str | None, now: datetime) -> None:
    """Make ``text`` the kind's baseline again, as :func:`heartbeat.ops.sync.queue_files.remember`
    keeps it: the file a concurrent writer edited was this text, not the one hb wrote over it.
    The record keeps its time: what the ledger changed since that sync is still its change (a
    setting set in both heartbeat-state.json and the ledger is a conflict, not the file's)."""
    if text is None:
        db.execute("DELETE FROM sync_state WHERE kind = :kind", {"kind": kind})
        return
    row = bookmarks.load(db, kind)
    bookmarks.save(
        db,
        kind,
        path=str(path),
        content_hash=digest(text),
        size=len(text.encode("utf-8")),
        synced_at=row["synced_at"] if row is not None else now,
        skeleton=bookmarks.keep(text),
    )
