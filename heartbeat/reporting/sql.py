"""``hb sql``: one statement, read-only by construction.

Nothing here inspects the query text. The database refuses writes:

- SQLite: a separate connection opened with ``mode=ro`` (the file cannot be
  written), ``PRAGMA query_only``, and an authorizer that denies ATTACH /
  DETACH (so no other file is created or written, ``VACUUM INTO`` included)
  and every PRAGMA that is not a plain read (``writable_schema``,
  ``query_only = OFF``, ...). The driver runs one statement per call.
- PostgreSQL: a connection of its own as the role ``hb_reader`` (migration
  0004 creates it and grants it ``SELECT`` on hb's tables and views), never as
  the ledger's user: a superuser's read-only transaction still runs
  ``COPY ... TO PROGRAM``, ``pg_read_file`` and ``SET ROLE``. The role is
  checked before the query (no superuser, no server-file or program roles), the
  query runs in a ``READ ONLY`` transaction, always rolled back, sent as a
  prepared statement, which the server accepts only as a single statement.
  ``HB_SQL_DATABASE_URL`` names another URL for that connection (the role with
  a password, say); it is checked the same way.

Every query has a time limit (``--timeout``, setting ``sql.timeout``):
PostgreSQL's ``statement_timeout``, SQLite a progress handler. Ctrl-C cancels
the query (exit 130). Nothing is changed either way.

The rows come as they are read (SQLite ``fetchmany``, PostgreSQL a streamed
result in chunks), under those guards until the last one, so an answer of any
size passes through in flat memory. SQLite's limit counts the query's own time
(not the writing of its rows); PostgreSQL's ``statement_timeout`` counts until
the server has sent the last row.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from heartbeat.errors import HbError, Interrupted, InvalidInput

READER_ROLE = "hb_reader"  # migrations/versions/0004_sql_reader_role.py
READER_URL_ENV = "HB_SQL_DATABASE_URL"
# What the role reads: hb's tables and views, by name (migrations/versions/0013_reader_reads_hb_only.py
# and the later revisions that add one grant them so; tests/migrations holds both lists to the schema at head)
READER_OBJECTS = (
    "alembic_version",
    "errors",
    "locks",
    "notifications",
    "outcomes",
    "recurrences",
    "runs",
    "settings",
    "sync_state",
    "task_dependencies",
    "task_events",
    "tasks",
    "errors_utc",
    "failure_reasons",
    "failures_by_task",
    "notification_decisions",
    "notifications_by_day",
    "notifications_utc",
    "outcomes_by_day",
    "outcomes_by_scope",
    "outcomes_by_skill",
    "outcomes_by_source",
    "outcomes_by_task",
    "outcomes_utc",
    "queue_depth",
    "recurrence_runs",
    "recurrences_utc",
    "runs_utc",
    "tasks_utc",
)
# the predefined roles that reach outside the database (files, programs)
SERVER_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
PROGRESS_STEPS = 1000  # SQLite virtual-machine steps between two looks at the clock
BATCH = 1000  # rows read at a time
# The longest text or blob a query may make on SQLite (SQLITE_LIMIT_LENGTH, 1 GB by default).
# The progress handler looks at the clock between virtual-machine steps, and one function call
# is one step: ``printf('%.*c', 2000000000, 'x')`` ran 17 s past a 1 s limit and a 2 GB
# allocation. Past this length SQLite refuses at once ("string or blob too big").
VALUE_LIMIT = 256 * 1024 * 1024
# printf's %c repeats its character ``precision`` times in a loop that goes on when the value
# outgrew the limit (8 ns a turn, 16 s for the largest); :func:`_printf` refuses such a count.
_SPEC = re.compile(r"%([-+ #!0,]*)(\*|\d*)(?:\.(\*|\d*))?(l{0,2})(.)", re.DOTALL)

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


# SQLite functions hb sql refuses: fts3_tokenizer answers with a pointer into hb's memory, and
# given one back installs it as code to run (SQLite builds with it enabled in some distributions)
FUNCTIONS_DENIED = frozenset({"fts3_tokenizer"})


def authorizer(denied: list[str]) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """SQLite's per-action check; records what it refused in ``denied``."""

    def check(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            denied.append("ATTACH" if action == sqlite3.SQLITE_ATTACH else "DETACH")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in FUNCTIONS_DENIED:
            denied.append(f"{(arg2 or '').lower()}()")
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


_TOO_BIG = "string or blob too big"


def _printf(side: sqlite3.Connection, denied: list[str]) -> Callable[..., Any]:
    """SQLite's printf (and format), run on ``side``, a connection of its own, after refusing a
    ``%c`` whose repeat count is past :data:`VALUE_LIMIT` (the one conversion SQLite repeats
    beyond its length limit, in a single step the time limit cannot stop); a refusal is put
    in ``denied``."""
    from heartbeat.reporting.matching import builtin

    def printf(*args: Any) -> Any:
        if args and isinstance(args[0], str) and "c" in args[0]:
            rest = list(args[1:])
            for match in _SPEC.finditer(args[0]):
                width, precision, kind = match.group(2), match.group(3), match.group(5)
                counts = [width, precision] if kind == "c" else []
                for text in (width, precision):
                    value = rest.pop(0) if text == "*" and rest else None
                    if text in counts and _count(text, value) > VALUE_LIMIT:
                        denied.append(_TOO_BIG)
                        raise ValueError(_TOO_BIG)
                if kind != "%" and rest:
                    rest.pop(0)
        return builtin(side, "printf", *args)

    return printf


def _count(text: str | None, value: Any) -> int:
    """A width or precision of printf as written (``*``: the argument ``value``)."""
    if text == "*":
        try:
            return abs(int(value))
        except (TypeError, ValueError, OverflowError):
            return 0
    digits = (text or "").lstrip("0")
    if not digits:
        return 0
    return int(digits) if len(digits) < 12 else VALUE_LIMIT + 1  # (int() refuses 4,301 digits)


_FUNCTION_FAILED = "user-defined function raised exception"  # the driver's words for any of them


def _told(function: Callable[..., Any], denied: list[str]) -> Callable[..., Any]:
    """``function`` that puts why it failed in ``denied`` before the driver turns it into
    :data:`_FUNCTION_FAILED`: SQLite's own refusal (``ESCAPE expression must be a single
    character``, run on the side connection), or hb's. The time limit's stop says itself."""
    from heartbeat.reporting.matching import Stopped

    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except Stopped:
            raise
        except Exception as exc:
            if not denied:
                denied.append(f"{_FAILED_IN}{first_line(exc)}")
            raise

    return call


_FAILED_IN = "function: "


@contextmanager
def _guarded(
    con: sqlite3.Connection, denied: list[str], stop: Callable[[], bool]
) -> Iterator[sqlite3.Connection]:
    """The statement's guard: read-only, no ATTACH, values within :data:`VALUE_LIMIT`, and the
    functions SQLite runs as one long step (printf's ``%c``, LIKE, GLOB) in hb's own steps,
    which look at ``stop`` (:mod:`heartbeat.reporting.matching`)."""
    from heartbeat.reporting.matching import glob_function, like_function

    con.execute("PRAGMA query_only = ON")
    con.set_authorizer(authorizer(denied))
    length = con.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(length, VALUE_LIMIT))
    side = sqlite3.connect(":memory:")
    side.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(length, VALUE_LIMIT))
    own = [
        ("printf", -1, _printf(side, denied)),
        ("format", -1, _printf(side, denied)),
        ("like", 2, like_function(side, stop)),
        ("like", 3, like_function(side, stop, arguments=3)),
        ("glob", 2, glob_function(side, stop)),
    ]
    for name, arity, function in own:
        con.create_function(name, arity, _told(function, denied))
    try:
        yield con
    finally:
        for name, arity, _function in own:
            con.create_function(name, arity, None)  # SQLite's own again
        side.close()
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)
        con.set_authorizer(None)
        if con.in_transaction:
            con.rollback()


class Limit:
    """A query's time limit and Ctrl-C: while active, SIGINT cancels the query instead of
    killing hb half-way (``interrupted``), and ``expired`` turns true after ``seconds`` of the
    query's own time (the clock stops while the rows read so far are written out)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.interrupted = False
        self.deadline = time.monotonic() + seconds
        self.on_interrupt: Callable[[], None] | None = None
        self._paused_at: float | None = None

    @property
    def expired(self) -> bool:
        now = self._paused_at if self._paused_at is not None else time.monotonic()
        return now >= self.deadline

    def pause(self) -> None:
        """Stop the clock: the rows read so far are the caller's to write."""
        if self._paused_at is None:
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        """Run the clock again: the query reads on."""
        if self._paused_at is not None:
            self.deadline += time.monotonic() - self._paused_at
            self._paused_at = None

    def stop(self) -> bool:
        """For SQLite's progress handler: whether to abandon the query now."""
        return self.interrupted or self.expired

    def interrupt(self) -> None:
        """Cancel the query as Ctrl-C does (from the signal handler or another thread)."""
        self.interrupted = True
        if self.on_interrupt is not None:
            self.on_interrupt()

    @contextmanager
    def active(self) -> Iterator[Limit]:
        if threading.current_thread() is not threading.main_thread():
            # signals reach the main thread only: the thread that stops on its Ctrl-C cancels
            # this query with interrupt_queries (hb mcp's ledger thread); the time limit holds
            ident = threading.get_ident()
            with _RUNNING_LOCK:
                _RUNNING.setdefault(ident, set()).add(self)
            try:
                yield self
            finally:
                with _RUNNING_LOCK:
                    _RUNNING[ident].discard(self)
                    if not _RUNNING[ident]:
                        del _RUNNING[ident]
            return

        def handler(_signum: int, _frame: Any) -> None:
            self.interrupt()

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    def failed(self, exc: BaseException) -> HbError:
        """The error for a query the database stopped: Ctrl-C, the time limit, or its own."""
        if self.interrupted:
            return Interrupted("sql: query cancelled (interrupted)")
        if self.expired:
            return QueryFailed(f"sql: query cancelled after {_seconds(self.seconds)}")
        return QueryFailed(f"sql: {first_line(exc)}")


# the limits of the queries running on threads other than the main one, by thread
_RUNNING: dict[int, set[Limit]] = {}
_RUNNING_LOCK = threading.Lock()


def interrupt_queries(thread_ident: int) -> int:
    """Cancel the queries running on the thread ``thread_ident`` as Ctrl-C cancels hb sql's (each
    fails with Interrupted); how many there were. For a server whose main thread got the
    Ctrl-C while its calls run on a thread of their own."""
    with _RUNNING_LOCK:
        running = list(_RUNNING.get(thread_ident, ()))
    for limit in running:
        limit.interrupt()
    return len(running)


def _seconds(seconds: float) -> str:
    return f"{seconds:g}s"


class Answer(NamedTuple):
    """A statement's column names and its rows, read as they are iterated (once)."""

    names: list[str]
    rows: Iterator[tuple[Any, ...]]


@contextmanager
def sqlite_answer(con: sqlite3.Connection, query: str, *, timeout: float) -> Iterator[Answer]:
    """Run ``query`` on ``con`` under the guard and the time limit, which hold until the block
    ends: the rows are read while it iterates them."""
    denied: list[str] = []
    limit = Limit(timeout)
    limit.on_interrupt = con.interrupt  # (the progress handler stops it too, between steps)
    with _guarded(con, denied, limit.stop), limit.active():
        con.set_progress_handler(limit.stop, PROGRESS_STEPS)
        cur = con.cursor()
        try:
            try:
                cur.execute(query)
            except (sqlite3.Error, sqlite3.Warning) as exc:
                raise _sqlite_failed(exc, denied, limit) from None
            limit.pause()
            if cur.description is None:  # a statement without a result set
                yield Answer([], iter(()))
            else:
                yield Answer([d[0] for d in cur.description], _sqlite_rows(cur, denied, limit))
        finally:
            cur.close()
            con.set_progress_handler(None, PROGRESS_STEPS)


def _sqlite_rows(cur: sqlite3.Cursor, denied: list[str], limit: Limit) -> Iterator[tuple[Any, ...]]:
    while True:
        limit.resume()
        try:
            batch = cur.fetchmany(BATCH)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise _sqlite_failed(exc, denied, limit) from None
        finally:
            limit.pause()
        if limit.interrupted:  # Ctrl-C while the rows were being written out
            raise Interrupted("sql: query cancelled (interrupted)")
        if not batch:
            return
        yield from batch


def _sqlite_failed(exc: BaseException, denied: list[str], limit: Limit) -> HbError:
    if (denied and denied[0] == _TOO_BIG) or first_line(exc) == _TOO_BIG:
        return QueryFailed(f"sql: {_TOO_BIG} (hb sql makes values of up to {VALUE_LIMIT >> 20} MiB)")
    if denied and denied[0].startswith(_FAILED_IN):
        return QueryFailed(f"sql: {denied[0].removeprefix(_FAILED_IN)}")
    if first_line(exc) == _FUNCTION_FAILED and not (limit.interrupted or limit.expired):
        # the driver could not hand the function its arguments: the one way is text that is
        # not UTF-8 (a blob CAST AS TEXT), which SQLite keeps as it is and Python cannot read
        return QueryFailed(
            "sql: LIKE, GLOB and printf() take text as UTF-8 and an argument is not "
            "(a blob CAST AS TEXT?); compare the blob, or its hex()"
        )
    if denied:
        what = denied[0]
        if what == "ATTACH" and "authorization denied" in str(exc):
            what = "VACUUM"  # it attaches a database to rebuild the file in; ATTACH says "not authorized"
        return QueryFailed(f"sql: {first_line(exc)}: {what} (hb sql is read-only)")
    if limit.interrupted or limit.expired:
        return limit.failed(exc)
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY:
        # the file is opened mode=ro and query_only: a write is refused by the driver, in its words
        return QueryFailed(f"sql: {first_line(exc)} (hb sql is read-only)")
    return QueryFailed(f"sql: {first_line(exc)}")


def reader_connect_args(url: str) -> dict[str, Any]:
    """psycopg's connection arguments for the read-only role on the ledger's database: the
    ledger's URL with the role for user and no password, unless HB_SQL_DATABASE_URL names one."""
    override = os.environ.get(READER_URL_ENV)
    if override and not urlsplit(override).scheme.lower().startswith("postgres"):
        from heartbeat.errors import without_password

        raise InvalidInput(  # (a libpq "host=... password=..." string read as a path named it whole)
            f"{READER_URL_ENV}: {without_password(override)!r} is no postgresql:// URL; "
            "write it as postgresql://USER:PASSWORD@HOST:PORT/DBNAME"
        )
    args = _connect_args(override or url)
    if not override:
        args.pop("password", None)
        args["user"] = READER_ROLE
    return args


def _connect_args(url: str) -> dict[str, Any]:
    """A database URL (``postgresql[+driver]://user:password@host:port/dbname?key=value``) as
    psycopg's keyword arguments; the parts it leaves out are left out."""
    from heartbeat.errors import bad_database_url

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad_database_url(url) from None
    args: dict[str, Any] = {}
    if parts.username:
        args["user"] = unquote(parts.username)
    if parts.password is not None:
        args["password"] = unquote(parts.password)
    if parts.hostname:
        args["host"] = unquote(parts.hostname)
    if port is not None:
        args["port"] = port
    if parts.path.strip("/"):
        args["dbname"] = unquote(parts.path[1:])
    query: dict[str, list[str]] = {}
    for key, value in parse_qsl(parts.query):
        query.setdefault(key, []).append(value)
    args.update({key: values[0] for key, values in query.items() if len(values) == 1})
    return args


def grant_hint(dbname: str) -> str:
    return (
        f"an administrator can run: CREATE ROLE {READER_ROLE} LOGIN; "
        f'GRANT CONNECT ON DATABASE "{dbname}" TO {READER_ROLE}; '
        f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}; "
        f"GRANT SELECT ON {', '.join(READER_OBJECTS)} TO {READER_ROLE} "
        f"(and give it a password in {READER_URL_ENV} if the server asks for one)"
    )


@contextmanager
def postgresql_answer(url: str, query: str, *, timeout: float) -> Iterator[Answer]:
    """Run ``query`` as the read-only role in a READ ONLY transaction that is rolled back; the
    rows stream from the server (in chunks) while the block iterates them."""
    import psycopg

    args = reader_connect_args(url)
    who = args.get("user") or "?"
    try:
        con = psycopg.connect(**args, connect_timeout=10)
    except psycopg.Error as exc:
        raise QueryFailed(
            f"sql: cannot connect as the read-only role {who} ({first_line(exc)}); "
            + grant_hint(str(args.get("dbname") or "?"))
        ) from None
    _load_any_time(con)
    limit = Limit(timeout)
    limit.on_interrupt = con.cancel_safe
    try:
        with limit.active():
            _check_reader(con, who)
            cur = con.cursor()
            try:
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(f"SET LOCAL statement_timeout = {max(1, round(timeout * 1000))}")
                if limit.interrupted:  # Ctrl-C before the query was sent: nothing to cancel
                    raise Interrupted("sql: query cancelled (interrupted)")
                names = _result_columns(con, query)
                if names is None:  # a statement without a result set
                    cur.execute(query, prepare=True)
                    yield Answer([], iter(()))
                else:
                    rows = _postgresql_rows(cur, query, limit)
                    try:
                        yield Answer(names, rows)
                    finally:
                        rows.close()  # a stream left half-read holds the connection: end it first
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.errors.QueryCanceled) or limit.interrupted:
                    raise limit.failed(exc) from None
                raise QueryFailed(f"sql: {first_line(exc)}") from None
            except KeyboardInterrupt:  # psycopg cancelled the query on the way out
                raise Interrupted("sql: query cancelled (interrupted)") from None
            finally:
                cur.close()
    finally:
        with contextlib.suppress(psycopg.Error):  # a connection already broken needs no rollback
            con.rollback()
        con.close()


def _load_any_time(con: Any) -> None:
    """Read a date or timestamp Python cannot hold (``infinity``, ``-infinity``, a year past 9999
    or before 1, all PostgreSQL's own) as the server's text, as psql shows it: the query failed
    with "timestamp too large" instead."""
    from psycopg import DataError
    from psycopg.types.datetime import DateLoader, TimestampLoader, TimestamptzLoader

    def as_text(base: type[Any]) -> type[Any]:
        class Loader(base):  # type: ignore[misc]
            def load(self, data: Any) -> Any:
                try:
                    return super().load(data)
                except DataError:
                    return bytes(data).decode(self.connection.info.encoding if self.connection else "utf-8")

        return Loader

    for name, base in (
        ("date", DateLoader),
        ("timestamp", TimestampLoader),
        ("timestamptz", TimestamptzLoader),
    ):
        con.adapters.register_loader(name, as_text(base))


def _result_columns(con: Any, query: str) -> list[str] | None:
    """The names of the columns ``query`` returns (None: it returns no rows), from the server's
    parse of it as a prepared statement: one statement only, as before the rows are streamed."""
    from psycopg import errors, pq

    encoding = con.info.encoding
    prepared = con.pgconn.prepare(b"", query.encode(encoding))
    if prepared.status != pq.ExecStatus.COMMAND_OK:
        raise errors.error_from_result(prepared, encoding=encoding)
    described = con.pgconn.describe_prepared(b"")
    if described.status != pq.ExecStatus.COMMAND_OK:
        raise errors.error_from_result(described, encoding=encoding)
    if not described.nfields:
        return None
    return [(described.fname(i) or b"").decode(encoding) for i in range(described.nfields)]


def _postgresql_rows(cur: Any, query: str, limit: Limit) -> Generator[tuple[Any, ...], None, None]:
    from psycopg import NotSupportedError

    try:
        rows = cur.stream(query, size=BATCH)
        first = next(rows, None)
    except NotSupportedError:  # a libpq before 17 streams row by row
        rows = cur.stream(query)
        first = next(rows, None)
    try:
        if first is None:
            return
        yield first
        for row in rows:
            if limit.interrupted:  # Ctrl-C while the rows were being written out
                raise Interrupted("sql: query cancelled (interrupted)")
            yield row
    finally:
        # left half-read (the reader of hb's output went away, a row failed to convert), the
        # stream holds the connection's lock, and the rollback after it waited forever: ending
        # it cancels the query and lets the connection go
        rows.close()


def _check_reader(con: Any, who: str) -> None:
    """Refuse a role that could reach past hb's tables: a superuser, or one holding the
    server-file or program roles (HB_SQL_DATABASE_URL may name any role)."""
    import psycopg

    try:
        row = con.execute(
            "SELECT r.rolsuper, "
            + ", ".join(f"pg_has_role(session_user, '{name}', 'MEMBER')" for name in SERVER_ROLES)
            + " FROM pg_roles r WHERE r.rolname = session_user"
        ).fetchone()
    except psycopg.Error as exc:
        raise QueryFailed(f"sql: cannot check the role {who}: {first_line(exc)}") from None
    finally:
        con.rollback()
    if row is None:
        raise QueryFailed(f"sql: the role {who} is not in pg_roles")
    if row[0]:
        raise QueryFailed(
            f"sql: refusing to run as {who}, a superuser: hb sql runs as a role that can only read "
            f"hb's tables ({READER_ROLE}; unset {READER_URL_ENV} or point it at such a role)"
        )
    held = [name for name, member in zip(SERVER_ROLES, row[1:], strict=True) if member]
    if held:
        raise QueryFailed(f"sql: refusing to run as {who}: it is a member of {', '.join(held)}")
