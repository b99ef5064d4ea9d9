"""The recurrences family: TODO.RECUR.md <-> the ledger's recurrences.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from heartbeat.db.shape import RECURRENCES
from heartbeat.formats import todo as fmt
from heartbeat.formats.repeat import parse_repeat
from heartbeat.formats.todo import Entry, TodoKind
from heartbeat.ops.sync.markdown.base import (
    DUP_MARK,
    EntryRecord,
    content_of,
    entry_id,
    short_digest,
    wall_text,
)
from heartbeat.ops.sync.markdown.family import Family, Item, Row, insert_rows, record_events


class RecurrenceFamily(Family):
    kinds = ("recur",)
    prefix = "recur-"
    shape = RECURRENCES
    removed = "the line was deleted from TODO.RECUR.md"
    columns = (
        "pk",
        "id",
        "source",
        "external_key",
        "title",
        "rule",
        "tz",
        "next_local",
        "chat_id",
        "position",
        "enabled",
        "synced_hash",
        "extra",
    )
    where = keyed = "source IN ('recur', 'cli')"
    ids_taken = "SELECT id FROM recurrences WHERE 1 = 1"
    _UPDATE = (
        "UPDATE recurrences SET title = :title, rule = :rule, tz = :tz, next_local = :next_local, "
        "next_at = :next_at, chat_id = :chat_id, enabled = :enabled, updated_at = :updated_at WHERE pk = :pk"
    )

    def mark(self) -> Any:
        # few rows and no version column: a digest of what the file shows
        h = hashlib.sha256()
        rows = self.db.rows(
            "SELECT pk, id, source, title, rule, tz, next_local, chat_id, position, enabled "
            "FROM recurrences WHERE source IN ('recur', 'cli') ORDER BY pk"
        )
        for row in rows:
            h.update("\x1f".join(str(v) for v in row).encode("utf-8") + b"\x1e")
        return [h.hexdigest(), self.dialect]

    def _eligible(self, data: Any) -> bool:
        """Whether the rule belongs in TODO.RECUR.md (the runtime's reader must understand it)."""
        if not data.enabled or not data.next_local or fmt._parse_stamp(data.next_local) is None:
            return False
        try:
            repeat = parse_repeat(data.rule, any_step=True)
        except ValueError:
            return False
        return self.dialect == "extended" or repeat.runtime_readable

    def row_record(self, data: Any) -> EntryRecord:
        place = "recur" if self._eligible(data) else None
        values = (content_of(data.title), self._rule_text(data.rule), data.tz, data.next_local, data.chat_id)
        return EntryRecord(place, values)

    @staticmethod
    def _rule_text(rule: str) -> str:
        """The Repeat value for a rule: as written, cron with ';' for ','."""
        try:
            repeat = parse_repeat(rule, any_step=True)
        except ValueError:
            return rule
        return rule if repeat.runtime_readable else repeat.render()

    def entry_record(self, kind: str, entry: Entry) -> EntryRecord:
        return EntryRecord(
            kind, (entry.content, entry.repeat, entry.tz, wall_text(entry.next), entry.chat_id)
        )

    def keys(self, record: EntryRecord) -> tuple[str, str]:
        content, rule, tz, next_local, chat = record.values
        key = f"{chat or ''}|{short_digest(content or '')}"
        alt = f"{next_local}|{' '.join((rule or '').lower().split())}|{tz or ''}|{chat or ''}"
        return key, alt

    def dup_key(self, key: str, record: EntryRecord) -> str:
        return f"{key}{DUP_MARK}{short_digest(json.dumps(record.values[1:4]))}"

    def entry(self, row: Row, kind: str) -> Entry:
        data = row.data
        return Entry(
            kind=TodoKind.RECUR,
            content=content_of(data.title),
            next=fmt._parse_stamp(data.next_local),
            repeat=self._rule_text(data.rule),
            tz=data.tz,
            chat_id=data.chat_id,
            extra=(("ID", row.id),) if self.dialect == "extended" else (),
        )

    def arrivals(self, kind: str) -> str:
        # by position: `hb recur add` gives a rule the place above the first one, where
        # mistermorph's AddRecurring puts a new entry
        return "position"

    def merge(self, row: Row, entry: Entry) -> Entry | None:
        # hb moves Next past an occurrence that came due (materialize): an edit that left the
        # line's Next as it was synced must not move it back, or that occurrence would fire again.
        # A Next still ahead of now has not fired: there the line wins, as in any conflict.
        base_line = row.base_line
        ledger_next = fmt._parse_stamp(row.data.next_local or "")
        if base_line is None or ledger_next is None or entry.next is None or entry.next >= ledger_next:
            return None
        if self._next_at(entry.next, entry.tz) > self.now:
            return None
        try:
            base = fmt.parse_entry(base_line, TodoKind.RECUR, dialect="extended")
        except ValueError:
            return None
        return replace(entry, next=ledger_next) if base.next == entry.next else None

    def _next_at(self, next_local: datetime, tz: str | None, rule: dict[str, Any] | None = None) -> datetime:
        """The instant a line's Next stands for; a rule's stored instant when it reads the same
        (the second of a repeated local time, where an every-N-hours rule can stand)."""
        from heartbeat.rules.recurrence import resolve_next  # croniter loads only when needed

        stored = rule["next_at"] if rule is not None and rule["tz"] == tz else None
        return resolve_next(next_local, fmt.rule_zone(tz, self.ctx.zone), stored)

    def history(
        self, row: dict[str, Any], kind: str, detail: dict[str, Any], before: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        # a rule has no task: its id stands as the task_id
        before = RECURRENCES.snapshot(row) if before is None else before
        return {
            "task_pk": None,
            "task_id": row["id"],
            "scope": "",
            "kind": kind,
            "before": before,
            "detail": detail,
        }

    def apply(self, changes: list[tuple[Row, Item, bool]], label: dict[int, str]) -> None:
        if not changes:
            return
        db = self.db
        by_pk = {row.pk: (item, conflict) for row, item, conflict in changes}
        updates: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        for rule in self.full_rows(list(by_pk)):
            item, conflict = by_pk[rule["pk"]]
            entry = item.entry
            assert entry is not None and entry.next is not None and entry.repeat is not None
            if conflict:
                note = "changed in the file and in the ledger; the file won"
                events.append(self.history(rule, "conflict", {"file": label[id(item)], "note": note}))
            updates.append(
                {
                    "pk": rule["pk"],
                    "title": entry.content if content_of(rule["title"]) != entry.content else rule["title"],
                    "rule": entry.repeat if self._rule_text(rule["rule"]) != entry.repeat else rule["rule"],
                    "tz": entry.tz,
                    "next_local": wall_text(entry.next),
                    "next_at": db.time(self._next_at(entry.next, entry.tz, rule)),
                    "chat_id": entry.chat_id,
                    "enabled": db.flag(True),
                    "updated_at": db.time(self.now),
                }
            )
        record_events(db, events, self.now, self.actor)
        db.executemany(self._UPDATE, updates)

    def insert(self, items: list[Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        if not items:
            return []
        ids = self.new_ids([it.key for it in items], [entry_id(it.entry) for it in items])
        params = []
        for it, rule_id in zip(items, ids, strict=True):
            entry = it.entry
            assert entry is not None and entry.next is not None and entry.repeat is not None
            params.append(
                {
                    "id": rule_id,
                    "source": "recur",
                    "external_key": it.key,
                    "title": entry.content,
                    "rule": entry.repeat,
                    "tz": entry.tz,
                    "next_local": wall_text(entry.next),
                    "next_at": self._next_at(entry.next, entry.tz),
                    "chat_id": entry.chat_id,
                    "position": positions[id(it)],
                    "extra": it.final_extra,
                    "synced_hash": it.final_hash,
                    "created_at": self.now,
                    "updated_at": self.now,
                }
            )
        insert_rows(self.db, RECURRENCES, params)
        return ids
