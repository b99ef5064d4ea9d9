"""Engines: SQLite tuned for many small writers, PostgreSQL through psycopg 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from heartbeat.errors import InvalidInput

BUSY_TIMEOUT_MS = 30_000


def normalize_url(value: str) -> str:
    """A path or an SQLAlchemy URL -> an SQLAlchemy URL (postgresql uses psycopg 3)."""
    if "://" not in value:
        return "sqlite:///" + str(Path(value).expanduser().resolve())
    try:
        url = make_url(value)
    except Exception:
        raise InvalidInput(f"bad database URL {value!r}") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    elif url.drivername == "sqlite+pysqlite":
        url = url.set(drivername="sqlite")
    return url.render_as_string(hide_password=False)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine with hb's connection settings for the backend."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        return _sqlite_engine(url, **kwargs)
    if not url.startswith("postgresql"):
        raise InvalidInput(f"unsupported database {url.split(':', 1)[0]!r} (use SQLite or PostgreSQL)")
    try:
        return create_engine(url, pool_pre_ping=True, **kwargs)
    except ImportError:
        raise InvalidInput("PostgreSQL needs psycopg 3: pip install 'hb-ledger[postgres]'") from None


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # pysqlite's own transaction handling would emit a deferred BEGIN; we
        # take over (SQLAlchemy's documented recipe) to emit BEGIN IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if ":memory:" not in url and url.rstrip("/") != "sqlite:":
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that later writes gets SQLITE_BUSY at once in
        # WAL mode, ignoring busy_timeout: writers take the lock up front.
        if connection.get_execution_options().get("hb_readonly"):
            connection.exec_driver_sql("BEGIN")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or None (PostgreSQL, in-memory)."""
    parsed = make_url(normalize_url(url))
    if not parsed.drivername.startswith("sqlite"):
        return None
    database = parsed.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)
