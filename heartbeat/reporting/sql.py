"""``hb sql``: one statement, read-only by construction.

Nothing here inspects the query text. The database refuses writes:

- SQLite: a separate connection opened with ``mode=ro`` (the file cannot be
  written), ``PRAGMA query_only``, and an authorizer that denies ATTACH /
  DETACH (so no other file is created or written, ``VACUUM INTO`` included)
  and every PRAGMA that is not a plain read (``writable_schema``,
  ``query_only = OFF``, ...). The driver runs one statement per call.
- PostgreSQL: a ``READ ONLY`` transaction, always rolled back, and the query
  sent as a prepared statement, which the server accepts only as a single
  statement (so no ``COMMIT; ...`` can end the read-only transaction).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from heartbeat.errors import HbError

# PRAGMAs that only read. Those in the first set may name a table or index.
PRAGMAS_WITH_ARGUMENT = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
    }
)
PRAGMAS_READ = frozenset(
    {
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
        "page_count",
        "page_size",
        "freelist_count",
        "schema_version",
        "user_version",
        "application_id",
        "journal_mode",
        "encoding",
        "data_version",
        "foreign_keys",
        "query_only",
    }
)


class QueryFailed(HbError):
    """The database refused the statement or could not run it (``hb sql``)."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def authorizer(denied: list[str]) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """SQLite's per-action check; records what it refused in ``denied``."""

    def check(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            denied.append("ATTACH" if action == sqlite3.SQLITE_ATTACH else "DETACH")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in PRAGMAS_WITH_ARGUMENT or (name in PRAGMAS_READ and arg2 is None):
                return sqlite3.SQLITE_OK
            denied.append(f"PRAGMA {name}" + (f" = {arg2}" if arg2 is not None else ""))
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    return check


def open_readonly(path: Path) -> sqlite3.Connection:
    """A connection that cannot write the ledger file."""
    uri = f"file:{quote(str(path))}?mode=ro"
    con = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
    con.execute("PRAGMA query_only = ON")
    return con


@contextmanager
def _guarded(con: sqlite3.Connection, denied: list[str]) -> Iterator[sqlite3.Connection]:
    con.execute("PRAGMA query_only = ON")
    con.set_authorizer(authorizer(denied))
    try:
        yield con
    finally:
        con.set_authorizer(None)
        if con.in_transaction:
            con.rollback()


def run_sqlite(con: sqlite3.Connection, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``query`` on ``con`` under the guard: (column names, rows)."""
    denied: list[str] = []
    with _guarded(con, denied):
        cur = con.cursor()
        try:
            cur.execute(query)
            names = [d[0] for d in cur.description or ()]
            rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        except (sqlite3.Error, sqlite3.Warning) as exc:
            if denied:
                raise QueryFailed(f"sql: {first_line(exc)}: {denied[0]} (hb sql is read-only)") from None
            raise QueryFailed(f"sql: {first_line(exc)}") from None
        finally:
            cur.close()
    return names, rows


def run_postgresql(raw: Any, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``query`` in a READ ONLY transaction on ``raw`` (a psycopg connection), then roll back."""
    import psycopg

    raw.rollback()
    cur = raw.cursor()
    try:
        cur.execute("SET TRANSACTION READ ONLY")
        cur.execute(query, prepare=True)
        names = [d[0] for d in cur.description or ()]
        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
    except psycopg.Error as exc:
        raise QueryFailed(f"sql: {first_line(exc)}") from None
    finally:
        cur.close()
        raw.rollback()
    return names, rows
