"""The Python API refuses what the CLI refuses, as :mod:`heartbeat.errors` exceptions (SPEC.md
section 9): values the command line cannot give (a negative timedelta, an aware datetime of year
9999, a number where text belongs) were stored, and then broke a whole workspace."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.db import sqlite as sqlite_settings
from heartbeat.errors import Busy, DatabaseBusy, DatabaseError, InvalidInput, InvalidState, NotFound
from tests.conftest import every_row

NOW = "2026-05-01T09:00Z"


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("check_interval", timedelta(hours=-1), "bad check-interval: -3600 s is not a positive duration"),
        ("check_interval", -5, "bad check-interval: -5 s is not a positive duration"),
        ("check_interval", 0, "bad check-interval: 0 s is not a positive duration"),
        ("stale_after", -60, "bad stale-after: -60 s is not a positive duration"),
        ("stale_after", timedelta(0), "bad stale-after: 0 s is not a positive duration"),
        ("check_interval", timedelta(milliseconds=400), "bad check-interval 0:00:00.400000: shorter than a"),
        ("check_interval", 10**30, "bad check-interval: longer than 100 years"),
        ("stale_after", timedelta(days=36_526), "bad stale-after: longer than 100 years"),
    ],
)
def test_a_duration_the_cli_refuses_is_refused_by_add_and_update_and_the_round_still_runs(
    db_url: str, workspace: Path, field: str, value: Any, said: str
) -> None:
    """A negative check_interval was stored, and every round of the workspace then failed
    ("check_interval: must be positive"); 10**30 was a raw OverflowError."""
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        task = ledger.add("check the build", check_interval=7200, next_check_at="2026-05-01T08:00Z")
        before = every_row(db_url)
        with pytest.raises(InvalidInput) as added:
            ledger.add("never stored", **{field: value})
        assert str(added.value).startswith(said)
        with pytest.raises(InvalidInput) as updated:
            ledger.update(task["id"], **{field: value})
        assert str(updated.value).startswith(said)
        assert every_row(db_url) == before
        assert ledger.check()["decisions"]  # the round still runs
        assert ledger.get(task["id"])["check_interval"] == "2h"


def test_a_duration_as_seconds_or_a_timedelta_is_still_taken(db_url: str, workspace: Path) -> None:
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        task = ledger.add("a", check_interval=90, stale_after=timedelta(days=36_525))
        assert (task["check_interval"], task["stale_after"]) == ("90s", "36525d")
        task = ledger.update(task["id"], check_interval=timedelta(minutes=30), stale_after=1)
        assert (task["check_interval"], task["stale_after"]) == ("30m", "1s")


FAR = datetime(9999, 12, 31, 23, tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "said"),
    [
        (FAR, "now '9999-12-31T23:00:00+00:00' is outside the years 1970 to 2200"),
        (datetime(1, 1, 1, tzinfo=UTC), "now '0001-01-01T00:00:00+00:00' is outside the years 1970 to 2200"),
        (datetime(9999, 12, 31, 23), "now '9999-12-31T23:00:00' is outside the years 1970 to 2200"),
        ("9999-12-31T23:00Z", "--now time '9999-12-31T23:00Z' is outside the years 1970 to 2200"),
        ("garbage", "bad --now time 'garbage' (expected ISO 8601"),
        (5, "now: int is not a time (expected a datetime, an ISO 8601 text, or a callable"),
        (date(2026, 5, 1), "now: date is not a time (expected a datetime"),
    ],
)
def test_a_now_the_cli_would_refuse_is_refused_at_open_and_nothing_is_made(
    workspace: Path, now: Any, said: str
) -> None:
    """An aware datetime of year 9999 was taken: its rows made `hb list` and `hb report queue`
    fail "out of range" for the whole workspace east of UTC. "garbage" opened, and only the calls
    that read the time failed; 5 was a TypeError."""
    with pytest.raises(InvalidInput) as refused:
        Ledger.open(workspace, now=now)
    assert str(refused.value).startswith(said)
    assert list(workspace.iterdir()) == []


def test_a_now_callable_is_held_to_the_years_each_time_it_is_called(db_url: str, workspace: Path) -> None:
    times = iter([datetime(2026, 5, 1, 9, tzinfo=UTC), FAR, datetime(2026, 5, 1, 10, tzinfo=UTC)])
    with Ledger.open(workspace, db=db_url, now=lambda: next(times)) as ledger:
        first = ledger.add("kept")
        with pytest.raises(InvalidInput, match="outside the years 1970 to 2200"):
            ledger.add("from the far future")
        assert [t["id"] for t in ledger.list()] == [first["id"]]
        assert first["created_at"].startswith("2026-05-01T")


@pytest.mark.parametrize("call", ["add", "add_todo"])
def test_a_title_that_is_not_text_is_refused_by_name(workspace: Path, call: str) -> None:
    """add(5) was an AttributeError ('int' object has no attribute 'strip')."""
    with Ledger.open(workspace, now=NOW) as ledger:
        with pytest.raises(InvalidInput, match=r"^title: int is not text"):
            getattr(ledger, call)(5)
        assert ledger.list(status="all") == []


@pytest.mark.parametrize(
    "limit",
    [0, -1, 2.5, True, "3", 2**63, 10**5000],
    ids=["0", "-1", "2.5", "True", "text", "2**63", "10**5000"],
)
def test_a_limit_hb_list_refuses_is_refused_by_list_ready_and_report(
    db_url: str, workspace: Path, limit: Any
) -> None:
    """list(limit=0) was [], list(limit=-1) every task, list(limit=2.5) a raw IntegrityError,
    where `hb list --limit` and ready and report refused them."""
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        ledger.add("a")
        ledger.add("b")
        for call in (
            lambda: ledger.list(limit=limit),
            lambda: ledger.iter_list(limit=limit),  # at once, not when iterated
            lambda: ledger.ready(limit=limit),
            lambda: ledger.report("queue", limit=limit),
        ):
            with pytest.raises(InvalidInput, match=r"^--limit .*: give a positive whole number of rows"):
                call()
        assert [t["title"] for t in ledger.list(limit=1)] == ["a"]
        assert len(ledger.list(limit=2**63 - 1)) == 2


def test_one_string_where_a_list_is_taken_is_a_list_of_one(db_url: str, workspace: Path) -> None:
    """after="task-x" waited for tasks "t", "a", ... ("--after t: no task"); sync(only="todo")
    was "unknown file kind 't'"."""
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        first = ledger.add("first")
        second = ledger.add("second", after=first["id"])
        assert second["after"] == [first["id"]]
        third = ledger.add("third")
        assert ledger.update(third["id"], after=second["id"])["after"] == [second["id"]]
        assert ledger.update(third["id"], after="none")["after"] == []
        ledger.add_todo("write the notes")
        synced = ledger.sync(only="todo")
        assert (workspace / "TODO.md").read_text().count("write the notes") == 1
        assert synced["changed"]


def test_a_closed_ledger_refuses_every_call_and_closing_again_is_harmless(
    db_url: str, workspace: Path
) -> None:
    """A call after close() opened a new connection; on SQLite, the file removed meanwhile, it
    made an empty ledger in its place and failed "no such table: settings"."""
    ledger = Ledger.open(workspace, db=db_url, now=NOW)
    task = ledger.add("kept")
    with ledger:
        pass
    ledger.close()  # again: nothing happens
    if not db_url.startswith("postgresql"):
        for name in ("heartbeat.db", "heartbeat.db-wal", "heartbeat.db-shm"):
            (workspace / ".agent" / "state" / name).unlink(missing_ok=True)
    for call in (
        lambda: ledger.add("after close"),
        lambda: ledger.list(),
        lambda: ledger.get(task["id"]),
        lambda: ledger.pop(),
        lambda: ledger.check(),
        lambda: ledger.engine,
        lambda: ledger.guard_holder(),
    ):
        with pytest.raises(InvalidState, match=r"^this Ledger is closed"):
            call()
    if not db_url.startswith("postgresql"):
        assert list((workspace / ".agent" / "state").iterdir()) == []  # no empty ledger made
    else:
        with Ledger.open(workspace, db=db_url) as again:
            assert [t["title"] for t in again.list()] == ["kept"]


def test_a_stream_of_a_closed_ledger_is_refused_too(db_url: str, workspace: Path) -> None:
    """It was "Cannot operate on a closed database" on SQLite, an AttributeError ('NoneType' has
    no attribute 'rollback') on PostgreSQL."""
    ledger = Ledger.open(workspace, db=db_url, now=NOW)
    for title in ("a", "b"):
        ledger.add(title)
    tasks = ledger.iter_list(status="all")
    assert next(tasks)["title"] == "a"
    ledger.close()
    with pytest.raises(InvalidState, match=r"^this Ledger is closed"):
        next(tasks)


@contextmanager
def _locked_by_another(workspace: Path) -> Iterator[None]:
    """The workspace's SQLite ledger held in an exclusive transaction by another connection."""
    with closing(
        sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db", isolation_level=None)
    ) as other:
        other.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")


def test_a_ledger_locked_past_the_busy_timeout_is_busy_exit_75(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API raised sqlite3's own "database is locked" where the CLI exits 75 (SPEC.md 9: the
    API's errors are heartbeat.errors exceptions carrying the CLI's exit code)."""
    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    with Ledger.open(workspace, now=NOW) as ledger:
        ledger.add("first")
        with _locked_by_another(workspace), pytest.raises(Busy) as busy:
            ledger.add("waits")
        assert isinstance(busy.value, DatabaseBusy) and busy.value.exit_code == 75
        assert (
            str(busy.value) == "busy: another process held the ledger's database locked past 30 s; try again"
        )
        assert isinstance(busy.value.__cause__, sqlite3.OperationalError)  # the driver's, kept
        assert [t["title"] for t in ledger.list()] == ["first"]


@pytest.mark.parametrize("block", ["write", "guard"])
def test_the_apis_blocks_are_busy_exit_75_on_a_locked_ledger_too(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, block: str
) -> None:
    """Ledger.write() and Ledger.guard() (context managers, which the methods' translation left
    out) raised sqlite3's own "database is locked" (SQLAlchemy's wrapping of it for write(), whose
    transaction begins at its first statement)."""
    from sqlalchemy import text

    monkeypatch.setattr(sqlite_settings, "BUSY_TIMEOUT_MS", 200)
    with Ledger.open(workspace, now=NOW) as ledger:
        ledger.add("first")
        with (
            _locked_by_another(workspace),
            pytest.raises(DatabaseBusy) as busy,
            getattr(ledger, block)() as held,
        ):
            if block == "guard":
                pytest.fail("the guard was taken on a locked ledger")
            held.execute(text("SELECT count(*) FROM tasks"))  # a write transaction's first step
        assert busy.value.exit_code == 75
        # free again, and a domain error from inside a block goes through
        with ledger.guard(), pytest.raises(NotFound):
            ledger.get("task-none")
        with pytest.raises(ValueError, match="the caller's own"), ledger.write():
            raise ValueError("the caller's own")
        assert [t["title"] for t in ledger.list()] == ["first"]


def test_a_database_error_is_a_domain_error_with_the_drivers_as_its_cause(
    workspace: Path,
) -> None:
    """A file that is no ledger: sqlite3.DatabaseError from open, now the CLI's one line."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True)
    (state / "heartbeat.db").write_bytes(b"not a database, " * 512)
    with pytest.raises(DatabaseError) as failed:
        Ledger.open(workspace)
    assert failed.value.exit_code == 1
    assert str(failed.value) == "database error: file is not a database"
    assert isinstance(failed.value.__cause__, sqlite3.DatabaseError)


def test_interrupts_and_domain_errors_go_through_as_they_are(workspace: Path) -> None:
    with Ledger.open(workspace, now=NOW) as ledger:
        with pytest.raises(NotFound) as missing:
            ledger.get("task-none")
        assert missing.value.__cause__ is None

        def interrupted() -> datetime:
            raise KeyboardInterrupt

        ledger.ctx.now = interrupted
        with pytest.raises(KeyboardInterrupt):
            ledger.add("never")
