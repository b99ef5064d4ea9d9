"""What a pop and a completion leave in the ledger, the same on both backends (PostgreSQL writes
them in one statement each: the claim alone, the completion with its runs and outcome rows)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.formats.tasks_json import last_run_entry

START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def ledger(db_url: str, workspace: Path) -> Iterator[Ledger]:
    ticks = iter(START + timedelta(seconds=90 * i) for i in range(100))
    with Ledger.open(workspace, db=db_url, now=lambda: next(ticks)) as opened:
        yield opened


def test_a_pop_writes_its_claim_and_a_completion_its_runs_and_outcome_rows(ledger: Ledger) -> None:
    added = ledger.add("Write the report", skill="writer", project_id="p1", agent_id="a1", user_id="u1")
    got = ledger.pop(worker="w1")  # at START + 90 s
    assert got is not None and got["id"] == added["id"]
    ledger.complete(got["id"], outcome={"pages": 3}, claim=got["claim"])  # at START + 180 s

    with ledger.ctx.read() as db:
        runs = db.dicts("SELECT kind, scope, status, task_id, worker, record, detail FROM runs ORDER BY pk")
        outcomes = db.dicts(
            "SELECT success, result, worker, claim, duration_s, attempt, task_id FROM outcomes"
        )
    runs = [{**r, "record": db.read_json(r["record"]), "detail": db.read_json(r["detail"])} for r in runs]
    fields = {
        "task_id": added["id"],
        "description": "Write the report",
        "assigned_skill": "writer",
        "project_id": "p1",
        "agent_id": "a1",
        "user_id": "u1",
    }
    completed = last_run_entry(
        timestamp=START + timedelta(seconds=180), status="completed", outcome={"pages": 3}, **fields
    )
    # the claim is on the task row (then on the outcome row that ends it): no runs row of its own
    assert runs == [
        {
            "kind": "complete",
            "scope": None,
            "status": "ok",
            "task_id": added["id"],
            "worker": "w1",
            "record": completed,
            "detail": None,
        },
    ]
    assert list(runs[0]["record"]) == list(completed)  # key order too: last-run.json is written from it
    assert [{**o, "result": db.read_json(o["result"]), "success": bool(o["success"])} for o in outcomes] == [
        {
            "success": True,
            "result": {"pages": 3},
            "worker": "w1",
            "claim": got["claim"],
            "duration_s": 90.0,
            "attempt": 1,
            "task_id": added["id"],
        }
    ]
    assert ledger.get(added["id"])["status"] == "done"


TRACES = [
    {"trace_id": "t-1", "decision_log": ["read", {"score": 1}]},
    {"trace_id": None, "decision_log": True},
    {},
    {"trace_id": 7, "decision_log": {"nested": [1, 2.5, "é", None, False]}},
    {"trace_id": "", "decision_log": "plain text"},
]


@pytest.fixture(params=["database", "python"])
def records_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Who builds the runs and outcome rows on SQLite: the database (3.38+), or Python (what an
    older SQLite gets). PostgreSQL's one-statement pop and completion build them in SQL always."""
    from heartbeat.db import queue
    from heartbeat.ops import queue as queue_ops

    if request.param == "python":
        monkeypatch.setattr(queue, "_sqlite_version", lambda: (3, 37, 2))
    queue_ops._dialect.cache_clear()
    yield request.param
    queue_ops._dialect.cache_clear()


def test_the_last_run_records_carry_each_tasks_trace_as_it_is(
    ledger: Ledger, workspace: Path, records_by: str
) -> None:
    """The completions' last-run.json objects (their runs rows; a pop writes none) hold the task's
    trace_id and decision_log as the task's object has them (any JSON value, null when missing),
    whoever builds them; a scoped task's record names its queue."""
    import json

    from heartbeat.ops.queue import _dialect

    assert _dialect(True).rows_in_sql is (records_by == "database")

    from heartbeat.formats.timestamps import format_timestamp

    pending = [
        {"id": f"t{i}", "priority": "high", "description": f"job {i}", **trace}
        for i, trace in enumerate(TRACES)
    ]
    scoped = {"order": 0, "task_id": "s0", "description": "scoped", **TRACES[0]}
    doc = {
        "pending": pending,
        "in_progress": [],
        "completed": [],
        "failed": [],
        "_b_extension": {"q": [scoped]},
    }
    src = workspace / "seed.json"
    src.write_text(json.dumps(doc))
    ledger.import_file("tasks-json", src)
    expected = []
    for scope, item in [("", t) for t in pending] + [("_b_extension.q", scoped)]:
        task_id = item.get("id") or item["task_id"]
        got = ledger.pop(scope=scope, worker="w1")
        assert got is not None and got.get("id", got.get("task_id")) == task_id
        ledger.complete(task_id, scope=scope, outcome={"ok": task_id}, claim=got["claim"])
        fields = {
            "timestamp": START,  # replaced below by each run's own time
            "task_id": task_id,
            "description": item["description"],
            "trace_id": item.get("trace_id"),
            "decision_log": item.get("decision_log"),
            "scope": scope or None,
        }
        expected.append(last_run_entry(status="completed", outcome={"ok": task_id}, **fields))
    with ledger.ctx.read() as db:
        runs = db.rows("SELECT record, started_at FROM runs WHERE record IS NOT NULL ORDER BY pk")
        records = [db.read_json(r) for r, _ in runs]
        times = [format_timestamp(db.read_time(t)) for _, t in runs]
    for record, at in zip(records, times, strict=True):
        assert record["timestamp"] == at
    expected = [{**e, "timestamp": at} for e, at in zip(expected, times, strict=True)]
    assert records == expected
    assert [list(r) for r in records] == [list(e) for e in expected]  # key order too


def test_every_queue_statement_prepares_against_the_schema_at_head(ledger: Ledger) -> None:
    """The queue's own statements (heartbeat/db/queue.py), each EXPLAINed on a fresh ledger at head
    on the backend it is for: their tables and columns exist and they parse."""
    import re

    from heartbeat.db import queue

    with ledger.ctx.read() as db:
        dialect = queue.Dialect("sqlite" if db.sqlite else "postgresql")
        other = "_pg" if db.sqlite else "_sqlite"
        names = [k for k in queue.SQL if other + "_" not in k + "_"]
        mine = "_sqlite_" if db.sqlite else "_pg_"
        assert any(mine in k + "_" for k in names)
        for name in names:
            sql = dialect.sql(name)
            params = {a or b: None for a, b in re.findall(r"(?<![:\w]):(\w+)|%\((\w+)\)s", sql)}
            try:
                db.raw.cursor().execute("EXPLAIN " + sql, params)
            except Exception as exc:
                raise AssertionError(f"queue statement {name}: {exc}") from exc


def test_the_claim_reads_no_task_it_does_not_need(ledger: Ledger, workspace: Path) -> None:
    """The common pop's claim (legacy and scoped) reads the ledger through its indexes only: no
    plan step scans the tasks table, however many tasks it holds. PostgreSQL read the old
    "no scoped queue exists" condition (``scope > ''``) with a sequential scan of every task."""
    import json

    from heartbeat.db import queue

    pending = [{"id": f"t{i}", "priority": "high", "description": f"job {i}"} for i in range(3000)]
    source = workspace / "seed-tasks.json"
    source.write_text(json.dumps({"pending": pending, "in_progress": [], "completed": [], "failed": []}))
    ledger.import_file("tasks-json", source)
    with ledger.ctx.read() as db:
        dialect = queue.Dialect("sqlite" if db.sqlite else "postgresql")
        params = {"scope": "", "now": START, "worker": "w", "lease_until": START, "claim": "c" * 24}
        for name in ("claim_checked_legacy", "claim_checked", "preflight", "any_scoped"):
            cur = db.raw.cursor()
            explain = "EXPLAIN QUERY PLAN " if db.sqlite else "EXPLAIN "
            cur.execute(explain + dialect.sql(name), params)
            plan = "\n".join(str(row[-1]) for row in cur.fetchall())
            if db.sqlite:
                assert "SCAN tasks" not in plan, f"{name}:\n{plan}"
            else:
                assert "Seq Scan on tasks" not in plan, f"{name}:\n{plan}"


def test_after_a_pop_the_ledgers_other_work_is_a_transaction_again(ledger: Ledger) -> None:
    """On PostgreSQL a pop and a completion are one statement each in autocommit, and leave the
    connection so for the next one; every other use of the ledger's connection gets it back in
    transaction mode: a write that fails half-way leaves nothing behind."""
    first = ledger.add("first")["id"]
    ledger.add("second")
    for _ in range(2):  # a pop, a completion, and a pop again: all lazy
        got = ledger.pop(worker="w")
        assert got is not None
        if got["id"] == first:
            ledger.complete(first, claim=got["claim"])
    with pytest.raises(RuntimeError, match="half-way"), ledger.ctx.write() as db:
        db.rows("UPDATE tasks SET title = 'changed' RETURNING pk")
        raise RuntimeError("half-way")
    with ledger.ctx.read() as db:
        assert sorted(r[0] for r in db.rows("SELECT title FROM tasks")) == ["first", "second"]
    assert ledger.fail(ledger.list()[0]["id"], reason="retried later")["retry"] is True
