"""The domain errors of hb.

Every error a user can cause is a :class:`HbError`. Its ``exit_code`` is the
one the CLI exits with (SPEC.md section 2); the CLI maps them once, at the
edge, to a one-line message on stderr. Nothing else should reach the user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


class HbError(Exception):
    """Base class: a domain error with a one-line message and an exit code."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def one_line(exc: HbError | OSError) -> str:
    """What a caller that carries on prints of a failure: the domain message, or the file and
    the system's reason."""
    if isinstance(exc, HbError):
        return exc.message
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason


NUL = "\x00"


def nul_reason(what: str, text: str) -> str:
    """Why ``text`` (named ``what``) is refused: it holds a NUL character. PostgreSQL's text
    columns cannot store one, and hb refuses it on SQLite too, so that a workspace reads the
    same on either backend (its ``json`` columns can, escaped: what hb keeps as JSON keeps it)."""
    at = text.index(NUL) + 1
    return f"{what} holds a NUL character (at {at}), which the ledger does not store; nothing changed"


def quoted(text: str, limit: int = 60) -> str:
    """``text`` as an error quotes it (``repr``), its middle left out past ``limit`` characters:
    a 5,000-digit number typed for a setting is named, not printed whole."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r}...{text[-10:]!r} ({len(text)} characters)"


DATABASE_ERROR = "database error: "  # how describe() begins the database's own refusal


def bad_database_url(url: str) -> InvalidInput:
    """The refusal of a database URL that does not read as one, quoted :func:`without_password`."""
    return InvalidInput(f"bad database URL {without_password(url)!r}")


_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)


_KEYWORDS = re.compile(
    r"(?:^|\s)(?:host|hostaddr|dbname|user|password|port|sslmode|service)\s*=", re.IGNORECASE
)


def looks_like_keywords(text: str) -> bool:
    """Whether ``text`` is a libpq connection string of ``key=value`` words rather than a URL or
    a path (``host=... dbname=... password=...``, as psql takes)."""
    return "://" not in text and _KEYWORDS.search(text) is not None


def without_password(url: str) -> str:
    """A database URL as a message may show it: a password in it as ``***`` (one that does not
    read as a URL too, whose refusal quoted it whole). Everything up to the last ``@`` after
    the user's name is hidden, so a password holding a raw ``@`` is hidden whole."""
    scheme, sep, rest = url.partition("://")
    if not sep:  # a libpq "key=value" string: its password's value hidden
        return _KEYWORD_PASSWORD.sub(r"\1***", url)
    if "@" not in rest or not scheme.lower().startswith("postgres"):
        return url
    userinfo, _, host = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"


def describe(exc: BaseException) -> tuple[str, int] | None:
    """The one-line message and exit code of a failure the user can cause or fix: a domain
    error, a database's refusal, a file the system would not read or write, an argument that is
    not UTF-8, a value out of range. None for anything else (a bug)."""
    if isinstance(exc, HbError):
        return exc.message, exc.exit_code
    module = type(exc).__module__ or ""
    if module.startswith(("sqlalchemy", "psycopg", "sqlite3")):
        said = str(getattr(exc, "orig", None) or exc)
        if "cannot contain NUL" in said:
            # psycopg refuses to send it; hb refuses a NUL where one can come in, this is a way it
            # did not foresee: still the input's fault, and nothing was written
            return "a text value holds a NUL character, which the ledger does not store; nothing changed", 1
        if said.strip() in ("database is locked", "database table is locked"):
            # SQLite's busy timeout (30 s) ran out: another process held its write lock all along
            busy = "busy: another process held the ledger's database locked past 30 s; try again"
            return busy, Busy.exit_code
        if getattr(getattr(exc, "orig", None) or exc, "sqlstate", None) == "55P03":
            # PostgreSQL's lock_timeout (30 s, see heartbeat.db.engine) ran out: lock_not_available
            busy = (
                "busy: another session held a lock on the ledger past its lock_timeout (30 s, unless "
                "the URL or PGOPTIONS sets one); try again"
            )
            return busy, Busy.exit_code
        return f"{DATABASE_ERROR}{said.strip().splitlines()[0]}", 1
    if isinstance(exc, FileExistsError) and exc.filename:
        # the one way it reaches here: a directory hb makes when missing (.agent/state, a lock's,
        # an export's) is a file ("File exists" read as if all were well)
        return f"{exc.filename}: exists and is not a directory (hb needs a directory there)", 1
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror}", 1
    if isinstance(exc, FileNotFoundError) and not _cwd_exists():
        return "the current directory no longer exists; cd to a directory that does", 1
    if isinstance(exc, UnicodeEncodeError) and "surrogates" in str(exc.reason):
        # an argument with bytes that are not UTF-8 (Python keeps them as surrogate escapes);
        # the database refused it before anything was committed
        return "a text argument is not valid UTF-8 text", 1
    if isinstance(exc, OverflowError):  # a time or number past what Python's types hold
        return f"out of range: {exc} (a date near year 1 or 9999, or a huge number?)", 1
    return None


_DRIVERS = ("sqlalchemy", "psycopg", "sqlite3")


def from_driver(exc: BaseException) -> HbError | None:
    """A database driver's exception (sqlite3's, psycopg's, SQLAlchemy's) as the domain error
    the CLI makes of it (:func:`describe`): :class:`DatabaseBusy` (exit 75) for a lock held past
    the timeout, :class:`InvalidInput` for a NUL the checks did not foresee, else
    :class:`DatabaseError`. None for any other exception. The Python API raises it with the
    driver's exception as its ``__cause__``."""
    if not (type(exc).__module__ or "").startswith(_DRIVERS):
        return None
    described = describe(exc)
    if described is None:  # (describe knows every driver's exception)
        return None
    message, code = described
    if code == Busy.exit_code:
        return DatabaseBusy(message)
    if message.startswith(DATABASE_ERROR):
        return DatabaseError(message)
    return InvalidInput(message)


def at_ledger(message: str, ledger_file: str | None) -> str:
    """``message`` (:func:`describe`'s) naming the ledger's SQLite file first when it is a
    database error (a file that is no ledger, a damaged one, a full disk): the database's own
    words name no file. Any other message, or no file (PostgreSQL), as it is."""
    if ledger_file is None or not message.startswith(DATABASE_ERROR):
        return message
    if message == f"{DATABASE_ERROR}unable to open database file":
        why = _why_not_opened(ledger_file)
        if why:
            message = f"{message} ({why})"
    return f"{ledger_file}: {message}"


def busy_reason(exc: BaseException) -> str | None:
    """The busy line of a failure that is the database staying locked (SQLite's busy timeout,
    PostgreSQL's lock_timeout, see :func:`describe`), for a server to answer 503 with; else None."""
    described = describe(exc)
    return described[0] if described is not None and described[1] == Busy.exit_code else None


def failure_line(exc: BaseException, ledger_file: str | None) -> str:
    """A server's log line for a request that failed: a failure :func:`describe` knows as the
    CLI says it (a database error naming the ledger's file, see :func:`at_ledger`), anything else
    as its type and words, on one line."""
    described = describe(exc)
    if described is not None:
        return at_ledger(described[0], ledger_file)
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _why_not_opened(ledger_file: str) -> str | None:
    """Why SQLite could not open ``ledger_file``, when its directory says: SQLite's own words
    ("unable to open database file") name no cause. In WAL mode it creates the ledger's -wal
    and -shm files beside it, even to read."""
    import os

    directory = os.path.dirname(ledger_file) or "."
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    if read_only:
        return (
            "its directory is on a read-only file system, where SQLite cannot create the -wal and "
            "-shm files it reads through; copy the ledger to a writable place and pass it with --db"
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        return "its directory is not writable, where SQLite creates the -wal and -shm files it reads through"
    return None


def _cwd_exists() -> bool:
    import os

    try:
        os.getcwd()
    except OSError:
        return False
    return True


class NotFound(HbError):
    """An id, scope, key or file that does not exist."""


class InvalidInput(HbError):
    """A value that cannot be read: a date, a duration, a timezone, a setting."""


class InvalidState(HbError):
    """The operation does not apply to the thing in its current state."""


class FileFormatError(HbError):
    """A file that cannot be read at all; names the path and the position.

    Pure parsers raise it without a path; the caller that read the file adds
    the path with :meth:`at_path` before it reaches the user.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "<text>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.reason}"

    def at_path(self, path: str) -> FileFormatError:
        return FileFormatError(self.reason, path=path, line=self.line, column=self.column)


class SchemaError(HbError):
    """The database schema is not one this hb can use (for example: newer)."""


# --- queue outcomes with heartbeat.py's exit codes (FORMATS.md section 2) ---


class QueueExhausted(HbError):
    """Scoped queue has no ready entry left: write the evidence report and stop."""

    exit_code = 10
    skipped: list[tuple[str, str]] = []  # noqa: RUF012  # (id, blocker) of the blocked entries left
    adopted: list[str] = []  # noqa: RUF012  # stale claims the pop re-leased to the caller first


class ScopeRequired(HbError):
    """Scoped queues exist but no --scope was given."""

    exit_code = 11

    def __init__(self, scopes: Sequence[str]) -> None:
        self.scopes = list(scopes)
        super().__init__("scoped queues exist; pass --scope with one of: " + ", ".join(self.scopes))


class StaleClaims(HbError):
    """Stale in-progress claims exist: clear-stale or pop --accept-stale."""

    exit_code = 12

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = list(ids)
        super().__init__(
            f"{len(self.ids)} stale in-progress task(s): {', '.join(self.ids)}; "
            "run `hb clear-stale` or `hb pop --accept-stale`"
        )


class BlockedEntry(HbError):
    """The caller asked to pop a blocked entry directly."""

    exit_code = 13


class ScopeNotFound(HbError):
    """--scope does not resolve to a queue (a list of objects with task_id)."""

    exit_code = 14


class ClaimLost(HbError):
    """A ``--claim`` token that is no longer the task's claim: taken over, cleared or finished by
    someone else. Nothing was changed."""

    exit_code = 15


class NotSent(HbError):
    """notify/proactive decided not to send (not a failure; exit 20)."""

    exit_code = 20


class Unavailable(HbError):
    """The ledger cannot answer now: its file went away under a running ``hb serve`` (503 over
    HTTP; a read would have made an empty ledger in its place, a poke put its task there)."""


class Interrupted(HbError):
    """Ctrl-C (SIGINT) stopped the command; what it was doing was cancelled (128 + SIGINT)."""

    exit_code = 130


class OutputFailed(OSError):
    """Standard output refused a write for another reason than a reader that went away (exit 74)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a supervisor, ``timeout``) stopping ``hb heartbeat`` or ``hb poke``, raised where
    the command was as Ctrl-C's KeyboardInterrupt is: what it had not committed is rolled back
    and the workspace guard given back (exit 143, 128 + SIGTERM)."""

    exit_code = 143


class Busy(HbError):
    """Another heartbeat or poke holds the workspace guard (EX_TEMPFAIL)."""

    exit_code = 75


class DatabaseBusy(Busy):
    """The database stayed locked past SQLite's busy timeout or PostgreSQL's lock_timeout
    (another process held it all along); try again (exit 75)."""


class DatabaseError(HbError):
    """The database refused or failed a statement, in its own words (``database error: ...``):
    a file that is no ledger or a damaged one, a full disk, a session the server ended."""
