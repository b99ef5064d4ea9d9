"""outcomes_by_day and outcomes_by_task (revision 0009) against numbers computed here.

Generated outcomes cover what the views' shortcuts must get right: tasks with no, one,
two and many timed outcomes; durations that are negative, whole, tied or NULL; a task
id in two scopes; days with no timed outcome and days with gaps between them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heartbeat import Ledger
from heartbeat.db import migrate
from tests.report.conftest import module_database, outcome_stats

START = datetime(2026, 5, 1, tzinfo=UTC)
COLUMNS = ("outcomes", "successes", "failures", "median_duration_s", "p95_duration_s")

# hb stores a duration as the microseconds between two times (timedelta.total_seconds())
durations = st.one_of(
    st.none(),
    st.sampled_from([0.0, 0.5, -0.5, -1.0, 1.0, 1.5, 2.0, 59.999999, 60.0]),
    st.integers(min_value=-5_000_000, max_value=5_000_000_000).map(lambda us: us / 10**6),
)
outcome = st.fixed_dictionaries(
    {
        "scope": st.sampled_from(["", "research"]),
        "task_id": st.sampled_from(["task-a", "task-b", "recur-c"]),
        "success": st.booleans(),
        "duration_s": durations,
        # minutes from START over six days, some days left empty
        "minute": st.integers(min_value=0, max_value=6 * 24 * 60 - 1),
    }
)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    workspace = tmp_path_factory.mktemp("views")
    with (
        module_database(request, workspace, "views") as url,
        Ledger.open(workspace=workspace, db=url) as ledger,
    ):
        yield ledger


def _store(ledger: Ledger, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from sqlalchemy import delete, insert

    from heartbeat.db.models import Outcome

    stored = [
        {
            "scope": r["scope"],
            "task_id": r["task_id"],
            "success": r["success"],
            "duration_s": r["duration_s"],
            "completed_at": START + timedelta(minutes=r["minute"], microseconds=i),
        }
        for i, r in enumerate(rows)
    ]
    with ledger.engine.begin() as conn:
        conn.execute(delete(Outcome))
        if stored:
            conn.execute(insert(Outcome), stored)
    return stored


def _check(viewed: list[dict[str, Any]], expected: dict[Any, dict[str, Any]], keys: tuple[str, ...]) -> None:
    got = {tuple(r[k] for k in keys): r for r in viewed}
    assert set(got) == {k if isinstance(k, tuple) else (k,) for k in expected}
    for key, e in expected.items():
        row = got[key if isinstance(key, tuple) else (key,)]
        assert {c: row[c] for c in COLUMNS} == {c: e[c] for c in COLUMNS}, key


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(outcome, max_size=60))
def test_outcomes_by_day_and_task_match_the_rows(ledger: Ledger, rows: list[dict[str, Any]]) -> None:
    stored = _store(ledger, rows)
    by_day = ledger.sql("SELECT * FROM outcomes_by_day")
    _check(by_day, outcome_stats(stored, lambda r: r["completed_at"].date().isoformat()), ("day",))
    assert [r["day"] for r in by_day] == sorted(r["day"] for r in by_day)
    by_task = ledger.sql("SELECT * FROM outcomes_by_task")
    _check(by_task, outcome_stats(stored, lambda r: (r["scope"], r["task_id"])), ("scope", "task_id"))


def _plan(ledger: Ledger, view: str) -> list[str]:
    with ledger.engine.connect() as conn:
        return [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN SELECT * FROM {view}")]


def test_outcomes_by_day_reads_days_as_ranges_of_the_time_index(tmp_path: Path) -> None:
    """No step of the plan reads the outcomes whole: each is a search of the time index."""
    with Ledger.open(workspace=tmp_path, db=str(tmp_path / "hb.db")) as ledger:
        reads = [step for step in _plan(ledger, "outcomes_by_day") if "outcomes" in step.split()]
    assert reads
    assert all(
        step.startswith("SEARCH ") and "USING COVERING INDEX ix_outcomes_completed_at_duration_s" in step
        for step in reads
    ), reads


def test_outcomes_by_task_reads_the_table_not_the_scope_index(tmp_path: Path) -> None:
    """Served from the per-scope index, the grouping looked up the table row of every outcome."""
    with Ledger.open(workspace=tmp_path, db=str(tmp_path / "hb.db")) as ledger:
        plan = _plan(ledger, "outcomes_by_task")
    assert not [step for step in plan if "ix_outcomes_scope_skill_source_duration_s" in step], plan
    assert "SCAN outcomes" in plan, plan


def test_downgrade_to_0008_restores_the_earlier_definitions(tmp_path: Path) -> None:
    """The two views of 0006 come back below 0009, with the same answers."""
    from heartbeat.db.engine import make_engine

    path = tmp_path / "hb.db"
    with Ledger.open(workspace=tmp_path, db=str(path)) as ledger:
        stored = _store(
            ledger,
            [
                {"scope": "", "task_id": "t", "success": i % 3 > 0, "duration_s": float(i), "minute": 700 * i}
                for i in range(9)
            ],
        )
        before = {v: ledger.sql(f"SELECT * FROM {v}") for v in ("outcomes_by_day", "outcomes_by_task")}
    engine = make_engine(str(path))
    try:
        migrate.downgrade(engine, "0008")
        with engine.connect() as conn:
            views = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'view'")
            defined = dict(views.all())
            after = {
                v: [dict(r._mapping) for r in conn.exec_driver_sql(f"SELECT * FROM {v}")]
                for v in ("outcomes_by_day", "outcomes_by_task")
            }
    finally:
        engine.dispose()
    assert "RECURSIVE days" not in defined["outcomes_by_day"]
    assert "NOT INDEXED" not in defined["outcomes_by_task"]
    assert len(stored) == 9
    for view, rows in before.items():
        assert [{c: r[c] for c in COLUMNS} for r in after[view]] == [{c: r[c] for c in COLUMNS} for r in rows]
