"""hb report notifications --by day: local days of the workspace's zone now, as the other reports'."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Runner

NOW = "2026-03-10T00:00:00Z"


def _days(hb: Runner, kind: str, *args: str) -> dict[str, int]:
    doc = json.loads(hb("--now", NOW, "report", kind, "--by", "day", "--format", "json", *args).stdout)
    column = "notifications" if kind == "notifications" else "failures"
    rows: list[dict[str, Any]] = doc["rows"]
    return {row["day"]: row[column] for row in rows}


def test_days_follow_the_zone_the_workspace_has_now(hb_db: Runner) -> None:
    """Decided in New York, reported in Tokyo: 04:30Z is March 7 in New York, March 8 in Tokyo.
    The report grouped by the day stored at the decision, so a window of Tokyo's March 8 listed
    March 7, and it told other days than hb report failures --by day for the same instants."""
    hb = hb_db
    hb("init", "--timezone", "America/New_York")
    task = hb.json("--now", "2026-03-07T12:00:00Z", "add", "remind me", "--next-action", "do it")["id"]
    for at in ("2026-03-08T04:30:00Z", "2026-03-08T13:00:00Z"):
        hb("--now", at, "notify", task, "--risk", "P1", code=None)
        hb("--now", at, "pop", "--id", task)
        hb("--now", at, "fail", task, "--reason", "boom")
    hb("config", "set", "timezone", "Asia/Tokyo")

    assert _days(hb, "notifications", "--since", "2026-03-08", "--until", "2026-03-09") == {"2026-03-08": 2}
    # every day of the window is listed, the quiet ones too, as in the failures and outcomes reports
    window = ("--since", "2026-03-07", "--until", "2026-03-10")
    assert _days(hb, "notifications", *window) == {"2026-03-07": 0, "2026-03-08": 2, "2026-03-09": 0}
    assert _days(hb, "failures", *window) == {"2026-03-07": 0, "2026-03-08": 2, "2026-03-09": 0}
    # without a window: the first decision's day to the last's, in Tokyo
    assert _days(hb, "notifications") == {"2026-03-08": 2}
