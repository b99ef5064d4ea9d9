"""hb report failures --by task: each task's last reason is one seek of the errors' task index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from heartbeat import Ledger

START = datetime(2026, 5, 1, tzinfo=UTC)
NOW = "2026-06-01T00:00:00Z"


def _errors(ledger: Ledger, rows: list[tuple[str, str | None, int, str]]) -> None:
    """(scope, task_id, seconds after START, reason) rows, stored in the order given."""
    from sqlalchemy import insert

    from heartbeat.db.models import Error

    with ledger.engine.begin() as conn:
        for scope, task_id, second, reason in rows:  # one by one: pk follows the list
            at = START + timedelta(seconds=second)
            conn.execute(insert(Error), {"scope": scope, "task_id": task_id, "at": at, "reason": reason})


def test_last_reason_is_the_latest_in_the_window_also_for_errors_without_a_task(
    workspace: Path, db_url: str
) -> None:
    with Ledger.open(workspace=workspace, db=db_url, now=NOW) as ledger:
        _errors(
            ledger,
            [
                ("", "a", 10, "a first"),
                ("", "a", 20, "a tied, earlier row"),
                ("", "a", 20, "a tied, later row"),  # same time: the later row is the last
                ("", "a", 90_000, "a after the window"),
                ("", None, 5, "none first"),
                ("", None, 30, "none last"),
                ("q", None, 40, "none in q"),
                ("q", "a", 50, "a in q"),
            ],
        )
        doc = ledger.report("failures", by="task", until="2026-05-02T00:00:00Z")
    got = {(r["scope"], r["task_id"]): (r["failures"], r["last_reason"]) for r in doc["rows"]}
    assert got == {
        ("", "a"): (3, "a tied, later row"),
        ("", None): (2, "none last"),
        ("q", None): (1, "none in q"),
        ("q", "a"): (1, "a in q"),
    }


def test_last_reason_seeks_the_task_in_the_index_not_the_whole_queue(tmp_path: Path) -> None:
    """Searched by scope alone, every error of a queue was read and sorted for each of its tasks:
    quadratic in the queue's errors (20,000 in one queue took about two minutes)."""
    statements: list[str] = []
    with Ledger.open(workspace=tmp_path, now=NOW) as ledger:
        _errors(ledger, [("", None if i % 5 == 0 else f"t{i % 7}", i, f"r{i}") for i in range(40)])
        ledger.raw.set_trace_callback(statements.append)
        for since in (None, "2026-04-01"):
            assert ledger.report("failures", by="task", since=since)["rows"]
        ledger.raw.set_trace_callback(None)
        queries = [s for s in statements if "e.reason" in s]
        assert len(queries) == 2
        for sql in queries:
            plan: list[Any] = ledger.raw.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            subqueries = {row[0] for row in plan if row[-1].startswith("CORRELATED SCALAR SUBQUERY")}
            steps = [row[-1] for row in plan if row[1] in subqueries]
            assert len(subqueries) == 2 and len(steps) == 2, plan
            assert all(
                step.startswith("SEARCH e USING INDEX ix_errors_scope_task_id_at (scope=? AND task_id=?")
                for step in steps
            ), steps
