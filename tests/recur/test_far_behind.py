"""A TODO.RECUR.md rule whose Next lies centuries back (a year typed ``0002``) is caught up at
once: its missed periods are counted, not stepped through (``hb heartbeat`` with
``recur.materialize`` took a minute on an hourly rule, ``hb recur due`` half of one)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner
from tests.sync.helpers import read, recur_text, write

NOW = "2026-12-06T08:30:00Z"
HOURLY = "- [ ] [Next](0002-01-01 00:00), [Repeat](every 1 hour) | Water the plants."


def test_a_rule_centuries_behind_is_due_once_and_moves_past_now(hb_db: Runner, workspace: Path) -> None:
    write(workspace / "TODO.RECUR.md", recur_text(HOURLY))
    hb_db("init")
    hb_db("--now", NOW, "sync")

    [due] = json.loads(hb_db("--now", NOW, "recur", "due", "--json").stdout)
    # every hour from 0002-01-01 00:00 through 2026-12-06 08:00 (the first one included)
    assert (due["missed"], due["period"], due["runs"]) == (17_750_168, "2026-12-06T08:00:00Z", 1)

    hb_db("config", "set", "recur.materialize", "true")
    hb_db("--now", NOW, "heartbeat")
    hb_db("--now", NOW, "sync")
    assert "- [ ] [Next](2026-12-06 09:00), [Repeat](every 1 hour) | Water the plants." in read(
        workspace / "TODO.RECUR.md"
    )
    assert "| 0002-01-01 00:00 Water the plants.\n" in read(workspace / "TODO.md")
