"""The TODO family: TODO.md and TODO.DONE.md <-> the ledger's tasks.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from heartbeat.clock import isoformat
from heartbeat.db import plain
from heartbeat.db.queue import keep_last_run
from heartbeat.db.shape import TASKS
from heartbeat.db.status import ACTIVE_STATUSES, TaskStatus
from heartbeat.formats.todo import Entry
from heartbeat.ops.sync.markdown.base import (
    DUP_MARK,
    KIND_OF,
    TASK_KINDS,
    TODO_SOURCE,
    EntryRecord,
    content_of,
    entry_id,
    short_digest,
    stamp_text,
)
from heartbeat.ops.sync.markdown.family import Family, Item, Row, insert_rows, record_events

if TYPE_CHECKING:
    pass


class TaskFamily(Family):
    kinds = TASK_KINDS
    prefix = "todo-"
    shape = TASKS
    removed = "the line was deleted from its file"
    columns = (
        "pk",
        "id",
        "scope",
        "external_key",
        "title",
        "status",
        "chat_id",
        "created_at",
        "completed_at",
        "updated_at",
        "position",
        "synced_hash",
        "extra",
    )
    where = f"source = '{TODO_SOURCE}' AND scope = ''"
    # scope is checked in Python: with it in the query SQLite may pick a scope index
    # over (source, external_key) and scan every task
    keyed = f"source = '{TODO_SOURCE}'"
    ids_taken = "SELECT id FROM tasks WHERE scope = ''"
    # SQLite: a plain scan (``+`` keeps the planner off the source index, whose walk with a
    # table lookup per row is several times slower than reading the table once)
    _MARK: ClassVar[dict[bool, str]] = {
        True: "SELECT count(*), sum(version), max(pk), min(pk), max(updated_at) FROM tasks "
        f"WHERE +source = '{TODO_SOURCE}' AND +scope = ''",
        False: f"SELECT count(*), sum(version), max(pk), min(pk), max(updated_at) FROM tasks WHERE {where}",
    }
    _UPDATE = (
        "UPDATE tasks SET title = :title, status = :status, completed_at = :completed_at, "
        "created_at = :created_at, chat_id = :chat_id, claimed_at = :claimed_at, claimed_by = :claimed_by, "
        "lease_expires_at = :lease_expires_at, claim = :claim, version = :version, updated_at = :updated_at, "
        "last_update_at = :last_update_at WHERE pk = :pk"
    )

    def before_change(self, pks: Sequence[int]) -> None:
        """last-run.json's record, when it is read from one of these tasks' completion, is kept
        as it reads now (see :func:`heartbeat.db.queue.keep_last_run`)."""
        keep_last_run(self.db, set(pks))

    def mark(self) -> Any:
        row = self.db.one(self._MARK[self.db.sqlite])
        assert row is not None
        count, versions, high, low, updated = row
        updated = plain.read_time(updated)
        return [
            int(count or 0),
            int(versions or 0),
            high,
            low,
            isoformat(updated) if updated else None,
            self.dialect,
        ]

    def mine(self, data: Any) -> bool:
        return bool(data.scope == "")

    def row_record(self, data: Any) -> EntryRecord:
        status = TaskStatus(data.status)
        place = "done" if status is TaskStatus.DONE else "todo" if status in ACTIVE_STATUSES else None
        done = stamp_text(data.completed_at or data.updated_at) if place == "done" else None
        return EntryRecord(place, (content_of(data.title), stamp_text(data.created_at), done, data.chat_id))

    def entry_record(self, kind: str, entry: Entry) -> EntryRecord:
        done = stamp_text(entry.done) if kind == "done" else None
        return EntryRecord(kind, (entry.content, stamp_text(entry.created), done, entry.chat_id))

    def keys(self, record: EntryRecord) -> tuple[str, str]:
        base = f"{record.values[1]}|{record.values[3] or ''}"
        return base, base

    def dup_key(self, key: str, record: EntryRecord) -> str:
        return f"{key}{DUP_MARK}{short_digest(record.values[0] or '')}"

    def row_alt(self, row: Row) -> str:
        if row.key and row.synced_hash:
            return row.key.split(DUP_MARK, 1)[0]  # the Created + ChatID it was last synced with
        return self.keys(row.record)[1]

    def entry(self, row: Row, kind: str) -> Entry:
        data = row.data
        done = data.completed_at or data.updated_at
        return Entry(
            kind=KIND_OF[kind],
            content=content_of(data.title),
            created=data.created_at.astimezone(UTC),
            done=done.astimezone(UTC) if kind == "done" else None,
            chat_id=data.chat_id,
            extra=(("ID", row.id),) if self.dialect == "extended" else (),
        )

    def arrivals(self, kind: str) -> str:
        # mistermorph's Complete puts the entry first in TODO.DONE.md's list
        return "top" if kind == "done" else "position"

    def incoming_order(self, kind: str, rows: list[Row]) -> list[Row]:
        if kind == "done":  # completed one by one, each on top: the latest first
            rows = super().incoming_order(kind, rows)
            far = datetime.max.replace(tzinfo=UTC)
            return sorted(rows, key=lambda r: r.data.completed_at or far, reverse=True)
        return super().incoming_order(kind, rows)

    def report_kind(self, before: str | None, after: str) -> str:
        if after == "done" and before != "done":
            return "completed"
        return super().report_kind(before, after)

    def apply(self, changes: list[tuple[Row, Item, bool]], label: dict[int, str]) -> None:
        if not changes:
            return
        db, now = self.db, self.now
        by_pk = {row.pk: (item, conflict) for row, item, conflict in changes}
        updates: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        for task in self.full_rows(list(by_pk)):
            item, conflict = by_pk[task["pk"]]
            assert item.entry is not None
            before = TASKS.snapshot(task)
            fields = self._take_entry(task, item.kind, item.entry)
            updates.append(
                {
                    "pk": task["pk"],
                    "title": task["title"],
                    "status": str(task["status"]),
                    "chat_id": task["chat_id"],
                    "claimed_by": task["claimed_by"],
                    "claim": task["claim"],
                    "version": task["version"] + 1,
                    **{
                        name: db.time(task[name])
                        for name in ("completed_at", "created_at", "claimed_at", "lease_expires_at")
                    },
                    "updated_at": db.time(now),
                    "last_update_at": db.time(now),
                }
            )
            detail: dict[str, Any] = {"fields": fields, "file": label[id(item)]}
            if conflict:
                detail["note"] = "changed in the file and in the ledger; the file won"
            events.append(self.history(task, "conflict" if conflict else "updated", detail, before))
        self.before_change([u["pk"] for u in updates])
        db.executemany(self._UPDATE, updates)
        record_events(db, events, now, self.actor)

    def _take_entry(self, task: dict[str, Any], kind: str, entry: Entry) -> list[str]:
        """Set the entry's fields on the row (a dict); the names of those that changed."""
        changed: list[str] = []

        def put(name: str, value: Any) -> None:
            if task[name] != value:
                task[name] = value
                changed.append(name)

        if content_of(task["title"]) != entry.content:
            put("title", entry.content)
        if kind == "done":
            put("status", TaskStatus.DONE)
            if stamp_text(task["completed_at"]) != stamp_text(entry.done):
                put("completed_at", entry.done)
        elif not TaskStatus(task["status"]).active:
            put("status", TaskStatus.TODO)
            put("completed_at", None)
        if task["status"] != TaskStatus.DOING:
            task["claimed_at"] = task["claimed_by"] = task["lease_expires_at"] = None
            if "status" in changed:  # the claim ends with it, as by hand: its --claim is refused (exit 15)
                task["claim"] = None
        if stamp_text(task["created_at"]) != stamp_text(entry.created):
            put("created_at", entry.created)
        put("chat_id", entry.chat_id)
        return changed

    def history(
        self, row: dict[str, Any], kind: str, detail: dict[str, Any], before: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        # as heartbeat.db.tasks.record_event writes it
        before = TASKS.snapshot(row) if before is None else before
        return {
            "task_pk": row["pk"],
            "task_id": row["id"],
            "scope": row["scope"],
            "kind": kind,
            "before": before,
            "detail": detail,
        }

    def insert(self, items: list[Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        if not items:
            return []
        ids = self.new_ids([it.key for it in items], [entry_id(it.entry) for it in items])
        now = self.now
        params: list[dict[str, Any]] = []
        for it, task_id in zip(items, ids, strict=True):
            entry = it.entry
            assert entry is not None and entry.created is not None
            params.append(
                {
                    "id": task_id,
                    "source": TODO_SOURCE,
                    "external_key": it.key,
                    "title": entry.content,
                    "status": TaskStatus.DONE if it.kind == "done" else TaskStatus.TODO,
                    "position": positions[id(it)],
                    "created_at": entry.created,
                    "updated_at": now,
                    "last_update_at": now,
                    "completed_at": entry.done if it.kind == "done" else None,
                    "chat_id": entry.chat_id,
                    "extra": it.final_extra,
                    "synced_hash": it.final_hash,
                }
            )
        pks = insert_rows(self.db, TASKS, params)
        events = [
            {
                "task_pk": pk,
                "task_id": p["id"],
                "scope": "",
                "kind": "created",
                "detail": {"file": label[id(it)]},
            }
            for pk, p, it in zip(pks, params, items, strict=True)
        ]
        record_events(self.db, events, now, self.actor)
        return ids
