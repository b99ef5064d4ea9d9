"""Reads for reports: one consistent, read-only snapshot on the ledger's driver connection.

Reports speak plain SQL with ``:name`` parameters (the same text on both
backends) so that ``hb report`` on SQLite needs no SQLAlchemy at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from heartbeat.db import plain

MMAP_BYTES = 1 << 30  # SQLite caps it at its compile-time maximum (2 GiB by default)


class Reader:
    """Queries inside one read snapshot, with each driver's parameter style and time values."""

    def __init__(self, raw: Any, dialect: str) -> None:
        self.raw = raw
        self.dialect = dialect
        self.sqlite = dialect == "sqlite"
        self._cache: dict[str, str] = {}

    def _adapt(self, sql: str) -> str:
        """``:name`` parameters in the driver's style; ``{binary}`` = code-point collation."""
        adapted = self._cache.get(sql)
        if adapted is None:
            if self.sqlite:
                adapted = sql.replace("{binary}", "COLLATE BINARY")
            else:
                adapted = plain.pyformat(sql.replace("{binary}", 'COLLATE "C"'))
            self._cache[sql] = adapted
        return adapted

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        cur = self.raw.cursor()
        try:
            cur.execute(self._adapt(sql), dict(params or {}))
            rows: list[tuple[Any, ...]] = cur.fetchall()  # both drivers return tuples
            return rows
        finally:
            cur.close()

    def stream(
        self, sql: str, params: Mapping[str, Any] | None = None, size: int = 10_000
    ) -> Iterator[tuple[Any, ...]]:
        """Rows one by one, read ``size`` at a time (a long ordered scan without holding it all)."""
        cur = self.raw.cursor()
        try:
            cur.execute(self._adapt(sql), dict(params or {}))
            while batch := cur.fetchmany(size):
                yield from batch
        finally:
            cur.close()

    def column(self, sql: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """The first column of every row."""
        cur = self.raw.cursor()
        try:
            cur.execute(self._adapt(sql), dict(params or {}))
            return [r[0] for r in cur.fetchall()]
        finally:
            cur.close()

    def one(self, sql: str, params: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
        rows = self.rows(sql, params)
        return rows[0] if rows else ()

    def time(self, value: datetime) -> Any:
        """A time parameter as the ledger stores it (SQLite: UTC text that sorts)."""
        return plain.bind_time(value, sqlite=self.sqlite)

    read_time = staticmethod(plain.read_time)


@contextmanager
def snapshot(raw: Any, dialect: str) -> Iterator[Reader]:
    """A read-only transaction: every query of a report sees the same data."""
    if dialect == "sqlite":
        # reports walk long index ranges: read the file through a memory map, not a
        # system call per page (set before the snapshot begins; it stays on the connection)
        raw.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        raw.execute("BEGIN")  # deferred: a WAL read snapshot, no lock on writers
    else:
        raw.rollback()  # end any implicit transaction left by an earlier read
        cur = raw.cursor()
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cur.close()
    try:
        yield Reader(raw, dialect)
    finally:
        raw.rollback()
