"""hb sql's time limit and Ctrl-C: a query that runs too long is cancelled, nothing changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
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
