"""Engines: SQLite tuned for many small writers, PostgreSQL through psycopg 3."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

from heartbeat.db import sqlite
from heartbeat.errors import InvalidInput, bad_database_url

# Seconds a PostgreSQL connection may take to open, unless the URL (``?connect_timeout=``) or
# PGCONNECT_TIMEOUT says otherwise: libpq waits without end by default, so a server that took the
# connection and never answered (or a host that drops packets) held a command for minutes or more.
# (How long a statement waits for a lock another session holds is SQLite's busy timeout,
# sqlite.BUSY_TIMEOUT_MS, set as each connection's lock_timeout: see make_engine.)
CONNECT_TIMEOUT = 10


def _text(value: Any) -> str:
    """A URL query parameter as one text (given twice, its last value)."""
    if isinstance(value, tuple):
        return str(value[-1]) if value else ""
    return "" if value is None else str(value)


def normalize_url(value: str) -> str:
    """A path or an SQLAlchemy URL -> an SQLAlchemy URL (postgresql uses psycopg 3). A path's
    characters that mean something in a URL (``?``, ``#``, ``%``) are escaped: a workspace named
    ``ws?x=1`` had its schema made in a file named ``ws`` beside it, and one holding ``%20``
    in a directory that does not exist."""
    if "://" not in value:
        path = str(Path(value).expanduser().resolve())
        return URL.create("sqlite", database=path).render_as_string(hide_password=False)
    try:
        url = make_url(value)
    except Exception:
        raise bad_database_url(value) from None
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
    query = make_url(url).query
    if "connect_timeout" not in query and not os.environ.get("PGCONNECT_TIMEOUT"):
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT, **kwargs.get("connect_args", {})}
    try:
        engine = create_engine(url, pool_pre_ping=True, **kwargs)
    except ImportError:
        raise InvalidInput("PostgreSQL needs psycopg 3: pip install 'hb-ledger[postgres]'") from None
    # a lock another session holds is waited for as SQLite's busy timeout, then busy (exit 75),
    # where PostgreSQL waits without end (a session left in a transaction, a LOCK TABLE by hand);
    # unless the URL's or PGOPTIONS' options set a lock_timeout of their own
    options = " ".join(filter(None, (os.environ.get("PGOPTIONS"), _text(query.get("options")))))
    if "lock_timeout" not in options:

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # a SET, not the startup packet's options, which PgBouncer refuses unless told to
            # ignore them; in autocommit, so that it is one round trip and no transaction
            dbapi_connection.autocommit = True
            dbapi_connection.execute(f"SET lock_timeout = {int(sqlite.BUSY_TIMEOUT_MS)}")
            dbapi_connection.autocommit = False

    return engine


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    engine = create_engine(url, **kwargs)
    memory = ":memory:" in url or url.rstrip("/") == "sqlite:"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        sqlite.configure(dbapi_connection, wal=not memory)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # writers take the lock up front (see heartbeat.db.sqlite.configure)
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
