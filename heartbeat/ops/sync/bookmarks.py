"""What the last sync recorded about a workspace file: its ``sync_state`` row, in plain SQL.

The Markdown sync and the engine's seal keep their baselines here; both run
with or without SQLAlchemy loaded (see :mod:`heartbeat.ops.sync.engine`), so the
rows are read and written on the driver connection of the sync's transaction.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

from heartbeat.db.plain import Conn
from heartbeat.db.shape import SYNC_STATE
from heartbeat.formats import tasks_splice
from heartbeat.ops.sync.files import digest, same_place

_LOAD = f"SELECT {SYNC_STATE.select()} FROM sync_state WHERE kind = :kind"
_PATHS = "SELECT kind, path FROM sync_state"
_READ = "SELECT path, content_hash FROM sync_state WHERE kind = :kind"
_SAVE = (
    "INSERT INTO sync_state (kind, path, content_hash, size, synced_at, skeleton) "
    "VALUES (:kind, :path, :content_hash, :size, :synced_at, {json:skeleton}) "
    "ON CONFLICT (kind) DO UPDATE SET path = excluded.path, content_hash = excluded.content_hash, "
    "size = excluded.size, synced_at = excluded.synced_at, skeleton = excluded.skeleton"
)


# A file's text longer than this (characters) is kept compressed: a 20,000-task tasks.json is
# 4 MB of JSON, written again with every export; zlib makes it a few hundred KB, at a fraction
# of the time that JSON-encoding, writing and reading 4 MB take.
PACK_FROM = 64 * 1024


def keep(text: str) -> dict[str, Any]:
    """A file's text as ``sync_state.skeleton`` keeps it: ``{"text": ...}``, or from
    :data:`PACK_FROM` characters on ``{"zlib": ...}`` (its UTF-8, zlib level 1, base64)."""
    if len(text) < PACK_FROM:
        return {"text": text}
    return {"zlib": base64.b64encode(zlib.compress(text.encode("utf-8"), 1)).decode("ascii")}


# A large text a queue operation changed in a few places is kept as the text before them plus the
# edits since: ``{"edits": {"base": <kind of the row keeping the older text>, "hash": <that row's
# content hash>, "steps": [[start, end, new], ...]}}``. The older text has a row of its own, so an
# export rewrites a few hundred bytes of edits instead of compressing and storing the whole text
# again. Reading applies each edit (a copy of the text each), so after this many the text is
# kept whole again.
EDITS_UP_TO = 32


def base_kind(kind: str) -> str:
    """The ``sync_state`` row that keeps the older text of ``kind``'s edits."""
    return f"{kind}:base"


def keep_edits(
    db: Conn,
    kind: str,
    old: dict[str, Any],
    old_hash: str | None,
    edits: list[Any],
    *,
    path: str,
    now: datetime,
) -> dict[str, Any] | None:
    """The skeleton of a text that is the text ``old`` keeps (whose hash is ``old_hash``) with
    ``edits`` made (:func:`heartbeat.formats.tasks_splice.apply`); None when it is better kept
    whole (``old`` keeps no large text, or enough edits are kept already)."""
    known = old.get("edits")
    if isinstance(known, dict) and isinstance(known.get("steps"), list):
        steps = [*known["steps"], *edits]
        return {"edits": {**known, "steps": steps}} if len(steps) <= EDITS_UP_TO else None
    packed = old.get("zlib")
    if not isinstance(packed, str) or old_hash is None or len(edits) > EDITS_UP_TO:
        return None
    # the older text moves to a row of its own as it is stored (not compressed again)
    save(
        db,
        base_kind(kind),
        path=path,
        content_hash=old_hash,
        size=None,
        synced_at=now,
        skeleton={"zlib": packed},
    )
    return {"edits": {"base": base_kind(kind), "hash": old_hash, "steps": list(edits)}}


def kept_text(skeleton: Any, db: Conn | None = None) -> str | None:
    """The text a skeleton keeps (see :func:`keep`, :func:`keep_edits`: those need ``db``), or
    None (none kept, or not readable)."""
    if not isinstance(skeleton, dict):
        return None
    edits = skeleton.get("edits")
    if isinstance(edits, dict):
        return None if db is None else _edited_text(db, edits)
    text = skeleton.get("text")
    if isinstance(text, str):
        return text
    packed = skeleton.get("zlib")
    if not isinstance(packed, str):
        return None
    try:
        return zlib.decompress(base64.b64decode(packed, validate=True)).decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError):
        return None


def load(db: Conn, kind: str) -> dict[str, Any] | None:
    """The row of ``kind`` (columns decoded), or None."""
    row = db.one(_LOAD, {"kind": kind})
    return None if row is None else SYNC_STATE.decode(row)


def paths(db: Conn) -> dict[str, str]:
    """The file each kind was last read from or written to, by kind (one short read)."""
    return {str(kind): str(path) for kind, path in db.rows(_PATHS)}


def last_read(db: Conn, kind: str) -> tuple[str | None, str | None]:
    """The path and digest of what hb last read from or wrote to the file of ``kind`` (Nones:
    nothing yet), without the text it kept."""
    row = db.one(_READ, {"kind": kind})
    return (None, None) if row is None else (row[0], row[1])


def edited(db: Conn, kind: str, path: Path, text: str) -> bool:
    """Whether ``text``, the file of ``kind`` at ``path``, is not what hb last read or wrote there
    (the record's digest is compared; a record made before the workspace moved with its ledger is
    of ``path``: :func:`heartbeat.ops.sync.files.same_place`)."""
    recorded, content_hash = last_read(db, kind)
    return recorded is None or content_hash != digest(text) or not same_place(db, recorded, path)


def save(
    db: Conn,
    kind: str,
    *,
    path: str,
    content_hash: str | None,
    size: int | None,
    synced_at: datetime,
    skeleton: dict[str, Any] | None,
) -> None:
    """Insert or replace the row of ``kind``."""
    db.execute(
        _SAVE,
        {
            "kind": kind,
            "path": path,
            "content_hash": content_hash,
            "size": size,
            "synced_at": db.time(synced_at),
            "skeleton": db.json(skeleton),
        },
    )


def note_removed(db: Conn, kind: str, entry_id: str, synced_hash: str) -> None:
    """Remember that the ledger removed ``entry_id``, which the last sync of ``kind`` left in the
    file as ``synced_hash`` (the digest of its line's values): the next sync of the file drops a
    line that still reads so, instead of taking it for a new entry. The note lasts until that
    sync, which records the file afresh; a line edited since is the file's, read as new."""
    _note(db, kind, "removed", [[entry_id, synced_hash]])


def note_dropped(db: Conn, kind: str, entries: list[list[str]]) -> None:
    """Remember that the file hb just imported lacks these entries (``[scope, id, digest]``: the
    digest the text hb read before held each at), which the import kept in the ledger: they are
    still the recorded text's, so the next sync reads them as deleted from the file (as it would
    have without the import) rather than as new in the ledger, to write back. The note lasts
    until that sync, which records the file afresh."""
    _note(db, kind, "dropped", entries)


def _note(db: Conn, kind: str, key: str, items: list[list[str]]) -> None:
    """Add ``items`` to the list at ``key`` of the kind's record (none kept: nothing to add to)."""
    row = load(db, kind)
    if row is None or not isinstance(row["skeleton"], dict):
        return
    skeleton = dict(row["skeleton"])
    skeleton[key] = [*skeleton.get(key, []), *items]
    save(
        db,
        kind,
        path=row["path"],
        content_hash=row["content_hash"],
        size=row["size"],
        synced_at=row["synced_at"],
        skeleton=skeleton,
    )


def _edited_text(db: Conn, edits: dict[str, Any]) -> str | None:
    """The older text :func:`keep_edits` points to, with its edits made (None: that text is gone
    or is another one, or the edits do not read)."""
    base = edits.get("base")
    row = load(db, base) if isinstance(base, str) else None
    if row is None or row["content_hash"] != edits.get("hash"):
        return None
    skeleton = row["skeleton"]
    text = kept_text(skeleton) if isinstance(skeleton, dict) and "edits" not in skeleton else None
    steps = edits.get("steps")
    if text is None or not isinstance(steps, list):
        return None
    if not all(
        isinstance(step, list)
        and len(step) == 3
        and type(step[0]) is int
        and type(step[1]) is int
        and isinstance(step[2], str)
        for step in steps
    ):
        return None
    try:
        return tasks_splice.apply(text, steps)
    except ValueError:  # an edit outside its text
        return None
