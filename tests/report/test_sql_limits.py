"""hb sql's time limit and Ctrl-C: a query that runs too long is cancelled, nothing changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
# a query that never ends on its own: SQLite counts forever, PostgreSQL sleeps 100 s
ENDLESS = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "postgres": "SELECT pg_sleep(100)",
}
# hb sql in a child process that says READY on stderr once Ctrl-C would cancel the query
CHILD = """
import sys
from heartbeat.cli.main import main
from heartbeat.reporting import sql

active = sql.Limit.active
def announced(self):
    with active(self) as limit:
        print("READY", file=sys.stderr, flush=True)
        yield limit
sql.Limit.active = __import__("contextlib").contextmanager(announced)
sys.exit(main(sys.argv[1:]))
"""


def backend(runner: Runner) -> str:
    return "postgres" if runner.env["HB_DATABASE_URL"].startswith("postgresql") else "sqlite"


def test_a_query_past_its_timeout_is_cancelled(hb_db: Runner) -> None:
    hb_db("add", "one task")
    result = hb_db("sql", ENDLESS[backend(hb_db)], "--timeout", "1s", code=1)
    assert result.stdout == ""
    assert result.stderr == "hb: sql: query cancelled after 1s\n"
    assert [t["title"] for t in hb_db.json("list")] == ["one task"]


def test_the_setting_is_the_default_limit(hb_db: Runner) -> None:
    hb_db("config", "set", "sql.timeout", "2s")
    assert hb_db("config", "get", "sql.timeout").stdout.strip() == "2s"
    result = hb_db("sql", ENDLESS[backend(hb_db)], code=1)
    assert result.stderr == "hb: sql: query cancelled after 2s\n"
    quick = hb_db.json("sql", "SELECT 1 AS one", "--timeout", "5s")
    assert quick == [{"one": 1}]


def test_a_bad_timeout_is_refused_before_the_query(hb: Runner) -> None:
    hb("init")
    for value in ("soon", "0s", "-1s"):
        result = hb("sql", "SELECT 1", "--timeout", value, code=1)
        assert result.stderr.startswith("hb: bad sql timeout"), value
    assert hb("config", "set", "sql.timeout", "never", code=1).stderr.startswith("hb: ")


def test_the_default_timeout_is_thirty_seconds(hb: Runner) -> None:
    hb("init")
    assert hb("config", "get", "sql.timeout").stdout.strip() == "30s"


def _wait_for(predicate: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.slow
def test_ctrl_c_cancels_the_query_and_exits_130(hb_db: Runner, workspace: Path) -> None:
    hb_db("add", "one task")
    env = {**os.environ, **hb_db.env, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    which = backend(hb_db)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "sql", ENDLESS[which], "--timeout", "10m"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "READY"
        if which == "postgres":  # Ctrl-C must reach a query the server is running
            _wait_for(lambda: _pg_running(hb_db.env["HB_DATABASE_URL"]), "the query to start")
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert out == ""
    assert err == "hb: sql: query cancelled (interrupted)\n"
    assert [t["title"] for t in hb_db.json("list")] == ["one task"]
    if which == "postgres":
        assert not _pg_running(hb_db.env["HB_DATABASE_URL"])


def _pg_running(url: str) -> bool:
    import psycopg
    from sqlalchemy.engine import make_url

    with psycopg.connect(make_url(url).set(drivername="postgresql").render_as_string(False)) as con:
        row = con.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'hb_reader' "
            "AND state = 'active' AND query LIKE 'SELECT pg_sleep%'"
        ).fetchone()
    return bool(row and row[0])


# formats SQLite's printf reads, with what they take: hb sql's printf must give the same text
PRINTF_CASES = [
    ("%d-%5.2f-%s|", 7, 3.14159, "abc"),
    ("%.3c%%%*d|%-*d|", "z", 4, 9, -3, 5),
    ("%.*c|%c|%5c|", -3, "y", "q", "r"),
    ("%q %Q %w %!.3s %,d", "it's", None, 'a"b', "ünïcode", 1234567),
    ("%lld %x %o %e %g %z", 2**40, 255, 8, 1.5e10, 0.0001, "z"),
    ("no arguments at all",),
    ("%s %s", "only one"),
    ("%.*c", "3", "x"),
]


@pytest.mark.parametrize("case", PRINTF_CASES)
def test_printf_gives_sqlites_own_text(hb: Runner, workspace: Path, case: tuple[object, ...]) -> None:
    """hb sql puts its own printf (and format) in front of SQLite's to refuse one call SQLite
    cannot stop (below); every other call is SQLite's, to the byte."""
    import json
    import sqlite3

    marks = ", ".join("?" * len(case))
    with closing(sqlite3.connect(":memory:")) as con:
        own = con.execute(f"SELECT printf({marks}), format({marks})", case * 2).fetchone()
    hb("init")
    literal = ", ".join(
        "NULL" if v is None else repr(v) if not isinstance(v, str) else _quoted(v) for v in case
    )
    got = json.loads(hb("sql", "--json", f"SELECT printf({literal}) AS p, format({literal}) AS f").stdout)
    assert [(row["p"], row["f"]) for row in got] == [own]


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT printf('%.*c', 2000000000, 'x')",  # 16 s in one step, past any time limit
        "SELECT printf('%.300000000c', 'x')",
        "SELECT format('%*.*c', 5, -2000000000, 'x')",
        "SELECT length(zeroblob(300000000))",
        "SELECT length(replace(hex(zeroblob(100000000)), '0', 'aa'))",  # a 400 MB value
    ],
)
def test_a_value_past_the_length_limit_is_refused_at_once(hb: Runner, query: str) -> None:
    """SQLite looks at the time limit between steps of its program; one function call is one
    step. A value longer than 256 MiB is refused when it is asked for, with one line."""
    hb("init")
    result = hb("sql", "--timeout", "1s", query, code=1)
    assert result.stderr == "hb: sql: string or blob too big (hb sql makes values of up to 256 MiB)\n"
    assert hb("sql", "--json", "SELECT printf('%.3c', 'x') AS x").stdout == '[\n  {\n    "x": "xxx"\n  }\n]\n'
