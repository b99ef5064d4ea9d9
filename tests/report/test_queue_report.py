"""hb report queue reads idle, ready and claimed tasks through three partial indexes.

Every status a task can be in (ready, blocked, a Markdown entry, claimed,
waiting, snoozed, done, failed, cancelled), in two queues and the legacy list:
the report equals counts and ages computed here from the rows. On SQLite the
queue's statements and the report read through the intended indexes, and the
partial-index conditions written in the code are the ones the models declare.
"""

from __future__ import annotations

import shutil
import statistics
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.reporting import reports

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
Q = "_round3_extension.ag_implementation_queue"
START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _fill(workspace: Path, url: str) -> datetime:
    """Tasks in every status, created an hour apart; returns the time the report is read at."""
    clock = [START]

    def now() -> datetime:
        clock[0] += timedelta(hours=1)
        return clock[0]

    target = workspace / "tasks.json"
    shutil.copy(FIXTURES / "tasks_scoped.json", target)
    with Ledger.open(workspace=workspace, db=url, now=now) as ledger:
        ledger.import_file("tasks-json", target)
        ids = [ledger.add(f"job {i}", scope="_q2_extension.work")["id"] for i in range(8)]
        ledger.add("a checklist line", source="todo")
        ledger.pop(scope="_q2_extension.work", worker="w1", lease="30d")  # claimed
        done = ledger.pop(scope="_q2_extension.work", worker="w1", lease="30d")
        assert done is not None
        ledger.complete(done.get("task_id") or done["id"], scope="_q2_extension.work")
        failed = ledger.pop(scope="_q2_extension.work", worker="w2", lease="30d")
        assert failed is not None
        ledger.fail(failed.get("task_id") or failed["id"], scope="_q2_extension.work", final=True)
        ledger.update(ids[5], scope="_q2_extension.work", status="waiting")
        ledger.update(ids[6], scope="_q2_extension.work", status="snoozed")
        ledger.cancel(ids[7], scope="_q2_extension.work")
        ledger.pop(scope=Q, worker="w3", lease="30d")
        return now()


@pytest.mark.parametrize("by", ["scope", "status"])
def test_queue_report_counts_every_status(db_url: str, workspace: Path, by: str) -> None:
    at = _fill(workspace, db_url)
    with Ledger.open(workspace=workspace, db=db_url, now=at) as ledger:
        tasks = ledger.list(status="all")
        doc = ledger.report("queue", by=by)
        with ledger.read() as s:
            from sqlalchemy import text

            created = {
                (scope, task_id): when
                for scope, task_id, when in s.execute(text("SELECT scope, id, created_at FROM tasks")).all()
            }
    statuses = {t["status"] for t in tasks}
    assert {"todo", "doing", "waiting", "snoozed", "done", "failed", "cancelled"} <= statuses
    groups: dict[tuple[str, ...], list[datetime]] = defaultdict(list)
    for t in tasks:
        when = created[(t["scope"] or "", t["id"])]
        when = when if isinstance(when, datetime) else datetime.fromisoformat(when)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        groups[(t["scope"] or "", t["status"]) if by == "scope" else (t["status"],)].append(when)
    keys = ("scope", "status") if by == "scope" else ("status",)
    got = {tuple(r[k] for k in keys): r for r in doc["rows"]}
    assert set(got) == set(groups)
    for key, stamps in groups.items():
        row = got[key]
        assert row["tasks"] == len(stamps), key
        if key[-1] in reports.ACTIVE:
            ages = [(at - c).total_seconds() for c in stamps]
            assert row["median_age_s"] == statistics.median(ages), key
            assert row["max_age_s"] == max(ages), key
        else:
            assert row["median_age_s"] is None, key


def _plans(con: Any, sql: str, params: dict[str, Any]) -> str:
    return " ; ".join(str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall())


def test_queue_and_report_statements_read_through_their_indexes(workspace: Path) -> None:
    url = str(workspace / ".agent" / "state" / "heartbeat.db")
    _fill(workspace, url)
    from heartbeat.db import queue

    d = queue.Dialect("sqlite")
    params = {"scope": Q, "now": "x", "worker": "w", "lease_until": "y", "id": "a", "status": "todo"}
    params["claim"] = "c"  # since issue 15 the claim sets its token
    with Ledger.open(workspace=workspace, db=url) as ledger:
        con = ledger.raw
        plan = _plans(con, d.sql("claim_checked_legacy"), params)
        assert "ix_tasks_ready" in plan and "ix_tasks_claimed" in plan
        # a candidate's unfinished dependencies: one probe of the dependency table's primary key
        assert "USING COVERING INDEX sqlite_autoindex_task_dependencies_1 (task_pk=?)" in plan
        assert "ix_tasks_scope_status_created_at" in _plans(con, d.sql("blocked"), params)
        assert "ix_tasks_claimed" in _plans(con, d.sql("stale"), params)
        idle = f"SELECT scope, status, COUNT(*) FROM tasks WHERE {reports.TASKS_IDLE} GROUP BY scope, status"
        assert "ix_tasks_scope_status_created_at" in _plans(con, idle, {})
        ready = f"SELECT scope, created_at FROM tasks WHERE {reports.TASKS_READY}"
        assert "ix_tasks_ready" in _plans(con, ready, {})
        # the heartbeat's latest run of a kind, as SQLAlchemy binds it
        latest = "SELECT max(runs.started_at) FROM runs WHERE runs.kind = :kind"
        for kind in ("seen", "hygiene", "check"):
            assert "ix_runs_kind_started_at" in _plans(con, latest, {"kind": kind}), kind
            assert con.execute(latest, {"kind": kind}).fetchall()  # and it runs


def test_partial_index_conditions_match_the_models() -> None:
    from heartbeat.db import queue
    from heartbeat.db.models import Base

    def where(table: str, name: str) -> str:
        [index] = [i for i in Base.metadata.tables[table].indexes if i.name == name]
        return str(index.dialect_options["sqlite"]["where"])

    assert where("tasks", "ix_tasks_ready") == queue.READY == reports.TASKS_READY
    assert where("tasks", "ix_tasks_scope_status_created_at") == queue.IDLE == reports.TASKS_IDLE
    assert where("tasks", "ix_tasks_claimed") == "status = 'doing'"


def test_queue_runs_stay_out_of_the_heartbeat_runs_index(workspace: Path) -> None:
    url = str(workspace / ".agent" / "state" / "heartbeat.db")
    _fill(workspace, url)
    with Ledger.open(workspace=workspace, db=url) as ledger:
        con = ledger.raw
        queue_runs = con.execute(
            "SELECT count(*) FROM runs WHERE kind IN ('pop', 'complete', 'fail', 'clear-stale')"
        ).fetchone()[0]
        indexed = con.execute(
            "SELECT count(*) FROM runs INDEXED BY ix_runs_kind_started_at "
            "WHERE kind = 'seen' OR kind = 'hygiene' OR kind = 'check'"
        ).fetchone()[0]
    assert queue_runs > 0 and indexed == 0
