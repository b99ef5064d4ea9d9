"""The SQLite connection settings every ledger connection gets (heartbeat.db.sqlite)."""

from __future__ import annotations

from pathlib import Path

from heartbeat import Ledger
from heartbeat.db import sqlite


def test_queue_and_engine_connections_checkpoint_in_large_rounds(workspace: Path) -> None:
    with Ledger.open(workspace=workspace) as ledger:
        raw = ledger.raw
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == sqlite.WAL_AUTOCHECKPOINT_PAGES
        assert raw.execute("PRAGMA journal_size_limit").fetchone()[0] == sqlite.WAL_SIZE_LIMIT_BYTES
        with ledger.engine.connect() as conn:
            dbapi = conn.connection.driver_connection
            assert dbapi is not None
            assert dbapi.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == sqlite.WAL_AUTOCHECKPOINT_PAGES
