"""One task id in two queues is two tasks (SPEC 2.1: an id is told apart by its scope) in the
failure and notification reports and in the failure_reasons view."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from heartbeat.db import migrate
from heartbeat.db.engine import make_engine
from tests.conftest import Runner

NOW = "2026-05-02T00:00:00Z"
Q = "_a_extension.q"


def _two_tasks_named_same(hb: Runner, workspace: Path) -> None:
    """A legacy task ``same`` and a scoped task ``same``: each notified about, then failed for good."""
    hb("init", "--timezone", "UTC")
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "tasks.json").write_text(
        json.dumps(
            {
                "pending": [{"id": "same", "description": "legacy", "next_action": "do it"}],
                "in_progress": [],
                "completed": [],
                "_a_extension": {"q": [{"order": 1, "task_id": "same", "next_action": "do it"}]},
            }
        )
    )
    hb("import", "tasks-json")
    for scope in ("", Q):
        hb("--now", "2026-05-01T12:00:00Z", "notify", "same", "--scope", scope, "--risk", "P1", code=None)
        hb("--now", "2026-05-01T12:01:00Z", "pop", "--scope", scope)
        hb("--now", "2026-05-01T12:02:00Z", "fail", "same", "--scope", scope, "--reason", "boom", "--final")


def _rows(hb: Runner, kind: str, by: str) -> list[dict[str, Any]]:
    doc = json.loads(hb("--now", NOW, "report", kind, "--by", by, "--format", "json").stdout)
    rows: list[dict[str, Any]] = doc["rows"]
    return rows


def test_failures_count_a_task_by_its_scope_and_id(hb_db: Runner, workspace: Path) -> None:
    hb = hb_db
    _two_tasks_named_same(hb, workspace)
    [reason] = _rows(hb, "failures", "reason")
    assert (reason["reason"], reason["failures"], reason["tasks"]) == ("boom", 2, 2)
    [day] = _rows(hb, "failures", "day")
    assert (day["day"], day["failures"], day["tasks"], day["final_failures"]) == ("2026-05-01", 2, 2, 2)
    [skill] = _rows(hb, "failures", "skill")
    assert (skill["failures"], skill["tasks"], skill["retries"]) == (2, 2, 0)
    assert {(r["scope"], r["tasks"]) for r in _rows(hb, "failures", "scope")} == {("", 1), (Q, 1)}
    assert {(r["scope"], r["task_id"], r["failures"]) for r in _rows(hb, "failures", "task")} == {
        ("", "same", 1),
        (Q, "same", 1),
    }
    viewed = json.loads(hb("sql", "SELECT * FROM failure_reasons", "--format", "json").stdout)
    assert [(r["rank"], r["reason"], r["failures"], r["tasks"], r["final_failures"]) for r in viewed] == [
        (1, "boom", 2, 2, 2)
    ]


def test_notifications_have_a_row_per_task_not_per_id(hb_db: Runner, workspace: Path) -> None:
    hb = hb_db
    _two_tasks_named_same(hb, workspace)
    rows = _rows(hb, "notifications", "task")
    assert [(r["scope"], r["task_id"], r["notifications"]) for r in rows] == [("", "same", 1), (Q, "same", 1)]


def test_failure_reasons_steps_down_to_0002s_definition_and_up_again(db_url: str) -> None:
    """Below 0012 the view counts distinct ids again (one task here); at the head, two."""
    from sqlalchemy import insert

    from heartbeat.db.models import Error

    engine = make_engine(db_url)
    try:
        migrate.upgrade(engine, "head")
        at = datetime(2026, 5, 1, tzinfo=UTC)
        with engine.begin() as conn:
            conn.execute(
                insert(Error),
                [
                    {"scope": scope, "task_id": task_id, "at": at, "reason": "boom", "final": final}
                    for scope, task_id, final in (("", "same", True), ("q", "same", False), ("", None, False))
                ],
            )

        def viewed() -> list[tuple[Any, ...]]:
            with engine.connect() as conn:
                found = conn.exec_driver_sql(
                    "SELECT rank, reason, failures, tasks, final_failures FROM failure_reasons"
                )
                return [tuple(row) for row in found]

        assert viewed() == [(1, "boom", 3, 2, 1)]
        migrate.downgrade(engine, "0011")
        assert viewed() == [(1, "boom", 3, 1, 1)]
        migrate.upgrade(engine, "head")
        assert viewed() == [(1, "boom", 3, 2, 1)]
    finally:
        engine.dispose()
