"""Helpers for the heartbeat-round tests: a workspace in Shanghai time, the recorded decisions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from heartbeat import Ledger
from heartbeat.db.models import Notification, Run
from tests.conftest import Runner

ZONE = "Asia/Shanghai"  # the tests run with TZ=UTC: the workspace zone differs from the machine's


@pytest.fixture
def sh(hb: Runner) -> Runner:
    """The CLI on a SQLite workspace whose timezone is Asia/Shanghai."""
    hb("init", "--timezone", ZONE)
    return hb


@pytest.fixture
def sh_db(hb_db: Runner) -> Runner:
    """The CLI on each backend in turn, workspace timezone Asia/Shanghai."""
    hb_db("init", "--timezone", ZONE)
    return hb_db


def db_of(runner: Runner) -> str | None:
    return runner.env.get("HB_DATABASE_URL")


def open_ledger(runner: Runner, now: str | None = None) -> Ledger:
    return Ledger.open(workspace=os.environ["HB_WORKSPACE"], db=db_of(runner), now=now)


def decisions(runner: Runner, kind: str = "reminder") -> list[dict[str, Any]]:
    """Every notifications row of ``kind``, oldest first."""
    with open_ledger(runner) as ledger, ledger.read() as s:
        rows = s.scalars(select(Notification).where(Notification.kind == kind).order_by(Notification.pk))
        return [
            {
                "task_id": n.task_id,
                "topic": n.topic,
                "decision": n.decision,
                "reason": n.reason,
                "risk": n.risk,
                "local_day": n.local_day,
                "blocker": n.blocker,
                "suggestion": n.suggestion,
                "message": n.message,
                "run_pk": n.run_pk,
            }
            for n in rows
        ]


def runs(runner: Runner, kind: str) -> list[dict[str, Any]]:
    """Every runs row of ``kind``, oldest first, as plain dicts."""
    with open_ledger(runner) as ledger, ledger.read() as s:
        rows = s.scalars(select(Run).where(Run.kind == kind).order_by(Run.pk))
        return [{c.key: getattr(r, c.key) for c in Run.__table__.columns} for r in rows]


def add(runner: Runner, title: str, *options: str, now: str = "2026-05-01T08:00") -> str:
    """Add a task at ``now`` (workspace time); its id."""
    result: str = runner("--now", now, "add", title, *options).stdout.strip()
    return result


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
