"""Many processes drain one queue: every task completed exactly once, attempts counted right."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from heartbeat import Ledger
from tests.conftest import Runner

WORKER = Path(__file__).with_name("drain_worker.py")
ROOT = Path(__file__).resolve().parents[2]
TASKS = 2000
PROCESSES = 8


def _seed_queue(workspace: Path, db: str, n: int) -> None:
    doc = {
        "pending": [
            {
                "id": f"task-{i:05d}",
                "priority": ["critical", "high", "medium", "low"][i % 4],
                "description": f"job {i}",
            }
            for i in range(n)
        ],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    path = workspace / "tasks.json"
    path.write_text(json.dumps(doc))
    with Ledger.open(workspace=workspace, db=db) as ledger:
        ledger.import_file("tasks-json", path)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _drain(workspace: Path, db: str, outs: list[Path]) -> list[list[Any]]:
    """One drain_worker process per ``outs`` file (10% of attempts fail); their logs, together."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(workspace), db, f"w{i}", "0.1", str(i), str(out)],
            env=_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, out in enumerate(outs)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    return [entry for out in outs for entry in json.loads(out.read_text())]


@pytest.mark.slow
def test_processes_drain_the_queue_exactly_once(db_url: str, workspace: Path, tmp_path: Path) -> None:
    _seed_queue(workspace, db_url, TASKS)
    outs = [tmp_path / f"w{i}.json" for i in range(PROCESSES)]
    logs = _drain(workspace, db_url, outs)
    completes = Counter(tid for kind, tid, _ in logs if kind == "complete")
    fails = Counter(tid for kind, tid, _ in logs if kind == "fail")
    assert len(completes) == TASKS and set(completes.values()) == {1}, "a task was completed twice or lost"
    assert sum(fails.values()) > 0, "the run should exercise retries"
    assert sum(1 for out in outs if json.loads(out.read_text())) > 1, "work should spread over workers"

    with Ledger.open(workspace=workspace, db=db_url) as ledger, ledger.read() as s:
        rows = s.execute(text("SELECT id, status, attempts FROM tasks")).all()
        assert {r.status for r in rows} == {"done"}
        for r in rows:
            assert r.attempts == 1 + fails[r.id], r.id
        outcomes = Counter(s.execute(text("SELECT task_id FROM outcomes")).scalars())
        assert len(outcomes) == TASKS and set(outcomes.values()) == {1}
        errors = Counter(s.execute(text("SELECT task_id FROM errors")).scalars())
        assert errors == fails
        # every claim is counted on its task (above); a claim writes no runs row of its own
        assert sum(r.attempts for r in rows) == TASKS + sum(fails.values())
        claimed = text("SELECT count(*) FROM runs WHERE kind = 'pop' AND status = 'ok'")
        assert s.execute(claimed).scalar_one() == 0


HOLDER = """
import sys, time
from heartbeat import Ledger
with Ledger.open(workspace=sys.argv[1], db=sys.argv[2] or None) as ledger:
    task = ledger.pop(worker="doomed", lease="1m")
    print(task["id"], flush=True)
    time.sleep(600)
"""


def test_a_killed_worker_s_task_is_recovered_after_its_lease(db_url: str, workspace: Path) -> None:
    hb = Runner({"HB_DATABASE_URL": db_url})
    victim = hb.json("add", "held by a worker that dies")
    other = hb.json("add", "the next job")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(workspace), db_url], env=_env(), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == victim["id"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    shown = hb.json("show", victim["id"])
    assert (shown["status"], shown["claimed_by"], shown["attempts"]) == ("doing", "doomed", 1)
    # within the lease the claim is honoured: the next pop takes the other task
    assert json.loads(hb("pop", "--worker", "w2").stdout)["id"] == other["id"]
    later = time.time() + 120
    from datetime import UTC, datetime

    after_lease = datetime.fromtimestamp(later, UTC).isoformat()
    result = hb("--now", after_lease, "pop", "--worker", "w3", code=12)
    assert victim["id"] in result.stderr
    hb("--now", after_lease, "clear-stale")
    recovered = json.loads(hb("--now", after_lease, "pop", "--worker", "w3").stdout)
    assert recovered["id"] == victim["id"]
    shown = hb.json("show", victim["id"])
    assert (shown["claimed_by"], shown["attempts"]) == ("w3", 2)
    hb("complete", victim["id"])


def test_processes_draining_with_auto_export_leave_the_file_as_the_ledger_has_it(
    db_url: str, workspace: Path, tmp_path: Path
) -> None:
    """sync.auto_export under concurrent workers: each export splices its own operation's task
    when nothing else changed since the file was rendered, and renders the whole file when another
    worker's operation came in between (or a failed task went back to pending). At the end the
    file must hold every task exactly once, done, as a whole render writes it."""
    tasks, processes = 150, 4
    _seed_queue(workspace, db_url, tasks)
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        ledger.config_set("sync.auto_export", "true")
        ledger.sync()  # .agent/state/tasks.json, written from the ledger
    logs = _drain(workspace, db_url, [tmp_path / f"w{i}.json" for i in range(processes)])
    assert Counter(tid for kind, tid, _ in logs if kind == "complete") == Counter(
        f"task-{i:05d}" for i in range(tasks)
    )
    text_now = (workspace / ".agent" / "state" / "tasks.json").read_text()
    doc = json.loads(text_now)
    assert (doc["pending"], doc["in_progress"], doc["failed"]) == ([], [], [])
    assert sorted(t["id"] for t in doc["completed"]) == [f"task-{i:05d}" for i in range(tasks)]
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        assert ledger.export_text("tasks-json") == text_now
