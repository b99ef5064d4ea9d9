"""The schema's life: one head, up and down, models == migrations, data survives, refusals."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from heartbeat.db import migrate
from heartbeat.db.engine import make_engine
from heartbeat.db.models import Base
from tests.conftest import Runner


def test_one_head_and_known_revisions() -> None:
    assert migrate.script_heads() == [migrate.HEAD]
    assert [r for r, _d, _m in migrate.history()] == list(migrate.REVISIONS)


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_base_head_base_head(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate.upgrade(engine, "head")
        assert set(Base.metadata.tables) <= _tables(db_url)
        assert migrate.check(engine) == []
        migrate.downgrade(engine, "base")
        assert _tables(db_url) <= {"alembic_version"}
        migrate.upgrade(engine, "head")
        assert migrate.check(engine) == []
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == migrate.HEAD
    finally:
        engine.dispose()


def test_every_revision_steps_up_and_down(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        for rev in migrate.REVISIONS:
            migrate.upgrade(engine, rev)
        for rev in reversed(migrate.REVISIONS[:-1]):
            migrate.downgrade(engine, rev)
        migrate.downgrade(engine, "base")
        assert _tables(db_url) <= {"alembic_version"}
    finally:
        engine.dispose()


def test_rows_written_at_the_first_revision_survive_upgrade(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate.upgrade(engine, migrate.REVISIONS[0])
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO tasks (id, scope, source, title, status, created_at, updated_at) "
                    "VALUES ('task-00000001', '', 'cli', 'kept across upgrades', 'todo', "
                    "'2026-05-01 00:00:00.000000', '2026-05-01 00:00:00.000000')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO settings (key, value, updated_at) "
                    "VALUES ('lang', '\"zh\"', '2026-05-01 00:00:00')"
                )
            )
        migrate.upgrade(engine, "head")
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, title, status, attempts FROM tasks")).all()
            setting = conn.execute(text("SELECT value FROM settings WHERE key = 'lang'")).scalar_one()
        assert [tuple(r) for r in rows] == [("task-00000001", "kept across upgrades", "todo", 0)]
        assert "zh" in str(setting)
    finally:
        engine.dispose()


def test_a_downgrade_below_0008_keeps_last_run_json(db_url: str, workspace: Path) -> None:
    """Revision 0008 records a completion as its outcome row alone; stepping back to 0007 writes
    the newest such completion as the runs row that revision reads last-run.json from, so an
    older hb shows the same last-run.json. A failure newer than it stays the record."""
    from datetime import UTC, datetime

    from heartbeat import Ledger
    from heartbeat.db.queue import last_run_of

    with Ledger.open(workspace, db=db_url, now=datetime(2026, 5, 1, 9, 30, 0, 250, tzinfo=UTC)) as ledger:
        ledger.add("Write the report", task_id="r1", skill="writer", project_id="p1")
        got = ledger.pop(worker="w1")
        assert got is not None
        ledger.complete("r1", outcome={"pages": 3}, claim=got["claim"])
        with ledger.ctx.read() as db:
            expected = last_run_of(db)
    assert expected is not None and expected["status"] == "completed"
    engine = make_engine(db_url)
    try:
        migrate.downgrade(engine, "0007")
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT kind, record FROM runs WHERE record IS NOT NULL ORDER BY pk DESC")
            ).all()
        record = rows[0][1]
        assert rows[0][0] == "complete"
        assert (json.loads(record) if isinstance(record, str) else record) == expected
        migrate.upgrade(engine, "head")
    finally:
        engine.dispose()


_BAD_VALUES = (
    ("tasks", "status", "'started'"),
    ("tasks", "risk", "'P3'"),
    ("recurrences", "missed_policy", "'sometimes'"),
    ("notifications", "decision", "'maybe'"),
)


def _checks(url: str) -> dict[str, str]:
    """Each table's definition as the SQLite database holds it."""
    with closing(sqlite3.connect(url)) as con:
        return dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())


def test_sqlite_checks_are_the_models_without_in_lists(workspace: Path) -> None:
    """Revision 0010: SQLite builds a temporary B-tree for a CHECK's IN list on every row it
    writes, so the head's checks are the models' ORs; each table's definition holds each of its
    models' checks word for word, none holds an IN list, and every rule still refuses."""
    from sqlalchemy import CheckConstraint
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import AddConstraint

    path = workspace / ".agent" / "state" / "heartbeat.db"
    path.parent.mkdir(parents=True)
    engine = make_engine(str(path))
    try:
        migrate.upgrade(engine, "head")
    finally:
        engine.dispose()
    defined = _checks(str(path))
    checks = [
        (table.name, c)
        for table in Base.metadata.tables.values()
        for c in table.constraints
        if isinstance(c, CheckConstraint)
    ]
    assert {name for name, _ in checks} == {"tasks", "recurrences", "notifications"}
    for name, check in checks:
        added = str(AddConstraint(check).compile(dialect=sqlite_dialect.dialect()))
        assert added.startswith(f"ALTER TABLE {name} ADD ")
        assert added.removeprefix(f"ALTER TABLE {name} ADD ") in defined[name]
    assert not [name for name, sql in defined.items() if " IN (" in (sql or "")]
    with closing(sqlite3.connect(path)) as con, con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        at = "'2026-05-01 00:00:00.000000'"
        for insert in (
            f"tasks (id, source, title, status, risk, created_at, updated_at) "
            f"VALUES ('t1', 'cli', 'x', 'todo', 'P0', {at}, {at})",
            f"recurrences (id, source, title, rule, created_at, updated_at) "
            f"VALUES ('r1', 'proactive', 'x', 'daily', {at}, {at})",
            f"notifications (at, local_day, kind, decision) VALUES ({at}, '2026-05-01', 'digest', 'sent')",
        ):
            con.execute(f"INSERT INTO {insert}")
        for table, column, value in _BAD_VALUES:
            refused = f"CHECK constraint failed: ck_{table}_{column}$"
            with pytest.raises(sqlite3.IntegrityError, match=refused):
                con.execute(f"UPDATE {table} SET {column} = {value}")
        con.execute("UPDATE tasks SET status = 'doing', risk = NULL")  # good values still pass


def test_sqlite_checks_step_down_to_their_in_lists_and_up_again(workspace: Path) -> None:
    """Below 0010 the definitions are 0001's again, byte for byte; and up again, the head's."""
    path = workspace / ".agent" / "state" / "heartbeat.db"
    path.parent.mkdir(parents=True)
    engine = make_engine(str(path))
    try:
        migrate.upgrade(engine, "0009")
        before = _checks(str(path))
        migrate.upgrade(engine, "head")
        head = _checks(str(path))
        migrate.downgrade(engine, "0009")
        assert _checks(str(path)) == before
        migrate.upgrade(engine, "head")
        assert _checks(str(path)) == head
    finally:
        engine.dispose()
    assert head != before
    assert sum(" IN (" in sql for sql in before.values() if sql) == 3


@pytest.mark.skipif(
    not hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"), reason="Python 3.12+ can set SQLite's defensive mode"
)
def test_a_defensive_sqlite_upgrades_and_keeps_its_in_lists(workspace: Path) -> None:
    """A SQLite in defensive mode refuses to edit table definitions: revision 0010 is then still
    reached, and the IN lists stay (the same rule, only slower)."""
    from sqlalchemy import event

    path = workspace / ".agent" / "state" / "heartbeat.db"
    path.parent.mkdir(parents=True)
    engine = make_engine(str(path))

    @event.listens_for(engine, "connect")
    def _defensive(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)

    try:
        migrate.upgrade(engine, "head")
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == migrate.HEAD
    finally:
        engine.dispose()
    assert sum(" IN (" in sql for sql in _checks(str(path)).values() if sql) == 3


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_database_newer_than_hb_is_refused_and_untouched(hb: Runner, workspace: Path) -> None:
    hb("init")
    db = workspace / ".agent" / "state" / "heartbeat.db"
    con = sqlite3.connect(db)
    con.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = _digest(db)
    listing = sorted(p.name for p in db.parent.iterdir())
    result = hb("list", code=1)
    assert "9999_from_the_future" in result.stderr
    assert "newer than this hb" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert _digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        n for n in listing if not n.endswith(("-wal", "-shm"))
    ]


@pytest.mark.parametrize("kind", ["foreign", "newer"])
def test_a_refused_database_keeps_its_journal_mode_and_every_byte(
    hb: Runner, tmp_path: Path, kind: str
) -> None:
    """The journal becomes WAL only once the file reads as an hb ledger hb can use: a
    database hb refuses (another program's, or one from a newer hb) is not written to."""
    (tmp_path / "dbs").mkdir()
    db = tmp_path / "dbs" / f"{kind}.db"
    with closing(sqlite3.connect(db)) as con:
        con.execute(
            "CREATE TABLE alembic_version (version_num TEXT)" if kind == "newer" else "CREATE TABLE foo (x)"
        )
        if kind == "newer":
            con.execute("INSERT INTO alembic_version VALUES ('9999')")
        con.commit()
    before = db.read_bytes()
    for command in (("list",), ("add", "x"), ("db", "current")):
        result = hb("--db", str(db), *command, code=None)
        if command != ("db", "current"):
            assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
        assert db.read_bytes() == before, command
        assert sorted(p.name for p in db.parent.iterdir()) == [db.name], command
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_new_ledger_and_one_upgraded_are_in_wal_mode(hb: Runner, tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    hb("--db", str(db), "list")
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        con.execute("PRAGMA journal_mode = DELETE")  # at head, as another tool may leave it
    hb("--db", str(db), "list")
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize(
    "url", ["sqlite://", "sqlite:///:memory:", ":memory:", "sqlite:///file:x.db?mode=ro&uri=true"]
)
def test_a_sqlite_database_that_is_not_a_file_is_refused(
    hb: Runner, tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command would get a new, empty database: refused with one line, nothing made."""
    monkeypatch.chdir(tmp_path)
    result = hb("--db", url, "list", code=1)
    assert result.stderr == (
        f"hb: --db {url}: a SQLite ledger is a file; give its path or sqlite:///PATH "
        "(an in-memory database or a file: URI is not kept between commands)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]  # no file named :memory:


def test_db_commands_make_no_directory_for_another_database(hb: Runner, tmp_path: Path) -> None:
    db = tmp_path / "typo" / "x.db"
    for command in (("db", "current"), ("db", "upgrade"), ("db", "check")):
        result = hb("--db", str(db), *command, code=1)
        assert result.stderr == f"hb: --db {db}: no directory {db.parent}\n"
    assert not db.parent.exists()


def test_older_sqlite_database_is_backed_up_then_upgraded(hb: Runner, workspace: Path) -> None:
    if len(migrate.REVISIONS) < 2:
        pytest.skip("needs a second revision (the reporting views) to upgrade across")
    db = workspace / ".agent" / "state" / "heartbeat.db"
    db.parent.mkdir(parents=True)
    engine = make_engine(str(db))
    migrate.upgrade(engine, migrate.REVISIONS[-2])
    engine.dispose()
    hb("--now", "2026-05-01T09:00:00Z", "add", "survives the upgrade")
    backups = list(db.parent.glob("heartbeat.db.20260501T090000Z.rev*.bak"))
    assert len(backups) == 1
    con = sqlite3.connect(backups[0])
    assert con.execute("SELECT version_num FROM alembic_version").fetchone() == (migrate.REVISIONS[-2],)
    con.close()
    assert [t["title"] for t in hb.json("list")] == ["survives the upgrade"]


def test_an_older_ledger_this_user_cannot_write_is_refused_with_the_upgrade_named(
    workspace: Path, tmp_path: Path
) -> None:
    """A ledger behind this hb whose file its user may only read (another user's, a read-only
    copy): ``hb list`` failed with "attempt to write a readonly database", naming no upgrade, and
    left a backup made for an upgrade that could not run. As root, the process runs without the
    capabilities that let root write any file."""
    import os
    import shutil
    import subprocess
    import sys

    db = workspace / ".agent" / "state" / "heartbeat.db"
    db.parent.mkdir(parents=True)
    engine = make_engine(str(db))
    migrate.upgrade(engine, migrate.REVISIONS[-2])
    engine.dispose()
    db.chmod(0o444)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    owner = hb = [sys.executable, "-m", "heartbeat", "-w", str(workspace), "list"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "setpriv (util-linux) drops root's capabilities"
        hb = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--inh-caps=-all", *hb]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HB_")}
    refused = subprocess.run(hb, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr == (
        f"hb: {db}: the ledger is at revision {migrate.REVISIONS[-2]}, behind this hb ({migrate.HEAD}), "
        "and this user cannot write it or its directory to upgrade it: run hb once as a user who can "
        "(its owner), or `hb db upgrade` there\n"
    )
    assert list(db.parent.glob("*.bak*")) == []
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    db.chmod(0o644)  # its owner runs hb: the upgrade goes ahead
    assert subprocess.run(owner, capture_output=True, text=True, env=env, timeout=60).returncode == 0
    assert len(list(db.parent.glob("*.bak"))) == 1


def test_db_commands(hb: Runner) -> None:
    assert hb.json("db", "current")["status"] == "empty"
    hb("db", "upgrade")
    assert hb.json("db", "current") == {"revision": migrate.HEAD, "head": migrate.HEAD, "status": "current"}
    assert hb.json("db", "check")["ok"] is True
    assert [r["revision"] for r in hb.json("db", "history")] == list(migrate.REVISIONS)
    hb("db", "downgrade", "-1")  # as the help says, without a "--" before it
    assert hb.json("db", "current")["revision"] == migrate.REVISIONS[-2]
    hb("db", "upgrade")
    hb("db", "downgrade", "base")
    assert hb.json("db", "current")["status"] == "empty"
    result = hb("db", "check", code=1)
    assert (
        result.stderr == f"hb: the database has no hb schema; this hb's schema is revision {migrate.HEAD}\n"
    )
    result = hb("db", "downgrade", "nonexistent-rev", code=1)
    assert result.stderr.startswith("hb: alembic:")
    hb("add", "after a downgrade to base")  # an emptied ledger is built again on first use
    assert hb.json("db", "current")["status"] == "current"


def test_db_check_refuses_a_database_at_another_revision(hb: Runner, workspace: Path) -> None:
    hb("init")
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    with con:
        con.execute("UPDATE alembic_version SET version_num = '0099'")
    con.close()
    result = hb("db", "check", code=1)
    assert (
        result.stderr == f"hb: the database has revision 0099; this hb's schema is revision {migrate.HEAD}\n"
    )


def test_migrations_ship_with_the_package() -> None:
    where = migrate.migrations_dir()
    assert (where / "env.py").is_file()
    assert (where / "script.py.mako").is_file()
    assert any(where.glob("versions/0001_*.py"))


def test_a_backup_is_whole_under_its_name_and_a_killed_ones_part_is_removed(tmp_path: Path) -> None:
    """The pre-upgrade backup was written under its final name: a process killed while copying
    left a ``.bak`` with no tables (and its ``-journal``), which looked like a backup. It is made
    as ``.bak.part`` and renamed when whole; the next backup removes a part left behind."""
    db = tmp_path / "heartbeat.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    left = [
        tmp_path / "heartbeat.db.20260501T085900Z.rev0001.bak.part",
        tmp_path / "heartbeat.db.20260501T085900Z.rev0001.bak.part-journal",
    ]
    for path in left:
        path.write_bytes(b"half")
    made = migrate.backup_sqlite(db, "0001", datetime(2026, 5, 1, 9, 0, tzinfo=UTC))
    assert made.name == "heartbeat.db.20260501T090000Z.rev0001.bak"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heartbeat.db", made.name]
    with closing(sqlite3.connect(made)) as copy:
        assert copy.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_the_readers_grants_name_every_table_and_view_at_head(db_url: str) -> None:
    """0013 grants hb_reader SELECT on hb's objects by name, a later revision on the ones it adds,
    and hb sql's hint names the same: a table or view added later is in both, or the reader
    cannot read it."""
    import importlib.util

    from heartbeat.reporting.sql import READER_OBJECTS

    spec = importlib.util.spec_from_file_location(
        "_hb_0013",
        Path(__file__).resolve().parents[2] / "migrations" / "versions" / "0013_reader_reads_hb_only.py",
    )
    assert spec is not None and spec.loader is not None
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)
    engine = make_engine(db_url)
    try:
        migrate.upgrade(engine, "head")
        found = inspect(engine)
        schema = set(found.get_table_names()) | set(found.get_view_names())
    finally:
        engine.dispose()
    added_since = {"locks"}  # 0014's table, which that revision grants by name
    assert set(revision.OBJECTS) | added_since == schema
    assert set(READER_OBJECTS) == schema


def _at_once(workspace: Path, db: str | None, *args: str, n: int = 3) -> list[tuple[int, str]]:
    """``hb ARGS`` in ``n`` processes started together; each one's exit code and standard error."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HB_WORKSPACE": str(workspace), "HB_NOW": "2026-05-01T09:00:00Z"}
    if db is not None:
        env["HB_DATABASE_URL"] = db
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "heartbeat", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(n)
    ]
    return [(proc.wait(120), (proc.communicate()[1] or b"").decode()) for proc in procs]


@pytest.mark.slow
def test_processes_meeting_an_older_sqlite_ledger_at_once_upgrade_it_once(workspace: Path) -> None:
    """Each process that found the ledger behind backed it up and upgraded it: three backups,
    and now and then one failed ("disk I/O error") as another removed its copy in progress,
    taken for one a killed process had left. They take turns: one backup, every process served."""
    db = workspace / ".agent" / "state" / "heartbeat.db"
    db.parent.mkdir(parents=True)
    for _round in range(3):
        engine = make_engine(str(db))
        migrate.upgrade(engine, "head")
        migrate.downgrade(engine, "0006")
        engine.dispose()
        for old in db.parent.glob("heartbeat.db.*.bak*"):
            old.unlink()
        results = _at_once(workspace, None, "add", "at once")
        assert [code for code, _err in results] == [0, 0, 0], results
        assert len(list(db.parent.glob("heartbeat.db.*.bak"))) == 1
        assert not list(db.parent.glob("*.part"))


@pytest.mark.postgres
@pytest.mark.slow
def test_workers_meeting_a_new_postgres_database_at_once_all_start(pg_url: str, workspace: Path) -> None:
    """Many workers on many machines create the schema on first use: three at once each created
    it, and all but one failed on a duplicate type ("pg_type_typname_nsp_index"). The migration
    takes a transaction lock: the others wait, then find the schema made."""
    results = _at_once(workspace, pg_url, "add", "first day")
    assert [code for code, _err in results] == [0, 0, 0], results
    hb = Runner({"HB_DATABASE_URL": pg_url})
    assert [t["title"] for t in hb.json("list")] == ["first day"] * 3


@pytest.mark.parametrize(
    "command", [("db", "current"), ("db", "check"), ("db", "upgrade"), ("db", "downgrade", "base")]
)
def test_hb_db_refuses_a_libpq_string_and_makes_no_file_named_after_it(
    hb: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """`hb db` took a libpq key=value string for a SQLite path, as the everyday commands no
    longer do: `hb db upgrade` built a ledger in a file named after it, password and all."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    libpq = "host=db.example.com user=app password=hunter2 dbname=prod"
    result = hb("--db", libpq, *command, code=1)
    assert result.stderr.startswith("hb: --db 'host=db.example.com user=app password=*** dbname=prod': ")
    assert "hunter2" not in result.stderr + result.stdout
    assert list(here.iterdir()) == []


def test_hb_db_of_a_file_that_is_not_there_makes_none(hb: Runner, tmp_path: Path) -> None:
    """`hb db current` and `hb db check` of a mistyped path made an empty file of that name."""
    (tmp_path / "here").mkdir()
    db = tmp_path / "here" / "typo.db"
    assert hb.json("--db", str(db), "db", "current")["status"] == "empty"
    for command in (("db", "check"), ("db", "downgrade", "base")):
        result = hb("--db", str(db), *command, code=1)
        assert (
            result.stderr
            == f"hb: the database has no hb schema; this hb's schema is revision {migrate.HEAD}\n"
        )
    assert list(db.parent.iterdir()) == []


@pytest.mark.parametrize(
    "command", [("db", "current"), ("db", "check"), ("db", "upgrade"), ("db", "downgrade", "base")]
)
def test_hb_db_leaves_another_applications_database_alone(
    hb: Runner, db_url: str, command: tuple[str, ...]
) -> None:
    """The everyday commands refuse a database with tables but no hb version; `hb db upgrade`
    wrote hb's schema next to them (and `hb db current` called the database empty)."""
    from sqlalchemy import create_engine, inspect, text

    from heartbeat.db.engine import normalize_url

    engine = create_engine(normalize_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE users (id integer PRIMARY KEY, name text)"))
        conn.execute(text("INSERT INTO users VALUES (1, 'alice')"))
    try:
        result = hb("--db", db_url, *command, code=1)
        assert result.stderr == "hb: the database has tables but no hb schema version; is it an hb ledger?\n"
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == {"users"}
            assert conn.execute(text("SELECT name FROM users")).all() == [("alice",)]
    finally:
        engine.dispose()


def test_hb_db_upgrade_of_a_ledger_newer_than_this_hb_says_so(hb: Runner, db_url: str) -> None:
    """It said "alembic: Can't locate revision identified by '0099'"."""
    from sqlalchemy import create_engine, text

    from heartbeat.db.engine import normalize_url

    hb("--db", db_url, "db", "upgrade")
    engine = create_engine(normalize_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    newer = (
        f"hb: the database is at revision 0099, newer than this hb (which knows up to {migrate.HEAD}); "
        "upgrade hb to use it\n"
    )
    for command in (("db", "upgrade"), ("db", "downgrade", "-1")):
        assert hb("--db", db_url, *command, code=1).stderr == newer
    assert hb.json("--db", db_url, "db", "current")["status"] == "ahead"


def test_another_applications_alembic_database_is_not_called_newer(hb: Runner, db_url: str) -> None:
    """A database of another application's Alembic (its own revision, none of hb's tables) was
    called "newer than this hb"; it is not hb's, whatever its revision."""
    from sqlalchemy import create_engine, text

    from heartbeat.db.engine import normalize_url

    engine = create_engine(normalize_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(32) NOT NULL)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('ae1027a6acf')"))
        conn.execute(text("CREATE TABLE users (id integer PRIMARY KEY)"))
    engine.dispose()
    refused = "hb: the database is at revision ae1027a6acf and has no hb tables; is it an hb ledger?\n"
    for command in (("list",), ("db", "upgrade"), ("db", "current")):
        assert hb("--db", db_url, *command, code=1).stderr == refused
