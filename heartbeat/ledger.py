"""The Ledger: the facade over hb's operations, each one database transaction.

It opens the workspace's ledger and holds its :class:`heartbeat.context.Context`; every method
is a call of an operation in :mod:`heartbeat.ops`, which take that Context and never this
class. The CLI, ``hb mcp`` and ``hb serve`` are thin layers over it; Python runtimes use it
directly::

    with Ledger.open(workspace=".") as ledger:
        task = ledger.add("Write report", priority="high")
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path, PurePath
from types import FunctionType
from typing import TYPE_CHECKING, Any, TypeVar
from zoneinfo import ZoneInfo

from heartbeat import settings as settings_mod
from heartbeat.context import CLOSED, Context, NowArg, check_now
from heartbeat.db.queue import popped_object
from heartbeat.db.status import TaskStatus
from heartbeat.errors import (
    NUL,
    InvalidInput,
    InvalidState,
    NotFound,
    from_driver,
    looks_like_keywords,
    nul_reason,
    without_password,
)
from heartbeat.ops import checked_limit, deferred
from heartbeat.ops import queue as queue_ops

if TYPE_CHECKING:  # SQLAlchemy loads on first use: `hb pop` on SQLite never needs it
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

    from heartbeat.ops import config as config_ops
    from heartbeat.ops import files as files_ops
    from heartbeat.ops import guard as guard_mod
    from heartbeat.ops import recur as recur_ops
    from heartbeat.ops import report as report_ops
    from heartbeat.ops import round as round_ops
    from heartbeat.ops import tasks as tasks_ops
    from heartbeat.ops.guard import GuardRun
    from heartbeat.reporting.table import Stream, Table
else:
    # the other operations load on first use: a command imports the ones it calls (`hb pop` the
    # queue's alone), and each module a start-up imports costs every call of every command
    config_ops = deferred("heartbeat.ops.config")
    files_ops = deferred("heartbeat.ops.files")
    guard_mod = deferred("heartbeat.ops.guard")
    recur_ops = deferred("heartbeat.ops.recur")
    report_ops = deferred("heartbeat.ops.report")
    round_ops = deferred("heartbeat.ops.round")
    tasks_ops = deferred("heartbeat.ops.tasks")


STATE_DIR = Path(".agent") / "state"
DB_NAME = "heartbeat.db"


def default_db_path(workspace: Path) -> Path:
    return workspace / STATE_DIR / DB_NAME


def ledger_url(workspace: Path, db: str | None, *, create: bool) -> tuple[str, Path | None]:
    """The ledger's URL (``db``, a path or a URL, or the workspace's SQLite file) and, for SQLite,
    its file, whose directory is made as :func:`make_directory` says. Refused: a libpq
    ``key=value`` string (read as a path, it made a SQLite file so named, password and all), an
    in-memory database or ``file:`` URI, and (unless ``create``) a SQLite file that is not there."""
    from heartbeat.db import sqlite

    url = db if db is not None else str(default_db_path(workspace))
    if db is not None and looks_like_keywords(db):
        raise InvalidInput(
            f"--db {without_password(db)!r}: a libpq key=value string is no database URL; write "
            "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DBNAME (or give a SQLite file's path)"
        )
    path = sqlite.file_of(url)
    if path is None and sqlite.is_sqlite(url):
        raise InvalidInput(
            f"--db {url}: a SQLite ledger is a file; give its path or sqlite:///PATH "
            "(an in-memory database or a file: URI is not kept between commands)"
        )
    if path is not None:
        if not path.exists() and not create:
            raise NotFound(f"no ledger at {path}; run `hb init`")
        make_directory(path, workspace, named=db is not None)
    return url, path


def make_directory(path: Path, workspace: Path, *, named: bool) -> None:
    """The directory of a SQLite ledger file: the workspace's own ``.agent/state`` is made when
    missing; another, ``named`` with ``--db``, must exist (NotFound: a typo, not a place to
    create). A ``.agent/state`` that is a symlink to nothing is refused: hb makes no directory
    through it (it said "--db ...: no directory", naming an option nobody gave)."""
    own = default_db_path(workspace).parent
    if named and path != own / DB_NAME:
        if not path.parent.is_dir():
            raise NotFound(f"--db {path}: no directory {path.parent}")
        return
    for place in (own.parent, own):
        if place.is_symlink() and not place.exists():
            raise InvalidInput(
                f"{place}: a symlink to {os.readlink(place)}, which does not exist; hb makes no "
                "directory through it (create the directory it names, or remove the link)"
            )
    own.mkdir(parents=True, exist_ok=True)


# the arguments not looked at: the ledger keeps them as JSON, where a NUL character is kept
# (escaped); a poke's text is refused any control character, a NUL too, by the poke itself
_UNCHECKED_ARGUMENTS = frozenset({("complete", "outcome"), ("recur_outcome", "result"), ("poke", "text")})
# how a refusal names an argument (the rest: its name with dashes, as the CLI's options read)
_SHOWN_NAMES = {"task_id": "task id", "rule_id": "rule id", "key": "--key"}
_NOT_CHECKED = frozenset({"open", "close", "now", "write", "read", "guard", "guard_holder"})
L = TypeVar("L")
M = TypeVar("M", bound=Callable[..., Any])
T = TypeVar("T")


def _ids(values: T | str) -> T | list[str]:
    """A list argument (``after``, ``only``) given as one string: a list of that one, not of
    its characters (``after="task-x"`` read as waiting for tasks "t", "a", ...)."""
    return [values] if isinstance(values, str) else values


def _no_nul(method: str, name: str, value: Any) -> None:
    """InvalidInput naming the argument when ``value`` (a text, a path, or a list of them) holds
    a NUL character: no text the ledger stores can hold one (:func:`heartbeat.errors.nul_reason`),
    so no id, scope, worker or filter with one names anything; refused alike on both backends."""
    if isinstance(value, str):
        texts: Iterable[Any] = (value,)
    elif isinstance(value, PurePath):
        texts = (str(value),)
    elif isinstance(value, list | tuple):
        texts = value
    else:
        return
    for text in texts:
        if isinstance(text, str) and NUL in text and (method, name) not in _UNCHECKED_ARGUMENTS:
            raise InvalidInput(nul_reason(_SHOWN_NAMES.get(name, name.replace("_", "-")), text))


def _refusing_nul(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, first refusing an argument that holds a NUL character (:func:`_no_nul`), then
    letting go of a PostgreSQL connection the server ended (:meth:`Context.revive`); a database
    driver's exception it raises is raised as the domain error the CLI makes of it
    (:func:`heartbeat.errors.from_driver`), the driver's as its ``__cause__``."""
    code = method.__code__
    names = code.co_varnames[1 : code.co_argcount]  # the positional parameters after self
    title = method.__name__

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        for name, value in zip(names, args, strict=False):
            _no_nul(title, name, value)
        for name, value in kwargs.items():
            _no_nul(title, name, value)
        self.ctx.revive()  # every call starts on a live connection (see Context.revive)
        try:  # (free while nothing is raised)
            return method(self, *args, **kwargs)
        except Exception as exc:
            mapped = from_driver(exc)
            if mapped is None:
                raise
            raise mapped from exc

    return checked


def _translating(method: M) -> M:
    """``method`` raising a database driver's exception (sqlite3's "database is locked",
    psycopg's ended session) as the domain error the CLI makes of it (SPEC.md section 9,
    :func:`heartbeat.errors.from_driver`): for :meth:`Ledger.open` and
    :meth:`Ledger.guard_holder`, which the argument checks leave out."""

    @functools.wraps(method)
    def translated(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            mapped = from_driver(exc)
            if mapped is None:
                raise
            raise mapped from exc

    return translated  # type: ignore[return-value]


def _translating_block(method: Callable[..., AbstractContextManager[T]]) -> Callable[..., Iterator[T]]:
    """A context-manager method (:meth:`Ledger.write`, :meth:`Ledger.read`, :meth:`Ledger.guard`)
    whose database driver's exceptions, on entering, in the block and on leaving, come out as
    :func:`_translating` gives them: sqlite3's "database is locked" as DatabaseBusy (exit 75)."""

    @functools.wraps(method)
    def translated(*args: Any, **kwargs: Any) -> Iterator[T]:
        try:
            with method(*args, **kwargs) as value:
                yield value
        except Exception as exc:
            mapped = from_driver(exc)
            if mapped is None:
                raise
            raise mapped from exc

    return translated


def _arguments_checked(cls: type[L]) -> type[L]:
    """Every public method of ``cls`` refuses an argument holding a NUL character, the same on
    both backends: the Python API, ``hb mcp`` and ``hb serve`` call them (a command line cannot
    pass one, standard input can). And each starts on a live connection (:func:`_refusing_nul`)."""
    for name, member in list(vars(cls).items()):
        if isinstance(member, FunctionType) and not name.startswith("_") and name not in _NOT_CHECKED:
            setattr(cls, name, _refusing_nul(member))
    return cls


@_arguments_checked
class Ledger:
    """A workspace's ledger: its database, its settings, its clock."""

    backup_path: str | None = None  # the copy made before an automatic schema upgrade

    def __init__(self, url: str, workspace: Path, now: NowArg = None) -> None:
        from heartbeat.db import sqlite

        self.url = url
        self.workspace = workspace
        self._engine: Engine | None = None
        path = sqlite.file_of(url)
        self.ctx = Context(url, workspace, now, sqlite=path is not None, connect=self._connect)
        self.clock = self.ctx.clock
        # what an operation did besides its result that the caller should hear of (the CLI
        # prints each as a warning), e.g. a workspace file auto_export left as it was
        self.notices = self.ctx.notices

    def _connect(self) -> Any:
        from heartbeat.db import sqlite

        path = sqlite.file_of(self.url)
        return sqlite.connect(path) if path is not None else self.engine.raw_connection()

    # --- opening -----------------------------------------------------------------

    @classmethod
    @_translating
    def open(
        cls,
        workspace: str | Path = ".",
        db: str | None = None,
        now: NowArg = None,
        *,
        create: bool = True,
    ) -> Ledger:
        """Open (and on first use create) the workspace's ledger at the current schema.

        ``db`` is a path or SQLAlchemy URL (default: the workspace's SQLite file);
        ``now`` pins the clock: a datetime (naive = workspace zone), an ISO string,
        or a callable returning either; a time outside the years 1970 to 2200, text that
        is no time or any other value is refused here (InvalidInput), a callable's value
        when it is called. A SQLite ledger behind this hb is backed up and upgraded;
        one ahead of it is refused (SchemaError).
        """
        check_now(now)  # a bad now is refused before anything is made
        ws = Path(workspace).expanduser().resolve()
        if not ws.is_dir():
            raise NotFound(f"workspace {ws} is not a directory (create it, or pass --workspace)")
        url, path = ledger_url(ws, db, create=create)
        ledger = cls(url, ws, now)
        try:
            if path is None or not ledger._sqlite_at_head(path):
                from heartbeat.db.migrate import ensure_current

                ledger.backup_path = ensure_current(ledger.engine, now=ledger.clock.now, create=create)
        except BaseException:
            ledger.close()
            raise
        return ledger

    def _sqlite_at_head(self, path: Path) -> bool:
        """The fast path: an existing SQLite ledger at this hb's head needs no SQLAlchemy."""
        import sqlite3

        from heartbeat.db import sqlite
        from heartbeat.db.migrate import HEAD

        if not path.exists():
            return False
        con = sqlite.connect(path, wal=False)  # not written to before it reads as hb's
        try:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
            if row is not None and row[0] == HEAD:
                sqlite.use_wal(con)
                self.ctx.raw = con
                return True
        except sqlite3.DatabaseError:
            pass
        except BaseException:
            con.close()
            raise
        con.close()
        return False

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (created on first use)."""
        if self._engine is None:
            if self.ctx.closed:
                raise InvalidState(CLOSED)
            from heartbeat.db.engine import make_engine

            self._engine = make_engine(self.url)
        return self._engine

    @property
    def raw(self) -> Any:
        """The driver connection every plain-SQL operation speaks on (one per Ledger)."""
        return self.ctx.raw

    def close(self) -> None:
        """Close the ledger's connections (a ``with`` block does it on leaving). A closed Ledger
        refuses every later call (InvalidState, "this Ledger is closed"), a stream it handed out
        too; closing it again does nothing."""
        self.ctx.close()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The current instant, aware UTC, from the ledger's clock (``now`` of :meth:`open`)."""
        return self.clock.now()

    # --- transactions ------------------------------------------------------------

    @contextmanager
    @_translating_block
    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction (SQLite: BEGIN IMMEDIATE)."""
        from sqlalchemy.orm import Session

        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            yield session

    @contextmanager
    @_translating_block
    @contextmanager
    def read(self) -> Iterator[Session]:
        """One read transaction (SQLite: a deferred BEGIN, no write lock)."""
        from sqlalchemy.orm import Session

        with self.engine.connect() as conn:
            conn = conn.execution_options(hb_readonly=True)
            with Session(bind=conn) as session:
                yield session
                session.rollback()

    # --- settings ----------------------------------------------------------------

    @property
    def settings(self) -> settings_mod.Settings:
        """The workspace's settings, every key with its value or default (read once per ledger)."""
        return self.ctx.settings

    def engine_dialect(self) -> str:
        """``sqlite`` or ``postgresql``: the backend this ledger is on."""
        from heartbeat.db import sqlite

        return "sqlite" if sqlite.file_of(self.url) is not None else "postgresql"

    @property
    def zone(self) -> ZoneInfo:
        """The workspace timezone (setting ``timezone``, else the machine's)."""
        return self.ctx.zone

    def config_get(self, key: str) -> Any:
        """A setting's value; an unset ``timezone`` reads as the machine's zone it stands for."""
        return config_ops.get(self.ctx, key)

    def config_list(self) -> dict[str, dict[str, Any]]:
        """Every setting: value, default, whether it was set, description."""
        return config_ops.listed(self.ctx)

    def config_set(self, key: str, value: Any, *, from_text: bool = True) -> Any:
        """Validate and store a setting; returns the stored value."""
        return config_ops.store(self.ctx, key, value, from_text=from_text)

    def config_unset(self, key: str) -> None:
        """Remove a setting, so that its default applies again (NotFound for an unknown key)."""
        config_ops.unset(self.ctx, key)

    def init(self) -> dict[str, Any]:
        """Idempotent: the database exists at head; report where and what."""
        from heartbeat.db.migrate import HEAD

        return {
            "workspace": str(self.workspace),
            "database": self._shown_url(),
            "revision": HEAD,
            "timezone": self.zone.key,
        }

    def _shown_url(self) -> str:
        """The database URL as SQLAlchemy renders it (password hidden); a SQLite file's without
        SQLAlchemy."""
        from urllib.parse import quote, unquote

        if "://" not in self.url:
            path = Path(self.url).expanduser().resolve()
            return "sqlite:///" + quote(str(path), safe=" +/")
        for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
            rest = self.url[len(prefix) :]
            if self.url.startswith(prefix) and rest and "?" not in rest and not rest.startswith(":memory:"):
                return "sqlite:///" + quote(unquote(rest), safe=" +/")
        return self.engine.url.render_as_string(hide_password=True)

    # --- tasks (SPEC.md section 2) -----------------------------------------------------

    def add(
        self,
        title: str,
        *,
        scope: str | None = None,
        task_id: str | None = None,
        source: str = "cli",
        key: str | None = None,
        after: Sequence[str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Create a task; returns it as ``hb add --json`` prints it.

        ``key`` makes the add idempotent: when a task of ``scope`` was added with that key
        already (by this or a racing process), that task comes back unchanged, and
        :attr:`notices` says so. ``after``: the ids of the tasks it waits for (not popped
        before each is done; one id alone may be given as a string). ``not_before`` (a field):
        not popped, nor due, before then.
        """
        return tasks_ops.add(
            self.ctx, title, scope=scope, task_id=task_id, source=source, key=key, after=_ids(after), **fields
        )

    def get(self, task_id: str, *, scope: str | None = None, history: bool = False) -> dict[str, Any]:
        """One task by its public id (``hb show``)."""
        return tasks_ops.get(self.ctx, task_id, scope=scope, history=history)

    def list(
        self,
        *,
        status: str | Sequence[str] | None = None,
        scope: str | None = None,
        source: str | None = None,
        text: str | None = None,
        due_before: datetime | str | None = None,
        limit: int | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """Tasks matching the filters; by default the active ones (``status="all"`` for every one);
        at most ``limit`` of them (a whole number from 1, as ``hb list --limit``; InvalidInput
        otherwise)."""
        limit = checked_limit(limit)
        return tasks_ops.listed(
            self.ctx, tasks_ops.filters(self.ctx, status, scope, source, text, due_before), limit
        )

    def iter_list(
        self,
        *,
        status: str | Sequence[str] | None = None,
        scope: str | None = None,
        source: str | None = None,
        text: str | None = None,
        due_before: datetime | str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """:meth:`list` as a stream: the tasks come a batch at a time from one read transaction
        (held until the iterator is exhausted or closed), so memory stays flat."""
        limit = checked_limit(limit)
        filters = tasks_ops.filters(self.ctx, status, scope, source, text, due_before)
        return self._while_open(tasks_ops.stream(self.ctx, filters, limit))

    def _while_open(self, items: Iterator[T]) -> Iterator[T]:
        """``items`` as long as this Ledger is open: once closed, InvalidState (its read
        transaction's connection is gone: SQLite said "Cannot operate on a closed database" and
        PostgreSQL raised an AttributeError)."""
        ctx = self.ctx
        while True:
            if ctx.closed:
                with contextlib.suppress(Exception):  # its rollback meets the closed connection
                    items.close()  # type: ignore[attr-defined]
                raise InvalidState(CLOSED)
            try:
                item = next(items)
            except StopIteration:
                return
            except Exception as exc:
                mapped = from_driver(exc)
                if mapped is None:
                    raise
                raise mapped from exc
            yield item

    def update(
        self,
        task_id: str,
        *,
        scope: str | None = None,
        after: Sequence[str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Change fields of a task; the previous version goes to its history.

        ``after``: the ids it is to wait for from now on (one id alone may be a string; ``[]``
        or ``["none"]`` clears them; None leaves them); a cycle is refused (InvalidInput naming
        it) and nothing changes.
        """
        return tasks_ops.update(self.ctx, task_id, scope=scope, after=_ids(after), **fields)

    def done(self, task_id: str, *, scope: str | None = None) -> dict[str, Any]:
        """Mark a task done (completed_at = now) and record its outcome."""
        return tasks_ops.finish(self.ctx, task_id, TaskStatus.DONE, scope=scope)

    def cancel(self, task_id: str, *, scope: str | None = None) -> dict[str, Any]:
        """Mark a task cancelled."""
        return tasks_ops.finish(self.ctx, task_id, TaskStatus.CANCELLED, scope=scope)

    # --- the queue (SPEC.md section 3) ---------------------------------------------

    def pop_result(
        self,
        *,
        scope: str | None = None,
        task_id: str | None = None,
        worker: str | None = None,
        lease: str | Any | None = None,
        accept_stale: bool = False,
        check: Callable[[Mapping[str, Any]], object] | None = None,
    ) -> Any:
        """Like :meth:`pop`, with what was skipped and adopted (for the CLI's notices); ``check``
        sees the claimed task before the commit, and what it raises undoes the claim."""
        return queue_ops.pop(
            self.ctx,
            scope=scope,
            task_id=task_id,
            worker=worker,
            lease=lease,
            accept_stale=accept_stale,
            check=check,
        )

    def pop(
        self,
        scope: str | None = None,
        worker: str | None = None,
        lease: str | Any | None = None,
        *,
        task_id: str | None = None,
        accept_stale: bool = False,
    ) -> dict[str, Any] | None:
        """Claim the next task; returns it as ``hb pop`` prints it (its original fields, then
        ``claim``: the token that ``complete`` / ``fail`` / ``renew`` take), or None.

        ``accept_stale``: take over the first stale claim in queue order and return that task
        (one per pop); a ready task only once no stale claim is left. Raises ScopeRequired (11),
        StaleClaims (12), BlockedEntry (13), ScopeNotFound (14), QueueExhausted (10) from
        :mod:`heartbeat.errors`.
        """
        task = queue_ops.pop(
            self.ctx, scope=scope, task_id=task_id, worker=worker, lease=lease, accept_stale=accept_stale
        ).task
        return popped_object(task) if task else None

    def complete(
        self, task_id: str, scope: str | None = None, outcome: Any = None, *, claim: str | None = None
    ) -> dict[str, Any]:
        """Finish a claimed (doing) task and record its outcome.

        With ``claim`` (the token :meth:`pop` returned), only while it is the task's claim:
        ClaimLost (exit 15) when the task was taken over, cleared or finished by someone else,
        and nothing changes. Without it, whoever holds the task (the heartbeat.py way): the claim
        it closes (the result's ``claim``) is lost to its holder, whose token is then refused
        with ClaimLost. InvalidState (exit 1) when the token's own holder completed the task (or
        failed it back to the queue) with it already.
        """
        return queue_ops.complete(self.ctx, task_id, scope, outcome, claim=claim)

    def fail(
        self,
        task_id: str,
        scope: str | None = None,
        reason: str | None = None,
        final: bool = False,
        *,
        claim: str | None = None,
    ) -> dict[str, Any]:
        """Record a failure; the task is retried until ``queue.max_attempts``, then failed.

        ``claim`` fences it as in :meth:`complete`: an old holder's failure does not send back
        to the queue a task another worker is doing. Without it, the claim it closes is lost to
        its holder, as in :meth:`complete`.
        """
        return queue_ops.fail(self.ctx, task_id, scope, reason, final, claim=claim)

    def renew(
        self, task_id: str, claim: str, *, scope: str | None = None, lease: str | Any | None = None
    ) -> dict[str, Any]:
        """Extend the claim ``claim`` on a task to now + ``lease`` (default: setting ``queue.lease``).

        ClaimLost (exit 15) when the token is no longer the task's claim. A lease that ran out
        is renewed as long as nobody took the task over or cleared it.
        """
        return queue_ops.renew(self.ctx, task_id, claim, scope=scope, lease=lease)

    def ready(
        self, *, scope: str | None = None, explain: bool = False, limit: int | None = None
    ) -> builtins.list[dict[str, Any]]:
        """What :meth:`pop` would hand out, in pop order (``hb ready``): objects with ``id``,
        ``ready`` (bool), ``reasons`` (empty when ready), ``waiting_for`` (ids), ...

        ``explain``: after the ready ones, every active task of the queue (of every queue
        without ``scope`` while scoped queues exist: then each is ``scoped``) that is not ready,
        with its reasons: ``scoped``, ``claimed``, ``stale``, ``blocked_on``, ``waiting_for``,
        ``deferred`` (:mod:`heartbeat.rules.ready`). ``limit``: at most that many objects.
        """
        return queue_ops.ready(self.ctx, scope=scope, explain=explain, limit=limit)

    def clear_stale(self, scope: str | None = None) -> builtins.list[str]:
        """Return stale claims to todo; the ids cleared. Their tokens are void from now on."""
        return queue_ops.clear_stale(self.ctx, scope)

    def scopes(self) -> builtins.list[dict[str, Any]]:
        """Each scoped queue with its ready / in_progress / completed / total counts."""
        return queue_ops.scopes(self.ctx)

    # --- one-way import and export (SPEC.md section 2) ---------------------------------

    def import_file(self, kind: str, path: str | Path | None = None) -> dict[str, Any]:
        """Read one workspace file into the ledger, all or nothing."""
        return files_ops.import_file(self.ctx, kind, path)

    def export_text(self, kind: str) -> str | None:
        """The file of this kind as the ledger has it now (None: nothing to write)."""
        return files_ops.export_text(self.ctx, kind)

    def export_file(self, kind: str, path: str | Path | None = None) -> dict[str, Any]:
        """Write one workspace file from the ledger (atomically; unchanged files are not written)."""
        return files_ops.export_file(self.ctx, kind, path)

    # --- hb sync and the Markdown TODO files (SPEC.md section 4) ---------------------

    def sync(self, *, dry_run: bool = False, only: Iterable[str] | None = None) -> dict[str, Any]:
        """Two-way sync of the workspace files with the ledger, all or nothing.

        Returns ``{"dry_run", "changed", "reports", "skipped"}``: one report per
        file kind (added, updated, completed, removed, conflicts, preserved,
        written, not_written). ``written`` is true only for a file whose write
        landed (with ``dry_run``: that would be written); a write hb could not make
        (a read-only file, a write error, a file that kept changing) leaves the file
        as it was, ``not_written`` saying why (None otherwise), and a notice; the
        next sync writes it. ``only`` restricts the kinds (TODO.md and TODO.DONE.md always
        go together; one kind alone may be given as a string); ``dry_run`` changes nothing and
        reports the same. Raises FileFormatError (path:line) when a file cannot be read at all.
        """
        from heartbeat.ops.sync.engine import run

        return run(self.ctx, dry_run=dry_run, only=_ids(only))

    def add_todo(self, title: str, *, chat_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """Create a TODO.md task in the ledger (``hb add --source todo``); ``hb sync`` writes it.

        Its id is ``todo-`` + 8 hex digits; ``fields`` are those of :meth:`add`.
        """
        return tasks_ops.add_todo(self.ctx, title, chat_id=chat_id, **fields)

    # --- recurrences and proactive tasks (SPEC.md section 6) -------------------------

    # --- reading ---------------------------------------------------------------------------

    def recur_list(self, *, source: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every recurrence (enabled or not), repeat rules first, each in file order."""
        return recur_ops.rules(self.ctx, source=source)

    def recur_get(self, rule_id: str) -> dict[str, Any]:
        """One recurrence by its id."""
        return recur_ops.get(self.ctx, rule_id)

    def recur_due(self, *, claim: bool = False, read_files: bool = True) -> builtins.list[dict[str, Any]]:
        """The enabled rules due now (CraftBot's ``recurring_read``), lowest priority first.

        Time, day, period and the known conditions are judged here;
        ``conditions_to_check`` lists the ones hb does not know, for the agent.
        With ``claim`` each is recorded as handed out for its period (also a
        repeat rule whose missed occurrences the ``skip`` policy drops).
        TODO.RECUR.md and PROACTIVE.md edited since the last sync are synced first;
        ``read_files=False`` (without ``claim``): only read, from the ledger as of the last
        sync (no file lock, no write: the dashboard).
        """
        return recur_ops.due(self.ctx, claim=claim, read_files=read_files)

    # --- changing rules --------------------------------------------------------------------

    def recur_add(
        self,
        title: str,
        *,
        repeat: str,
        next: str | datetime | None = None,
        tz: str | None = None,
        chat_id: str | None = None,
        missed: str = "once",
        enabled: bool = True,
    ) -> dict[str, Any]:
        """Add a repeat rule (source ``cli``); ``next`` is the first occurrence (default: now).

        ``next`` is a wall-clock time in ``tz`` (default: the workspace zone). A
        cron rule starts at its first match at or after ``next``.
        """
        return recur_ops.add(
            self.ctx, title, repeat=repeat, next=next, tz=tz, chat_id=chat_id, missed=missed, enabled=enabled
        )

    def recur_update(
        self,
        rule_id: str,
        *,
        title: str | None = None,
        repeat: str | None = None,
        next: str | datetime | None = None,
        tz: str | None = None,
        chat_id: str | None = None,
        missed: str | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """Change a rule. A new repeat, next or zone reschedules it (its claim is dropped).

        PROACTIVE.md tasks are defined by their file: only ``enabled`` changes here.
        ``tz``/``chat_id`` "none" clear them.
        """
        return recur_ops.update(
            self.ctx,
            rule_id,
            title=title,
            repeat=repeat,
            next=next,
            tz=tz,
            chat_id=chat_id,
            missed=missed,
            enabled=enabled,
        )

    def recur_remove(self, rule_id: str) -> dict[str, Any]:
        """Delete a repeat rule (its outcomes stay). PROACTIVE.md tasks are removed in the file."""
        return recur_ops.remove(self.ctx, rule_id)

    # --- running rules ---------------------------------------------------------------------

    def recur_outcome(self, rule_id: str, *, result: str, success: bool = True) -> dict[str, Any]:
        """CraftBot's ``recurring_update_task(add_outcome=...)``: an outcome row, run count + 1, last run.

        An outcome that answers no open hand-out also marks the rule's current
        period as done, so the task is not handed out again this period. One that
        answers a hand-out of a PROACTIVE.md task uses up the period it was handed
        out for, also when it is recorded after that period ended. A clock set back
        hands out no period before the one handed out last.
        """
        return recur_ops.outcome(self.ctx, rule_id, result=result, success=success)

    def recur_evaluate(
        self,
        rule_id: str,
        *,
        impact: int,
        risk: int,
        cost: int,
        urgency: int,
        confidence: int,
        long_running: bool = False,
    ) -> dict[str, Any]:
        """Score a rule with CraftBot's rubric and record it.

        Answers execute / consider / skip (total >= 18, 13-17, < 13) and INLINE / SCHEDULED.
        """
        return recur_ops.evaluate(
            self.ctx,
            rule_id,
            impact=impact,
            risk=risk,
            cost=cost,
            urgency=urgency,
            confidence=confidence,
            long_running=long_running,
        )

    def recur_materialize(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Copy due repeat rules into TODO.md the way the newer runtime does (FORMATS.md 1).

        Per due rule: a TODO.md task at the top of the list titled
        ``"<Next> [(<TZ>)] <content>"`` (missed policy ``once``: one for all
        missed periods; ``all``: one per occurrence; ``skip``: none when periods
        were missed), then ``Next`` moves to the first occurrence after now,
        phase kept. Occurrences already handed out by ``recur_due --claim`` get
        no entry. A rule whose title holds a link mistermorph refuses is left
        alone (``skipped``, with the reason): its TODO.md entry would make the
        runtime's add and complete fail, as is one whose TODO.md line would be
        64 KiB or more. Records a ``materialize`` run. TODO.RECUR.md and TODO.md
        edited since the last sync are synced first (but by a dry run).
        """
        return recur_ops.materialize(self.ctx, dry_run=dry_run)

    # --- the heartbeat round, hb heartbeat and hb poke (SPEC.md sections 5 and 7) -----

    # --- the round -----------------------------------------------------------------

    def due(self) -> builtins.list[dict[str, Any]]:
        """The tasks entering this round (``hb due --json``): id, title, risk, reasons, ..."""
        return round_ops.due(self.ctx)

    def check(self, *, dry_run: bool = False, lang: str | None = None) -> dict[str, Any]:
        """Run one round: decide a reminder per entering task, move the check times and the watermark.

        Returns the decisions, the messages to send (``output`` is exactly
        ``HEARTBEAT_OK`` when there are none) and the new scan watermark. With
        ``dry_run`` the same answer comes back and nothing is recorded.
        """
        return round_ops.check(self.ctx, dry_run=dry_run, lang=lang)

    def notify(
        self,
        task_id: str,
        risk: str | None = None,
        *,
        scope: str | None = None,
        reason: str | None = None,
        suggestion: str | None = None,
        fallback: str | None = None,
        lang: str | None = None,
    ) -> dict[str, Any]:
        """Ask the reminder throttle whether a reminder about ``task_id`` may go out now; record it.

        ``risk`` defaults to the task's assessed risk; ``reason`` (why the
        reminder) joins the message's status line; ``suggestion``/``fallback``
        default to the task's next and fallback actions. The answer has
        ``decision`` (sent|suppressed) and ``reason`` (None when sent).
        """
        return round_ops.notify(
            self.ctx,
            task_id,
            risk,
            scope=scope,
            reason=reason,
            suggestion=suggestion,
            fallback=fallback,
            lang=lang,
        )

    def proactive(
        self,
        topic: str | None,
        suggestion: str | None,
        *,
        lang: str | None = None,
    ) -> dict[str, Any]:
        """Ask the proactive-chat limits whether a message on ``topic`` may go out now; record it."""
        return round_ops.proactive(self.ctx, topic, suggestion, lang=lang)

    def seen(self, at: datetime | str | None = None) -> dict[str, Any]:
        """Record that the user just talked to the agent (the proactive limits and ``user_available``)."""
        return round_ops.seen(self.ctx, at)

    def hygiene_done(self, at: datetime | str | None = None) -> dict[str, Any]:
        """Record a memory hygiene pass; the next one is due ``hygiene.every_hours`` later."""
        return round_ops.hygiene_done(self.ctx, at)

    # --- the guard, hb heartbeat and hb poke -----------------------------------------

    @contextmanager
    @_translating_block
    @contextmanager
    def guard(self, kind: str = "heartbeat") -> Iterator[GuardRun]:
        """Hold the workspace's re-entrancy guard for the block (Busy, exit 75, if held).

        The guard is a ``runs`` row of ``kind``; on leaving the block it is
        released with status ``ok`` or ``error``. While the block runs the guard
        renews itself; one left by a dead process is taken over once its
        ``expires_at`` (setting ``heartbeat.guard``) has passed.
        """
        self.ctx.revive()
        with guard_mod.held(self.ctx, kind) as run:
            yield run

    @_translating
    def guard_holder(self) -> dict[str, Any] | None:
        """Who holds the workspace guard (kind, pid, since, until, expired), or None."""
        self.ctx.revive()
        return guard_mod.holder(self.ctx)

    def heartbeat(
        self, *, lang: str | None = None, deliver: Callable[[dict[str, Any]], None] | None = None
    ) -> dict[str, Any]:
        """One tick (SPEC.md section 7): guard, sync, materialise, round, export, record, brief.

        ``brief`` is what to print: the HEARTBEAT.md checklist (unless
        effectively empty) and the messages to send, or exactly ``HEARTBEAT_OK``.
        ``deliver``, when given, is called with the result (``export`` still None) as soon as
        the round has recorded its messages as sent, before the closing export: a caller that
        prints the brief there loses no message to a kill during the export.
        """
        return round_ops.heartbeat(self.ctx, lang=lang, deliver=deliver)

    def poke(self, text: str, *, key: str | None = None) -> dict[str, Any]:
        """A one-off task from ``text`` (source ``poke``, legacy queue), under the workspace guard.

        ``key`` makes it idempotent, as ``hb add --key``: a task added with that key already is
        returned (and :attr:`notices` says so). Raises InvalidInput for blank text and Busy
        (exit 75) while a heartbeat runs.
        """
        return round_ops.poke(self.ctx, text, key=key)

    # --- reports and read-only SQL (SPEC.md section 8) --------------------------------

    def report_table(
        self,
        kind: str,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        by: str | None = None,
        limit: int | None = None,
    ) -> Table:
        """One report (outcomes, failures, notifications, queue, recurrences) as a typed table.

        ``since`` (inclusive) and ``until`` (exclusive) take a datetime (naive =
        workspace zone), an ISO date or time, or a duration back from now
        (``7d``). ``by`` picks the grouping (default: the kind's first, see
        :data:`heartbeat.reporting.reports.BY`); ``limit`` keeps the first rows.
        """
        return report_ops.report_table(self.ctx, kind, since=since, until=until, by=by, limit=limit)

    def report(
        self,
        kind: str,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        by: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A report as ``hb report KIND --format json`` prints it: metadata, columns, rows."""
        return report_ops.report_table(self.ctx, kind, since=since, until=until, by=by, limit=limit).as_dict()

    def report_stream(
        self,
        kind: str,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        by: str | None = None,
        limit: int | None = None,
    ) -> AbstractContextManager[Stream]:
        """:meth:`report_table` as a stream (a context manager): its ``rows`` are read from one
        snapshot as they are iterated, until the block ends (``hb report --format csv|json``)."""
        return report_ops.report_stream(self.ctx, kind, since=since, until=until, by=by, limit=limit)

    def sql_table(self, query: str, *, timeout: str | float | None = None) -> Table:
        """Run one read-only SQL statement; the database refuses any write (QueryFailed).

        ``timeout``: seconds, or a duration like ``30s`` (default: setting ``sql.timeout``); a
        query still running then is cancelled (QueryFailed), as on Ctrl-C (Interrupted, 130).
        """
        with report_ops.sql_stream(self.ctx, query, timeout=timeout) as answer:
            return answer.table()

    def sql_stream(self, query: str, *, timeout: str | float | None = None) -> AbstractContextManager[Stream]:
        """:meth:`sql_table` as a stream (a context manager): its ``rows`` are read from the
        database as they are iterated, under the same guards and time limit, until the block
        ends. For answers too large to hold (``hb sql --format csv|json``)."""
        return report_ops.sql_stream(self.ctx, query, timeout=timeout)

    def sql(self, query: str, *, timeout: str | float | None = None) -> builtins.list[dict[str, Any]]:
        """Rows of one read-only statement as ``hb sql --format json`` prints them."""
        return self.sql_table(query, timeout=timeout).records()
