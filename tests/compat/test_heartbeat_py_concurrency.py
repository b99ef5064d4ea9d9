"""Four processes drain one heartbeat.py queue through the drop-in: each task exactly once.

The script itself, run this way, hands the same task to two processes, loses tasks and
leaves half-written JSON behind (it reads and rewrites tasks.json with no lock). The drop-in
claims in one ledger transaction and writes the files under the workspace's file lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.compat.conftest import HeartbeatPy
from tests.conftest import Runner

WORKER = Path(__file__).with_name("pop_worker.py")
ROOT = Path(__file__).resolve().parents[2]
TASKS = 200
PROCESSES = 4


@pytest.mark.slow
def test_four_processes_complete_every_task_exactly_once(
    hbpy: HeartbeatPy, hb: Runner, db_url: str, project: Path, tmp_path: Path
) -> None:
    added = [hbpy.add(f"job {i}", "--priority", ("high", "medium", "low")[i % 3]) for i in range(TASKS)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HB_DATABASE_URL": db_url}
    env.pop("HB_NOW", None)
    outs = [tmp_path / f"w{i}.json" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), f"w{i}", str(out)],
            cwd=project / "src",
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, out in enumerate(outs)
    ]
    for p in procs:
        _, err = p.communicate(timeout=900)
        assert p.returncode == 0, err
    logs = [json.loads(out.read_text()) for out in outs]
    handed = Counter(task_id for log in logs for task_id in log)
    assert set(handed) == set(added) and set(handed.values()) == {1}, "a task was handed out twice or lost"
    assert sum(1 for log in logs if log) > 1, "the work should spread over the processes"

    doc = hbpy.doc()
    assert (doc["pending"], doc["in_progress"], doc["failed"]) == ([], [], [])
    completed = [t["id"] for t in doc["completed"]]
    assert sorted(completed) == sorted(added), "tasks.json lost or duplicated a task"
    last_run = json.loads(hbpy.text("last-run.json") or "")
    assert last_run["status"] == "completed" and last_run["task_id"] == completed[-1]
    outcomes = hb.json("sql", "SELECT task_id, result FROM outcomes")
    assert sorted(r["task_id"] for r in outcomes) == sorted(added)
    by_worker = {task_id: f"w{i}" for i, log in enumerate(logs) for task_id in log}
    results = {r["task_id"]: r["result"] for r in outcomes}  # JSON text on SQLite, decoded on PostgreSQL
    results = {k: json.loads(v) if isinstance(v, str) else v for k, v in results.items()}
    assert results == {task_id: {"worker": name} for task_id, name in by_worker.items()}
    assert {t["status"] for t in hb.json("list", "--all")} == {"done"}
