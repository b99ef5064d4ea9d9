"""Task statuses, free of SQLAlchemy (the sync and the queue use them without the models)."""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    """One canonical status set for every source (SPEC.md section 3)."""

    TODO = "todo"  # ready to be worked on (tasks.json pending, TODO.md "[ ]")
    DOING = "doing"  # claimed by a worker (tasks.json in_progress)
    WAITING = "waiting"  # waiting on someone else
    BLOCKED = "blocked"  # cannot move until a blocker clears
    SNOOZED = "snoozed"  # parked until its next check
    DONE = "done"  # finished (tasks.json completed, TODO.DONE.md "[x]")
    CANCELLED = "cancelled"  # dropped on purpose
    FAILED = "failed"  # gave up after its attempts (tasks.json failed)

    @property
    def active(self) -> bool:
        return self in ACTIVE_STATUSES


ACTIVE_STATUSES = frozenset(
    {TaskStatus.TODO, TaskStatus.DOING, TaskStatus.WAITING, TaskStatus.BLOCKED, TaskStatus.SNOOZED}
)
