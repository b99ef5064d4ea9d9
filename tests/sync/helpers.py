"""Shared bits of the sync tests: the runtime's files, and looking into the ledger directly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy import select

from heartbeat import Ledger
from heartbeat.db.models import Recurrence, Task, TaskEvent

FRONT = '---\ncreated_at: "2026-05-01T03:41:00Z"\nupdated_at: "2026-05-02T00:00:00Z"\n{key}: {n}\n---\n\n'

LINE_JOHN = (
    "- [ ] [Created](2026-05-01 12:41), [ChatID](tg:-100123) | Remind [John](tg:@john) to submit report."
)
LINE_MILK = "- [ ] [Created](2026-05-01 13:00) | Buy milk | and eggs"
LINE_TYPO = "- [ ] [Created](2026-05-0 13:00) | typo line"


def todo_text(*lines: str, front: bool = True) -> str:
    head = FRONT.format(key="open_count", n=len(lines)) if front else ""
    return head + "# TODO Work In Progress (WIP)\n\n" + "".join(line + "\n" for line in lines)


def done_text(*lines: str) -> str:
    return FRONT.format(key="done_count", n=len(lines)) + "# TODO Done\n\n" + "".join(f"{x}\n" for x in lines)


def recur_text(*lines: str) -> str:
    return (
        FRONT.format(key="recurring_count", n=len(lines))
        + "# TODO Recurring\n\n<!--\n- [ ] [Next](2026-05-07 15:00), [Repeat](weekly) | An example.\n-->\n"
        + "".join(line + "\n" for line in lines)
    )


def write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def dumped_tasks_json(workspace: Path, doc: Any) -> Path:
    """The workspace's tasks.json holding ``doc`` as ``json.dumps(indent=2)`` writes it (the
    claude-skills heartbeat.py's layout, and hb's own)."""
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def ledger(workspace: Path, db: str | None = None) -> Ledger:
    return Ledger.open(workspace=workspace, db=db or os.environ.get("HB_DATABASE_URL"))


def events(workspace: Path, task_id: str, db: str | None = None) -> list[dict[str, Any]]:
    with ledger(workspace, db) as led, led.read() as s:
        rows = s.scalars(select(TaskEvent).where(TaskEvent.task_id == task_id).order_by(TaskEvent.pk))
        return [{"kind": e.kind, "before": e.before, "detail": e.detail, "task_pk": e.task_pk} for e in rows]


def _columns(row: Any) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns}


def todo_rows(workspace: Path, db: str | None = None) -> list[dict[str, Any]]:
    """The Markdown tasks' rows in position order, as column dicts."""
    with ledger(workspace, db) as led, led.read() as s:
        query = select(Task).where(Task.source == "todo").order_by(Task.position, Task.pk)
        return [_columns(t) for t in s.scalars(query)]


def recurrences(workspace: Path, db: str | None = None) -> list[dict[str, Any]]:
    """The recurrences' rows in position order, as column dicts."""
    with ledger(workspace, db) as led, led.read() as s:
        query = select(Recurrence).order_by(Recurrence.position, Recurrence.pk)
        return [_columns(r) for r in s.scalars(query)]


def report(result: dict[str, Any], kind: str) -> dict[str, Any]:
    [found] = [r for r in result["reports"] if r["kind"] == kind]
    return found
