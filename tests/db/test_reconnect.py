"""A long-lived ledger on PostgreSQL outlives its connection: a server restart, a failover or an
idle timeout ends the session, and ``hb mcp`` (one ledger for the whole session) or a worker on
the Python API failed every call after it ("the connection is closed") until restarted."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from heartbeat import Ledger
from heartbeat.errors import DatabaseError, describe

pytestmark = pytest.mark.postgres


def _end_other_sessions(pg_url: str) -> int:
    """End every other session on the ledger's database, as a server restart does."""
    dsn = pg_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(dsn, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()) AS ended"
        ).fetchone()
    return int(ended[0]) if ended else 0


def test_the_call_after_the_server_ended_the_session_opens_a_new_one(pg_url: str, workspace: Path) -> None:
    with Ledger.open(workspace=workspace, db=pg_url) as ledger:
        first = ledger.add("Water the plants")["id"]
        assert _end_other_sessions(pg_url) >= 1

        with pytest.raises(DatabaseError) as ended:  # the call that meets it fails
            ledger.list()
        assert isinstance(ended.value.__cause__, psycopg.OperationalError)  # the driver's, kept
        said = describe(ended.value)
        assert said is not None and said[0].startswith("database error: ") and said[1] == 1

        assert [t["id"] for t in ledger.list()] == [first]  # the next opens a new connection
        task = ledger.pop(worker="w1")
        assert task is not None and task["id"] == first
        assert _end_other_sessions(pg_url) >= 1
        with pytest.raises(DatabaseError):
            ledger.complete(first, claim=task["claim"])  # not committed: the task is still claimed
        assert ledger.complete(first, claim=task["claim"])["status"] == "done"
        assert ledger.guard_holder() is None
        with ledger.guard():  # the guard's own connection use, after an ended session too
            pass
