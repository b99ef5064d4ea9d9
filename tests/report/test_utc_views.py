"""The *_utc views show every time as ISO 8601 in UTC with its Z, for browsing tools."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from heartbeat.db.views import VIEW_NAMES
from tests.conftest import Runner

ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def test_utc_views_carry_the_zone_and_the_same_instants(hb_db: Runner) -> None:
    added = hb_db.json("--now", "2026-05-01T09:30:15+02:00", "add", "Ship it", "--due", "2026-05-02T17:00Z")
    hb_db("--now", "2026-05-01T10:00Z", "done", added["id"])

    [row] = hb_db.json("sql", "SELECT id, due_at, created_at, completed_at, status FROM tasks_utc")
    assert row["id"] == added["id"] and row["status"] == "done"
    assert row["due_at"] == "2026-05-02T17:00:00.000000Z"
    assert row["created_at"] == "2026-05-01T07:30:15.000000Z"
    assert row["completed_at"] == "2026-05-01T10:00:00.000000Z"
    [outcome] = hb_db.json("sql", "SELECT task_id, completed_at, claimed_at FROM outcomes_utc")
    assert outcome == {
        "task_id": added["id"],
        "completed_at": "2026-05-01T10:00:00.000000Z",
        "claimed_at": None,
    }


def test_every_utc_view_reads_on_both_backends(hb_db: Runner) -> None:
    hb_db("--now", "2026-05-01T09:00Z", "add", "one")
    for name in (v for v in VIEW_NAMES if v.endswith("_utc")):
        rows = hb_db.json("sql", f"SELECT * FROM {name}")
        for row in rows:
            for column, value in row.items():
                if column.endswith("_at") or column == "at":
                    assert value is None or ISO_Z.fullmatch(value), (name, column, value)
                    if value is not None:
                        assert datetime.fromisoformat(value).tzinfo == UTC
    assert json.loads(hb_db("sql", "SELECT count(*) AS n FROM tasks_utc", "--format", "json").stdout) == [
        {"n": 1}
    ]
