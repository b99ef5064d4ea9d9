"""Schema versions: Alembic, run in-process on hb's own connection.

The fast path (every command) reads ``alembic_version`` and compares it with
:data:`HEAD` without importing Alembic. Only a database that is new or behind
pays for Alembic: SQLite is backed up and upgraded automatically, a database
ahead of this hb is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.errors import HbError, SchemaError

if TYPE_CHECKING:  # SQLAlchemy and Alembic load only when a migration runs
    from alembic.config import Config
    from sqlalchemy import Connection, Engine

# Every revision this hb knows, oldest first; the last is the head.
# tests/migrations checks this against the scripts in migrations/versions.
REVISIONS: tuple[str, ...] = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
    "0009",
    "0010",
    "0011",
    "0012",
    "0013",
    "0014",
)
HEAD = REVISIONS[-1]


def migrations_dir() -> Path:
    """The Alembic script directory: inside the wheel, or the checkout's migrations/."""
    import importlib.util

    spec = importlib.util.find_spec("heartbeat.migrations")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(connection: Connection) -> str | None:
    """The stamped revision, or None for an empty (or pre-Alembic) database."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError, ProgrammingError

    try:
        row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
    except (OperationalError, ProgrammingError):
        connection.rollback()
        return None
    return row[0] if row else None


def hb_revision(connection: Connection) -> str | None:
    """:func:`current_revision`, of a database that is hb's: SchemaError for one that holds
    tables but no hb schema version (another application's: hb neither reads nor writes it)."""
    from sqlalchemy import inspect

    rev = current_revision(connection)
    if rev is None or rev not in REVISIONS:
        # `hb db downgrade base` leaves Alembic's own (empty) version table behind
        tables = set(inspect(connection).get_table_names()) - {"alembic_version"}
        if rev is None and tables:
            raise SchemaError("the database has tables but no hb schema version; is it an hb ledger?")
        if rev is not None and "tasks" not in tables:  # another application's Alembic
            raise SchemaError(f"the database is at revision {rev} and has no hb tables; is it an hb ledger?")
    return rev


def newer_than_this_hb(rev: str) -> SchemaError:
    """The refusal of a database stamped with a revision this hb does not know."""
    return SchemaError(
        f"the database is at revision {rev}, newer than this hb (which knows up to {HEAD}); "
        "upgrade hb to use it"
    )


def ensure_current(engine: Engine, *, now: Callable[[], datetime], create: bool = True) -> str | None:
    """Bring the database to HEAD if it is new or behind; refuse one ahead.

    Returns the path of the backup made before an upgrade, if any.
    """
    from heartbeat.db.engine import sqlite_path

    with engine.connect().execution_options(hb_readonly=True) as conn:
        rev = current_revision(conn)
        if rev == HEAD:
            return None
        rev = hb_revision(conn)
    if rev is not None and rev not in REVISIONS:
        raise newer_than_this_hb(rev)
    if rev is None and not create:
        raise SchemaError("the database has no hb schema yet; run `hb init`")
    path = sqlite_path(str(engine.url))
    if rev is not None and path is not None and not _writable(path):
        # (it failed with "attempt to write a readonly database", naming no upgrade, and left a
        # backup made for an upgrade that could not run)
        raise SchemaError(
            f"{path}: the ledger is at revision {rev}, behind this hb ({HEAD}), and this user cannot "
            "write it or its directory to upgrade it: run hb once as a user who can (its owner), "
            "or `hb db upgrade` there"
        )
    if engine.dialect.name == "sqlite":  # hb's now (new, or behind): the journal becomes WAL
        from heartbeat.db.sqlite import use_wal

        with engine.connect() as conn:
            use_wal(conn.connection.driver_connection)
    if rev is not None and path is None:
        raise SchemaError(f"the database is at revision {rev}, behind this hb ({HEAD}); run `hb db upgrade`")
    if path is None:  # PostgreSQL, new: upgrade() takes its turn (many workers start at once)
        upgrade(engine, "head")
        return None
    with _upgrading(path):  # one process backs up and upgrades; the others find it done
        with engine.connect().execution_options(hb_readonly=True) as conn:
            rev = current_revision(conn)
        if rev == HEAD:
            return None
        backup = backup_sqlite(path, rev, now()) if rev is not None else None
        upgrade(engine, "head")
    return str(backup) if backup else None


def _writable(path: Path) -> bool:
    """Whether this process may write the SQLite file ``path`` and make files beside it (the
    upgrade's backup, the WAL)."""
    import os

    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


# How long a process waits for another one's upgrade of the same SQLite ledger.
UPGRADE_WAIT = 120.0


@contextmanager
def _upgrading(path: Path) -> Iterator[None]:
    """Hold the upgrade of the SQLite ledger at ``path`` (an ``flock`` of the directory that
    holds it, which SQLite's own locks never meet, and which leaves no file behind): processes
    that find the ledger new or behind at once take turns, and the first one's backup in
    progress is no leftover to the others."""
    import fcntl
    import os
    import time

    from heartbeat.errors import Busy

    lock = os.open(path.parent, os.O_RDONLY)
    try:
        deadline = time.monotonic() + UPGRADE_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    waited = f"{UPGRADE_WAIT:.0f} s"
                    raise Busy(f"{path}: another process has been upgrading it for {waited}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(lock)  # (closing gives the lock back)


def backup_sqlite(path: Path, revision: str, now: datetime) -> Path:
    """A consistent copy of a SQLite ledger (WAL included) beside it, made under a temporary
    name (``.bak.part``) and renamed when whole: a process killed while copying leaves no
    ``.bak`` that is not a backup (the next one removes the part it left)."""
    import glob
    import os
    import shutil  # only a backup needs these

    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{stamp}.rev{revision}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{stamp}.rev{revision}.{n}.bak")
    for left in path.parent.glob(f"{glob.escape(path.name)}.*.bak.part*"):
        left.unlink(missing_ok=True)  # a copy a killed process did not finish
    part = target.with_name(target.name + ".part")
    src = sqlite3.connect(str(path))
    try:
        dst = sqlite3.connect(str(part))
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    shutil.copymode(path, part)
    os.replace(part, target)
    return target


def _run(engine: Engine, fn: Any, *args: Any) -> None:
    if engine.dialect.name == "sqlite":
        # Batch migrations copy tables; foreign keys must be off (outside a transaction).
        with engine.connect() as conn:
            dbapi = conn.connection.driver_connection
            assert dbapi is not None
            dbapi.execute("PRAGMA foreign_keys = OFF")
            try:
                with conn.begin():
                    fn(alembic_config(conn), *args)
            finally:
                dbapi.execute("PRAGMA foreign_keys = ON")
        return
    with engine.begin() as conn:
        # one migration at a time: several workers meeting a new database at once each created
        # the schema, and all but one failed on a duplicate type (the others wait here, then
        # find the revision they were to reach, and Alembic does nothing)
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        fn(alembic_config(conn), *args)


_MIGRATION_LOCK = 0x68624D49  # "hbMI": the key of the migration's transaction lock (PostgreSQL)


def upgrade(engine: Engine, target: str = "head") -> None:
    from alembic import command

    _run(engine, command.upgrade, target)


def downgrade(engine: Engine, target: str) -> None:
    from alembic import command

    _run(engine, command.downgrade, target)


def check(engine: Engine) -> list[str]:
    """Differences between the models and the database (empty = in sync)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from heartbeat.db.models import Base
    from heartbeat.db.views import include_object

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include_object})
        diffs = compare_metadata(ctx, Base.metadata)
    return [str(d) for d in diffs]


def history() -> list[tuple[str, str | None, str]]:
    """(revision, down_revision, message) for every script, oldest first."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config())
    out = [(s.revision, s.down_revision, s.doc) for s in scripts.walk_revisions()]
    out.reverse()
    return out  # type: ignore[return-value]


def script_heads() -> list[str]:
    from alembic.script import ScriptDirectory

    return list(ScriptDirectory.from_config(alembic_config()).get_heads())


class MigrationFailed(HbError):
    """Alembic refused an operation (bad target revision, ...)."""
