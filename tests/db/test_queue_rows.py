"""What a pop and a completion leave in the ledger, the same on both backends (PostgreSQL writes
them in one statement each: the claim or completion with its runs and outcome rows)."""

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


def test_a_pop_and_a_completion_write_their_runs_and_outcome_rows(ledger: Ledger) -> None:
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
    popped = last_run_entry(timestamp=START + timedelta(seconds=90), status="in_progress", **fields)
    completed = last_run_entry(
        timestamp=START + timedelta(seconds=180), status="completed", outcome={"pages": 3}, **fields
    )
    assert runs == [
        {
            "kind": "pop",
            "scope": None,
            "status": "ok",
            "task_id": added["id"],
            "worker": "w1",
            "record": popped,
            "detail": {"claim": got["claim"]},
        },
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
    assert list(runs[1]["record"]) == list(completed)  # key order too: last-run.json is written from it
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
