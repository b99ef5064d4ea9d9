"""SQLite connection settings, shared by the SQLAlchemy engine and the queue's direct connection.

Kept free of SQLAlchemy so that ``hb pop`` can open the ledger without it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote

BUSY_TIMEOUT_MS = 30_000
# Checkpoint the WAL into the database every 10,000 pages (40 MiB) instead of
# SQLite's 1,000. A pop writes about 4 pages and a complete about 9, so the
# default checkpointed (two fsyncs, every distinct page copied) every ~150
# queue operations, copying the same hot pages (the queue's index leaves, the
# tables' last pages) again each time; now every ~1,500. When a long reader
# held the checkpoint back and the WAL grew past 64 MiB, it is cut back to
# that size once it restarts.
WAL_AUTOCHECKPOINT_PAGES = 10_000
WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024


def configure(dbapi_connection: Any, *, wal: bool = True) -> None:
    """hb's pragmas for one connection; the caller emits BEGIN itself (pysqlite's own handling
    is off). The journal mode is the file's, not the connection's: :func:`use_wal` sets it once
    the file is known to be an hb ledger, so a database hb refuses is left as it was."""
    # pysqlite would emit a deferred BEGIN; a deferred transaction that later
    # writes gets SQLITE_BUSY at once in WAL mode, ignoring busy_timeout, so
    # hb begins write transactions with BEGIN IMMEDIATE itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if wal:
        cursor.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()
    dbapi_connection.create_function("hb_lower", 1, _lower, deterministic=True)


def _lower(value: Any) -> Any:
    """``hb_lower``: text in lower case as Python (and PostgreSQL) lower it, every letter
    (SQLite's ``lower`` leaves ``É`` and ``Ä`` as they are); anything else as it is."""
    return value.lower() if isinstance(value, str) else value


def file_of(url: str) -> Path | None:
    """The SQLite file a path or ``sqlite:///`` URL names; None for anything else (PostgreSQL,
    an in-memory database, a ``file:`` URI)."""
    if "://" not in url:
        return None if url == ":memory:" else Path(url).expanduser().resolve()
    for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
        if url.startswith(prefix):
            rest = unquote(url[len(prefix) :].split("?", 1)[0])
            if not rest or rest == ":memory:" or rest.startswith("file:"):
                return None
            return Path(rest if rest.startswith("/") else Path.cwd() / rest)
    return None


def use_wal(dbapi_connection: Any) -> None:
    """Put the database in WAL mode (kept in the file; a no-op when it is already). Outside any
    transaction, and only on a file hb owns: it rewrites the file's header."""
    dbapi_connection.execute("PRAGMA journal_mode = WAL").close()


def connect(path: Path, *, wal: bool = True) -> sqlite3.Connection:
    """A configured connection to an existing ledger file (``wal``: one known to be hb's, put
    in WAL mode; else the file is not written to until :func:`use_wal`)."""
    # a Ledger may be handed from thread to thread (a worker pool); it is not for two at once
    con = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        configure(con)
        if wal:
            use_wal(con)
    except BaseException:  # a file that is no database, or a damaged one: closed, not left to the collector
        con.close()
        raise
    return con


def is_sqlite(url: str) -> bool:
    """Whether a path or URL names a SQLite database (a file or not)."""
    return "://" not in url or url.split(":", 1)[0].split("+", 1)[0] == "sqlite"
