"""Shared fixtures: an isolated workspace per test, the CLI runner, both backends.

PostgreSQL tests run when HB_TEST_DATABASE_URL is set (.ci/run sets it): the
session creates its own database on that server and drops it at the end.
Without it they are skipped, and the skip reason says so.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click.testing
import pytest

from heartbeat.cli.main import cli

PG_ENV = "HB_TEST_DATABASE_URL"


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HB_") and name != PG_ENV:
            monkeypatch.delenv(name)
    monkeypatch.setenv("TZ", "UTC")
    # (a command that loses its workspace, as after monkeypatch.undo(), makes its ledger here,
    # never in the checkout the tests run from)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HB_WORKSPACE", str(ws))
    return ws


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped afterwards."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1/test)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from heartbeat.db.engine import normalize_url

    url = make_url(normalize_url(base))
    name = f"hb_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url(pg_server_url: str) -> str:
    """The session's PostgreSQL database, emptied before the test."""
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_server_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    return pg_server_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, workspace: Path) -> str:
    """Each backend in turn: the workspace's SQLite file, then PostgreSQL."""
    if request.param == "sqlite":
        path = workspace / ".agent" / "state" / "heartbeat.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        return str(path)
    url: str = request.getfixturevalue("pg_url")
    return url


def strict_json(text: str) -> Any:
    """``text`` read as a strict JSON reader reads it: ``NaN`` and ``Infinity`` are no JSON."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON: {text[:300]}")

    return json.loads(text, parse_constant=refuse)


class Runner:
    """Runs ``hb`` in-process; stdout and stderr kept apart."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.runner = click.testing.CliRunner()
        self.env = env or {}

    def __call__(self, *args: str, input: str | bytes | None = None, code: int | None = 0, **env: str) -> Any:
        result = self.runner.invoke(
            cli, list(args), input=input, env={**self.env, **env}, catch_exceptions=False
        )
        if code is not None:
            assert result.exit_code == code, (
                f"hb {' '.join(args)} exited {result.exit_code}, wanted {code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def json(self, *args: str, **kw: Any) -> Any:
        result = self(*args, "--json", **kw) if "--json" not in args else self(*args, **kw)
        return json.loads(result.stdout)


@pytest.fixture
def hb(workspace: Path) -> Runner:
    return Runner()


@pytest.fixture
def hb_db(db_url: str) -> Runner:
    """The CLI pointed at each backend in turn."""
    return Runner({"HB_DATABASE_URL": db_url})


def every_row(db_url: str) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table of the ledger at ``db_url`` (a path or a URL), as text, in a fixed
    order: to show that a refused command changed nothing."""
    from sqlalchemy import create_engine, inspect, text

    from heartbeat.db.engine import normalize_url

    engine = create_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            return {
                name: sorted(tuple(map(str, row)) for row in conn.execute(text(f'SELECT * FROM "{name}"')))
                for name in sorted(inspect(conn).get_table_names())
            }
    finally:
        engine.dispose()


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything a server sends on ``sock`` until it closes the connection (bounded in reads; the
    socket's own timeout bounds the wait)."""
    chunks = []
    for _ in range(1000):
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def workspace_files(workspace: Path) -> dict[str, bytes]:
    """Every file under ``workspace`` and its bytes; the SQLite ledger and its sidecars, and the
    workspace lock's note of its last holder, aside."""
    return {
        str(path.relative_to(workspace)): path.read_bytes()
        for path in sorted(workspace.rglob("*"))
        if path.is_file()
        and not path.name.startswith("heartbeat.db")
        and path.name != ".files.lock"
        and ".git" not in path.parts
    }
