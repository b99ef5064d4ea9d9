"""What the last sync recorded about a workspace file: its ``sync_state`` row, in plain SQL.

The Markdown sync and the engine's seal keep their baselines here; both run
with or without SQLAlchemy loaded (see :mod:`heartbeat.ops.sync.engine`), so the
rows are read and written on the driver connection of the sync's transaction.
"""

from __future__ import annotations

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
