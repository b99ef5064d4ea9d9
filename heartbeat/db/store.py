"""The data path of every operation: named SQL statements and rows on the driver connection.

A :class:`Db` is one transaction on a DB-API connection (sqlite3 or psycopg).
It runs the named statements of :mod:`heartbeat.db.sql` (one file per area,
loaded once) and keeps track of the rows it loaded or added
(:mod:`heartbeat.db.rows`): a row read twice is the same object, and the
columns of a row that changed are written before the next statement and at
commit. Free of SQLAlchemy: an everyday command never imports it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from heartbeat.db.plain import Conn, bind_time, postgres_json, read_time
from heartbeat.db.rows import _LOADED, _TRACKER, LAST_RUN_COLUMNS, Row, TaskRow
from heartbeat.db.shape import Shape
from heartbeat.db.status import TaskStatus

R = TypeVar("R", bound=Row)
_CURSORS = itertools.count()  # names of PostgreSQL's server-side cursors


class Statements(Mapping[str, str]):
    """The named statements of one area (``heartbeat/db/sql/<area>.sql``).

    A statement starts at a ``-- name: NAME`` line; the comment lines right after it
    say what it does; the SQL runs to the next name. A name ending in ``_pg`` is
    PostgreSQL's alone (the caller runs it only there). ``statements.NAME`` (or
    ``statements["NAME"]``) is its text, written with ``:param`` parameters and the
    markers :func:`heartbeat.db.plain.adapt` turns into each backend's SQL.
    """

    def __init__(self, area: str, text: str) -> None:
        self.area = area
        self._sql = parse(text, area)

    def __getitem__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise KeyError(f"no statement {name!r} in {self.area}.sql") from None

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._sql[name]
        except KeyError:
            raise AttributeError(f"no statement {name!r} in {self.area}.sql") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._sql)

    def __len__(self) -> int:
        return len(self._sql)


def parse(text: str, area: str = "?") -> dict[str, str]:
    """``{name: sql}`` of a statements file (see :class:`Statements`)."""
    out: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []

    def close() -> None:
        if name is not None:
            sql = "\n".join(body).strip().rstrip(";").strip()
            if not sql:
                raise ValueError(f"{area}.sql: statement {name!r} is empty")
            out[name] = sql

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-- name:"):
            close()
            name = stripped.removeprefix("-- name:").strip()
            if not name.isidentifier() or name in out:
                raise ValueError(f"{area}.sql: bad or repeated statement name {name!r}")
            body = []
        elif name is not None and not (stripped.startswith("--") and not body):
            body.append(line)
    close()
    return out


# the statements files, beside this module (read by path: importlib.resources costs every hb
# command 3 ms of imports, and hb is installed as files)
_SQL = Path(__file__).with_name("sql")


def take_turns(conn: Conn, name: str) -> None:
    """Make the write transactions that call this with ``name`` run one at a time, until the one
    on ``conn`` ends. SQLite's write lock (BEGIN IMMEDIATE) does it already; on PostgreSQL it is
    the row ``name`` of ``locks``, which the read-only role may read but not lock."""
    if not conn.sqlite:
        conn.execute(statements("locks").take_turn_pg, {"name": name})


@cache
def statements(area: str) -> Statements:
    """The named statements of ``area``, read once per process."""
    text = (_SQL / f"{area}.sql").read_text(encoding="utf-8")
    return Statements(area, text)


def areas() -> list[str]:
    """Every statements file's area name."""
    return sorted(p.name.removesuffix(".sql") for p in _SQL.iterdir() if p.name.endswith(".sql"))


class Db(Conn):
    """One transaction on a driver connection, with the rows it loaded (see the module docstring).

    Statements may name list parameters (``x IN {ints:ids}``, ``{texts:ids}``): pass a
    Python sequence.
    """

    def __init__(self, raw: Any, *, sqlite: bool) -> None:
        super().__init__(raw, sqlite=sqlite)
        self._dirty: set[Row] = set()
        self._identity: dict[tuple[type[Row], tuple[Any, ...]], Row] = {}

    def take_turns(self, name: str) -> None:
        """:func:`take_turns` in this transaction."""
        take_turns(self, name)

    # --- statements (every one sees the changes made to the rows so far) --------------

    def rows(self, text: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        self.flush()
        return super().rows(text, self._bind(params))

    def dicts(self, text: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        self.flush()
        return super().dicts(text, self._bind(params))

    def executemany(self, text: str, params: Sequence[Mapping[str, Any]]) -> None:
        self.flush()
        super().executemany(text, [self._bind(p) for p in params])

    def insert_many(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], **kw: Any
    ) -> None:
        self.flush()
        super().insert_many(table, columns, rows, **kw)

    def value(self, text: str, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row (None when there is no row)."""
        got = self.rows(text, params)
        return got[0][0] if got else None

    def stream(self, text: str, params: Mapping[str, Any] | None = None, size: int = 1000) -> Iterator[Any]:
        """The rows of a query as they come, for answers too big to hold (see :meth:`batches`)."""
        for _names, batch in self.batches(text, params, size):
            yield from batch

    def batches(
        self, text: str, params: Mapping[str, Any] | None = None, size: int = 1000
    ) -> Generator[tuple[list[str], list[Any]]]:
        """A query's column names and its rows, ``size`` at a time (PostgreSQL: a server-side
        cursor, so the client never holds the whole answer either). Other statements may run
        between two batches."""
        self.flush()
        cur = self.raw.cursor() if self.sqlite else self.raw.cursor(name=f"hb_{next(_CURSORS)}")
        try:
            cur.execute(self.sql(text), dict(self._bind(params)))
            names: list[str] | None = None
            while batch := cur.fetchmany(size):
                if names is None:
                    names = [c[0] for c in cur.description]
                yield names, batch
        finally:
            cur.close()

    def rows_of(self, cls: type[R], names: Sequence[str], batch: Sequence[Sequence[Any]]) -> list[R]:
        """Rows of ``batch`` (from :meth:`batches`) as ``cls`` objects that are not attached:
        for reading many without keeping them."""
        return [self._build(cls, dict(zip(names, values, strict=True))) for values in batch]

    def _bind(self, params: Mapping[str, Any] | None) -> Mapping[str, Any]:
        if not params or not self.sqlite:
            return params or {}
        return {k: json.dumps(v) if isinstance(v, (list, tuple)) else v for k, v in params.items()}

    # --- rows -------------------------------------------------------------------------

    def load(self, cls: type[R], text: str, params: Mapping[str, Any] | None = None) -> list[R]:
        """The rows a query returns, as ``cls`` objects attached to this transaction. The query
        selects the table's columns (``SELECT * FROM ...`` or ``t.*``), or a subset of them
        (a row loaded from a subset must not be changed)."""
        self.flush()
        cur = self.raw.cursor()
        try:
            cur.execute(self.sql(text), dict(self._bind(params)))
            names = [c[0] for c in cur.description]
            return [self._attach(cls, names, values) for values in cur.fetchall()]
        finally:
            cur.close()

    def first(self, cls: type[R], text: str, params: Mapping[str, Any] | None = None) -> R | None:
        """The first row a query returns (see :meth:`load`), or None."""
        found = self.load(cls, text, params)
        return found[0] if found else None

    def get(self, cls: type[R], *key: Any) -> R | None:
        """The row with this primary key, or None."""
        known = self._identity.get((cls, key))
        if known is not None:
            return known  # type: ignore[return-value]
        shape = cls.shape
        where = " AND ".join(f"{c} = :{c}" for c in shape.key)
        return self.first(
            cls, f"SELECT * FROM {shape.name} WHERE {where}", dict(zip(shape.key, key, strict=True))
        )

    def forget(self, cls: type[Row], *key: Any) -> None:
        """Drop the row with this key from the rows loaded (a plain statement changed it since):
        the next :meth:`get` reads it again."""
        self._identity.pop((cls, key), None)

    def add(self, row: R) -> R:
        """INSERT ``row`` now (its ``pk`` is set when the table numbers its rows) and attach it."""
        self.flush()
        shape = row.shape
        values = row.values()
        numbered = shape.key == ("pk",)
        columns = [c for c in shape.columns if not (numbered and c == "pk" and values[c] is None)]
        sql = _insert_sql(shape, tuple(columns), numbered and values["pk"] is None, self.sqlite)
        cur = self.raw.cursor()
        try:
            cur.execute(sql, [self._column(shape, c, values[c]) for c in columns])
            if numbered and values["pk"] is None:
                (pk,) = cur.fetchone()
                row.__dict__["pk"] = pk
        finally:
            cur.close()
        self._track(row)
        return row

    def track(self, row: R) -> R:
        """Attach ``row``, inserted already with exactly these values (by :meth:`insert_many`),
        as :meth:`add` attaches the row it inserts: later changes to it are written."""
        self._track(row)
        return row

    def written(self, row: Row, **values: Any) -> None:
        """Set columns of an attached ``row`` to ``values`` that a statement already wrote to its
        table row (they are not written again)."""
        state = row.__dict__
        state.update(values)
        loaded = state.get(_LOADED)
        if loaded is not None:
            loaded.update(values)

    def add_all(self, rows: Sequence[Row]) -> None:
        """INSERT many rows of one table with one executemany; they are not attached (their
        ``pk`` stays unset): for bulk imports that do not change them again."""
        if not rows:
            return
        self.flush()
        shape = rows[0].shape
        columns = [c for c in shape.columns if c != "pk"] if shape.key == ("pk",) else list(shape.columns)
        sql = _insert_sql(shape, tuple(columns), False, self.sqlite)
        cur = self.raw.cursor()
        try:
            state = [r.__dict__ for r in rows]
            cur.executemany(sql, [[self._column(shape, c, s[c]) for c in columns] for s in state])
        finally:
            cur.close()

    def delete(self, row: Row) -> None:
        """DELETE ``row`` now; it is detached."""
        self.flush()
        if isinstance(row, TaskRow) and row.pk is not None:
            _keep_last_run(self, {row.pk})
        shape = row.shape
        where = " AND ".join(f"{c} = :{c}" for c in shape.key)
        self.execute(
            f"DELETE FROM {shape.name} WHERE {where}", dict(zip(shape.key, row.identity(), strict=True))
        )
        self._identity.pop((type(row), row.identity()), None)
        self._dirty.discard(row)
        row.__dict__.pop(_TRACKER, None)

    def flush(self) -> None:
        """Write the changed columns of every dirty row."""
        if not self._dirty:
            return
        changes = [(row, row.changed()) for row in self._dirty]
        self._dirty.clear()  # the rows hold this very set: it is emptied, never replaced
        recorded = {
            row.pk
            for row, changed in changes
            if isinstance(row, TaskRow) and row.pk and not LAST_RUN_COLUMNS.isdisjoint(changed)
        }
        if recorded:  # read before the rows change
            _keep_last_run(self, recorded)
        cur = self.raw.cursor()
        try:
            for row, changed in changes:
                if not changed:
                    continue
                shape = row.shape
                names = tuple(changed)
                params = [self._column(shape, c, changed[c]) for c in names]
                params += [row.__dict__[c] for c in shape.key]
                cur.execute(_update_sql(shape, names, self.sqlite), params)
                row.__dict__[_LOADED].update(changed)
        finally:
            cur.close()

    def _attach(self, cls: type[R], names: Sequence[str], values: Sequence[Any]) -> R:
        state = dict(zip(names, values, strict=True))
        shape = cls.shape
        key = tuple(state.get(c) for c in shape.key)
        known = self._identity.get((cls, key))
        if known is not None:
            return known  # type: ignore[return-value]
        row = self._build(cls, state)
        row.__dict__[_LOADED] = dict(row.__dict__)
        row.__dict__[_TRACKER] = self._dirty
        if None not in key:
            self._identity[(cls, key)] = row
        return row

    def _build(self, cls: type[R], state: dict[str, Any]) -> R:
        """A ``cls`` object of the columns in ``state`` as stored, read as Python values."""
        shape = cls.shape
        for name in shape.times.intersection(state):
            state[name] = read_time(state[name])
        if self.sqlite:
            for name in shape.json.intersection(state):
                if isinstance(value := state[name], str):
                    state[name] = json.loads(value)
        for name in shape.flags.intersection(state):
            if state[name] is not None:
                state[name] = bool(state[name])
        if cls is TaskRow and "status" in state:
            state["status"] = TaskStatus(state["status"])
        row = cls.__new__(cls)
        row.__dict__.update(state)
        return row

    def _track(self, row: Row) -> None:
        state = row.__dict__
        state[_LOADED] = row.values()
        state[_TRACKER] = self._dirty
        self._identity[(type(row), row.identity())] = row

    def _column(self, shape: Shape, name: str, value: Any) -> Any:
        """A column's value as the driver binds it (as SQLAlchemy's column types store it)."""
        if value is None:
            return None
        if name in shape.times:
            return bind_time(value, sqlite=self.sqlite)
        if name in shape.json:
            return self.json(value) if self.sqlite else postgres_json(value)
        if name in shape.flags:
            return int(value) if self.sqlite else bool(value)
        if isinstance(value, TaskStatus):
            return value.value
        return value


def _keep_last_run(db: Db, pks: set[int]) -> None:
    from heartbeat.db.queue import keep_last_run

    keep_last_run(db, pks)


@cache
def _insert_sql(shape: Shape, columns: tuple[str, ...], returning: bool, sqlite: bool) -> str:
    mark = "?" if sqlite else "%s"
    marks = [f"CAST({mark} AS json)" if not sqlite and c in shape.json else mark for c in columns]
    sql = f"INSERT INTO {shape.name} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
    return sql + " RETURNING pk" if returning else sql


@cache
def _update_sql(shape: Shape, columns: tuple[str, ...], sqlite: bool) -> str:
    mark = "?" if sqlite else "%s"
    sets = [
        f"{c} = CAST({mark} AS json)" if not sqlite and c in shape.json else f"{c} = {mark}" for c in columns
    ]
    where = " AND ".join(f"{c} = {mark}" for c in shape.key)
    return f"UPDATE {shape.name} SET {', '.join(sets)} WHERE {where}"


@contextmanager
def write_transaction(raw: Any, *, sqlite: bool) -> Iterator[Db]:
    """One write transaction on ``raw`` (SQLite: ``BEGIN IMMEDIATE``, so a writer waits for the
    lock up front instead of failing half-way; PostgreSQL: the driver's implicit BEGIN).
    The rows' changes are written and committed when the block ends, then the
    ``after_commit`` callbacks run; an exception rolls everything back."""
    db = Db(raw, sqlite=sqlite)
    if sqlite:
        raw.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.flush()
    except BaseException:
        raw.rollback()
        raise
    raw.commit()
    for callback in db.after_commit:
        callback()


@contextmanager
def read_transaction(raw: Any, *, sqlite: bool) -> Iterator[Db]:
    """One read transaction on ``raw``: a consistent snapshot, rolled back at the end (SQLite: a
    deferred BEGIN under ``query_only``, no write lock; PostgreSQL: READ ONLY)."""
    db = Db(raw, sqlite=sqlite)
    cur = raw.cursor()
    try:
        if sqlite:
            cur.execute("PRAGMA query_only = ON")
            cur.execute("BEGIN")
        else:
            cur.execute("SET TRANSACTION READ ONLY")
    finally:
        cur.close()
    try:
        yield db
    finally:
        raw.rollback()
        if sqlite:
            raw.execute("PRAGMA query_only = OFF")


def of_session(session: Any) -> Db:
    """The plain-SQL view of a SQLAlchemy session's transaction, for code not yet moved off the
    ORM: the session's pending changes are flushed first, so the statements see them."""
    session.flush()
    connection = session.connection()
    return Db(connection.connection.driver_connection, sqlite=connection.dialect.name == "sqlite")


def is_unique_violation(exc: BaseException) -> bool:
    """Whether a driver error is a unique index refusing a row (a concurrent insert won)."""
    if getattr(exc, "sqlstate", None) == "23505":  # psycopg: unique_violation
        return True
    return type(exc).__name__ == "IntegrityError" and "UNIQUE constraint failed" in str(exc)
