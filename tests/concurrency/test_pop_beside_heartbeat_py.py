"""hb pop with ``sync.auto_export`` while the claude-skills heartbeat.py pops from tasks.json.

hb reads the file's hand edits, then claims; a ``heartbeat.py pop`` landing between the two
moves the same task to in_progress. The export after the claim sees it: hb's claim is undone
before anyone is handed the task, and the pop goes on as if heartbeat.py had popped first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heartbeat.db import queue as queue_db
from tests.conftest import Runner
from tests.sync.test_writeback import NOW, seed_queue, statuses


def heartbeat_py_pop(path: Path) -> str:
    """The claude-skills heartbeat.py's ``pop``: pending[0] to the end of in_progress, the file
    rewritten in place with ``json.dump(indent=2)``."""
    tasks = json.loads(path.read_text())
    task = tasks["pending"].pop(0)
    tasks["in_progress"].append(task)
    with open(path, "w") as fh:
        json.dump(tasks, fh, indent=2)
    return str(task["id"])


def heartbeat_py_add(path: Path, task_id: str) -> None:
    tasks = json.loads(path.read_text())
    tasks["pending"].append({"id": task_id, "priority": "low", "description": f"do {task_id}"})
    with open(path, "w") as fh:
        json.dump(tasks, fh, indent=2)


def _between_read_and_claim(monkeypatch: pytest.MonkeyPatch, runtime: Any) -> list[Any]:
    """``runtime`` runs once, after hb read the file's edits and before its claim."""
    real = queue_db.pop
    ran: list[Any] = []

    def racing(*args: Any, **kwargs: Any) -> queue_db.PopResult:
        if not ran:
            ran.append(runtime())
        return real(*args, **kwargs)

    monkeypatch.setattr(queue_db, "pop", racing)
    return ran


def test_a_task_heartbeat_py_pops_as_hb_claims_it_is_not_handed_out_twice(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db("config", "set", "sync.auto_export", "true")
    ran = _between_read_and_claim(monkeypatch, lambda: heartbeat_py_pop(path))
    result = hb_db("--now", NOW, "pop", "--json", code=12)  # heartbeat.py's t1: a claim without a record
    assert ran == ["t1"]
    assert "t1: another program (heartbeat.py) popped it from tasks.json as hb claimed it" in result.stderr
    assert result.stdout == ""  # nobody was handed t1 by hb
    shown = hb_db.json("show", "t1")
    assert shown["status"] == "doing" and shown["claimed_by"] is None
    assert statuses(path) == {"pending": ["t2"], "in_progress": ["t1"], "completed": []}
    # as if heartbeat.py had popped first: hb's next pop sees its task as a stale claim
    hb_db("--now", NOW, "pop", code=12)
    assert hb_db.json("--now", NOW, "pop", "--accept-stale")["id"] == "t1"  # only when asked to


def test_an_add_between_the_read_and_the_claim_is_no_collision(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db("config", "set", "sync.auto_export", "true")
    _between_read_and_claim(monkeypatch, lambda: heartbeat_py_add(path, "t3"))
    result = hb_db("--now", NOW, "pop", "--json")
    assert json.loads(result.stdout)["id"] == "t1" and "another program" not in result.stderr
    assert hb_db.json("show", "t1")["claimed_by"] is not None
    assert statuses(path) == {"pending": ["t2", "t3"], "in_progress": ["t1"], "completed": []}
