"""Eight workers, 2,000 tasks, 1 s leases, work past the lease, renewals, fails, takeovers (issue 15):
no task completed twice, none lost, and every completion closed the task's last claim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.concurrency.test_drain import _seed_queue
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("claim_worker.py")
TASKS = 2000
PROCESSES = 8
DEADLINE_S = 400  # each worker gives up (and fails the test) past this


def _sql(hb: Runner, query: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = hb.json("sql", query)
    return rows


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value  # SQLite text, PostgreSQL a value


def _run_workers(workspace: Path, db: str, out_dir: Path) -> list[tuple[str, str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [out_dir / f"claims-w{i}.json" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(workspace), db, f"w{i}", str(i), str(out), str(DEADLINE_S)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, out in enumerate(outs)
    ]
    for p in procs:
        _, err = p.communicate(timeout=DEADLINE_S + 120)
        assert p.returncode == 0, err
    entries: list[tuple[str, str, str]] = []
    for out in outs:
        entries.extend((kind, task_id, claim) for kind, task_id, claim in json.loads(out.read_text()))
    return entries


@pytest.mark.slow
def test_eight_workers_with_one_second_leases_lose_and_double_nothing(
    db_url: str, workspace: Path, tmp_path: Path
) -> None:
    hb = Runner({"HB_DATABASE_URL": db_url})
    _seed_queue(workspace, db_url, TASKS)
    hb("config", "set", "queue.max_attempts", "1000")  # a fail is always retried: none may end failed
    logs = _run_workers(workspace, db_url, tmp_path)

    completed: dict[str, list[str]] = {}
    for kind, task_id, claim in logs:
        if kind == "complete":
            completed.setdefault(task_id, []).append(claim)
    assert len(completed) == TASKS, "a task was lost"
    assert all(len(claims) == 1 for claims in completed.values()), "a task was completed twice"
    assert any(kind == "lost" for kind, _, _ in logs), "the run should have fenced late holders"
    assert any(kind == "fail" for kind, _, _ in logs), "the run should exercise retries"

    rows = _sql(hb, "SELECT id, status, claim FROM tasks")
    assert {r["status"] for r in rows} == {"done"}
    last_claim = {r["id"]: r["claim"] for r in rows}
    outcomes = _sql(hb, "SELECT task_id, claim FROM outcomes")
    assert sorted(o["task_id"] for o in outcomes) == sorted(last_claim), "one outcome per task"
    for outcome in outcomes:
        # the completion closed the task's last claim, the one its worker held
        assert outcome["claim"] == last_claim[outcome["task_id"]] == completed[outcome["task_id"]][0]
    # a claim writes no runs row (it is the task row's claim, above); a takeover writes one that
    # names whose claim it took and the new token
    takeovers = _sql(hb, "SELECT task_id, detail FROM runs WHERE kind = 'pop' AND task_id IS NOT NULL")
    assert takeovers, "the run should have taken stale claims over"
    for row in takeovers:
        detail = _json(row["detail"])
        assert detail["took_over_from"] and detail["claim"]
    ended = [claim for kind, _, claim in logs if kind in ("complete", "fail")]
    assert len(set(ended)) == len(ended), "every claim that ended had a token of its own"
    assert len({d for d in last_claim.values()}) == TASKS, "every claim has a token of its own"
