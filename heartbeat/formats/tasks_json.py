"""tasks.json, errors.json and last-run.json: the claude-skills heartbeat skill's queue files.

tasks.json holds the legacy lists (``pending``, ``in_progress``, ``completed``,
``failed``) of task objects keyed by ``id``, and, since the skill's 1.2.0,
``_<batch>_extension`` objects whose lists of ``task_id`` objects are scoped
queues. :func:`parse` turns the text into :class:`QueueRecord` s plus a
:class:`Skeleton` of everything else; :func:`render` puts records back into
that skeleton. Nothing hb does not model is lost: unknown keys keep their
values and their order, metadata and ``blocked_on_*`` lists are kept verbatim.
The one deliberate change is that heartbeat.py's malformed ``+00:00Z``
timestamps are written as plain ``Z``.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from heartbeat.bulk import collector_paused
from heartbeat.errors import NUL, FileFormatError, InvalidInput, InvalidState, ScopeNotFound, nul_reason
from heartbeat.formats.timestamps import format_timestamp, is_malformed, parse_timestamp, timestamp_or_none

if TYPE_CHECKING:
    from heartbeat.formats.json_edit import Layout

LEGACY_LISTS = ("pending", "in_progress", "completed", "failed")

# Where a canonical status lives in the legacy lists; the lists have no place
# for waiting/blocked/snoozed (still open: pending) or cancelled (closed: failed).
LEGACY_LIST_OF_STATUS = {
    "todo": "pending",
    "waiting": "pending",
    "blocked": "pending",
    "snoozed": "pending",
    "doing": "in_progress",
    "done": "completed",
    "failed": "failed",
    "cancelled": "failed",
}
CANONICAL_STATUSES = frozenset(LEGACY_LIST_OF_STATUS)
STATUS_OF_LEGACY_LIST = {
    "pending": "todo",
    "in_progress": "doing",
    "completed": "done",
    "failed": "failed",
}
# A scoped entry's "status" value as written; None means the key is absent.
_SCOPED_VALUE_OF_STATUS: dict[str, str | None] = {
    "todo": None,
    "doing": "in_progress",
    "done": "completed",
    "failed": "failed",
    "waiting": "waiting",
    "blocked": "blocked",
    "snoozed": "snoozed",
    "cancelled": "cancelled",
}
_STATUS_OF_SCOPED_VALUE = {"pending": "todo", "in_progress": "doing", "completed": "done"} | {
    status: status for status in CANONICAL_STATUSES
}
PRIORITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}

EXTENSION_KEY = re.compile(r"_.+_extension")
_SCOPE_PATH = re.compile(r"(_.+?_extension)\.(.+)")
BLOCKED_PREFIX = "blocked_on_"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LINE_BREAK = re.compile("\n")
# the JSON escape of a NUL character: ``\u0000`` after an even run of backslashes (``\\u0000`` is a
# backslash and the text ``u0000``); a NUL itself cannot stand in JSON text
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*(\\u0000)")
_MAYBE_NUL = "\\u0000"
# the members of an errors.json item / of last-run.json the ledger keeps as text (the whole
# object is kept as JSON too, where a NUL is kept)
_ERROR_TEXT_KEYS = ("task_id", "assigned_skill", "reason", "trace_id")
_LAST_RUN_TEXT_KEYS = ("task_id", "status", "scope")
# (record attribute, JSON key) of heartbeat.py's who/what fields.
_ASSIGNMENT_KEYS = (
    ("skill", "assigned_skill"),
    ("project_id", "project_id"),
    ("agent_id", "agent_id"),
    ("user_id", "user_id"),
)
_TIMESTAMP_KEYS = ("created_at", "completed_at")

JsonPath = tuple[str | int, ...]


@dataclass(slots=True)
class QueueRecord:
    """One task of tasks.json: a legacy list item or a scoped queue entry.

    ``fields`` is the original JSON object (empty for a task hb creates); the
    other attributes are hb's reading of it. :func:`render` writes an attribute
    back only when it differs from what the original object reads as.
    """

    id: str  # legacy "id", scoped "task_id" (a number is stringified)
    scope: str = ""  # "" for the legacy lists, else "_<batch>_extension.<queue>"
    status: str = "todo"  # canonical: todo, doing, waiting, blocked, snoozed, done, ...
    title: str = ""  # "description", else "title", else the id
    priority: str | None = None  # legacy "priority" as written; scoped: None
    position: int = 0  # legacy: index in its list; scoped: "order" when an int, else index
    blocked_by: str | None = None  # scoped: "<blocked_on_key>: <blocker>" naming this entry
    fields: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    completed_at: datetime | None = None
    skill: str | None = None  # "assigned_skill"
    project_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None


@dataclass(frozen=True)
class Verbatim:
    """A key whose value hb keeps exactly as read (metadata, blocked_on_*, unknown)."""

    key: str
    value: Any


@dataclass(frozen=True)
class LegacyList:
    """A top-level legacy list (pending/in_progress/completed/failed) present in the file."""

    key: str


@dataclass(frozen=True)
class Queue:
    """A scoped queue inside an extension object."""

    name: str


@dataclass(frozen=True)
class Extension:
    """A ``_<batch>_extension`` object: its keys in file order."""

    key: str
    entries: tuple[Queue | Verbatim, ...]


@dataclass
class Skeleton:
    """Everything in tasks.json that is not a task, in file order."""

    slots: list[Verbatim | LegacyList | Extension]

    @property
    def legacy_lists(self) -> list[str]:
        """The legacy list names present, in file order."""
        return [slot.key for slot in self.slots if isinstance(slot, LegacyList)]

    @property
    def missing_failed(self) -> bool:
        """Whether the file had no ``failed`` list (heartbeat.py omits it)."""
        return "failed" not in self.legacy_lists


@dataclass
class TasksDocument:
    """A parsed tasks.json: its records and what is needed to write it back."""

    records: list[QueueRecord]
    skeleton: Skeleton
    scopes: list[str]  # the queue paths, in file order
    indent: int | None = 2
    warnings: list[str] = field(default_factory=list)  # readable but odd: kept verbatim
    source: str | None = None  # the text it was read from: render lays the new text over it


@dataclass(slots=True)
class _Reading:
    """What hb reads from one task object (shared by parse and render). Never changed once made;
    not frozen only because it is made for every task read, where a frozen dataclass's
    construction costs five times a plain one's."""

    title: str
    title_key: str
    priority: str | None
    status: str | None  # scoped: canonical status, None if the value is unknown
    order: int | None
    created_at: datetime | None
    completed_at: datetime | None
    skill: str | None
    project_id: str | None
    agent_id: str | None
    user_id: str | None


# --- reading -------------------------------------------------------------------


def parse(text: str, *, refuse_nul: bool = False) -> TasksDocument:
    """Read tasks.json text into records and a skeleton that re-renders it.

    Raises FileFormatError (with line and column where known) for invalid JSON,
    a document that is not an object, a legacy key that is not a list of task
    objects, a task without a usable id, or an id used twice in one queue.
    Oddities that do not stop reading (an unreadable timestamp, an unknown
    scoped status, a list only partly made of tasks) are listed in ``warnings``.
    ``refuse_nul``: FileFormatError, too, for a NUL character in a text the ledger stores as text
    (see :func:`refuse_nul`).
    """
    with collector_paused():  # a large file is many small objects and no cycles (heartbeat.bulk)
        return _parse(text, refuse_nul=refuse_nul)


def _parse(text: str, *, refuse_nul: bool) -> TasksDocument:
    text = text.removeprefix("\ufeff")  # read past; not written back (heartbeat.py cannot read it)
    repeats: list[bool] = []
    data = load_json(text, repeats)
    reader = Reader(Locator(text), nul=refuse_nul and _MAYBE_NUL in text)
    if repeats:
        from heartbeat.formats.json_edit import repeated_keys

        reader.warnings.extend(
            f"line {line}: key {key!r} is repeated in its object: the last value counts"
            for line, key in repeated_keys(text)
        )
    if not isinstance(data, dict):
        raise reader.error("tasks.json must hold a JSON object", ())
    slots: list[Verbatim | LegacyList | Extension] = []
    for key, value in data.items():
        if key in LEGACY_LISTS:
            reader.read_legacy_list(key, value)
            slots.append(LegacyList(key))
        elif EXTENSION_KEY.fullmatch(key) and isinstance(value, dict):
            slots.append(reader.read_extension(key, value))
        else:
            slots.append(Verbatim(key, value))
    return TasksDocument(
        records=reader.records,
        skeleton=Skeleton(slots),
        scopes=reader.scopes,
        indent=_detect_indent(text, empty=not data),
        warnings=reader.warnings,
        source=text,
    )


def empty_document() -> TasksDocument:
    """The document for a workspace without tasks.json: the four legacy lists, indent 2."""
    return TasksDocument([], Skeleton([LegacyList(key) for key in LEGACY_LISTS]), [], 2)


def resolve_scope(doc: TasksDocument, path: str) -> str:
    """Return ``path`` if it names a queue of ``doc``; raise ScopeNotFound (exit 14) if not."""
    if path in doc.scopes:
        return path
    known = ", ".join(doc.scopes) if doc.scopes else "none"
    raise ScopeNotFound(f"scope {path!r} is not a queue (a list of objects with task_id); queues: {known}")


def priority_rank(priority: str | None) -> int:
    """Sort rank of a legacy priority: critical 0 ... low 3, as written; anything else (``CRITICAL``
    too, FORMATS.md section 2) ranks as medium."""
    return PRIORITY_RANK.get(priority or "", PRIORITY_RANK["medium"])


def status_as_written(scope: str, status: str) -> str:
    """The status :func:`parse` reads back after :func:`render` wrote ``status``.

    The legacy lists hold four statuses, so e.g. ``blocked`` reads back as
    ``todo``; scoped entries keep every canonical status.
    """
    _check_status(status)
    if scope:
        return status
    return STATUS_OF_LEGACY_LIST[LEGACY_LIST_OF_STATUS[status]]


class Reader:
    """Collects records, scopes and warnings while walking one document."""

    def __init__(self, locator: Locator, *, nul: bool = False) -> None:
        self.locator = locator
        self.nul = nul  # the text may hold a NUL character: each record is looked at for one
        self.records: list[QueueRecord] = []
        self.scopes: list[str] = []
        self.warnings: list[str] = []
        self._seen: dict[tuple[str, str], JsonPath] = {}
        self._queues: dict[str, JsonPath] = {}  # each queue path, and where its list stands

    def error(self, reason: str, path: JsonPath) -> FileFormatError:
        line, column = self.locator.position(path)
        where = _path_text(path)
        return FileFormatError(f"{where}: {reason}" if where else reason, line=line, column=column)

    def warn(self, reason: str, path: JsonPath) -> None:
        line, _ = self.locator.position(path)
        prefix = f"line {line}: " if line is not None else ""
        self.warnings.append(f"{prefix}{_path_text(path)}: {reason}")

    def read_legacy_list(self, key: str, value: Any) -> None:
        if not isinstance(value, list):
            raise self.error(f"must be a list of task objects, not {_json_type(value)}", (key,))
        for index, item in enumerate(value):
            path: JsonPath = (key, index)
            if not isinstance(item, dict):
                raise self.error(f"must be a task object, not {_json_type(item)}", path)
            task_id = self._task_id(item, "id", path)
            reading = self.read_item(item, task_id, path, scoped=False)
            record = record_of(task_id, "", STATUS_OF_LEGACY_LIST[key], index, item, reading)
            self._add(record, path)

    def read_extension(self, key: str, body: dict[str, Any]) -> Extension:
        blockers = read_blockers(body)
        entries: list[Queue | Verbatim] = []
        for name, value in body.items():
            if not name.startswith(BLOCKED_PREFIX) and _is_queue(value):
                self._read_queue(f"{key}.{name}", (key, name), value, blockers)
                entries.append(Queue(name))
                continue
            blocked = name.startswith(BLOCKED_PREFIX)  # a filter of the queues, not a queue
            if not blocked and isinstance(value, list) and any(_is_entry(item) for item in value):
                self.warn("some items have no task_id: kept as metadata, not a queue", (key, name))
            entries.append(Verbatim(name, value))
        return Extension(key, tuple(entries))

    def _read_queue(
        self, scope: str, where: JsonPath, items: list[dict[str, Any]], blockers: list[Blocker]
    ) -> None:
        earlier = self._queues.get(scope)
        if earlier is not None:  # "_a_extension": {"b.c": [...]} and "_a_extension.b": {"c": [...]}
            line, _ = self.locator.position(earlier)
            raise self.error(
                f"the queue {_queue_text(where)} and the queue {_queue_text(earlier)}"
                f"{f' (line {line})' if line is not None else ''} have one path, {scope!r}: rename one",
                where,
            )
        self._queues[scope] = where
        self.scopes.append(scope)
        for index, item in enumerate(items):
            path = (*where, index)
            task_id = self._task_id(item, "task_id", path)
            reading = self.read_item(item, task_id, path, scoped=True)
            status = reading.status or "todo"
            position = reading.order if reading.order is not None else index
            record = record_of(task_id, scope, status, position, item, reading)
            record.blocked_by = blocked_by_value(item, task_id, blockers)
            if self.nul and record.blocked_by is not None and NUL in record.blocked_by:
                blocker = next(b for b in blockers if b.label == record.blocked_by)
                raise self.nul_error(
                    (where[0], *blocker.where),
                    record.blocked_by,
                    what=f"the blocker of {_shown(path)}",
                    key=len(blocker.where) == 1,
                )
            self._add(record, path)

    def _task_id(self, item: Mapping[str, Any], key: str, path: JsonPath) -> str:
        if key not in item:
            raise self.error(f"missing {key}", path)
        task_id = id_text(item[key])
        if task_id is None:
            raise self.error(f"{key} must be a non-empty string or an integer", path)
        return task_id

    def read_item(self, item: Mapping[str, Any], task_id: str, path: JsonPath, *, scoped: bool) -> _Reading:
        reading = _reading(item, task_id, scoped=scoped)
        for key in _TIMESTAMP_KEYS:
            if item.get(key) is not None and getattr(reading, key) is None:
                self.warn(f"{key} {item[key]!r} is not a timestamp: kept as written", path)
        if scoped and reading.status is None:
            self.warn(f"unknown status {item.get('status')!r}: read as todo", path)
        return reading

    def nul_error(
        self, path: JsonPath, value: str, *, what: str | None = None, key: bool = False
    ) -> FileFormatError:
        """FileFormatError at the NUL character of ``value``, the string at ``path`` (``key``: a
        key on that path holds it; the error then stands at its member's value)."""
        line, column = self.locator.position(path, nul=not key)
        return FileFormatError(nul_reason(what or _shown(path), value), line=line, column=column)

    def _refuse_nul(self, record: QueueRecord, path: JsonPath) -> None:
        """FileFormatError when a text of ``record`` the ledger stores as text (not as JSON)
        holds a NUL character."""
        if NUL in record.scope:
            raise self.nul_error(
                path[:2], record.scope, what=f"the queue path {_shown((record.scope,))}", key=True
            )
        fields = record.fields
        title_key = "description" if isinstance(fields.get("description"), str) else "title"
        for value, name in (
            (record.id, "task_id" if record.scope else "id"),
            (record.title, title_key),
            (record.priority, "priority"),
            (record.skill, "assigned_skill"),
            (record.project_id, "project_id"),
            (record.agent_id, "agent_id"),
            (record.user_id, "user_id"),
        ):
            if value is not None and NUL in value:
                raise self.nul_error((*path, name), value)

    def _add(self, record: QueueRecord, path: JsonPath) -> None:
        if self.nul:
            self._refuse_nul(record, path)
        earlier = self._seen.get((record.scope, record.id))
        if earlier is not None:
            raise self.error(f"duplicate id {record.id!r} (also at {_path_text(earlier)})", path)
        self._seen[(record.scope, record.id)] = path
        self.records.append(record)


def record_of(
    task_id: str, scope: str, status: str, position: int, item: dict[str, Any], reading: _Reading
) -> QueueRecord:
    # by position (the fields' order): a record is made for every task read, and keywords cost
    # twice as much; the object itself is the record's fields (read, never changed in place)
    return QueueRecord(
        task_id,
        scope,
        status,
        reading.title,
        reading.priority,
        position,
        None,
        item,
        reading.created_at,
        reading.completed_at,
        reading.skill,
        reading.project_id,
        reading.agent_id,
        reading.user_id,
    )


def title_of(item: Mapping[str, Any], task_id: str) -> str:
    """A task object's title as hb reads it (its id when it has none)."""
    return _title(item, task_id)[0]


def _title(item: Mapping[str, Any], task_id: str) -> tuple[str, str]:
    """A task object's title and the key that holds it (its id under "description" when none)."""
    for key in ("description", "title"):
        value = item.get(key)
        if isinstance(value, str):
            return value, key
    return task_id, "description"


# the orders a scoped entry's place is stored as (the ledger's integer column); one past them
# places the entry by its index, as an order that is not a whole number does
_ORDERS = range(-(2**31), 2**31)


def held_order(value: Any) -> int | None:
    """A scoped entry's ``order`` as its place in the ledger: a whole number in :data:`_ORDERS`."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value in _ORDERS else None


def _reading(item: Mapping[str, Any], task_id: str, *, scoped: bool) -> _Reading:
    title, title_key = _title(item, task_id)
    get = item.get
    # the who/what fields are text, or null, in nearly every object: read so without a call
    skill, project, agent, user = get("assigned_skill"), get("project_id"), get("agent_id"), get("user_id")
    order = get("order") if scoped else None
    priority = None if scoped else get("priority")
    if priority is not None and priority.__class__ is not str:
        priority = text_or_none(priority, numbers=False)
    created, completed = get("created_at"), get("completed_at")
    return _Reading(  # by position, in the fields' order (see record_of)
        title,
        title_key,
        priority,
        scoped_status(get("status")) if scoped else None,
        None if order is None else held_order(order),
        None if created is None else timestamp_or_none(created),
        None if completed is None else timestamp_or_none(completed),
        skill if skill is None or skill.__class__ is str else text_or_none(skill),
        project if project is None or project.__class__ is str else text_or_none(project),
        agent if agent is None or agent.__class__ is str else text_or_none(agent),
        user if user is None or user.__class__ is str else text_or_none(user),
    )


def scoped_status(value: Any) -> str | None:
    if value is None:
        return "todo"  # an entry without status is ready
    if not isinstance(value, str):
        return None
    return _STATUS_OF_SCOPED_VALUE.get(value.strip().lower())


def id_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def text_or_none(value: Any, *, numbers: bool = True) -> str | None:
    if isinstance(value, str):
        return value
    if numbers and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _is_entry(item: Any) -> bool:
    return isinstance(item, dict) and "task_id" in item


def _is_queue(value: Any) -> bool:
    # An empty list names no work, so it is metadata (and never blocks legacy pop).
    return isinstance(value, list) and bool(value) and all(_is_entry(item) for item in value)


# --- blocked_on_* filters --------------------------------------------------------


@dataclass(frozen=True)
class Blocker:
    issues: frozenset[str]  # from "issues" and "gh_issue"
    task_ids: frozenset[str]  # from "task_id"
    label: str  # "<blocked_on_key>: <blocker or items text>"
    where: JsonPath  # in its extension: the text of the label (its key, when it has none)


def read_blockers(body: Mapping[str, Any]) -> list[Blocker]:
    found: list[Blocker] = []
    for key, value in body.items():
        if not key.startswith(BLOCKED_PREFIX) or not isinstance(value, list):
            continue
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            issues = _names(item.get("issues")) | _names(item.get("gh_issue"))
            named = next((k for k in ("blocker", "items") if isinstance(item.get(k), str)), None)
            text = item[named] if named is not None else ""
            label = f"{key}: {text}" if text else key
            where: JsonPath = (key, index, named) if named is not None and NUL not in key else (key,)
            found.append(Blocker(frozenset(issues), frozenset(_names(item.get("task_id"))), label, where))
    return found


def _names(value: Any) -> set[str]:
    """Issue numbers or task ids named by a value: a scalar or a list of them."""
    values = value if isinstance(value, list) else [value]
    names: set[str] = set()
    for one in values:
        if isinstance(one, int) and not isinstance(one, bool):
            names.add(str(one))
        elif isinstance(one, str) and one.strip():
            names.add(one.strip().lstrip("#"))
    return names


def blocked_by_value(item: Mapping[str, Any], task_id: str, blockers: list[Blocker]) -> str | None:
    issues = _names(item.get("gh_issue"))
    for blocker in blockers:
        if issues & blocker.issues or task_id in blocker.task_ids:
            return blocker.label
    return None


# --- writing ---------------------------------------------------------------------


def render(doc: TasksDocument, records: Sequence[QueueRecord] | None = None) -> str:
    """Write tasks.json: see :func:`render_layout`."""
    return render_layout(doc, records)[0]


def render_layout(
    doc: TasksDocument, records: Sequence[QueueRecord] | None = None
) -> tuple[str, Layout | None]:
    """Write tasks.json: the skeleton of ``doc`` with ``records`` (default: its own) placed in.

    Legacy records go into the list of their status (created if missing);
    scoped records into their queue, with ``status`` set in place. A record
    already in that list keeps its place (``pending`` follows ``position``,
    the queue's order); one that arrived there is appended, as heartbeat.py
    appends a task to ``in_progress``, ``completed`` or ``failed``. ``pending``
    is written in hb pop's order (priority, then ``position``) once the file has
    it in priority order, as heartbeat.py's ``add`` keeps it, or a task arrives
    there (added, or back from a claim): ``pending[0]``, which heartbeat.py
    pops, is then the task hb pop takes. Records not given are left out.
    Unknown keys and their order survive; a known field is rewritten only
    when its value changed, except malformed ``+00:00Z`` timestamps, which
    are always written as ``Z``. The text is laid over ``doc.source``: what
    did not change keeps its bytes (:func:`heartbeat.formats.json_edit.edit`).
    Raises InvalidState when a record's scope names a list of the file that
    is not a queue. The text comes with its layout when it is ``json.dumps``'s
    own (:func:`heartbeat.formats.json_edit.edit_layout`).
    """
    chosen = doc.records if records is None else list(records)
    for record in chosen:
        _check_status(record.status)
    buckets = _place(doc, chosen)
    owners = _owners(doc.skeleton, buckets)
    top: list[tuple[str, Any]] = []
    for slot in doc.skeleton.slots:
        if isinstance(slot, Verbatim):
            top.append((slot.key, slot.value))
        elif isinstance(slot, LegacyList):
            top.append((slot.key, [render_task(r) for r in buckets.pop(("", slot.key), [])]))
        else:
            top.append((slot.key, _render_extension(slot.key, slot.entries, buckets, owners)))
    _insert_missing_legacy(top, buckets)
    for extension_key in _missing_extensions(buckets):
        if any(key == extension_key for key, _ in top):
            raise InvalidState(f"cannot write queues into {extension_key!r}: it is not an object")
        top.append((extension_key, _render_extension(extension_key, (), buckets)))
    from heartbeat.formats.json_edit import edit_layout  # loaded by the writers and readers alone

    return edit_layout(doc.source, dict(top), indent=doc.indent)


def _check_status(status: str) -> None:
    if status not in CANONICAL_STATUSES:
        raise InvalidInput(f"status {status!r} is not one of {', '.join(sorted(CANONICAL_STATUSES))}")


def _target(record: QueueRecord) -> tuple[str, str]:
    """(scope, legacy list name) for legacy records; (scope, "") for scoped ones."""
    if record.scope:
        return (record.scope, "")
    return ("", LEGACY_LIST_OF_STATUS[record.status])


def _place(doc: TasksDocument, records: Sequence[QueueRecord]) -> dict[tuple[str, str], list[QueueRecord]]:
    """Group records by destination list, each list in its written order."""
    home = {(r.scope, r.id): (_target(r), index) for index, r in enumerate(doc.records)}
    keyed: dict[tuple[str, str], list[tuple[tuple[int, int], QueueRecord]]] = {}
    pending: list[tuple[tuple[int, int], QueueRecord]] = []
    ranks = [priority_rank(r.priority) for r in doc.records if not r.scope and r.status == "todo"]
    by_priority = ranks == sorted(ranks)  # the file's pending is in priority order, as heartbeat.py keeps it
    for index, record in enumerate(records):
        target = _target(record)
        origin = home.get((record.scope, record.id))
        stayed = origin[1] if origin is not None and origin[0] == target else None  # its index in the file
        if target == ("", "pending"):
            if stayed is None:
                by_priority = True  # a task arrives: sorted, as heartbeat.py's add sorts pending
            # the queue's order: position, then the records' own order (the ledger gives them by
            # position and pk, as hb pop takes them): a task back from a claim whose position
            # another task took since stands where hb pop finds it
            pending.append(((record.position, index), record))
            continue
        # arrived here: after everything that stayed; a scoped entry keeps its place (position is
        # its "order"); so does a task in the lists heartbeat.py appends to as work moves on
        # (in_progress, completed, failed)
        order = (1, record.position) if stayed is None else (0, stayed)
        keyed.setdefault(target, []).append((order, record))
    placed = {
        target: [record for _, record in sorted(group, key=lambda pair: pair[0])]
        for target, group in keyed.items()
    }
    if pending:
        # heartbeat.py pops pending[0] and sorts pending by priority (stable) whenever it adds a
        # task: once the file's pending is in that order, or a task arrives there, hb writes it in
        # its own pop order (priority, then the queue's order), so pending[0] is what hb pop takes
        def key(pair: tuple[tuple[int, int], QueueRecord]) -> tuple[int, ...]:
            return (priority_rank(pair[1].priority), *pair[0]) if by_priority else pair[0]

        placed[("", "pending")] = [record for _, record in sorted(pending, key=key)]
    return placed


def _owners(skeleton: Skeleton, buckets: dict[tuple[str, str], list[QueueRecord]]) -> dict[str, str]:
    """For each queue of ``buckets`` the file does not name, the extension it is written into:
    the one with the longest key its path starts with (``_a_extension.b_extension.c`` goes into
    ``"_a_extension.b_extension": {"c": ...}`` when the file has that object). A queue the file
    names stays in the object that names it."""
    extensions = [slot for slot in skeleton.slots if isinstance(slot, Extension)]
    named = {
        f"{slot.key}.{entry.name}"
        for slot in extensions
        for entry in slot.entries
        if isinstance(entry, Queue)
    }
    owners = {}
    for scope, legacy_list in buckets:
        if legacy_list or scope in named:
            continue
        keys = [slot.key for slot in extensions if scope.startswith(f"{slot.key}.")]
        if keys:
            owners[scope] = max(keys, key=len)
    return owners


def _render_extension(
    key: str,
    entries: tuple[Queue | Verbatim, ...],
    buckets: dict[tuple[str, str], list[QueueRecord]],
    owners: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for entry in entries:
        scope = f"{key}.{entry.name if isinstance(entry, Queue) else entry.key}"
        if isinstance(entry, Queue) or (entry.value == [] and (scope, "") in buckets):
            name = entry.name if isinstance(entry, Queue) else entry.key
            body[name] = [render_task(r) for r in buckets.pop((scope, ""), [])]
        elif (scope, "") in buckets:
            raise InvalidState(f"cannot write scope {scope!r}: that list is not a queue any more")
        else:
            body[entry.key] = entry.value
    prefix = f"{key}."
    for scope, legacy_list in list(buckets):
        if not legacy_list and scope.startswith(prefix) and (owners is None or owners.get(scope) == key):
            body[scope.removeprefix(prefix)] = [render_task(r) for r in buckets.pop((scope, ""))]
    return body


def _insert_missing_legacy(
    top: list[tuple[str, Any]], buckets: dict[tuple[str, str], list[QueueRecord]]
) -> None:
    """Create the legacy lists records need, in heartbeat.py's order among those present."""
    for rank, name in enumerate(LEGACY_LISTS):
        group = buckets.pop(("", name), None)
        if group is None:
            continue
        keys = [key for key, _ in top]
        before = [keys.index(k) for k in LEGACY_LISTS[:rank] if k in keys]
        after = [keys.index(k) for k in LEGACY_LISTS[rank + 1 :] if k in keys]
        at = max(before) + 1 if before else min(after) if after else 0
        top.insert(at, (name, [render_task(r) for r in group]))


def _missing_extensions(buckets: dict[tuple[str, str], list[QueueRecord]]) -> list[str]:
    """Extension keys named by scoped records whose extension the file does not have."""
    wanted: list[str] = []
    for scope, legacy_list in buckets:
        if legacy_list:
            continue
        key = _split_scope(scope)[0]
        if key not in wanted:
            wanted.append(key)
    return wanted


def check_scope(scope: str, doc: TasksDocument | None = None) -> str:
    """``scope`` if tasks.json can hold a queue there (``_<batch>_extension.<queue>``), else
    InvalidInput: a task in any other scope could never be written to the file.

    A ``blocked_on_*`` name is a filter, never a queue; with ``doc`` (the file as last read), a
    name that is already a metadata list or a plain value there is refused too.
    """
    extension, name = _split_scope(scope)
    if name.startswith(BLOCKED_PREFIX):
        raise InvalidInput(f"scope {scope!r} is a {BLOCKED_PREFIX}* filter of tasks.json, not a queue")
    if doc is None:
        return scope
    for slot in doc.skeleton.slots:
        if slot.key != extension:
            continue
        if isinstance(slot, Verbatim):
            raise InvalidInput(f"scope {scope!r}: {extension} in tasks.json is not an object of queues")
        if isinstance(slot, Extension):
            for entry in slot.entries:
                if isinstance(entry, Verbatim) and entry.key == name:
                    raise InvalidInput(
                        f"scope {scope!r} names a key of tasks.json that is not a queue "
                        "(metadata, kept as written)"
                    )
    return scope


def _split_scope(scope: str) -> tuple[str, str]:
    m = _SCOPE_PATH.fullmatch(scope)
    if m is None:
        raise InvalidInput(f"scope {scope!r} is not a _<batch>_extension.<queue> path")
    return m[1], m[2]


def render_task(record: QueueRecord) -> dict[str, Any]:
    """The record as a JSON object: its original fields with changed known fields rewritten."""
    scoped = bool(record.scope)
    if not record.fields:
        return _new_scoped(record) if scoped else _new_legacy(record)
    return render_over(
        record.fields,
        scoped=scoped,
        task_id=record.id,
        title=record.title,
        priority=record.priority,
        status=record.status,
        position=record.position,
        assigned=(record.skill, record.project_id, record.agent_id, record.user_id),
        completed_at=record.completed_at,
        created_at=record.created_at,
    )


_UNCHANGED: Any = object()  # render_over's created_at: the object's own stamp, kept as it is


def render_over(
    fields: Mapping[str, Any],
    *,
    scoped: bool,
    task_id: str,
    title: str,
    priority: str | None,
    status: str,
    position: int,
    assigned: tuple[str | None, str | None, str | None, str | None],
    completed_at: datetime | None,
    created_at: datetime | None = _UNCHANGED,
) -> dict[str, Any]:
    """A task's original object ``fields`` with each known field rewritten where the value
    differs from what the object reads as (the rules of :func:`render_task`, which calls it with a
    record's attributes). ``assigned``: skill, project, agent and user ids. ``created_at`` left
    out: the object's own ``created_at`` stands (a row read back from the ledger carries it so).

    Each known field is read from the object as it was before any rewrite: the keys written never
    overlap the keys read after them."""
    out = dict(fields)
    id_key = "task_id" if scoped else "id"
    current = id_text(out.get(id_key))
    if task_id != current:
        out[id_key] = task_id
    title_was, title_key = _title(out, current or "")
    if title != title_was:
        out[title_key] = title
    if scoped:
        _write_scoped_status(out, status, scoped_status(out.get("status")))
        # an order hb does not hold stays as written (hb placed the entry by its index)
        order = held_order(out.get("order"))
        if order is not None and position != order:
            out["order"] = position
    else:
        was = out.get("priority")
        same = was == priority and (was is None or type(was) is str)  # equal text, or both unset
        if not same and priority != text_or_none(was, numbers=False):
            out["priority"] = priority
    for (_attribute, key), value in zip(_ASSIGNMENT_KEYS, assigned, strict=True):
        was = out.get(key)
        if was == value and (was is None or type(was) is str):
            continue  # the same text, or unset in both: the common case, read without a call
        if value != text_or_none(was):
            out[key] = value
    if created_at is not _UNCHANGED and created_at != timestamp_or_none(out.get("created_at")):
        out["created_at"] = _timestamp_text(created_at)
    if completed_at != timestamp_or_none(out.get("completed_at")):
        out["completed_at"] = _timestamp_text(completed_at)
    _fix_malformed_in_place(out)
    return out


def as_written(fields: Mapping[str, Any], key: str, value: str | None) -> Any:
    """The value of ``key`` (an assigned field: ``assigned_skill``, ``project_id``, ...) in a task
    object ``fields`` as written there, when it reads as ``value``, the ledger's text of it: what
    heartbeat.py copies into last-run.json (``task.get(key)``), an id written as a number or a
    skill as an object. Else ``value``, which :func:`render_over` writes into the object."""
    was = fields.get(key)
    if was is None or was.__class__ is str:
        return value  # unset, or text: the ledger's text is the value (the common case, no call)
    return was if value == text_or_none(was) else value


def _write_scoped_status(out: dict[str, Any], status: str, was: str | None) -> None:
    if status == (was or "todo"):
        return  # unchanged: the original value (or its absence) stays
    value = _SCOPED_VALUE_OF_STATUS[status]
    if value is None:
        out.pop("status", None)
    else:
        out["status"] = value


def _new_legacy(record: QueueRecord) -> dict[str, Any]:
    """A new legacy task in heartbeat.py's key order."""
    return {
        "id": record.id,
        "priority": record.priority,
        "description": record.title,
        "assigned_skill": record.skill,
        "project_id": record.project_id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
        "created_at": _timestamp_text(record.created_at),
        "completed_at": _timestamp_text(record.completed_at),
    }


def _new_scoped(record: QueueRecord) -> dict[str, Any]:
    """A new scoped entry: order, task_id, status, then only the fields that are set."""
    out: dict[str, Any] = {"order": record.position, "task_id": record.id}
    status = _SCOPED_VALUE_OF_STATUS[record.status]
    if status is not None:
        out["status"] = status
    if record.title and record.title != record.id:
        out["description"] = record.title
    for attribute, key in _ASSIGNMENT_KEYS:
        if getattr(record, attribute) is not None:
            out[key] = getattr(record, attribute)
    for key in _TIMESTAMP_KEYS:
        if getattr(record, key) is not None:
            out[key] = _timestamp_text(getattr(record, key))
    return out


def _timestamp_text(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def task_places(text: str) -> Counter[tuple[str, str, str | None]] | None:
    """Where each task of a tasks.json text stands, one key per task: its list and id (a legacy
    list's ``id``; a scoped queue's path, ``task_id`` and ``status``, which a pop or a completion
    changes in place). Two texts' keys differ by the tasks one of them added, took out or moved:
    how a runtime's copy is told from the text it was made from (heartbeat.py's one command adds
    a task or moves one). None for a text that is no JSON object."""
    try:
        doc = json.loads(text.removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    places: Counter[tuple[str, str, str | None]] = Counter()
    for key, value in doc.items():
        lists = [(key, value)]
        if EXTENSION_KEY.fullmatch(key) and isinstance(value, dict):
            lists = [(f"{key}.{name}", items) for name, items in value.items()]
        for where, items in lists:
            if not isinstance(items, list):
                continue
            for item in items:
                if isinstance(item, dict):
                    ident = str(item.get("task_id", item.get("id")))
                    status = item.get("status") if "task_id" in item else None
                    places[where, ident, None if status is None else str(status)] += 1
    return places


def task_ids(places: Counter[tuple[str, str, str | None]]) -> set[str]:
    """The ids of :func:`task_places`' keys."""
    return {ident for _where, ident, _status in places}


def fix_malformed(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object with every malformed ``+HH:MMZ`` string value rewritten as ``...Z``
    (as hb writes it back)."""
    fixed = dict(obj)
    _fix_malformed_in_place(fixed)
    return fixed


def _fix_malformed_in_place(obj: dict[str, Any]) -> None:
    for key, value in obj.items():
        # only a text that ends in Z (perhaps before spaces) can be one (is_malformed reads the rest)
        if value.__class__ is not str and (value is None or not isinstance(value, str)):
            continue
        last = value[-1:]
        ends_in_z = last == "Z" or last == "z" or (last.isspace() and value.rstrip()[-1:] in ("Z", "z"))
        if ends_in_z and is_malformed(value):
            obj[key] = format_timestamp(parse_timestamp(value))  # a value replaced: the keys stay


# --- errors.json and last-run.json -----------------------------------------------


def parse_errors(text: str) -> list[dict[str, Any]]:
    """Read errors.json: a JSON array of objects. FileFormatError for anything else."""
    text = text.removeprefix("\ufeff")
    data = load_json(text)
    locator = Locator(text)
    if not isinstance(data, list):
        line, column = locator.position(())
        raise FileFormatError("errors.json must hold a JSON array", line=line, column=column)
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            line, column = locator.position((index,))
            raise FileFormatError(
                f"[{index}]: must be an object, not {_json_type(item)}", line=line, column=column
            )
    return data


def render_errors(items: Sequence[Mapping[str, Any]], source: str | None = None) -> str:
    """Write errors.json (indent 2, or laid over ``source``, the file's text); malformed
    ``+00:00Z`` values are written as ``Z``."""
    from heartbeat.formats.json_edit import edit

    return edit(_no_bom(source), [fix_malformed(item) for item in items])


def parse_last_run(text: str) -> dict[str, Any]:
    """Read last-run.json: one JSON object. FileFormatError for anything else."""
    text = text.removeprefix("\ufeff")
    data = load_json(text)
    if not isinstance(data, dict):
        line, column = Locator(text).position(())
        raise FileFormatError("last-run.json must hold a JSON object", line=line, column=column)
    return data


def refuse_nul(text: str, kind: str) -> None:
    """FileFormatError at the first NUL character (a ``\\u0000`` escape) of a tasks.json,
    errors.json or last-run.json text (``kind``: tasks-json, errors-json, last-run) in a string
    the ledger stores as text: an id, a title, a priority, a skill, a queue path, a reason, ...
    (:func:`heartbeat.errors.nul_reason`). What the ledger keeps as JSON (the whole object, so a
    member hb does not read) may hold one. Most texts hold no such escape and are not read again."""
    if _MAYBE_NUL not in text:
        return
    if kind == "tasks-json":
        parse(text, refuse_nul=True)
        return
    text = text.removeprefix("\ufeff")
    locator = Locator(text)
    data = load_json(text)
    if kind == "last-run":
        _refuse_nul_members(locator, (), data, _LAST_RUN_TEXT_KEYS)
        return
    for index, item in enumerate(data):
        _refuse_nul_members(locator, (index,), item, _ERROR_TEXT_KEYS)


def _refuse_nul_members(
    locator: Locator, path: JsonPath, obj: Mapping[str, Any], keys: Sequence[str]
) -> None:
    """FileFormatError at the first of ``obj``'s ``keys`` whose text holds a NUL character: the
    ledger keeps these members as text (see :func:`heartbeat.errors.nul_reason`)."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and NUL in value:
            line, column = locator.position((*path, key), nul=True)
            raise FileFormatError(nul_reason(_shown((*path, key)), value), line=line, column=column)


def unread_times(text: str, items: Iterable[tuple[JsonPath, Mapping[str, Any]]]) -> list[str]:
    """Warnings for the ``timestamp`` members of errors.json items or last-run.json's object (each
    with its path in ``text``) that hb does not read as a time: the item is kept as written, and
    its row in the ledger is dated when hb read it (``line N: PATH: ...``)."""
    warnings = []
    locator: Locator | None = None
    for path, item in items:
        value = item.get("timestamp")
        if value is None or timestamp_or_none(value) is not None:
            continue
        locator = locator or Locator(text.removeprefix("\ufeff"))
        line, _ = locator.position((*path, "timestamp"))
        where = f"line {line}: " if line is not None else ""
        shown = _path_text((*path, "timestamp"))
        warnings.append(
            f"{where}{shown}: {value!r} is not a timestamp: kept as written, its row in the ledger "
            "is dated when hb read it"
        )
    return warnings


def render_last_run(obj: Mapping[str, Any], source: str | None = None) -> str:
    """Write last-run.json (indent 2, or laid over ``source``, the file's text); malformed
    ``+00:00Z`` values are written as ``Z``."""
    from heartbeat.formats.json_edit import edit

    return edit(_no_bom(source), fix_malformed(obj))


def _no_bom(source: str | None) -> str | None:
    return None if source is None else source.removeprefix("\ufeff")


def error_entry(
    *,
    timestamp: datetime,
    task_id: str | None,
    assigned_skill: str | None = None,
    reason: str | None = None,
    trace_id: str | None = None,
    decision_log: Any = None,
    resolved: bool = False,
) -> dict[str, Any]:
    """An errors.json item in heartbeat.py's shape; an empty reason is "Unknown failure"."""
    return {
        "timestamp": format_timestamp(timestamp),
        "task_id": task_id,
        "assigned_skill": assigned_skill,
        "reason": reason or "Unknown failure",
        "trace_id": trace_id,
        "decision_log": decision_log,
        "resolved": resolved,
    }


def last_run_entry(
    *,
    timestamp: datetime,
    task_id: str | None,
    status: str,
    description: str | None = None,
    assigned_skill: str | None = None,
    project_id: str | None = None,
    agent_id: str | None = None,
    user_id: str | None = None,
    outcome: Any = None,
    trace_id: str | None = None,
    decision_log: Any = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """The last-run.json object in heartbeat.py's shape; a legacy run has scope null."""
    return {
        "timestamp": format_timestamp(timestamp),
        "task_id": task_id,
        "status": status,
        "description": description,
        "assigned_skill": assigned_skill,
        "project_id": project_id,
        "agent_id": agent_id,
        "user_id": user_id,
        "outcome": outcome,
        "trace_id": trace_id,
        "decision_log": decision_log,
        "scope": scope or None,
    }


def outcome_value(text: str) -> Any:
    """An ``--outcome`` argument as stored: its JSON value, or ``{"result": text}`` if not JSON.
    ``NaN``, ``Infinity`` and a number past a float's range (``1e999``) count as text: no JSON
    reader but Python's could read them back from last-run.json. So does JSON nested deeper than
    :data:`OUTCOME_DEPTH` levels: last-run.json is written with an indent, by json's
    pure-Python encoder, which gave up some levels short of what its reader takes (an internal
    error after the completion was committed)."""
    if text.count("[") + text.count("{") > OUTCOME_DEPTH and _depth(text) > OUTCOME_DEPTH:
        return {"result": text}
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError):  # not JSON, or a number json.loads will not convert
        return {"result": text}


OUTCOME_DEPTH = 500


def _depth(text: str) -> int:
    """How deep the brackets of a JSON text nest (those inside strings skipped)."""
    from heartbeat.formats.json_edit import brackets

    return max((depth for _at, depth in brackets(text)), default=0)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _finite(text: str) -> float:
    """A JSON number as a float, ValueError when it is past a float's range (``1e999``, read as
    infinity: written back as ``Infinity``, which is no JSON)."""
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(text)
    return value


# --- JSON text helpers ------------------------------------------------------------


# a text that may hold a number JSON cannot (NaN, Infinity, or past a float's range: 1e309 and up)
_MAYBE_NOT_FINITE = re.compile(r"NaN|Infinity|\d[eE]\+?\d{3}")


def refuse_not_finite(text: str) -> None:
    """FileFormatError at the first number of a tasks.json, errors.json or last-run.json text that
    is not finite (``NaN``, ``Infinity``, ``1e999``): a ledger on PostgreSQL stores its JSON in
    ``json`` columns, which hold strict JSON only (on SQLite it is kept as written). Most texts
    hold nothing of the kind and are not read again."""
    if not _MAYBE_NOT_FINITE.search(text):
        return
    text = text.removeprefix("\ufeff")
    where = _not_finite(load_json(text), ())
    if where is None:
        return
    line, column = Locator(text).position(where)
    raise FileFormatError(
        f"{_path_text(where)}: a number JSON cannot hold (NaN, Infinity, or past 1.8e308), which a "
        "ledger on PostgreSQL cannot store; nothing changed",
        line=line,
        column=column,
    )


def _not_finite(value: Any, where: JsonPath) -> JsonPath | None:
    """The path of the first float in ``value`` that is not finite (None: there is none)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _not_finite(item, (*where, key))
        if found is not None:
            return found
    return None


def is_json(text: str) -> bool:
    """Whether ``text`` is JSON (as Python's json reads it): a file merged line by line is written
    only when it still is."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):  # (nested deeper than Python's json reads)
        return False
    return True


def load_json(text: str, repeats: list[bool] | None = None) -> Any:
    """The JSON value of ``text``; ``repeats`` gets an item when an object repeats a key."""
    hook = None
    if repeats is not None:

        def hook(members: list[tuple[str, Any]]) -> dict[str, Any]:
            obj = dict(members)  # the last value of a repeated key wins, as in json.loads
            if len(obj) != len(members) and not repeats:
                repeats.append(True)
            return obj

    from heartbeat.formats.json_edit import load

    return load(text, object_pairs_hook=hook)


def _detect_indent(text: str, *, empty: bool) -> int | None:
    """The indentation of the first indented line; None for one-line JSON; 2 if unknown."""
    body = text.strip()
    if "\n" not in body:
        return 2 if empty else None
    for line in body.splitlines()[1:]:
        content = line.lstrip(" \t")
        if content:
            lead = line[: len(line) - len(content)]
            return 2 if "\t" in lead else len(lead)
    return 2


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _shown(path: JsonPath) -> str:
    """A path for a message: a NUL character in a key as JSON writes it (``\\u0000``)."""
    return _path_text(path).replace(NUL, "\\u0000")


def _queue_text(where: JsonPath) -> str:
    """A queue's place as its two keys: ``"b.c" of "_a_extension"`` (its path would join them)."""
    return f"{json.dumps(where[-1], ensure_ascii=False)} of {json.dumps(where[0], ensure_ascii=False)}"


def _path_text(path: JsonPath) -> str:
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else step
    return text


class Locator:
    """Finds where a JSON path's value starts in already-valid JSON text (best effort).

    Each container's members are located once, on the first path through it, and the line
    breaks' offsets once: a file with a warning for each of its 20,000 tasks is read in one
    pass, where walking from the top for each (and counting the lines before each) took time
    in the square of its size (66 s for 4,000 tasks)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._decoder = json.JSONDecoder()
        self._members: dict[int, dict[Any, int]] = {}  # a container's offset -> its members' offsets
        self._breaks: list[int] | None = None  # the offsets of the text's "\n", in order

    def position(self, path: JsonPath, *, nul: bool = False) -> tuple[int | None, int | None]:
        """(line, column), 1-based, of the value at ``path``; (None, None) if not found.
        ``nul``: of the first NUL character's escape in it (a string that holds one)."""
        try:
            offset: int | None = self._skip(0)
            for step in path:
                if offset is None:
                    break
                offset = self._child(offset, step)
        except (ValueError, IndexError, RecursionError):
            offset = None
        if offset is None:
            return None, None
        if nul and (escape := _NUL_ESCAPE.search(self._text, offset)) is not None:
            offset = escape.start(1)
        if self._breaks is None:
            self._breaks = [m.start() for m in _LINE_BREAK.finditer(self._text)]
        before = bisect_left(self._breaks, offset)  # the line breaks before the value
        line_start = self._breaks[before - 1] + 1 if before else 0
        return before + 1, offset - line_start + 1

    def _skip(self, offset: int) -> int:
        m = _WHITESPACE.match(self._text, offset)
        return m.end() if m else offset

    def _after_value(self, offset: int) -> int:
        """Offset of the next member: past the value at ``offset`` and its comma."""
        offset = self._skip(self._decoder.raw_decode(self._text, offset)[1])
        return self._skip(offset + 1) if self._text[offset] == "," else offset

    def _child(self, offset: int, step: str | int) -> int | None:
        if self._text[offset] != ("{" if isinstance(step, str) else "["):
            return None
        members = self._members.get(offset)
        if members is None:
            members = self._members[offset] = self._read_members(offset)
        return members.get(step)

    def _read_members(self, offset: int) -> dict[Any, int]:
        """The offsets of the values of the object or array at ``offset``, by key or index (of
        a key written twice, the last: it is the one json.loads keeps)."""
        text = self._text
        members: dict[Any, int] = {}
        if text[offset] == "{":
            offset = self._skip(offset + 1)
            while text[offset] != "}":
                key, offset = self._decoder.raw_decode(text, offset)
                offset = self._skip(self._skip(offset) + 1)  # past the colon
                members[key] = offset
                offset = self._after_value(offset)
            return members
        offset = self._skip(offset + 1)
        while text[offset] != "]":
            members[len(members)] = offset
            offset = self._after_value(offset)
        return members
