"""hb sql is read-only by construction: the database refuses every write, and nothing changes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner, strict_json

# Each attempt must be refused (exit 1, one line on stderr) on both backends.
WRITES = [
    "INSERT INTO tasks (id, scope, source, title, status, created_at, updated_at) "
    "VALUES ('task-evil', '', 'cli', 'injected', 'todo', '2026-05-01 00:00:00', '2026-05-01 00:00:00')",
    "UPDATE tasks SET title = 'changed'",
    "DELETE FROM outcomes",
    "DROP TABLE notifications",
    "DROP VIEW queue_depth",
    "CREATE TABLE scratch (x INTEGER)",
    "ATTACH DATABASE 'elsewhere.db' AS elsewhere",
    "PRAGMA writable_schema = ON",
    "SELECT 1; DELETE FROM tasks",
    "DELETE FROM tasks RETURNING id",
]
SQLITE_ONLY = [
    "PRAGMA query_only = OFF",
    "PRAGMA user_version = 7",
    "VACUUM INTO 'copy.db'",
    "DETACH DATABASE main",
    "ANALYZE",
    "REINDEX",
]
POSTGRES_ONLY = [
    "TRUNCATE tasks CASCADE",
    "COMMIT; DELETE FROM tasks",
    "SELECT setval(pg_get_serial_sequence('tasks', 'pk'), 1000)",
    "SELECT * FROM tasks FOR UPDATE",
    "DO $$ BEGIN DELETE FROM tasks; END $$",
    "WITH gone AS (DELETE FROM outcomes RETURNING pk) SELECT count(*) FROM gone",
]


def seed(hb: Runner) -> None:
    hb("--now", "2026-05-01T09:00:00Z", "add", "write the report", "--skill", "research")
    hb("--now", "2026-05-01T09:05:00Z", "add", "check the queue")
    popped = json.loads(hb("--now", "2026-05-01T10:00:00Z", "pop").stdout)
    hb("--now", "2026-05-01T10:07:00Z", "complete", popped["id"])
    popped = json.loads(hb("--now", "2026-05-01T10:08:00Z", "pop").stdout)
    hb("--now", "2026-05-01T10:09:00Z", "fail", popped["id"], "--reason", "timeout")


def file_state(db: Path) -> tuple[str, list[str]]:
    """The ledger file's digest and the files beside it (sidecars of WAL mode aside)."""
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    names = sorted(p.name for p in db.parent.iterdir() if not p.name.endswith(("-wal", "-shm")))
    return digest, names


def all_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table and the views' definitions, for a row-identical comparison."""
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            out = {}
            for name in sorted(inspect(conn).get_table_names()):
                out[name] = [
                    tuple(map(str, r)) for r in conn.execute(text(f'SELECT * FROM "{name}" ORDER BY 1'))
                ]
            out["views"] = sorted(inspect(conn).get_view_names())
            out["sequence"] = [tuple(conn.execute(text("SELECT last_value FROM tasks_pk_seq")).one())]
            return out
    finally:
        engine.dispose()


def assert_refused(result: Any, statement: str) -> None:
    assert result.stdout == "", statement
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hb: sql: "), (statement, result.stderr)
    assert "Traceback" not in result.stderr


def test_every_write_is_refused_and_the_sqlite_file_is_unchanged(hb: Runner, workspace: Path) -> None:
    seed(hb)
    db = workspace / ".agent" / "state" / "heartbeat.db"
    con = sqlite3.connect(db)  # fold the WAL into the file: the digest then covers every row
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = file_state(db)
    for statement in [*WRITES, *SQLITE_ONLY]:
        result = hb("sql", statement, code=1)
        assert_refused(result, statement)
        assert file_state(db) == before, statement
    assert not (workspace / "elsewhere.db").exists() and not Path("elsewhere.db").exists()
    assert not Path("copy.db").exists()
    # what the database said, not a guess from the text
    written = "hb: sql: attempt to write a readonly database (hb sql is read-only)\n"
    for statement in (
        "DELETE FROM outcomes",
        "WITH a AS (SELECT 1) INSERT INTO settings (key, value, updated_at) SELECT 'k', '1', 'now' FROM a",
    ):
        assert hb("sql", statement, code=1).stderr == written, statement
    assert "not authorized" in hb("sql", "ATTACH DATABASE 'x.db' AS x", code=1).stderr
    # VACUUM attaches a database to rebuild the file in: named as itself, not as an ATTACH
    vacuum = "hb: sql: authorization denied: VACUUM (hb sql is read-only)\n"
    for statement in ("VACUUM", "VACUUM INTO 'copy.db'"):
        assert hb("sql", statement, code=1).stderr == vacuum
    assert "one statement" in hb("sql", "SELECT 1; DELETE FROM tasks", code=1).stderr
    # fts3_tokenizer answers with a pointer into hb's memory (and installs one given back as code),
    # where SQLite is built with it (Debian's is)
    for call in ("fts3_tokenizer('simple')", "FTS3_TOKENIZER('porter', x'00')"):
        refused = hb("sql", f"SELECT {call}", code=1).stderr
        built = "no such function" not in refused
        assert not built or refused.startswith("hb: sql: not authorized to use function"), refused
    # and reading still works, the same data as before
    assert hb.json("sql", "SELECT count(*) AS n FROM tasks", "--format", "json") == [{"n": 2}]
    assert file_state(db) == before


@pytest.mark.postgres
def test_every_write_is_refused_and_postgres_rows_are_unchanged(pg_url: str, workspace: Path) -> None:
    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    before = all_rows(pg_url)
    assert before["tasks"] and before["outcomes"] and before["errors"]
    for statement in [*WRITES, *POSTGRES_ONLY]:
        result = hb("sql", statement, code=1)
        assert_refused(result, statement)
        assert all_rows(pg_url) == before, statement
    assert "read-only transaction" in hb("sql", "DELETE FROM outcomes", code=1).stderr
    assert "multiple commands" in hb("sql", "COMMIT; DELETE FROM tasks", code=1).stderr
    assert hb.json("sql", "SELECT count(*) AS n FROM tasks", "--format", "json") == [{"n": 2}]


def test_reads_work_on_both_backends(hb_db: Runner) -> None:
    seed(hb_db)
    rows = hb_db.json(
        "sql", "SELECT id, status FROM tasks WHERE title LIKE '%report%' ORDER BY id", "--format", "json"
    )
    assert [r["status"] for r in rows] == ["done"]
    # the schema stays readable: SQLite's table-valued pragma, PostgreSQL's information_schema
    if hb_db.env["HB_DATABASE_URL"].startswith("postgresql"):
        query = "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'tasks'"
    else:
        query = "SELECT name FROM pragma_table_info('tasks')"
    assert {"id", "status", "scope"} <= {c["name"] for c in hb_db.json("sql", query)}
    stdin = hb_db("sql", "-", "--format", "csv", input="SELECT skill, outcomes FROM outcomes_by_skill\n")
    assert stdin.stdout.splitlines() == ["skill,outcomes", "research,1"]


def test_json_output_stays_json_for_infinite_values(hb_db: Runner) -> None:
    seed(hb_db)
    if hb_db.env["HB_DATABASE_URL"].startswith("postgresql"):
        query = "SELECT 'Infinity'::float8 AS a, '-Infinity'::float8 AS b, 'NaN'::numeric AS c, 1.5 AS d"
    else:
        query = "SELECT 1e400 AS a, -1e400 AS b, NULL AS c, 1.5 AS d"
    text = hb_db("sql", query, "--format", "json").stdout
    [row] = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert (row["a"], row["b"], row["d"]) == ("Infinity", "-Infinity", 1.5)
    assert row["c"] in (None, "NaN")


@pytest.mark.postgres
def test_postgres_arrays_hold_their_items_as_json_values_in_every_format(
    pg_url: str, workspace: Path
) -> None:
    """An array's numbers, infinity and NaN, and times read as a column of them does: a numeric
    array was an internal error (Decimal is not JSON), in --format json one that left hb waiting
    forever, and a float array printed Infinity and NaN, which are no JSON."""
    hb = Runner({"HB_DATABASE_URL": pg_url})
    hb("init")
    query = (
        "SELECT ARRAY['-Infinity'::numeric, 2.5] AS n, ARRAY[1.5::float8, 'NaN'] AS f, "
        "ARRAY[timestamptz '2026-05-01 09:00Z'] AS t, json_build_object('x', 1) AS j"
    )
    table = hb("sql", query).stdout.splitlines()
    assert table[2] == '["-Infinity", 2.5]  [1.5, "NaN"]  ["2026-05-01T09:00:00+00:00"]  {"x": 1}'
    [row] = strict_json(hb("sql", query, "--format", "json").stdout)
    assert row == {
        "n": ["-Infinity", 2.5],
        "f": [1.5, "NaN"],
        "t": ["2026-05-01T09:00:00+00:00"],
        "j": {"x": 1},
    }
    csv = hb("sql", query, "--format", "csv").stdout.splitlines()
    assert csv == [
        "n,f,t,j",
        '"[""-Infinity"", 2.5]","[1.5, ""NaN""]","[""2026-05-01T09:00:00+00:00""]","{""x"": 1}"',
    ]


@pytest.mark.postgres
def test_postgres_times_python_cannot_hold_are_the_servers_text(pg_url: str, workspace: Path) -> None:
    """``'infinity'::timestamptz``, ``'-infinity'::date`` and a year past 9999 are PostgreSQL's
    own values, which a query (say, an open-ended validity column) may return: hb sql failed
    with "timestamp too large". They are shown as psql shows them."""
    hb = Runner({"HB_DATABASE_URL": pg_url})
    hb("init")
    query = (
        "SELECT 'infinity'::timestamptz AS t, '-infinity'::date AS d, '12000-01-01'::date AS far, "
        "'-infinity'::timestamp AS ts, timestamptz '2026-05-01 09:00Z' AS ok"
    )
    [row] = strict_json(hb("sql", query, "--format", "json").stdout)
    assert row == {
        "t": "infinity",
        "d": "-infinity",
        "far": "12000-01-01",
        "ts": "-infinity",
        "ok": "2026-05-01T09:00:00+00:00",
    }
    assert hb("sql", query, "--format", "csv").stdout.splitlines()[1] == (
        "infinity,-infinity,12000-01-01,-infinity,2026-05-01T09:00:00+00:00"
    )


def test_sql_usage_and_database_errors_are_one_line(hb: Runner) -> None:
    seed(hb)
    empty = hb("sql", "  ", code=2)
    assert "QUERY is empty" in empty.stderr
    bad = hb("sql", "SELEC nonsense", code=1)
    assert bad.stderr.startswith("hb: sql: ") and bad.stderr.count("\n") == 1
    missing = hb("sql", "SELECT * FROM no_such_table", code=1)
    assert "no_such_table" in missing.stderr


def test_sql_needs_an_existing_ledger(hb: Runner, workspace: Path) -> None:
    result = hb("sql", "SELECT 1", code=1)
    assert "no ledger" in result.stderr
    assert not (workspace / ".agent" / "state" / "heartbeat.db").exists()


# --- PostgreSQL as a superuser: hb sql runs as hb_reader, which the server keeps inside hb's tables ---

ATTACKS = [
    "COPY (SELECT 1) TO PROGRAM 'touch {marker}'",
    "COPY (SELECT * FROM tasks) TO '{marker}'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_ls_dir('.')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '{marker}')",
    "SELECT * FROM dblink('dbname=postgres user=postgres', 'SELECT 1') AS t(x int)",
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT set_config('session_authorization', 'postgres', false)",
    "SELECT set_config('transaction_read_only', 'off', true)",
]


@pytest.mark.postgres
def test_a_superuser_connection_cannot_reach_files_programs_or_other_roles(
    pg_url: str, workspace: Path, tmp_path: Path
) -> None:
    from sqlalchemy import create_engine, text

    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    engine = create_engine(pg_url)
    with engine.begin() as conn:  # the ledger's own user may do all of this; hb sql must not
        assert conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar()
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS dblink"))
    engine.dispose()
    before = all_rows(pg_url)
    marker = tmp_path / "written-by-the-server"
    for attack in ATTACKS:
        statement = attack.format(marker=marker)
        result = hb("sql", statement, code=1)
        assert_refused(result, statement)
        assert not marker.exists(), statement
        assert all_rows(pg_url) == before, statement
    assert "permission denied" in hb("sql", "SELECT pg_read_file('/etc/passwd')", code=1).stderr
    assert "permission denied" in hb("sql", "SET ROLE postgres", code=1).stderr
    [who] = hb.json("sql", "SELECT current_user AS cur, session_user AS ses")
    assert who == {"cur": "hb_reader", "ses": "hb_reader"}


@pytest.mark.postgres
def test_hb_sql_refuses_a_role_that_is_not_the_reader(pg_url: str, workspace: Path, monkeypatch: Any) -> None:
    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    monkeypatch.setenv("HB_SQL_DATABASE_URL", pg_url)  # the superuser itself
    refused = hb("sql", "SELECT 1", code=1)
    assert refused.stderr.startswith("hb: sql: refusing to run as postgres, a superuser")
    assert refused.stderr.count("\n") == 1
    monkeypatch.setenv("HB_SQL_DATABASE_URL", pg_url.replace("postgres@", "hb_no_such_role@", 1))
    missing = hb("sql", "SELECT 1", code=1)
    lines = missing.stderr.splitlines()
    assert len(lines) == 1 and "cannot connect as the read-only role hb_no_such_role" in lines[0]
    assert "GRANT SELECT ON alembic_version, errors, locks, notifications," in lines[0]  # hb's, by name
    assert "ALL TABLES" not in lines[0]


@pytest.mark.postgres
def test_the_reader_reads_hbs_tables_and_views_and_no_other(pg_url: str, workspace: Path) -> None:
    """0004 granted hb_reader every table of the schema, and by default privileges every table
    made there later: another application's table, made by the same role beside hb's, was
    readable through hb sql (and the MCP sql tool). The role reads hb's own, by name."""
    from sqlalchemy import create_engine, text

    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE app_secrets (token text)"))
        conn.execute(text("INSERT INTO app_secrets VALUES ('s3cret')"))
    engine.dispose()
    refused = hb("sql", "SELECT token FROM app_secrets", code=1)
    assert "permission denied for table app_secrets" in refused.stderr and "s3cret" not in refused.stdout
    assert hb.json("sql", "SELECT count(*) AS n FROM tasks")[0]["n"] > 0
    assert hb.json("sql", "SELECT count(*) AS n FROM failure_reasons")[0]["n"] >= 0


@pytest.mark.postgres
def test_a_reader_url_that_is_no_url_is_refused_without_its_password(
    pg_url: str, workspace: Path, monkeypatch: Any
) -> None:
    """HB_SQL_DATABASE_URL written as psql takes it (``host=... password=...``) was read as a
    path: the whole text became the database's name, password included, in the error hb printed
    (and handed an agent through the MCP sql tool)."""
    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    monkeypatch.setenv("HB_SQL_DATABASE_URL", "host=127.0.0.1 user=hb_reader password=LeakMe42 dbname=x")
    refused = hb("sql", "SELECT 1", code=1)
    assert "LeakMe42" not in refused.stderr and "LeakMe42" not in refused.stdout
    assert refused.stderr == (
        "hb: HB_SQL_DATABASE_URL: 'host=127.0.0.1 user=hb_reader password=*** dbname=x' is no "
        "postgresql:// URL; write it as postgresql://USER:PASSWORD@HOST:PORT/DBNAME\n"
    )


def test_a_libpq_string_given_as_db_is_refused_and_makes_no_file(hb: Runner, tmp_path: Path) -> None:
    """``--db "host=... password=..."`` was taken for a SQLite path: a file of that name was made
    in the current directory."""
    refused = hb("--db", "host=127.0.0.1 user=x password=LeakMe42 dbname=y", "list", code=1)
    assert "LeakMe42" not in refused.stderr
    assert refused.stderr.startswith("hb: --db 'host=127.0.0.1 user=x password=*** dbname=y': a libpq")
    assert list(tmp_path.iterdir()) == [tmp_path / "ws"]  # (the workspace the fixtures made)


def test_a_value_nested_past_what_python_prints_is_one_line_not_exit_70(pg_url: str, workspace: Path) -> None:
    """psycopg decodes a json value; printing one of 500 levels ran out of stack on Python 3.11
    (exit 70), in every format and in hb mcp's sql tool."""
    hb = Runner({"HB_DATABASE_URL": pg_url})
    hb("init")
    # past what Python reads and prints on every version (3.11 stopped printing at 500 levels)
    query = "SELECT (repeat('[', 3000) || repeat(']', 3000))::json AS r"
    for fmt in ("json", "csv", "table"):
        result = hb("sql", query, "--format", fmt, code=1)
        assert result.stderr == (
            "hb: sql: a value in the answer is nested too deeply for Python to read or print\n"
        ), fmt
    shallow = "SELECT (repeat('[', 100) || repeat(']', 100))::json AS r"
    assert strict_json(hb("sql", shallow, "--format", "json").stdout)


@pytest.mark.postgres
def test_the_reader_cannot_hold_hbs_writers_waiting(pg_url: str, workspace: Path) -> None:
    """Two proactive rounds (one message a day between them) and two dependency edits (a cycle
    between them) take turns on PostgreSQL. The turn was an advisory lock of a fixed key, which
    any role may take in a read-only transaction: ``hb sql`` (or an agent's MCP ``sql`` call)
    holding it made ``hb proactive`` and ``hb update --after`` wait, then exit 75. The turns are
    row locks now, which the reader may not take, and holding the old keys holds nothing up."""
    import zlib

    import psycopg

    from heartbeat.reporting.sql import reader_connect_args

    hb = Runner({"HB_DATABASE_URL": pg_url})
    seed(hb)
    hb("config", "set", "proactive.enabled", "true")
    hb("config", "set", "quiet_hours", "off")
    first, second = (row["id"] for row in hb.json("list", "--all")[:2])
    for lock in ("FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"):
        refused = hb("sql", f"SELECT name FROM locks {lock}", code=1)
        assert refused.stderr.startswith("hb: sql: ") and refused.stderr.count("\n") == 1, refused.stderr
    with psycopg.connect(**reader_connect_args(pg_url), connect_timeout=10) as reader:
        assert reader.execute("SELECT current_user").fetchone() == ("hb_reader",)
        reader.rollback()
        reader.execute("SET TRANSACTION READ WRITE")  # the role's default is read-only; it may say so
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # a row lock needs UPDATE
            reader.execute("SELECT name FROM locks FOR KEY SHARE")
        reader.rollback()
        reader.execute("SET TRANSACTION READ ONLY")
        for key in (zlib.crc32(b"hb:proactive"), 0x6862_6465):  # the turns' keys before 0014
            reader.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        # the writers wait two seconds for a lock at most, then exit 75 (75 was the bug)
        env = {"PGOPTIONS": "-c lock_timeout=2000"}
        ask = ("proactive", "--topic", "t", "--suggestion", "s", "--json")
        asked = hb("--now", "2026-05-01T12:00Z", *ask, **env)
        assert json.loads(asked.stdout)["decision"] == "sent"
        hb("update", second, "--after", first, **env)
        assert hb.json("show", second)["after"] == [first]
        reader.rollback()
