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
from typing import Any

from heartbeat.db.plain import Conn
from heartbeat.db.shape import SYNC_STATE

_LOAD = f"SELECT {SYNC_STATE.select()} FROM sync_state WHERE kind = :kind"
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


def kept_text(skeleton: Any) -> str | None:
    """The text a skeleton keeps (see :func:`keep`), or None (none kept, or not readable)."""
    if not isinstance(skeleton, dict):
        return None
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
