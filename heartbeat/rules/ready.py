"""Why a queue task is not ready to pop (``hb ready --explain``): a pure function of its state and ``now``.

A task is ready when a pop may hand it out: status ``todo``, in the queue the
pop names, not blocked by a tasks.json ``blocked_on_*`` filter, not deferred
past now, and waiting for no unfinished task. :mod:`heartbeat.db.queue`'s claim
statement applies the same conditions in SQL; this module says which of them
fail, for people and agents asking "why not this one?".

The statuses that are not ``todo`` read as the reason they stand for:
``blocked`` is ``blocked_on``, ``snoozed`` is ``deferred``, ``waiting`` is
``waiting_for`` (with the dependencies' ids, if it has any).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from heartbeat.errors import InvalidInput


class NotReady(StrEnum):
    """Why a task is not ready; the values are the names ``hb ready --explain`` prints."""

    SCOPED = "scoped"  # scoped queues exist: a pop needs --scope (the legacy list: --scope '')
    CLAIMED = "claimed"  # a worker holds it, its lease still running
    STALE = "stale"  # claimed, but the lease ran out (or there is no claim record): pop --accept-stale
    BLOCKED_ON = "blocked_on"  # a blocked_on_* filter names it, or its status is blocked
    WAITING_FOR = "waiting_for"  # a task it waits for (--after) is not done, or its status is waiting
    DEFERRED = "deferred"  # --not-before is still ahead, or its status is snoozed


@dataclass(frozen=True)
class QueueTask:
    """What the readiness rules need from a queue task (times are aware datetimes)."""

    status: str  # todo|doing|waiting|blocked|snoozed (finished tasks are never asked about)
    blocked_by: str | None = None  # the blocked_on_* filter that names it
    not_before: datetime | None = None
    lease_expires_at: datetime | None = None
    waiting_for: Sequence[tuple[str, str]] = ()  # (id, status) of each unfinished dependency


def reasons_for(task: QueueTask, now: datetime, *, needs_scope: bool = False) -> list[str]:
    """Every reason ``task`` is not ready at ``now``, in :class:`NotReady` order; empty = ready.

    ``needs_scope``: the caller named no queue while scoped queues exist (a pop would exit 11).
    """
    if now.tzinfo is None:
        raise InvalidInput(f"now: {now.isoformat()} has no timezone")
    reasons: list[NotReady] = []
    if needs_scope:
        reasons.append(NotReady.SCOPED)
    if task.status == "doing":
        expires = task.lease_expires_at
        live = expires is not None and expires.astimezone(UTC) > now.astimezone(UTC)
        reasons.append(NotReady.CLAIMED if live else NotReady.STALE)
    if task.blocked_by is not None or task.status == "blocked":
        reasons.append(NotReady.BLOCKED_ON)
    if task.waiting_for or task.status == "waiting":
        reasons.append(NotReady.WAITING_FOR)
    deferred = task.not_before is not None and task.not_before.astimezone(UTC) > now.astimezone(UTC)
    if deferred or task.status == "snoozed":
        reasons.append(NotReady.DEFERRED)
    return [str(r) for r in reasons]
