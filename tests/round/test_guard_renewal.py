"""The workspace guard renews itself while its tick runs (issue 15): a tick longer than
``heartbeat.guard`` is not taken for an abandoned one; a holder that stopped still expires."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from heartbeat import Ledger
from heartbeat.context import Context
from heartbeat.db.models import Run
from heartbeat.errors import Busy
from tests.conftest import Runner

LIFETIME_S = 2.0


def test_a_tick_longer_than_the_guard_is_not_taken_over(
    db_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hb = Runner({"HB_DATABASE_URL": db_url})
    hb("init")
    hb("config", "set", "heartbeat.guard", f"{LIFETIME_S:g}s")
    answers: list[str] = []

    def a_long_step(ctx: Context) -> None:
        """A step of the tick that takes three lifetimes of the guard; meanwhile pokes knock."""
        started = time.monotonic()
        while time.monotonic() - started < 3 * LIFETIME_S:
            with Ledger.open(workspace=workspace, db=db_url) as other:
                try:
                    other.poke("may I run now?")
                except Busy:
                    answers.append("busy")
                else:
                    answers.append("took the guard over")
            time.sleep(0.25)

    monkeypatch.setattr("heartbeat.ops.round._read_checklist", a_long_step)
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        tick = ledger.heartbeat()
    assert len(answers) >= 6 and set(answers) == {"busy"}
    assert not [t for t in threading.enumerate() if t.name.startswith("hb-guard-renewal")]
    with Ledger.open(workspace=workspace, db=db_url) as ledger, ledger.read() as s:
        run = s.get(Run, tick["run"])
        assert run is not None
        assert (run.status, run.guard) == ("ok", None)  # released by its holder, not expired
        assert "finished_after_expiry" not in (run.detail or {})
        assert run.expires_at is not None and run.started_at is not None
        assert (run.expires_at - run.started_at).total_seconds() > 2 * LIFETIME_S  # it was renewed
        assert s.scalars(select(Run).where(Run.kind == "poke")).first() is None
    assert hb.json("poke", "now it is free")["title"] == "now it is free"


def test_a_holder_that_stops_renewing_still_expires(db_url: str, workspace: Path) -> None:
    """The renewal is the holder's: once its block has ended (the process gone), nobody renews."""
    from heartbeat.ops.guard import acquire, renewed

    hb = Runner({"HB_DATABASE_URL": db_url})
    hb("init")
    with Ledger.open(workspace=workspace, db=db_url, now="2026-05-01T10:00:00Z") as ledger:
        held = acquire(ledger.ctx, "heartbeat")
        with renewed(ledger.ctx, held):
            pass  # the holder dies right after: its row stays, unrenewed
    hb("--now", "2026-05-01T10:09:59Z", "poke", "too early", code=75)
    hb("--now", "2026-05-01T10:10:00Z", "poke", "taken over")
