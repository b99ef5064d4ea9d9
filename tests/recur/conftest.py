"""Helpers for the recurrence tests: a workspace in a chosen zone, direct ledger access."""

from __future__ import annotations

import os
from typing import Any

from heartbeat import Ledger
from tests.conftest import Runner


def open_ledger(runner: Runner, now: str | None = None) -> Ledger:
    """The ledger the runner's commands use (same workspace, same database)."""
    return Ledger.open(workspace=os.environ["HB_WORKSPACE"], db=runner.env.get("HB_DATABASE_URL"), now=now)


def rule(runner: Runner, rule_id: str) -> dict[str, Any]:
    """One recurrence as `hb recur list --json` shows it."""
    [found] = [r for r in runner.json("recur", "list") if r["id"] == rule_id]
    return found


def due_ids(runner: Runner, now: str, *extra: str) -> list[str]:
    return [r["id"] for r in runner.json("--now", now, "recur", "due", *extra)]
