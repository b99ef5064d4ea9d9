"""The workspace re-entrancy guard shared by ``hb heartbeat`` and ``hb poke`` (SPEC.md section 7).

The guard lives in the ledger, not in a lock file: a ``runs`` row whose
``guard`` column holds :data:`GUARD`. That column is UNIQUE, so two holders are
impossible on both backends; SQLite serialises the check-and-insert with
``BEGIN IMMEDIATE``, and on PostgreSQL the loser of a race trips the unique
index. A holder that dies (SIGKILL, power loss) leaves its row behind; once
the row's ``expires_at`` has passed (setting ``heartbeat.guard``, default
10 minutes) the next taker marks it ``expired`` and takes over.

A live holder renews its row while it runs (:func:`renewed`): a thread on its own
connection moves ``expires_at`` to now + ``heartbeat.guard`` every third of that,
so a tick that outlasts the setting is not taken over; only a holder that stopped
running (killed, frozen) lets its guard expire.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from heartbeat.clock import isoformat, parse_duration
from heartbeat.context import Context
from heartbeat.db.plain import adapt, bind_time
from heartbeat.db.rows import RunRow
from heartbeat.db.store import is_unique_violation, statements
from heartbeat.errors import Busy, Terminated

SQL = statements("guard")
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
    lifetime: timedelta = timedelta(minutes=10)  # setting heartbeat.guard when it was taken


@contextmanager
def held(ctx: Context, kind: str) -> Iterator[GuardRun]:
    """Hold the guard for the block (Busy, exit 75, if held), renewed while the block runs; on
    leaving, released with status ``ok`` or ``error`` (the error noted in the run's detail)."""
    run = acquire(ctx, kind)
    try:
        with renewed(ctx, run):  # a long tick is not taken for an abandoned one
            yield run
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            said = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
        else:
            said = str(exc) or type(exc).__name__
        run.detail.setdefault("error", said)
        release(ctx, run, "error")
        raise
    release(ctx, run, "ok")


def acquire(ctx: Context, kind: str) -> GuardRun:
    """Take the guard for a run of ``kind``; Busy (exit 75) while someone else holds it."""
    now = ctx.now()
    lifetime = parse_duration(ctx.settings.heartbeat_guard, what="heartbeat.guard")
    # a live holder is seen without the write lock, which the running heartbeat may hold for
    # its whole sync: the caller (a poke over HTTP, say) is answered "busy" at once
    with ctx.read() as db:
        live = db.first(RunRow, SQL.holder, {"guard": GUARD})
        if live is not None and (live.expires_at is None or live.expires_at > now):
            raise Busy(_busy_message(ctx, live))
    try:
        with ctx.write() as db:
            holder = db.first(RunRow, SQL.holder_locked, {"guard": GUARD})
            if holder is not None:
                if holder.expires_at is None or holder.expires_at > now:
                    raise Busy(_busy_message(ctx, holder))
                holder.guard = None
                holder.status = "expired"
                holder.detail = {**(holder.detail or {}), "taken_over_by": kind, "taken_over_at": _iso(now)}
            run = db.add(
                RunRow(
                    kind=kind,
                    status="running",
                    started_at=now,
                    pid=os.getpid(),
                    guard=GUARD,
                    expires_at=now + lifetime,
                )
            )
            assert run.pk is not None
            return GuardRun(
                pk=run.pk, kind=kind, started_at=now, expires_at=now + lifetime, lifetime=lifetime
            )
    except Exception as exc:
        if not is_unique_violation(exc):
            raise
        # PostgreSQL: another process inserted its guard row between our look and our insert;
        # name it the same way as when we saw it first
        with ctx.read() as db:
            winner = db.first(RunRow, SQL.holder, {"guard": GUARD})
            if winner is not None:
                raise Busy(_busy_message(ctx, winner)) from None
        raise Busy(f"busy: another heartbeat or poke holds the guard of {ctx.workspace}") from None


_SHORTEST_RENEWAL = 0.05  # seconds between renewals, whatever a (test's) tiny guard lifetime says
_STOP_WAIT = 5.0  # seconds release waits for the renewal thread to end


@contextmanager
def renewed(ctx: Context, held: GuardRun) -> Iterator[None]:
    """Keep ``held`` alive while the block runs: a renewal every third of its lifetime.

    The renewals run on a thread of their own with their own connection, so a tick busy in one
    long step (a large sync, a slow export) still renews; the thread ends with the block.
    """
    renewal = _Renewal(ctx, held)
    renewal.start()
    try:
        yield
    finally:
        renewal.stop()


class _Renewal(threading.Thread):
    """The thread behind :func:`renewed`."""

    def __init__(self, ctx: Context, held: GuardRun) -> None:
        super().__init__(name=f"hb-guard-renewal-{held.pk}", daemon=True)
        self.ctx = ctx
        self.held = held
        self.every = max(held.lifetime.total_seconds() / 3, _SHORTEST_RENEWAL)
        self.done = threading.Event()
        self.renewals = 0
        # the ledger's clock is read here, on the holder's thread (it may consult the settings
        # on the holder's connection); the renewals move it on by the time elapsed since
        self.started = ctx.now()
        self.started_tick = time.monotonic()

    def stop(self) -> None:
        self.done.set()
        self.join(_STOP_WAIT)

    def run(self) -> None:
        sqlite = self.ctx.sqlite
        con: Any = self.ctx.connect()
        if sqlite:  # a renewal waits for the write lock at most until the next one is due
            con.execute(f"PRAGMA busy_timeout = {int(self.every * 1000)}")
        statement = adapt(SQL.renew, sqlite=sqlite)
        try:
            while not self.done.wait(self.every):
                elapsed = timedelta(seconds=time.monotonic() - self.started_tick)
                until = self.started + elapsed + self.held.lifetime
                params = {"until": bind_time(until, sqlite=sqlite), "pk": self.held.pk, "guard": GUARD}
                try:
                    cur = con.cursor()
                    try:
                        cur.execute(statement, params)
                        renewed = cur.rowcount
                    finally:
                        cur.close()
                    con.commit()
                except Exception:  # a busy or lost database: try again at the next renewal
                    _rollback(con)
                    continue
                if not renewed:  # taken over after all (this process was frozen past its expiry)
                    return
                self.held.expires_at = until
                self.renewals += 1
        finally:
            con.close()


def _rollback(con: Any) -> None:
    try:
        con.rollback()
    except Exception:  # the connection is gone; closing it is all that is left
        return


def release(ctx: Context, held: GuardRun, status: str) -> None:
    """Give the guard back and record how the run ended (``ok`` or ``error``)."""
    now = ctx.now()
    with ctx.write() as db:
        run = db.get(RunRow, held.pk)
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


def holder(ctx: Context) -> dict[str, Any] | None:
    """Who holds the guard now (even if expired), or None."""
    with ctx.read() as db:
        run = db.first(RunRow, SQL.holder, {"guard": GUARD})
    if run is None:
        return None
    return {
        "kind": run.kind,
        "pid": run.pid,
        "started_at": isoformat(run.started_at, ctx.zone),
        "expires_at": isoformat(run.expires_at, ctx.zone),
        "expired": run.expires_at is not None and run.expires_at <= ctx.now(),
    }


def _busy_message(ctx: Context, run: RunRow) -> str:
    pid = f" (pid {run.pid})" if run.pid else ""
    return (
        f"busy: a {run.kind}{pid} holds the guard of {ctx.workspace} since "
        f"{_iso(run.started_at, ctx)}, until {_iso(run.expires_at, ctx)}"
    )


def _iso(moment: datetime | None, ctx: Context | None = None) -> str:
    return isoformat(moment, ctx.zone if ctx is not None else None) or "?"
