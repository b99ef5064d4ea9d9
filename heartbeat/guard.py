"""The workspace re-entrancy guard shared by ``hb heartbeat`` and ``hb poke`` (SPEC.md section 7).

The guard lives in the ledger, not in a lock file: a ``runs`` row whose
``guard`` column holds :data:`GUARD`. That column is UNIQUE, so two holders are
impossible on both backends; SQLite serialises the check-and-insert with
``BEGIN IMMEDIATE``, and on PostgreSQL the loser of a race trips the unique
index. A holder that dies (SIGKILL, power loss) leaves its row behind; once
the row's ``expires_at`` has passed (setting ``heartbeat.guard``, default
10 minutes) the next taker marks it ``expired`` and takes over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from heartbeat.clock import isoformat, parse_duration
from heartbeat.db.models import Run
from heartbeat.errors import Busy

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

GUARD = "workspace"  # one guard per ledger: the workspace's


@dataclass
class GuardRun:
    """The runs row that holds the guard; ``detail`` and ``task_id`` are written on release."""

    pk: int
    kind: str
    started_at: datetime
    expires_at: datetime
    detail: dict[str, Any] = field(default_factory=dict)
    task_id: str | None = None


def acquire(ledger: Ledger, kind: str) -> GuardRun:
    """Take the guard for a run of ``kind``; Busy (exit 75) while someone else holds it."""
    now = ledger.now()
    lifetime = parse_duration(ledger.settings.heartbeat_guard, what="heartbeat.guard")
    # a live holder is seen without the write lock, which the running heartbeat may hold for
    # its whole sync: the caller (a poke over HTTP, say) is answered "busy" at once
    with ledger.read() as s:
        live = s.scalars(select(Run).where(Run.guard == GUARD)).first()
        if live is not None and (live.expires_at is None or live.expires_at > now):
            raise Busy(_busy_message(ledger, live))
    try:
        with ledger.write() as s:
            holder = s.scalars(select(Run).where(Run.guard == GUARD).with_for_update()).first()
            if holder is not None:
                if holder.expires_at is None or holder.expires_at > now:
                    raise Busy(_busy_message(ledger, holder))
                holder.guard = None
                holder.status = "expired"
                holder.detail = {**(holder.detail or {}), "taken_over_by": kind, "taken_over_at": _iso(now)}
                s.flush()
            run = Run(
                kind=kind,
                status="running",
                started_at=now,
                pid=os.getpid(),
                guard=GUARD,
                expires_at=now + lifetime,
            )
            s.add(run)
            s.flush()
            return GuardRun(pk=run.pk, kind=kind, started_at=now, expires_at=now + lifetime)
    except IntegrityError:
        # PostgreSQL: another process inserted its guard row between our look and our insert;
        # name it the same way as when we saw it first
        with ledger.read() as s:
            winner = s.scalars(select(Run).where(Run.guard == GUARD)).first()
            if winner is not None:
                raise Busy(_busy_message(ledger, winner)) from None
        raise Busy(f"busy: another heartbeat or poke holds the guard of {ledger.workspace}") from None


def release(ledger: Ledger, held: GuardRun, status: str) -> None:
    """Give the guard back and record how the run ended (``ok`` or ``error``)."""
    now = ledger.now()
    with ledger.write() as s:
        run = s.get(Run, held.pk)
        if run is None:
            return
        detail = dict(held.detail)
        if run.guard == GUARD:
            run.guard = None
            run.status = status
        else:
            # held past its expiry and taken over: the row stays "expired", the outcome is noted
            detail["finished_after_expiry"] = status
        run.detail = {**(run.detail or {}), **detail}
        run.finished_at = now
        run.task_id = held.task_id


def holder(ledger: Ledger) -> dict[str, Any] | None:
    """Who holds the guard now (even if expired), or None."""
    with ledger.read() as s:
        run = s.scalars(select(Run).where(Run.guard == GUARD)).first()
        if run is None:
            return None
        return {
            "kind": run.kind,
            "pid": run.pid,
            "started_at": isoformat(run.started_at, ledger.zone),
            "expires_at": isoformat(run.expires_at, ledger.zone),
            "expired": run.expires_at is not None and run.expires_at <= ledger.now(),
        }


def _busy_message(ledger: Ledger, run: Run) -> str:
    pid = f" (pid {run.pid})" if run.pid else ""
    return (
        f"busy: a {run.kind}{pid} holds the guard of {ledger.workspace} since "
        f"{_iso(run.started_at, ledger)}, until {_iso(run.expires_at, ledger)}"
    )


def _iso(moment: datetime | None, ledger: Ledger | None = None) -> str:
    return isoformat(moment, ledger.zone if ledger is not None else None) or "?"
