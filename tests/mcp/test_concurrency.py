"""Two hb mcp servers on one ledger, each with its own client, drain one queue: exactly once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from heartbeat import Ledger
from tests.mcp.conftest import call, mcp_session, run

TASKS = 200
TIME_LIMIT = 300  # seconds for the whole drain: a hang fails the test instead of stalling the suite


def seed(workspace: Path, db: str, n: int) -> None:
    doc = {
        "pending": [
            {"id": f"task-{i:04d}", "priority": "medium", "description": f"job {i}"} for i in range(n)
        ],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    path = workspace / "seed-tasks.json"
    path.write_text(json.dumps(doc))
    with Ledger.open(workspace=workspace, db=db) as ledger:
        ledger.import_file("tasks-json", path)


@pytest.mark.slow
def test_two_servers_two_clients_complete_every_task_exactly_once(db_url: str, workspace: Path) -> None:
    seed(workspace, db_url, TASKS)
    done: dict[str, list[str]] = {"a": [], "b": []}

    async def drain(session: ClientSession, name: str, start: anyio.Event) -> None:
        await start.wait()
        for _ in range(TASKS + 1):  # bounded: at most every task, then the empty answer
            got = await call(session, "pop", worker=name)
            task = got["task"]
            if task is None:
                assert got["reason"] == "no pending tasks"
                return
            completed = await call(session, "complete", id=task["id"], claim=task["claim"], outcome=name)
            assert completed["status"] == "done"
            done[name].append(task["id"])
        raise AssertionError(f"{name} popped more than {TASKS} tasks")

    async def main() -> None:
        start = anyio.Event()
        with anyio.fail_after(TIME_LIMIT):
            async with (
                mcp_session(workspace, db=db_url) as first,
                mcp_session(workspace, db=db_url) as second,
                anyio.create_task_group() as group,
            ):
                group.start_soon(drain, first, "a", start)
                group.start_soon(drain, second, "b", start)
                start.set()  # both servers are up: they pop at the same time

    run(main)
    every = done["a"] + done["b"]
    assert len(every) == TASKS and len(set(every)) == TASKS, "a task was completed twice or lost"
    assert done["a"] and done["b"], "both servers should have taken work"
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        rows = ledger.sql("SELECT task_id, worker, result FROM outcomes")
        assert Counter(r["task_id"] for r in rows) == Counter(every)
        assert {r["task_id"] for r in rows if r["worker"] == "a"} == set(done["a"])
        assert {r["status"] for r in ledger.list(status="all")} == {"done"}
