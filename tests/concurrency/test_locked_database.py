"""A ledger another process keeps locked past SQLite's busy timeout: busy (exit 75, hb serve 503)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from heartbeat.db import sqlite as sqlite_settings
from tests.conftest import Runner

BUSY = "hb: busy: another process held the ledger's database locked past 30 s; try again\n"


def another_connection(workspace: Path) -> closing[sqlite3.Connection]:
    """A connection of another program to the workspace's ledger (closed on leaving the block),
    which begins and ends its transactions itself."""
    return closing(sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db", isolation_level=None))


def test_a_command_on_a_database_locked_past_the_busy_timeout_is_busy(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was "database error: database is locked", exit 1, as if the input were wrong."""
    hb("init")
    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    with another_connection(workspace) as other:
        other.execute("BEGIN EXCLUSIVE")
        result = hb("add", "waits", code=75)
        other.execute("ROLLBACK")
    assert result.stderr == BUSY
    assert hb.json("list") == []


def test_a_poke_on_a_database_locked_past_the_busy_timeout_is_a_503(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hb serve answered 500, "internal error", after the 30 s."""
    from heartbeat.ledger import Ledger
    from heartbeat.serve import make_server
    from tests.round.test_serve import TOKEN, request, running

    hb("init")
    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    srv = make_server(lambda: Ledger.open(workspace), host="127.0.0.1", port=0, token=TOKEN)
    with (
        running(srv),
        another_connection(workspace) as other,
    ):
        other.execute("BEGIN EXCLUSIVE")
        status, _headers, payload = request(srv, "POST", "/poke", b"check the build")
        other.execute("ROLLBACK")
    assert status == 503
    assert payload == {"error": BUSY.removeprefix("hb: ").rstrip("\n")}
    assert hb.json("list") == []


def test_the_reads_of_the_queue_answer_while_a_writer_holds_the_ledger(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hb ready and hb scopes took the write lock to read: behind another process's write
    transaction they waited out the busy timeout and said busy (hb mcp's ``ready`` tool, marked
    read-only, too). They read the last commit now."""
    hb("add", "first")
    hb("add", "scoped", "--scope", "_b_extension.q")
    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    with another_connection(workspace) as other:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE tasks SET title = 'uncommitted' WHERE scope = ''")
        ready = hb.json("ready", "--scope", "")
        scopes = hb("scopes").stdout
        hb("add", "waits", code=75)  # a write still waits for the writer
        other.execute("ROLLBACK")
    assert [t["title"] for t in ready] == ["first"]
    assert scopes.startswith("_b_extension.q  (1 ready")


def test_a_dashboard_page_on_a_database_locked_past_the_busy_timeout_is_a_503(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page behind a writer that locks readers out too (``locking_mode = EXCLUSIVE``) was a
    500, "internal error; see the server log", as if hb had failed: it is busy, as a poke is."""
    from heartbeat.ledger import Ledger
    from heartbeat.serve import make_server
    from tests.round.test_serve import TOKEN, request, running

    hb("add", "listed")
    lines: list[str] = []
    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    srv = make_server(lambda: Ledger.open(workspace), host="127.0.0.1", port=0, token=TOKEN, log=lines.append)
    with (
        running(srv),
        another_connection(workspace) as other,
    ):
        other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        other.execute("UPDATE tasks SET title = 'uncommitted'")
        status, _headers, payload = request(srv, "GET", "/now.json", b"")
        other.execute("ROLLBACK")
    assert status == 503
    assert payload == {"error": BUSY.removeprefix("hb: ").rstrip("\n")}
    assert not [line for line in lines if "failed" in line]
    assert [t["title"] for t in hb.json("list")] == ["listed"]


def test_a_poke_or_page_on_a_ledger_that_is_no_database_logs_the_file_in_one_line(
    hb: Runner, workspace: Path
) -> None:
    """The server's log said "poke failed: DatabaseError: file is not a database": no file named.
    It names the ledger's file, as every hb command does; the client hears no more than before."""
    from heartbeat.ledger import Ledger
    from heartbeat.serve import make_server
    from tests.round.test_serve import TOKEN, request, running

    hb("init")
    ledger = workspace / ".agent" / "state" / "heartbeat.db"
    lines: list[str] = []
    srv = make_server(
        lambda: Ledger.open(workspace),
        host="127.0.0.1",
        port=0,
        token=TOKEN,
        log=lines.append,
        ledger_file=str(ledger),
    )
    with running(srv):
        ledger.write_bytes(b"not a ledger\n" * 512)  # damaged under the running server
        poked = request(srv, "POST", "/poke", b"check the build")
        page = request(srv, "GET", "/now.json", b"")
    assert poked[0] == 500 and poked[2] == {"error": "internal error; see the server log"}
    assert page[0] == 500 and page[2] == {"error": "internal error; see the server log"}
    failures = [line for line in lines if "failed" in line]
    said = f"{ledger}: database error: file is not a database"
    assert failures == [f"poke failed: {said}", f"page /now.json failed: {said}"], lines
