"""tasks.json as its task objects' texts and a frame of the rest, read without reading the tasks.

:func:`outline` walks the top-level object and the ``_<batch>_extension`` objects member by
member; every task object (an item of a legacy list, or of a scoped queue) is decoded on its own
and kept with the exact text it was written as, and every other value is kept as its text only.
Two outlines whose frames are equal and whose task texts are equal for a task read the same
for that task: a sync compares the file with the text it last synced by those texts, and reads
only the tasks whose text changed (see
:func:`heartbeat.ops.sync.queue_files.targeted.sync_changed`).

It answers None whenever it cannot be sure it reads the text as
:func:`heartbeat.formats.tasks_json.parse` does: a BOM, an escaped surrogate, a repeated key
in the top-level or an extension object, a task without a usable id, an id used twice in a
queue, anything that is not JSON. The caller then reads the whole text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from heartbeat.errors import FileFormatError
from heartbeat.formats.tasks_json import (
    BLOCKED_PREFIX,
    EXTENSION_KEY,
    LEGACY_LISTS,
    STATUS_OF_LEGACY_LIST,
    Blocker,
    JsonPath,
    Locator,
    QueueRecord,
    Reader,
    blocked_by_value,
    held_order,
    id_text,
    load_json,
    read_blockers,
    record_of,
)

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_AFTER_ITEM = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|\])")  # the next item, or the list's end

Key = tuple[str, str]  # a task's (scope, id)


@dataclass(slots=True)
class Item:
    """One task object as written: where it is, its text and its value."""

    scope: str  # "" for the legacy lists, else "_<batch>_extension.<queue>"
    home: str  # the legacy list that holds it ("" for a scoped entry)
    index: int  # its index in that list
    id: str
    raw: str  # the object's text, exactly as written
    value: dict[str, Any]
    position: int  # as the parser reads it: legacy, the index; scoped, a held "order" or the index
    where: JsonPath  # its path in the document: (list, index) or (extension, queue, index)


@dataclass
class Outline:
    """A tasks.json text: its frame (everything but the task objects: the top-level keys in order,
    the text of each value that is not a task list, each extension's keys) and its tasks."""

    frame: list[tuple[Any, ...]]
    items: dict[Key, Item]  # in file order


class _NotSure(Exception):
    pass


def outline(text: str) -> Outline | None:
    """The outline of a tasks.json text, or None (see the module docstring)."""
    if text.startswith("\ufeff") or "\\ud" in text or "\\uD" in text:
        return None
    try:
        return _Walk(text).document()
    except (_NotSure, ValueError, IndexError, RecursionError):
        return None


class _Walk:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: dict[Key, Item] = {}

    def skip(self, at: int) -> int:
        m = _WS.match(self.text, at)
        assert m is not None
        return m.end()

    def expect(self, at: int, char: str) -> int:
        if self.text[at] != char:
            raise _NotSure
        return self.skip(at + 1)

    def members(self, at: int) -> Any:
        """(key, offset of its value) of the object at ``at``; afterwards ``self.end`` is past it."""
        at = self.expect(at, "{")
        seen: set[str] = set()
        if self.text[at] == "}":
            self.end = at + 1
            return
        while True:
            if self.text[at] != '"':
                raise _NotSure
            key, at = scanstring(self.text, at + 1)
            if key in seen:
                raise _NotSure  # repeated: the last value counts, and a warning is due
            seen.add(key)
            at = self.expect(self.skip(at), ":")
            self.end = -1
            yield key, at
            at = self.skip(self.end)
            if self.text[at] == "}":
                self.end = at + 1
                return
            at = self.expect(at, ",")

    def raw(self, at: int) -> tuple[Any, int]:
        value, end = _DECODER.raw_decode(self.text, at)
        return value, end

    def document(self) -> Outline:
        frame: list[tuple[Any, ...]] = []
        start = self.skip(0)
        for key, at in self.members(start):
            if key in LEGACY_LISTS:
                self.end = self.legacy(key, at)
                frame.append(("list", key))
            elif EXTENSION_KEY.fullmatch(key) and self.text[at] == "{":
                entries: list[tuple[Any, ...]] = []
                for name, inner in self.members(at):
                    self.end = self.entry(key, name, inner, entries)
                frame.append(("extension", key, tuple(entries)))  # self.end: past the extension
            else:
                _value, self.end = self.raw(at)
                frame.append(("value", key, self.text[at : self.end]))
        if self.text[self.skip(self.end) :]:
            raise _NotSure  # something after the document: not JSON
        return Outline(frame, self.items)

    def legacy(self, name: str, at: int) -> int:
        at = self.expect(at, "[")
        if self.text[at] == "]":
            return at + 1
        text, decode, after = self.text, _DECODER.raw_decode, _AFTER_ITEM.match
        index = 0
        while True:
            value, end = decode(text, at)
            if value.__class__ is not dict or "id" not in value:
                raise _NotSure
            task_id = value["id"]
            if task_id.__class__ is not str or not task_id.strip():
                task_id = id_text(task_id)
                if task_id is None:
                    raise _NotSure
            self.add(Item("", name, index, task_id, text[at:end], value, index, (name, index)))
            index += 1
            m = after(text, end)
            if m is None:
                raise _NotSure
            if m.group(1) is None:
                return m.end()
            at = m.end()

    def entry(self, extension: str, name: str, at: int, entries: list[tuple[Any, ...]]) -> int:
        """One member of an extension object: a queue (its entries read as tasks) or a value."""
        if self.text[at] != "[" or name.startswith(BLOCKED_PREFIX):
            _value, end = self.raw(at)
            entries.append(("value", name, self.text[at:end]))
            return end
        found: list[Item] = []
        scope = f"{extension}.{name}"
        start, at = at, self.skip(at + 1)
        index = 0
        queue = self.text[at] != "]"  # an empty list is metadata
        while self.text[at] != "]":
            value, end = self.raw(at)
            if not (isinstance(value, dict) and "task_id" in value):
                queue = False
            elif queue:
                task_id = id_text(value["task_id"])
                if task_id is None:
                    raise _NotSure
                order = value.get("order")
                held = None if order is None else held_order(order)
                position = held if held is not None else index
                raw = self.text[at:end]
                found.append(Item(scope, "", index, task_id, raw, value, position, (extension, name, index)))
            index += 1
            at = self.skip(end)
            if self.text[at] == "]":
                break
            at = self.expect(at, ",")
        end = at + 1
        if not queue:
            entries.append(("value", name, self.text[start:end]))
            return end
        for item in found:
            self.add(item)
        entries.append(("queue", name))
        return end

    def add(self, item: Item) -> None:
        key = (item.scope, item.id)
        if key in self.items:
            raise _NotSure  # the parser refuses it
        self.items[key] = item


def blockers(frame: list[tuple[Any, ...]]) -> dict[str, list[Blocker]]:
    """The ``blocked_on_*`` filters of each extension of a frame."""
    out: dict[str, list[Blocker]] = {}
    for slot in frame:
        if slot[0] == "extension":
            body = {
                e[1]: json.loads(e[2]) for e in slot[2] if e[0] == "value" and e[1].startswith(BLOCKED_PREFIX)
            }
            out[slot[1]] = read_blockers(body)
    return out


def read_items(text: str, items: list[Item], filters: dict[str, list[Blocker]]) -> list[QueueRecord] | None:
    """The records of ``items`` (of ``text``; ``filters``: its :func:`blockers`) as
    :func:`heartbeat.formats.tasks_json.parse` reads them; None when reading one gives a warning or
    an error, or when one repeats a key (a warning too)."""
    reader = Reader(Locator(text))
    records = []
    for item in items:
        repeats: list[bool] = []
        load_json(item.raw, repeats)
        if repeats:
            return None
        try:
            reading = reader.read_item(item.value, item.id, item.where, scoped=bool(item.scope))
        except FileFormatError:
            return None
        if reader.warnings:
            return None
        if item.scope:
            status = reading.status or "todo"
            position = reading.order if reading.order is not None else item.index
            record = record_of(item.id, item.scope, status, position, item.value, reading)
            record.blocked_by = blocked_by_value(item.value, item.id, filters[str(item.where[0])])
        else:
            status = STATUS_OF_LEGACY_LIST[item.home]
            record = record_of(item.id, "", status, item.index, item.value, reading)
        records.append(record)
    return records
