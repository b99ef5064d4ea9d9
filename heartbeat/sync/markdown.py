"""TODO.md, TODO.DONE.md and TODO.RECUR.md <-> the ledger: import, export and two-way sync.

FORMATS.md section 1, SPEC.md section 4. :mod:`heartbeat.formats.todo` reads
and writes the lines; this module decides which line is which ledger row and
what changed on which side since the last sync.

Identity. An entry is matched to a row, in this order, by: the exact line hb
last synced for the row; the extended dialect's ``[ID]`` key; the identity key
(``external_key``: ``Created`` + ``ChatID`` for TODO files, ``ChatID`` +
content for TODO.RECUR.md, with a digest of the content (resp. the schedule)
added when two entries share it); and last by the fallback key of the line
last synced (``Created`` + ``ChatID``; the schedule of a rule), so editing the
text of a line updates the same row.

Merge. ``synced_hash`` is the digest of a row's file-relevant fields at the
last sync. A side whose digest differs from it has changed: only the file ->
the file's version is imported; only the ledger -> the line is rewritten,
moved or removed; both, differently -> a conflict: the file wins and the
ledger's version goes to the history (``task_events``, kind ``conflict``). An
entry gone from a file that exists removes its row (history kept; a missing
file is rewritten from the ledger instead). TODO.md and TODO.DONE.md are
synced together: completing an entry moves it from one to the other.

Speed. A file whose hash is the one recorded at the last sync is not read,
and when the ledger did not change either (:meth:`_Family.mark`) no row is
loaded (on SQLite the engine's seal answers that case before this module is
even imported). When only TODO.md / TODO.DONE.md changed and neither holds an
HTML comment, only the lines between the common prefix and suffix with the
text last synced are parsed, and only their rows are queried, by
``external_key``. That text is kept as a copy beside the ledger
(``.agent/state/sync/<kind>.base``, written after the commit) and trusted only
while its hash is the one ``sync_state`` recorded; rewriting a 1 MB copy inside
the database on every sync cost more than the sync itself. Rows are loaded,
inserted and updated with bulk statements; unchanged rows are not written.

Plain SQL. The module speaks plain SQL on the driver connection of the
transaction it is given (:class:`heartbeat.db.plain.Conn`; a SQLAlchemy
session's own, or the engine's when it syncs without SQLAlchemy), with the
column types of :mod:`heartbeat.db.shape`, so it never imports SQLAlchemy.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import operator
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from heartbeat.clock import isoformat
from heartbeat.db import plain
from heartbeat.db.plain import Conn, in_list
from heartbeat.db.shape import RECURRENCES, TASK_EVENTS, TASKS, Shape
from heartbeat.db.status import ACTIVE_STATUSES, TaskStatus
from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats import go_text
from heartbeat.formats import todo as fmt
from heartbeat.formats.go_text import trim_space
from heartbeat.formats.todo import Entry, TodoKind
from heartbeat.rules.repeat import parse_repeat
from heartbeat.sync import bookmarks
from heartbeat.sync.engine import read_optional
from heartbeat.sync.files import STATE, atomic_write, default_path, digest
from heartbeat.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from heartbeat.db.rows import TaskRow
    from heartbeat.db.store import Db
    from heartbeat.ledger import Ledger

TODO_SOURCE = "todo"  # Task.source of Markdown TODO entries
RECUR_SOURCES = ("recur", "cli")  # Recurrence.source of rules that live in TODO.RECUR.md
TASK_KINDS = ("todo", "done")
ACTOR = "sync"

_KIND = {"todo": TodoKind.TODO, "done": TodoKind.DONE, "recur": TodoKind.RECUR}
_ID = re.compile(r"(todo|recur)-[0-9a-f]{8}")
_DUP = " ~"  # separates an identity key from the digest that tells duplicates apart
_BY = "markdown-sync"  # marks a sync_state row written by this module
_TARGETED_MAX = 2000  # changed lines up to which a sync reads only the changed region
_CHUNK = 500  # ids per IN (...) query


# --- small helpers -----------------------------------------------------------------------


def _stamp(value: datetime | None) -> str | None:
    """A UTC instant as the files write it (minute precision)."""
    if value is None:
        return None
    v = value if value.tzinfo is UTC else value.astimezone(UTC)
    return str(v)[:16]  # "YYYY-MM-DD HH:MM:SS+00:00", cut


def _wall(value: datetime | None) -> str | None:
    """A naive wall-clock time as ``YYYY-MM-DD HH:MM``."""
    if value is None:
        return None
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}"


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _content(title: str) -> str:
    """A title as one entry line's content: one line (only LF ends one), trimmed as Go trims."""
    return " ".join(go_text.fields(title)) if "\n" in title else trim_space(title)


def _entry_id(entry: Entry | None) -> str | None:
    if entry is None:
        return None
    for key, value in entry.extra:
        if key == "ID":
            return value
    return None


def _split_lines(text: str) -> list[str]:
    """Lines with their endings; only LF ends a line (as formats.todo reads them)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _body(line: str) -> str:
    """A line without its ending (LF or CRLF)."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line


def _front_matter_end(lines: Sequence[str]) -> int:
    """How many lines a front matter spans (0: none; all: unterminated), also one after a BOM
    that the runtime reads as entry lines."""
    if not lines or trim_space(trim_space(_body(lines[0])).removeprefix(fmt.BOM)) != "---":
        return 0
    for index in range(1, len(lines)):
        if trim_space(_body(lines[index])) == "---":
            return index + 1
    return len(lines)


def _read_dialect(current: str, stored: str | None) -> str:
    """Read with the extended dialect while leaving it, so lines with [ID] are still recognised."""
    return "extended" if "extended" in (current, stored) else "strict"


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


# --- records, rows, items ------------------------------------------------------------------


class _Record:
    """The file-relevant values of a row or an entry; ``place`` is the file kind (None: no file)."""

    __slots__ = ("_digest", "place", "values")

    def __init__(self, place: str | None, values: tuple[str | None, ...]) -> None:
        self.place = place
        self.values = values
        self._digest: str | None = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            text = "\x1f".join("\x00" if v is None else v for v in (self.place, *self.values))
            self._digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Record) and (self.place, self.values) == (other.place, other.values)

    def __hash__(self) -> int:
        return hash((self.place, self.values))


class _Row:
    """A ledger row as the sync sees it: loaded in bulk, written back in bulk."""

    __slots__ = ("_alt", "_record", "data", "extra", "family", "id", "key", "pk", "position", "synced_hash")

    def __init__(self, family: _Family, data: Any) -> None:
        self.family = family
        self.data = data
        self.pk: int = data.pk
        self.id: str = data.id
        self.key: str | None = data.external_key
        self.position: int = data.position or 0
        self.synced_hash: str | None = data.synced_hash
        self.extra: dict[str, Any] = dict(data.extra or {})
        self._record: _Record | None = None
        self._alt: str | None = None

    @property
    def record(self) -> _Record:
        """The ledger's version now."""
        if self._record is None:
            self._record = self.family.row_record(self.data)
        return self._record

    @property
    def alt(self) -> str:
        """The fallback identity of the line last synced (else of the ledger's version)."""
        if self._alt is None:
            self._alt = self.family.row_alt(self)
        return self._alt

    @property
    def base_place(self) -> str | None:
        """The file the row was in at the last sync (None: none, or never synced)."""
        place = self.extra.get("file") if self.synced_hash else None
        return place if isinstance(place, str) else None

    @property
    def base_line(self) -> str | None:
        line = self.extra.get("line") if self.synced_hash else None
        return line if isinstance(line, str) else None


@dataclass(eq=False)
class _Item:
    """An entry line of a file, with the row it was matched to."""

    kind: str
    number: int  # 1-based line in the file as read (0: not known, see _known)
    raw: str  # the line without its ending
    entry: Entry | None  # None: a line known unchanged since the last sync (``row`` set)
    row: _Row | None = None
    record: _Record | None = None  # the file's version (None when ``entry`` is None)
    key: str = ""
    alt: str = ""
    fate: str = "keep"  # keep | rewrite (the row's version) | merged (``entry`` as merged) | drop
    final_extra: dict[str, Any] | None = None  # a new row's extra and synced_hash
    final_hash: str | None = None


@dataclass
class _File:
    kind: str
    path: Path
    text: str | None
    items: list[_Item]
    warnings: list[tuple[int, str, str]]  # (line, text, reason)
    doc: fmt.Document | None = None  # full parse, made when the file is rendered


@dataclass
class _Stored:
    """What the last sync recorded about a file (sync_state)."""

    hash: str | None = None
    path: str | None = None
    mark: Any = None
    dialect: str | None = None
    warnings: list[tuple[int, str, str]] = field(default_factory=list)
    ours: bool = False  # written by this module's sync: a baseline to trust
    retry: bool = False  # the last sync left a ledger change it could not write: sync in full

    @classmethod
    def load(cls, db: Conn, kind: str) -> _Stored:
        row = bookmarks.load(db, kind)
        if row is None:
            return cls()
        skeleton = row["skeleton"] or {}
        if skeleton.get("by") != _BY:
            return cls(hash=row["content_hash"], path=row["path"])
        return cls(
            hash=row["content_hash"],
            path=row["path"],
            mark=skeleton.get("mark"),
            dialect=skeleton.get("dialect"),
            warnings=[(int(n), str(t), str(r)) for n, t, r in skeleton.get("warnings", [])],
            ours=True,
            retry=bool(skeleton.get("retry")),
        )


def _base_path(workspace: Path, kind: str) -> Path:
    return workspace / STATE / "sync" / f"{kind}.base"


def _base_text(workspace: Path, kind: str) -> str | None:
    """The text of the file as the last sync left it: a copy kept beside the ledger, trusted
    only while its hash is the one the ledger recorded (else the sync reads the whole file)."""
    try:
        return _base_path(workspace, kind).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _store(
    db: Conn,
    kind: str,
    path: Path,
    text: str | None,
    now: datetime,
    *,
    mark: Any,
    dialect: str,
    warnings: Sequence[tuple[int, str, str]],
    base: Path | None,
    retry: bool = False,
) -> None:
    """Record how the sync leaves a file; ``base``: where to keep a copy of its text (None: the
    copy there is already this text); ``retry``: a ledger change could not be written, so the
    next sync must not take the ledger as unchanged."""
    skeleton: dict[str, Any] = {
        "by": _BY,
        "mark": mark,
        "dialect": dialect,
        "warnings": [list(w) for w in warnings],
    }
    if retry:
        skeleton["retry"] = True
    bookmarks.save(
        db,
        kind,
        path=str(path),
        content_hash=None if text is None else digest(text),
        size=None if text is None else len(text.encode("utf-8")),
        synced_at=now,
        skeleton=skeleton,
    )
    if base is not None:
        db.after_commit.append(lambda: _keep_base(base, text))
        # hb 0.1.0 kept the copy in the database: drop it once the copy beside it exists
        db.execute("DELETE FROM sync_state WHERE kind = :kind", {"kind": f"{kind}.base"})


def _keep_base(base: Path, text: str | None) -> None:
    """Write (or drop) the copy of a synced file's text. A copy that could not be written only
    costs the next sync a full read."""
    try:
        if text is None:
            base.unlink(missing_ok=True)
        else:  # temp file + rename, no fsync: a torn copy fails its hash check like any other
            base.parent.mkdir(parents=True, exist_ok=True)
            tmp = base.with_name(f".{base.name}.tmp")
            tmp.write_bytes(text.encode("utf-8"))
            os.replace(tmp, base)
    except OSError:
        with contextlib.suppress(OSError):
            base.unlink(missing_ok=True)


# --- the two families: tasks (TODO.md + TODO.DONE.md) and recurrences (TODO.RECUR.md) ------


class _Family:
    """What differs between TODO/DONE tasks and TODO.RECUR.md rules."""

    kinds: tuple[str, ...]
    prefix: str
    shape: Shape
    columns: tuple[str, ...]  # what a _Row is made of
    where: str  # the family's rows (SQL)
    keyed: str  # the family's condition for lookups by key (what the index serves)

    def __init__(self, ledger: Ledger, db: Conn, now: datetime) -> None:
        self.ledger = ledger
        self.db = db
        self.now = now
        self.dialect = ledger.settings.todo_dialect
        self.actor = ACTOR

    # reading
    def mark(self) -> Any:
        """A cheap fingerprint of the rows: unchanged means the ledger side did not move."""
        raise NotImplementedError

    def load(self, condition: str | None = None, params: dict[str, Any] | None = None) -> list[_Row]:
        """The family's rows (``condition``: only those, looked up by an index of it)."""
        where = self.where if condition is None else f"{self.keyed} AND ({condition})"
        sql = f"SELECT {', '.join(self.columns)} FROM {self.shape.name} WHERE {where}"
        out = []
        for values in self.db.rows(sql, params):
            data = _Data(self.shape.decode(values, self.columns))
            if self.mine(data):
                out.append(_Row(self, data))
        return out

    def full_rows(self, pks: Sequence[int]) -> list[dict[str, Any]]:
        """Whole rows (every column, decoded) by primary key."""
        out: list[dict[str, Any]] = []
        for chunk in _chunks(list(pks)):
            frag, params = in_list("pk", chunk)
            sql = f"SELECT {self.shape.select()} FROM {self.shape.name} WHERE pk IN {frag}"
            out.extend(self.shape.decode(values) for values in self.db.rows(sql, params))
        return out

    def delete(self, pks: Sequence[int]) -> None:
        for chunk in _chunks(list(pks)):
            frag, params = in_list("pk", chunk)
            self.db.execute(f"DELETE FROM {self.shape.name} WHERE pk IN {frag}", params)

    def mine(self, data: Any) -> bool:
        return True

    def row_record(self, data: Any) -> _Record:
        raise NotImplementedError

    def entry_record(self, kind: str, entry: Entry) -> _Record:
        raise NotImplementedError

    def keys(self, record: _Record) -> tuple[str, str]:
        """(identity key, fallback key) of a record."""
        raise NotImplementedError

    def dup_key(self, key: str, record: _Record) -> str:
        raise NotImplementedError

    def row_alt(self, row: _Row) -> str:
        line = row.base_line
        place = row.base_place
        if line is not None and place is not None:
            try:
                entry = fmt.parse_entry(line, _KIND[place], dialect="extended")
            except ValueError:
                pass
            else:
                return self.keys(self.entry_record(place, entry))[1]
        return self.keys(row.record)[1]

    # writing
    def entry(self, row: _Row, kind: str) -> Entry:
        raise NotImplementedError

    def apply(self, changes: list[tuple[_Row, _Item, bool]], label: dict[int, str]) -> None:
        """Import the file's version of each (row, item, conflict)."""
        raise NotImplementedError

    removed: str  # the history's reason for a row whose line was deleted

    def history(
        self, row: dict[str, Any], kind: str, detail: dict[str, Any], before: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A ``task_events`` row for ``row`` (``before``: its snapshot, default the row as it is)."""
        raise NotImplementedError

    def remove(self, rows: list[_Row], conflicts: set[int]) -> None:
        """Delete the rows of deleted lines, each with a ``removed`` history row."""
        if not rows:
            return
        events = []
        for row in self.full_rows([r.pk for r in rows]):
            detail = {"reason": self.removed}
            if row["pk"] in conflicts:
                detail["note"] = "changed in the ledger too; the file won"
            events.append(self.history(row, "removed", detail))
        _record_events(self.db, events, self.now, self.actor)
        self.delete([r.pk for r in rows])

    def insert(self, items: list[_Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        """Add rows for new entries; returns their ids (in order)."""
        raise NotImplementedError

    def incoming_order(self, kind: str, rows: list[_Row]) -> list[_Row]:
        return sorted(rows, key=lambda r: (r.position, r.pk))

    def arrivals(self, kind: str) -> str:
        """Where rows arriving in this file go: ``top`` or ``end`` of its list, or ``position``."""
        return "position"

    def merge(self, row: _Row, entry: Entry) -> Entry | None:
        """For a conflict (the line and the row both changed): the line's version with what the
        ledger changed and the line did not, when that is not just the line (None: the line wins)."""
        return None

    def report_kind(self, before: str | None, after: str) -> str:
        """Which report list a row arriving in ``after`` (from ``before``) goes to."""
        return "updated" if before is not None else "added"

    # shared

    def bookkeeping(self, rows: Sequence[tuple[_Row, dict[str, Any]]]) -> None:
        """Record, in bulk, what each row looks like in its file now."""
        db = self.db
        db.executemany(
            f"UPDATE {self.shape.name} SET synced_hash = :synced_hash, extra = {{json:extra}}, "
            "external_key = :external_key, position = :position WHERE pk = :b_pk",
            [{**values, "b_pk": row.pk, "extra": db.json(values["extra"])} for row, values in rows],
        )

    def new_ids(self, keys: Sequence[str], wanted: Sequence[str | None]) -> list[str]:
        """Stable ``<prefix>xxxxxxxx`` ids derived from the identity keys, unique in the ledger."""
        out: list[str | None] = [None] * len(keys)
        used: set[str] = set()
        salt = [0] * len(keys)
        pending = list(range(len(keys)))
        first = True
        while pending:
            candidates: dict[str, int] = {}
            retry: list[int] = []
            for i in pending:
                asked = wanted[i] if first else None
                if asked is not None and _ID.fullmatch(asked) and asked.startswith(self.prefix):
                    cand = asked
                else:
                    seed = keys[i] if salt[i] == 0 else f"{keys[i]}#{salt[i]}"
                    cand = self.prefix + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:8]
                if cand in used or cand in candidates:
                    salt[i] += 1
                    retry.append(i)
                    continue
                candidates[cand] = i
            if len(candidates) > _CHUNK:  # many at once (a first sync): read every id once
                taken = {r[0] for r in self.db.rows(self.ids_taken)}
            else:
                frag, params = in_list("id", list(candidates))
                taken = {r[0] for r in self.db.rows(f"{self.ids_taken} AND id IN {frag}", params)}
            for cand, i in candidates.items():
                if cand in taken:
                    salt[i] += 1
                    retry.append(i)
                else:
                    out[i] = cand
                    used.add(cand)
            pending = sorted(retry)
            first = False
        return [o for o in out if o is not None]

    ids_taken: str  # the ids new ones must not repeat (SQL, ANDed with ``id IN (...)``)


class _Data:
    """A loaded row's columns as attributes."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:  # typed access for mypy; every column is set
        raise AttributeError(name)


class _Tasks(_Family):
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
        "lease_expires_at = :lease_expires_at, version = :version, updated_at = :updated_at, "
        "last_update_at = :last_update_at WHERE pk = :pk"
    )

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

    def row_record(self, data: Any) -> _Record:
        status = TaskStatus(data.status)
        place = "done" if status is TaskStatus.DONE else "todo" if status in ACTIVE_STATUSES else None
        done = _stamp(data.completed_at or data.updated_at) if place == "done" else None
        return _Record(place, (_content(data.title), _stamp(data.created_at), done, data.chat_id))

    def entry_record(self, kind: str, entry: Entry) -> _Record:
        done = _stamp(entry.done) if kind == "done" else None
        return _Record(kind, (entry.content, _stamp(entry.created), done, entry.chat_id))

    def keys(self, record: _Record) -> tuple[str, str]:
        base = f"{record.values[1]}|{record.values[3] or ''}"
        return base, base

    def dup_key(self, key: str, record: _Record) -> str:
        return f"{key}{_DUP}{_short(record.values[0] or '')}"

    def row_alt(self, row: _Row) -> str:
        if row.key and row.synced_hash:
            return row.key.split(_DUP, 1)[0]  # the Created + ChatID it was last synced with
        return self.keys(row.record)[1]

    def entry(self, row: _Row, kind: str) -> Entry:
        data = row.data
        done = data.completed_at or data.updated_at
        return Entry(
            kind=_KIND[kind],
            content=_content(data.title),
            created=data.created_at.astimezone(UTC),
            done=done.astimezone(UTC) if kind == "done" else None,
            chat_id=data.chat_id,
            extra=(("ID", row.id),) if self.dialect == "extended" else (),
        )

    def arrivals(self, kind: str) -> str:
        # mistermorph's Complete puts the entry first in TODO.DONE.md's list
        return "top" if kind == "done" else "position"

    def incoming_order(self, kind: str, rows: list[_Row]) -> list[_Row]:
        if kind == "done":  # completed one by one, each on top: the latest first
            rows = super().incoming_order(kind, rows)
            far = datetime.max.replace(tzinfo=UTC)
            return sorted(rows, key=lambda r: r.data.completed_at or far, reverse=True)
        return super().incoming_order(kind, rows)

    def report_kind(self, before: str | None, after: str) -> str:
        if after == "done" and before != "done":
            return "completed"
        return super().report_kind(before, after)

    def apply(self, changes: list[tuple[_Row, _Item, bool]], label: dict[int, str]) -> None:
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
        db.executemany(self._UPDATE, updates)
        _record_events(db, events, now, self.actor)

    def _take_entry(self, task: dict[str, Any], kind: str, entry: Entry) -> list[str]:
        """Set the entry's fields on the row (a dict); the names of those that changed."""
        changed: list[str] = []

        def put(name: str, value: Any) -> None:
            if task[name] != value:
                task[name] = value
                changed.append(name)

        if _content(task["title"]) != entry.content:
            put("title", entry.content)
        if kind == "done":
            put("status", TaskStatus.DONE)
            if _stamp(task["completed_at"]) != _stamp(entry.done):
                put("completed_at", entry.done)
        elif not TaskStatus(task["status"]).active:
            put("status", TaskStatus.TODO)
            put("completed_at", None)
        if task["status"] != TaskStatus.DOING:
            task["claimed_at"] = task["claimed_by"] = task["lease_expires_at"] = None
        if _stamp(task["created_at"]) != _stamp(entry.created):
            put("created_at", entry.created)
        put("chat_id", entry.chat_id)
        return changed

    def history(
        self, row: dict[str, Any], kind: str, detail: dict[str, Any], before: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        # as heartbeat.tasks.record_event writes it
        before = TASKS.snapshot(row) if before is None else before
        return {
            "task_pk": row["pk"],
            "task_id": row["id"],
            "scope": row["scope"],
            "kind": kind,
            "before": before,
            "detail": detail,
        }

    def insert(self, items: list[_Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        if not items:
            return []
        ids = self.new_ids([it.key for it in items], [_entry_id(it.entry) for it in items])
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
        pks = _insert_rows(self.db, TASKS, params)
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
        _record_events(self.db, events, now, self.actor)
        return ids


class _Recurrences(_Family):
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

    def row_record(self, data: Any) -> _Record:
        place = "recur" if self._eligible(data) else None
        values = (_content(data.title), self._rule_text(data.rule), data.tz, data.next_local, data.chat_id)
        return _Record(place, values)

    @staticmethod
    def _rule_text(rule: str) -> str:
        """The Repeat value for a rule: as written, cron with ';' for ','."""
        try:
            repeat = parse_repeat(rule, any_step=True)
        except ValueError:
            return rule
        return rule if repeat.runtime_readable else repeat.render()

    def entry_record(self, kind: str, entry: Entry) -> _Record:
        return _Record(kind, (entry.content, entry.repeat, entry.tz, _wall(entry.next), entry.chat_id))

    def keys(self, record: _Record) -> tuple[str, str]:
        content, rule, tz, next_local, chat = record.values
        key = f"{chat or ''}|{_short(content or '')}"
        alt = f"{next_local}|{' '.join((rule or '').lower().split())}|{tz or ''}|{chat or ''}"
        return key, alt

    def dup_key(self, key: str, record: _Record) -> str:
        return f"{key}{_DUP}{_short(json.dumps(record.values[1:4]))}"

    def entry(self, row: _Row, kind: str) -> Entry:
        data = row.data
        return Entry(
            kind=TodoKind.RECUR,
            content=_content(data.title),
            next=fmt._parse_stamp(data.next_local),
            repeat=self._rule_text(data.rule),
            tz=data.tz,
            chat_id=data.chat_id,
            extra=(("ID", row.id),) if self.dialect == "extended" else (),
        )

    def arrivals(self, kind: str) -> str:
        return "end"

    def merge(self, row: _Row, entry: Entry) -> Entry | None:
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
        return resolve_next(next_local, fmt.rule_zone(tz, self.ledger.zone), stored)

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

    def apply(self, changes: list[tuple[_Row, _Item, bool]], label: dict[int, str]) -> None:
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
                    "title": entry.content if _content(rule["title"]) != entry.content else rule["title"],
                    "rule": entry.repeat if self._rule_text(rule["rule"]) != entry.repeat else rule["rule"],
                    "tz": entry.tz,
                    "next_local": _wall(entry.next),
                    "next_at": db.time(self._next_at(entry.next, entry.tz, rule)),
                    "chat_id": entry.chat_id,
                    "enabled": db.flag(True),
                    "updated_at": db.time(self.now),
                }
            )
        _record_events(db, events, self.now, self.actor)
        db.executemany(self._UPDATE, updates)

    def insert(self, items: list[_Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        if not items:
            return []
        ids = self.new_ids([it.key for it in items], [_entry_id(it.entry) for it in items])
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
                    "next_local": _wall(entry.next),
                    "next_at": self._next_at(entry.next, entry.tz),
                    "chat_id": entry.chat_id,
                    "position": positions[id(it)],
                    "extra": it.final_extra,
                    "synced_hash": it.final_hash,
                    "created_at": self.now,
                    "updated_at": self.now,
                }
            )
        _insert_rows(self.db, RECURRENCES, params)
        return ids


def _record_events(db: Conn, events: list[dict[str, Any]], now: datetime, actor: str) -> None:
    """The events' rows, bound as tuples (a first sync writes one per entry)."""
    at = db.time(now)
    db.insert_many(
        TASK_EVENTS.name,
        ("task_pk", "task_id", "scope", "at", "kind", "actor", "before", "detail"),
        [
            (
                e["task_pk"],
                e["task_id"],
                e["scope"],
                at,
                e["kind"],
                actor,
                db.json(e.get("before")),
                db.json(e["detail"]),
            )
            for e in events
        ],
        json=TASK_EVENTS.json,
    )


def _insert_rows(db: Conn, shape: Shape, rows: list[dict[str, Any]]) -> list[int]:
    """Insert rows (all with the same keys) with one executemany; their primary keys, in order.

    The sync holds the write lock, so the keys are assigned here: on SQLite
    after the highest one, on PostgreSQL from the table's sequence. Values are
    bound as the column types store them (times, JSON, booleans).
    """
    if not rows:
        return []
    names = list(rows[0])
    if db.sqlite:
        high = db.one(f"SELECT max(pk) FROM {shape.name}")
        start = int((high[0] if high else None) or 0) + 1
        pks = list(range(start, start + len(rows)))
    else:
        got = db.rows(
            f"SELECT nextval(pg_get_serial_sequence('{shape.name}', 'pk')) FROM generate_series(1, :n)",
            {"n": len(rows)},
        )
        pks = sorted(int(r[0]) for r in got)
    stamps: dict[datetime, Any] = {}

    def bind_time(value: datetime | None) -> Any:
        if value is None:
            return None
        got = stamps.get(value)
        if got is None:
            got = stamps[value] = db.time(value)
        return got

    def bind_status(value: Any) -> Any:
        return value.value if isinstance(value, TaskStatus) else value

    binders: list[Callable[[Any], Any] | None] = [
        bind_time
        if n in shape.times
        else db.json
        if n in shape.json
        else db.flag
        if n in shape.flags
        else bind_status
        if n == "status"
        else None
        for n in names
    ]
    bound = [(i, b) for i, b in enumerate(binders) if b is not None]
    take = operator.itemgetter(*names)
    params: list[list[Any]] = []
    for pk, row in zip(pks, rows, strict=True):
        values = list(take(row)) if len(names) > 1 else [row[names[0]]]
        for i, binder in bound:
            values[i] = binder(values[i])
        values.append(pk)
        params.append(values)
    db.insert_many(shape.name, [*names, "pk"], params, json=shape.json)
    return pks


# --- reading the files ---------------------------------------------------------------------


def _classify(kind: TodoKind, raw: str, dialect: str, *, first: bool = False) -> Entry | str | None:
    """What the runtime makes of a line outside any HTML comment: an entry, a reason it is
    not one (a malformed line), or None (blank or heading). ``first``: line 1 (a BOM)."""
    return fmt.classify(raw, kind, dialect, first=first)


def _read(kind: str, path: Path, text: str | None, dialect: str) -> _File:
    """Read a whole file. Without HTML comments the lines are read one by one (what
    formats.todo.parse does, minus building the document, which waits for a render)."""
    if text is None:
        return _File(kind, path, None, [], [])
    todo_kind = _KIND[kind]
    items: list[_Item] = []
    if "<!--" in text:
        doc = _parse_doc(kind, path, text, dialect)
        items = [_Item(kind, ln.number, ln.text, ln.entry) for ln in doc.lines if ln.entry is not None]
        return _File(kind, path, text, items, _doc_warnings(doc), doc)
    lines = _split_lines(text)
    bodies = [_body(line) for line in lines]
    front = fmt.read_front_matter(bodies)
    warnings = [(w.line, w.text, w.reason) for w in front.notes]
    for index in range(front.end, len(lines)):
        raw = bodies[index]
        got = _classify(todo_kind, raw, dialect, first=index == 0)
        if isinstance(got, Entry):
            items.append(_Item(kind, index + 1, raw, got))
            note = fmt.entry_note(got)
            if note is not None:
                warnings.append((index + 1, raw, note))
        elif got is not None and index >= front.shadow:  # the shadow: front matter as written
            warnings.append((index + 1, raw, got))
    if front.scanned and max(map(len, bodies)) * 4 >= fmt.SCANNER_LIMIT - 1:
        long = next((i for i in range(1, len(lines)) if _over_limit(lines[i], bodies[i])), None)
        if long is not None:
            warnings.append((long + 1, bodies[long], fmt.scanner_note(long < front.end)))
            warnings.sort(key=lambda w: w[0])
    return _File(kind, path, text, items, warnings)


def _over_limit(line: str, body: str) -> bool:
    """Whether mistermorph's line scanner stops at this line (see formats.todo.SCANNER_LIMIT)."""
    return fmt.over_scanner_limit(body, "\r\n" if line.endswith("\r\n") else "")


def _doc_warnings(doc: fmt.Document) -> list[tuple[int, str, str]]:
    """The lines kept but not understood, and what else the reader says about lines."""
    return [(w.line, w.text, w.reason) for w in doc.warnings]


def _parse_doc(kind: str, path: Path, text: str, dialect: str) -> fmt.Document:
    try:
        return fmt.parse(text, _KIND[kind], dialect=dialect)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None


def _known(kind: str, path: Path, text: str | None, rows: Sequence[_Row], stored: _Stored) -> _File:
    """A file unchanged since the last sync: its entries are the rows last synced into it."""
    mine = sorted((r for r in rows if r.base_place == kind), key=lambda r: (r.position, r.pk))
    items = [_Item(kind, 0, r.base_line or "", None, row=r) for r in mine]
    return _File(kind, path, text, items, list(stored.warnings))


@dataclass
class _Diff:
    """Where a file differs from the text the last sync left: old[p:old_end] became new[p:new_end]."""

    old: list[str]
    new: list[str]
    p: int
    old_end: int
    new_end: int


def _diff(stored: _Stored, base: str | None, text: str | None, dialect: str) -> _Diff | None:
    """The changed region, when reading only it gives what a full read would; else None."""
    if not stored.ours or base is None or text is None or stored.dialect != dialect:
        return None
    if digest(base) != stored.hash or "<!--" in base or "<!--" in text:
        return None
    old, new = _split_lines(base), _split_lines(text)
    limit = min(len(old), len(new))
    p = 0
    while p < limit and old[p] == new[p]:
        p += 1
    s = 0
    while s < limit - p and old[-1 - s] == new[-1 - s]:
        s += 1
    if p == 0 or p < max(_front_matter_end(old), _front_matter_end(new)):
        return None  # the first line (a BOM) or the front matter changed
    if len(old) - s - p > _TARGETED_MAX or len(new) - s - p > _TARGETED_MAX:
        return None
    if any(_over_limit(line, _body(line)) for line in (*old[p : len(old) - s], *new[p : len(new) - s])):
        return None  # which line mistermorph's scanner stops at may move: read the whole file
    return _Diff(old, new, p, len(old) - s, len(new) - s)


# --- matching ------------------------------------------------------------------------------


def _match(family: _Family, items: Sequence[_Item], rows: Sequence[_Row], *, importing: bool) -> None:
    """Pair entries with rows (``item.row``); see the module docstring for the order."""
    claimed = {it.row.pk for it in items if it.row is not None}
    free = sorted(
        (r for r in rows if r.pk not in claimed and (importing or r.base_place or r.record.place)),
        key=lambda r: (r.position, r.pk),
    )

    def claim(item: _Item, row: _Row) -> None:
        item.row = row
        claimed.add(row.pk)

    def pair(index: dict[Any, list[_Row]], item: _Item, key: Any, ok: Callable[[_Row], bool]) -> None:
        for row in index.get(key, ()):
            if row.pk not in claimed and ok(row):
                claim(item, row)
                return

    for it in items:
        if it.entry is not None and it.record is None:
            it.record = family.entry_record(it.kind, it.entry)
    anything = lambda _row: True  # noqa: E731
    by_line: dict[Any, list[_Row]] = {}
    by_id: dict[Any, list[_Row]] = {}
    by_key: dict[Any, list[_Row]] = {}
    for row in free:
        if row.base_place and row.base_line is not None:
            by_line.setdefault((row.base_place, row.base_line), []).append(row)
        by_id.setdefault(row.id, []).append(row)
        if row.key:
            by_key.setdefault(row.key, []).append(row)
    open_items = [it for it in items if it.row is None]
    # 1. the exact line last synced; of identical lines (one of them edited or deleted), the
    # row whose entry stood nearest this one's place, so an edit is not taken for a conflict
    item_rank: dict[int, int] = {}
    seen: dict[str, int] = {}
    for it in items:
        item_rank[id(it)] = seen.get(it.kind, 0)
        seen[it.kind] = item_rank[id(it)] + 1
    row_rank: dict[int, int] = {}
    placed: dict[str | None, int] = {}
    for row in free:
        row_rank[row.pk] = placed.get(row.base_place, 0)
        placed[row.base_place] = row_rank[row.pk] + 1
    for it in open_items:
        candidates = [r for r in by_line.get((it.kind, it.raw), ()) if r.pk not in claimed]
        if candidates:
            claim(it, min(candidates, key=lambda r: abs(row_rank[r.pk] - item_rank[id(it)])))
    for it in open_items:  # 2. the extended dialect's [ID]
        if it.row is None and (wanted := _entry_id(it.entry)):
            pair(by_id, it, wanted, anything)
    _assign_keys(family, items)
    for it in open_items:  # 3. the identity key

        def same(row: _Row, record: _Record | None = it.record) -> bool:
            return bool(row.synced_hash) or importing or row.record == record

        if it.row is None:
            pair(by_key, it, it.key, same)
    rest = [it for it in open_items if it.row is None]
    if not rest:
        return
    by_alt: dict[Any, list[_Row]] = {}
    for row in free:
        if row.pk not in claimed and row.synced_hash and (row.base_place or importing):
            by_alt.setdefault(row.alt, []).append(row)
    for it in rest:  # 4. the fallback key of the line last synced (an edited line)
        pair(by_alt, it, it.alt, anything)


def _assign_keys(family: _Family, items: Sequence[_Item]) -> None:
    plain: list[str] = []
    for it in items:
        if it.record is not None:
            key, it.alt = family.keys(it.record)
        else:
            assert it.row is not None
            key = (it.row.key or "").split(_DUP, 1)[0]
        plain.append(key)
    counts: dict[str, int] = {}
    for key in plain:
        counts[key] = counts.get(key, 0) + 1
    for it, key in zip(items, plain, strict=True):
        if it.record is None:
            assert it.row is not None
            it.key = it.row.key or key
        else:
            it.key = family.dup_key(key, it.record) if counts[key] > 1 else key


# --- the two-way sync ----------------------------------------------------------------------


@dataclass(eq=False)
class _Slot:
    """One entry line of a file after the sync: a file entry (``item``) or a row written in."""

    kind: str
    item: _Item | None
    row: _Row | None
    record: _Record  # the final version
    raw: str = ""
    number: int = 0


def _labels(path: Path, warnings: Iterable[tuple[int, str, str]]) -> list[str]:
    return [f"{path}:{n}: {reason}" for n, _text, reason in warnings]


def _checked_entry(entry: Entry, dialect: str, *, comments: bool = False) -> str | None:
    """Why ``entry`` cannot be written as a readable line (None: it can). ``comments``: a
    ``<!--`` in the content is allowed (the whole file is checked when it is rendered)."""
    try:
        text = fmt.render_entry(entry, comments=comments)
        back = fmt.parse_entry(text, entry.kind, dialect=dialect)
    except (InvalidInput, ValueError) as exc:
        return str(exc)
    if back.content != entry.content:
        return "the content would not read back"
    return None


def sync_family(
    family: _Family, given: dict[str, tuple[Path, str | None]], *, sealed: bool = False
) -> dict[str, tuple[SyncReport, str | None]]:
    """One sync of a family's files; returns each kind's report and the text to write (or None).

    ``sealed``: the engine checked that no table changed since the last full sync, which
    recorded the family's mark; that mark is then taken as it is instead of recomputed.
    """
    db = family.db
    stored = {k: _Stored.load(db, k) for k in family.kinds}
    reports = {k: SyncReport(kind=k, path=str(given[k][0])) for k in family.kinds}
    marks = [stored[k].mark for k in family.kinds if stored[k].ours]
    if sealed and len(marks) == len(family.kinds) and all(m == marks[0] for m in marks):
        mark = marks[0]
    else:
        mark = family.mark()

    hashes = {k: None if text is None else digest(text) for k, (_path, text) in given.items()}

    def unchanged(kind: str) -> bool:
        st = stored[kind]
        return st.ours and st.path == str(given[kind][0]) and st.hash == hashes[kind]

    ledger_same = all(stored[k].ours and stored[k].mark == mark and not stored[k].retry for k in family.kinds)
    if ledger_same and all(unchanged(k) for k in family.kinds):
        for k in family.kinds:
            reports[k].preserved = _labels(given[k][0], stored[k].warnings)
        return {k: (reports[k], None) for k in family.kinds}
    previous = next((stored[k].dialect for k in family.kinds if stored[k].dialect), None)
    dialect = _read_dialect(family.dialect, previous)
    if ledger_same and isinstance(family, _Tasks):
        changed = [k for k in family.kinds if not unchanged(k)]
        diffs = {
            k: _diff(stored[k], _base_text(family.ledger.workspace, k), given[k][1], dialect) for k in changed
        }
        if all(d is not None for d in diffs.values()):
            done = _targeted(family, given, stored, {k: d for k, d in diffs.items() if d}, reports, dialect)
            if done is not None:
                return done
    return _full_sync(family, given, stored, reports, dialect, ledger_same, unchanged)


def _full_sync(
    family: _Family,
    given: dict[str, tuple[Path, str | None]],
    stored: dict[str, _Stored],
    reports: dict[str, SyncReport],
    dialect: str,
    ledger_same: bool,
    unchanged: Callable[[str], bool],
) -> dict[str, tuple[SyncReport, str | None]]:
    rows = family.load()
    files: dict[str, _File] = {}
    for k in family.kinds:
        path, text = given[k]
        if ledger_same and unchanged(k):
            files[k] = _known(k, path, text, rows, stored[k])
        else:
            files[k] = _read(k, path, text, dialect)
    items = [it for k in family.kinds for it in files[k].items]
    _match(family, items, rows, importing=False)
    label = {id(it): f"{files[it.kind].path}:{it.number}" for it in items}

    changes: list[tuple[_Row, _Item, bool]] = []
    incoming: dict[str, list[_Row]] = {k: [] for k in family.kinds}
    final: dict[int, _Record] = {}  # row pk -> its version after the sync
    for it in items:
        row = it.row
        if row is None:
            continue
        base, ledger = row.synced_hash, row.record
        file_rec = it.record
        if file_rec is None or file_rec.digest == ledger.digest:
            final[row.pk] = ledger
            if it.entry is not None and family.dialect == "strict" and _entry_id(it.entry):
                it.fate = "rewrite"  # leaving the extended dialect: drop the [ID] key
            continue
        file_changed = file_rec.digest != base
        ledger_changed = ledger.digest != base
        if file_changed and not ledger_changed:
            changes.append((row, it, False))
            final[row.pk] = file_rec
            getattr(reports[it.kind], family.report_kind(ledger.place, it.kind)).append(row.id)
        elif ledger_changed and not file_changed:
            final[row.pk] = ledger
            target = ledger.place
            if target == it.kind:
                it.fate = "rewrite"
                reports[it.kind].updated.append(row.id)
            else:
                it.fate = "drop"
                if target is None:
                    reports[it.kind].removed.append(row.id)
                else:
                    incoming[target].append(row)
                    getattr(reports[target], family.report_kind(it.kind, target)).append(row.id)
        else:
            merged = family.merge(row, it.entry) if it.entry is not None else None
            if merged is not None:
                it.entry, it.record, it.fate = merged, family.entry_record(it.kind, merged), "merged"
                file_rec = it.record
            changes.append((row, it, True))
            final[row.pk] = file_rec
            reports[it.kind].conflicts.append(row.id)

    matched = {it.row.pk for it in items if it.row is not None}
    removed: list[_Row] = []
    removed_conflicts: set[int] = set()
    for row in rows:
        if row.pk in matched or not (row.base_place or row.record.place):
            continue
        place = row.base_place
        if place is not None and files[place].text is not None:
            removed.append(row)
            reports[place].removed.append(row.id)
            if row.record.digest != row.synced_hash:
                removed_conflicts.add(row.pk)
                reports[place].conflicts.append(row.id)
        elif row.record.place is not None:
            incoming[row.record.place].append(row)
            final[row.pk] = row.record
            getattr(reports[row.record.place], family.report_kind(None, row.record.place)).append(row.id)
        else:
            final[row.pk] = row.record  # in no file, now or before

    texts, slots, retry = _render_all(family, files, incoming, final, dialect, reports, items, label)

    family.apply(changes, label)
    family.remove(removed, removed_conflicts)
    _finish(family, slots, rows, final, label, reports)
    mark_after = family.mark()
    for k in family.kinds:
        f = files[k]
        out = texts[k] if texts[k] is not None else f.text
        warnings = f.warnings
        if texts[k] is not None:
            assert out is not None
            warnings = _doc_warnings(_parse_doc(k, f.path, out, dialect))
        reports[k].preserved = _labels(f.path, warnings) + reports[k].preserved
        _store(
            family.db,
            k,
            f.path,
            out,
            family.now,
            mark=mark_after,
            dialect=family.dialect,
            warnings=warnings,
            base=None if ledger_same and unchanged(k) else _base_path(family.ledger.workspace, k),
            retry=retry,
        )
    return {k: (reports[k], texts[k]) for k in family.kinds}


def _render_all(
    family: _Family,
    files: dict[str, _File],
    incoming: dict[str, list[_Row]],
    final: dict[int, _Record],
    dialect: str,
    reports: dict[str, SyncReport],
    items: Sequence[_Item],
    label: dict[int, str],
) -> tuple[dict[str, str | None], dict[str, list[_Slot]], bool]:
    """Every file of the family after the sync, and whether a ledger change was left unwritten
    (the next sync retries it). An entry that cannot be written into the file it moves to
    keeps its line where it is (the files render again with that line kept): hb never drops a
    line whose entry it cannot write elsewhere."""
    moving = {row.pk for rows in incoming.values() for row in rows}
    leaving = {
        it.row.pk: it for it in items if it.fate == "drop" and it.row is not None and it.row.pk in moving
    }
    # what rendering changes, to start over from when a line has to stay
    fates = {id(it): it.fate for it in items}
    final_before = dict(final)
    reports_before = {k: r.as_dict() for k, r in reports.items()}
    held: dict[int, tuple[str, str]] = {}  # row pk -> (the file it could not go to, why)
    while True:
        texts: dict[str, str | None] = {}
        slots: dict[str, list[_Slot]] = {}
        refused: dict[int, str] = {}
        for k in family.kinds:
            texts[k], slots[k] = _render(
                family, files[k], incoming[k], final, dialect, reports[k], leaving, refused
            )
        stay = {pk: problem for pk, problem in refused.items() if pk in leaving and pk not in held}
        if not stay:
            return texts, slots, bool(refused or held)
        for pk, problem in stay.items():
            target = next(k for k, rows in incoming.items() if any(r.pk == pk for r in rows))
            held[pk] = (target, problem)
        for it in items:
            it.fate = fates[id(it)]
        final.clear()
        final.update(final_before)
        for k, values in reports_before.items():
            for name, value in values.items():
                setattr(reports[k], name, list(value) if isinstance(value, list) else value)
        for pk, (target, problem) in held.items():
            it = leaving[pk]
            assert it.row is not None and it.record is not None
            it.fate = "keep"
            final[pk] = it.record  # the line stays as it is: the next sync tries again
            incoming[target] = [r for r in incoming[target] if r.pk != pk]
            _unreport(reports[target], it.row.id)
            reports[target].preserved.append(
                f"{files[target].path}: {it.row.id} not written: {problem}; its line stays at {label[id(it)]}"
            )


_HIDES = (
    "the result would not read back as written (an HTML comment marker would change which lines are hidden)"
)


def _marked(text: str) -> bool:
    """Whether the text holds an HTML comment marker."""
    return "<!--" in text or "-->" in text


def _render(
    family: _Family,
    f: _File,
    incoming: list[_Row],
    final: dict[int, _Record],
    dialect: str,
    report: SyncReport,
    leaving: dict[int, _Item] | None = None,
    refused: dict[int, str] | None = None,
) -> tuple[str | None, list[_Slot]]:
    """The file's entries after the sync, and its new text (None: leave the file as it is).

    A content keeps a ``<!--`` only where it already stood in the files (on the line itself,
    or, by row pk in ``leaving``, on the line of another file a row arriving here leaves),
    and only when the file reads back exactly as written. A line that cannot be rewritten
    stays as it is, a row that cannot arrive is not written; both go to ``refused`` (pk ->
    why). Raises CommentMarkerError, naming the line, when a line that goes or changes
    without a marker in the change itself would move an HTML comment.
    """
    kind = f.kind
    leaving = leaving or {}
    refused = {} if refused is None else refused

    def item_slot(it: _Item) -> _Slot:
        record = final[it.row.pk] if it.row is not None else it.record
        assert record is not None
        return _Slot(kind, it, it.row, record, it.raw, it.number)

    def keep_line(it: _Item, problem: str) -> None:
        assert it.row is not None and it.record is not None
        it.fate = "keep"  # the ledger's version cannot be written: keep the line, say why
        report.preserved.append(f"{f.path}:{it.number}: {it.row.id} not rewritten: {problem}")
        _unreport(report, it.row.id)
        final[it.row.pk] = it.record  # the line stays: the next sync tries again
        refused[it.row.pk] = problem

    def refuse(row: _Row, problem: str) -> None:
        report.preserved.append(f"{f.path}: {row.id} not written: {problem}")
        _unreport(report, row.id)
        final.pop(row.pk, None)
        refused[row.pk] = problem

    writes: dict[int, Entry] = {}
    risky: list[_Item | tuple[_Row, Entry]] = []  # changes with a comment marker in them
    for it in f.items:
        if it.fate not in ("rewrite", "merged"):
            continue
        assert it.row is not None and it.entry is not None
        entry = it.entry if it.fate == "merged" else family.entry(it.row, kind)
        problem = _checked_entry(entry, family.dialect, comments=entry.content == it.entry.content)
        if problem is not None:
            keep_line(it, problem)
            continue
        writes[id(it)] = entry
        if _marked(it.raw) or _marked(entry.content):
            risky.append(it)
    arriving: list[tuple[_Row, Entry]] = []
    for row in family.incoming_order(kind, incoming):
        entry = family.entry(row, kind)
        left = leaving.get(row.pk)
        moved = left is not None and left.entry is not None and left.entry.content == entry.content
        problem = _checked_entry(entry, family.dialect, comments=moved)
        if problem is not None:
            refuse(row, problem)
            continue
        arriving.append((row, entry))
        if _marked(entry.content):
            risky.append(arriving[-1])
    kept = [it for it in f.items if it.fate != "drop"]
    if not writes and not arriving and len(kept) == len(f.items):
        return None, [item_slot(it) for it in f.items]

    order: list[_Item | tuple[_Row, Entry]] = []
    arrive = family.arrivals(kind)
    if arrive == "top":
        order = [*arriving, *kept]
    elif arrive == "end":
        order = [*kept, *arriving]
    else:
        pending = list(arriving)
        for it in kept:
            position = it.row.position if it.row is not None else None
            while pending and position is not None and pending[0][0].position < position:
                order.append(pending.pop(0))
            order.append(it)
        order.extend(pending)
    if f.text is not None and f.doc is None:
        f.doc = _parse_doc(kind, f.path, f.text, dialect)
    by_line = {ln.number: ln.entry for ln in f.doc.lines if ln.entry is not None} if f.doc else {}

    def document(skip: set[int]) -> fmt.Document | None:
        """The file with every change but those in ``skip`` (ids); None: no file, no entry."""
        entries: list[Entry] = []
        for slot in order:
            if isinstance(slot, _Item):
                if id(slot) in writes and id(slot) not in skip:
                    entries.append(Entry(**{**writes[id(slot)].__dict__, "line": slot.number}))
                else:
                    # a file is only rendered after it was read (never one known unchanged)
                    assert slot.number in by_line, f"{f.path}: line {slot.number} was not read"
                    entries.append(by_line[slot.number])
            elif id(slot) not in skip:
                entries.append(slot[1])
        if f.doc is not None:
            return fmt.with_entries(f.doc, entries, now=family.now)
        if entries:
            return fmt.new_document(_KIND[kind], entries, now=family.now, dialect=dialect)
        return None

    skip: set[int] = set()
    try:
        try:
            doc = document(skip)
        except fmt.CommentMarkerError:
            if not risky:
                raise
            skip = {id(change) for change in risky}
            doc = document(skip)  # still refused: a line that goes or changes is in the way
            for change in risky:  # take back, in file order, each change the file can take
                try:
                    doc = document(skip - {id(change)})
                except fmt.CommentMarkerError:
                    continue
                skip.discard(id(change))
    except fmt.CommentMarkerError as exc:
        raise exc.at_path(str(f.path)) from None
    for change in risky:
        if id(change) not in skip:
            continue
        if isinstance(change, _Item):
            del writes[id(change)]
            keep_line(change, _HIDES)
        else:
            order.remove(change)
            refuse(change[0], _HIDES)
    if doc is None:
        return None, []
    if doc is f.doc:  # every change was refused
        return None, [item_slot(it) for it in f.items]
    lines = [ln for ln in doc.lines if ln.entry is not None]
    if len(lines) != len(order):
        raise InvalidInput(f"{f.path}: the entries did not come out as written")
    out: list[_Slot] = []
    for slot, line in zip(order, lines, strict=True):
        made = item_slot(slot) if isinstance(slot, _Item) else _Slot(kind, None, slot[0], final[slot[0].pk])
        made.raw, made.number = line.text, line.number
        out.append(made)
    return fmt.render(doc), out


def _unreport(report: SyncReport, row_id: str) -> None:
    for name in ("added", "updated", "completed", "removed"):
        values = getattr(report, name)
        if row_id in values:
            values.remove(row_id)


def _positions(slots: Sequence[_Slot]) -> list[int]:
    """File order as strictly increasing positions, changing as few rows as possible: the
    longest run of rows whose positions are already in order keep theirs (entries that
    arrived on top of a list go below the first of them), the others fit in after."""
    current = [slot.row.position if slot.row is not None else None for slot in slots]
    keep = _in_order(current)
    first = min(keep, default=None)
    out: list[int] = []
    prev: int | None = None
    for index, position in enumerate(current):
        if index in keep:
            assert position is not None
            value = position if prev is None or position > prev else prev + 1  # no room left: it moves
        elif prev is not None:
            value = prev + 1
        elif first is not None:
            value = cast(int, current[first]) - (first - index)
        else:
            value = index
        out.append(value)
        prev = value
    return out


def _in_order(values: Sequence[int | None]) -> set[int]:
    """The indices of a longest strictly increasing run of the known values (not contiguous)."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if all(a[1] < b[1] for a, b in itertools.pairwise(known)):
        return {i for i, _ in known}  # the usual case: already in order
    import bisect

    tails: list[int] = []  # the smallest last value of a run of each length
    tail_index: list[int] = []
    parent: dict[int, int | None] = {}
    for i, v in known:
        at = bisect.bisect_left(tails, v)
        parent[i] = tail_index[at - 1] if at else None
        if at == len(tails):
            tails.append(v)
            tail_index.append(i)
        else:
            tails[at] = v
            tail_index[at] = i
    out: set[int] = set()
    cursor: int | None = tail_index[-1] if tail_index else None
    while cursor is not None:
        out.add(cursor)
        cursor = parent[cursor]
    return out


def _finish(
    family: _Family,
    slots: dict[str, list[_Slot]],
    rows: Sequence[_Row],
    final: dict[int, _Record],
    label: dict[int, str],
    reports: dict[str, SyncReport],
) -> None:
    """Record what each row looks like in the files now; add the rows for new entries."""
    every = [s for k in slots for s in slots[k]]
    plain = [family.keys(s.record)[0] for s in every]
    counts: dict[str, int] = {}
    for key in plain:
        counts[key] = counts.get(key, 0) + 1
    positions: dict[int, int] = {}
    for k in slots:
        for slot, position in zip(slots[k], _positions(slots[k]), strict=True):
            positions[id(slot)] = position
    placed: dict[int, dict[str, Any]] = {}
    new_items: list[_Item] = []
    for slot, key in zip(every, plain, strict=True):
        full = family.dup_key(key, slot.record) if counts[key] > 1 else key
        where = {"file": slot.kind, "line": slot.raw}
        if slot.row is None:
            assert slot.item is not None
            slot.item.key = full
            slot.item.final_extra = where
            slot.item.final_hash = slot.record.digest
            positions[id(slot.item)] = positions[id(slot)]
            new_items.append(slot.item)
        else:
            placed[slot.row.pk] = {
                "synced_hash": slot.record.digest,
                "extra": {**slot.row.extra, **where},
                "external_key": full,
                "position": positions[id(slot)],
            }
    updates: list[tuple[_Row, dict[str, Any]]] = []
    for row in rows:
        values = placed.get(row.pk)
        if values is None:
            record = final.get(row.pk)
            if record is None or record.place is not None:
                continue  # removed, or not written: it stays as it was
            values = {
                "synced_hash": record.digest,
                "extra": {k: v for k, v in row.extra.items() if k not in ("file", "line")},
                "external_key": row.key,
                "position": row.position,
            }
        if (
            values["synced_hash"] != row.synced_hash
            or values["extra"] != row.extra
            or values["external_key"] != row.key
            or values["position"] != row.position
        ):
            updates.append((row, values))
    family.bookkeeping(updates)
    for it, new_id in zip(new_items, family.insert(new_items, positions, label), strict=True):
        reports[it.kind].added.append(new_id)


# --- a few lines changed in the files, nothing in the ledger --------------------------------


def _targeted(
    family: _Tasks,
    given: dict[str, tuple[Path, str | None]],
    stored: dict[str, _Stored],
    diffs: dict[str, _Diff],
    reports: dict[str, SyncReport],
    dialect: str,
) -> dict[str, tuple[SyncReport, str | None]] | None:
    """Sync only the changed regions: their old lines name the rows that left, their new lines
    are the entries that arrived. None when the ledger does not look as the last sync left it
    (the caller then does a full sync)."""
    gone: list[_Row] = []
    items: list[_Item] = []
    warnings: dict[str, list[tuple[int, str, str]]] = {}
    for kind, d in diffs.items():
        rows = _rows_of_lines(family, kind, d, dialect)
        if rows is None:
            return None
        gone.extend(rows)
        todo_kind = _KIND[kind]
        found: list[tuple[int, str, str]] = []
        for index in range(d.p, d.new_end):
            raw = _body(d.new[index])
            got = _classify(todo_kind, raw, dialect)
            if isinstance(got, Entry):
                items.append(_Item(kind, index + 1, raw, got))
                note = fmt.entry_note(got)
                if note is not None:
                    found.append((index + 1, raw, note))
            elif got is not None:
                found.append((index + 1, raw, got))
        delta = d.new_end - d.old_end
        before = [w for w in stored[kind].warnings if w[0] <= d.p]
        after = [(n + delta, t, r) for n, t, r in stored[kind].warnings if n > d.old_end]
        warnings[kind] = before + found + after
    if any(row.record.digest != row.synced_hash for row in gone):
        return None  # the ledger moved after all
    _match(family, items, gone, importing=False)
    path_of = {k: given[k][0] for k in family.kinds}
    label = {id(it): f"{path_of[it.kind]}:{it.number}" for it in items}
    changes: list[tuple[_Row, _Item, bool]] = []
    keep: list[tuple[_Row, _Item]] = []
    for it in items:
        row = it.row
        if row is None:
            continue
        assert it.record is not None
        if it.record.digest != row.synced_hash:
            changes.append((row, it, False))
            getattr(reports[it.kind], family.report_kind(row.base_place, it.kind)).append(row.id)
        keep.append((row, it))
    matched = {it.row.pk for it in items if it.row is not None}
    removed = [row for row in gone if row.pk not in matched]
    for row in removed:
        assert row.base_place is not None
        reports[row.base_place].removed.append(row.id)

    family.apply(changes, label)
    family.remove(removed, set())
    _region_keys(family, items, {row.pk for row in gone})
    positions = _region_positions(family, items, diffs, dialect)
    updates = []
    for row, it in keep:
        assert it.record is not None
        values = {
            "synced_hash": it.record.digest,
            "extra": {**row.extra, "file": it.kind, "line": it.raw},
            "external_key": it.key,
            "position": positions[id(it)],
        }
        if (values["synced_hash"], values["extra"], values["external_key"], values["position"]) != (
            row.synced_hash,
            row.extra,
            row.key,
            row.position,
        ):
            updates.append((row, values))
    family.bookkeeping(updates)
    new_items = [it for it in items if it.row is None]
    for it in new_items:
        assert it.record is not None
        it.final_extra = {"file": it.kind, "line": it.raw}
        it.final_hash = it.record.digest
    for it, new_id in zip(new_items, family.insert(new_items, positions, label), strict=True):
        reports[it.kind].added.append(new_id)
    mark_after = family.mark()
    for k in family.kinds:
        path, text = given[k]
        w = warnings.get(k, stored[k].warnings)
        reports[k].preserved = _labels(path, w)
        _store(
            family.db,
            k,
            path,
            text,
            family.now,
            mark=mark_after,
            dialect=family.dialect,
            warnings=w,
            base=_base_path(family.ledger.workspace, k) if k in diffs else None,
        )
    return {k: (reports[k], None) for k in family.kinds}


def _rows_of_lines(family: _Tasks, kind: str, d: _Diff, dialect: str) -> list[_Row] | None:
    """The rows whose lines were in the changed region of the old text (None: not found,
    the ledger does not look as the last sync left it)."""
    todo_kind = _KIND[kind]
    wanted: list[tuple[int, str]] = []
    keys: set[str] = set()
    for index in range(d.p, d.old_end):
        raw = _body(d.old[index])
        got = _classify(todo_kind, raw, dialect)
        if isinstance(got, Entry):
            record = family.entry_record(kind, got)
            plain = family.keys(record)[0]
            keys.update((plain, family.dup_key(plain, record)))
            wanted.append((index, raw))
    if not wanted:
        return []
    rows: list[_Row] = []
    for chunk in _chunks(sorted(keys)):
        frag, params = in_list("k", chunk)
        rows.extend(family.load(f"external_key IN {frag}", params))
    by_line: dict[str, list[_Row]] = {}
    for row in sorted(rows, key=lambda r: (r.position, r.pk)):
        if row.base_place == kind and row.base_line is not None:
            by_line.setdefault(row.base_line, []).append(row)
    out: list[_Row] = []
    for index, raw in wanted:
        candidates = by_line.get(raw, [])
        if len(candidates) == 1:
            out.append(candidates[0])
            continue
        nth = sum(1 for line in d.old[:index] if _body(line) == raw)  # identical lines: in file order
        if nth >= len(candidates):
            return None
        out.append(candidates[nth])
    if len({r.pk for r in out}) != len(out):
        return None
    return out


def _region_keys(family: _Tasks, items: Sequence[_Item], gone: set[int]) -> None:
    """An arriving entry whose Created + ChatID another entry already has gets the long key."""
    plains = {it.key.split(_DUP, 1)[0] for it in items}
    if not plains:
        return
    taken: set[str] = set()
    for chunk in _chunks(sorted(plains)):
        frag, params = in_list("k", chunk)
        ranges = []
        for i, k in enumerate(chunk):
            ranges.append(f" OR external_key BETWEEN :lo{i} AND :hi{i}")
            params[f"lo{i}"], params[f"hi{i}"] = k + _DUP, k + _DUP + "g"
        for row in family.load(f"external_key IN {frag}{''.join(ranges)}", params):
            if row.pk not in gone and row.key:
                taken.add(row.key.split(_DUP, 1)[0])
    for it in items:
        plain = it.key.split(_DUP, 1)[0]
        if plain in taken and it.key == plain:
            assert it.record is not None
            it.key = family.dup_key(plain, it.record)


def _region_positions(
    family: _Tasks, items: Sequence[_Item], diffs: dict[str, _Diff], dialect: str
) -> dict[int, int]:
    """Positions for the entries of the changed regions: a row that stayed in its file keeps
    its own; an arriving one takes its upper neighbour's (ties are listed by creation)."""
    out: dict[int, int] = {}
    for kind, d in diffs.items():
        prev = _neighbour(family, kind, d.new, range(d.p - 1, -1, -1), dialect)
        after = _neighbour(family, kind, d.new, range(d.new_end, len(d.new)), dialect)
        for it in (x for x in items if x.kind == kind):
            if it.row is not None and it.row.base_place == kind:
                value = it.row.position
            elif prev is not None:
                value = prev
            else:
                value = after - 1 if after is not None else 0
            out[id(it)] = value
            prev = value
    return out


def _neighbour(family: _Tasks, kind: str, lines: Sequence[str], order: range, dialect: str) -> int | None:
    """The position of the nearest unchanged entry line in ``order`` (a few lines looked at)."""
    todo_kind = _KIND[kind]
    for looked, index in enumerate(order):
        if looked > 50:
            return None
        raw = _body(lines[index])
        got = _classify(todo_kind, raw, dialect, first=index == 0)
        if not isinstance(got, Entry):
            continue
        record = family.entry_record(kind, got)
        plain = family.keys(record)[0]
        frag, params = in_list("k", [plain, family.dup_key(plain, record)])
        rows = family.load(f"external_key IN {frag}", params)
        for row in rows:
            if row.base_place == kind and row.base_line == raw:
                return row.position
        return None
    return None


# --- one-way import and export ---------------------------------------------------------------


def _family(kind: str, ledger: Ledger, db: Conn, now: datetime) -> _Family:
    if kind in TASK_KINDS:
        return _Tasks(ledger, db, now)
    return _Recurrences(ledger, db, now)


@contextmanager
def _plain(session: Session) -> Iterator[Conn]:
    """The session's transaction as plain SQL on its driver connection (pending ORM changes
    flushed first; loaded objects expired after, since rows change under them)."""
    session.flush()
    connection = session.connection()
    db = Conn(connection.connection.driver_connection, sqlite=connection.dialect.name == "sqlite")
    yield db
    session.expire_all()
    for action in db.after_commit:
        _after_commit(session, action)


def import_family(family: _Family, kind: str, path: Path, text: str) -> ImportReport:
    """Read one file into the ledger: the file's version of every entry wins; nothing is removed.

    Importing the workspace's own file (its default path) also records the
    entries as synced, so the next ``hb sync`` sees no change on either side.
    The text is recorded with the row of each entry (:class:`ImportedText`), in
    the same transaction, for ``hb export`` to give it back.
    """
    baseline = path.resolve() == default_path(family.ledger.workspace, kind).resolve()
    f = _read(kind, path, text, family.dialect)
    report = ImportReport(kind, str(path))
    report.warnings = [f"line {n}: {reason}" for n, _t, reason in f.warnings]
    report.preserved = _labels(path, f.warnings)
    rows = family.load()
    _match(family, f.items, rows, importing=True)
    label = {id(it): f"{path}:{it.number}" for it in f.items}
    changes: list[tuple[_Row, _Item, bool]] = []
    final: dict[int, _Record] = {}
    for it in f.items:
        assert it.record is not None
        if it.row is None:
            continue
        final[it.row.pk] = it.record
        if it.record.digest != it.row.record.digest:
            changes.append((it.row, it, False))
            report.updated.append(it.row.id)
        else:
            report.unchanged += 1
    family.actor = "import"
    family.apply(changes, label)
    slots = [_Slot(kind, it, it.row, it.record, it.raw, it.number) for it in f.items if it.record is not None]
    reports = {kind: SyncReport(kind=kind, path=str(path))}
    new_items = [s.item for s in slots if s.row is None and s.item is not None]
    if baseline:
        _finish(family, {kind: slots}, rows, final, label, reports)
    else:
        new = [s for s in slots if s.row is None]
        _assign_keys(family, [s.item for s in new if s.item is not None])
        start = max((r.position for r in rows), default=-1) + 1
        positions: dict[int, int] = {}
        for index, s in enumerate(new):
            assert s.item is not None
            s.item.final_extra, s.item.final_hash = {}, None
            positions[id(s.item)] = start + index
        items = [s.item for s in new if s.item is not None]
        reports[kind].added.extend(family.insert(items, positions, label))
    report.added = reports[kind].added
    lines = {it.number: it.row.id for it in f.items if it.row is not None}
    lines.update({it.number: new_id for it, new_id in zip(new_items, report.added, strict=True)})
    ImportedText(str(path), text, lines, _Stored.load(family.db, kind).hash).save(family.db, kind, family.now)
    return report


@dataclass(frozen=True)
class ImportedText:
    """The text of the file hb last imported (``hb import``) or exported to (``hb export``) for a
    kind, with the row each of its entries went to: what ``hb export`` to a new file lays the
    ledger over, so ``hb import todo SRC; hb export todo DST`` gives back SRC's text."""

    path: str
    text: str
    rows: dict[int, str]  # line number -> row id
    base: str | None  # the hash of the text hb had synced then (a later sync makes that newer)

    @property
    def text_hash(self) -> str:
        return digest(self.text)

    @staticmethod
    def load(db: Conn, kind: str) -> ImportedText | None:
        row = bookmarks.load(db, f"{kind}{_LAYOUT}")
        skeleton = (row or {}).get("skeleton") or {}
        if row is None or skeleton.get("by") != _LAYOUT_BY or not isinstance(skeleton.get("text"), str):
            return None
        rows = {int(n): str(i) for n, i in skeleton.get("rows", [])}
        return ImportedText(row["path"], skeleton["text"], rows, skeleton.get("base"))

    def save(self, db: Conn, kind: str, now: datetime) -> None:
        skeleton = {"by": _LAYOUT_BY, "text": self.text, "rows": sorted(self.rows.items()), "base": self.base}
        size = len(self.text.encode("utf-8"))
        bookmarks.save(
            db,
            f"{kind}{_LAYOUT}",
            path=self.path,
            content_hash=digest(self.text),
            size=size,
            synced_at=now,
            skeleton=skeleton,
        )


_LAYOUT = ".layout"  # sync_state kind suffix of an ImportedText
_LAYOUT_BY = "markdown-layout"


def render_family(family: _Family, kind: str, target: Path | None = None) -> str:
    """The file as the ledger has it now, laid over a text hb knows; never over an entry hb
    has not imported.

    The text laid over is the target's own (``target`` None: the workspace's
    file); for a file that does not exist, the newer of the text hb last
    imported or exported (:class:`ImportedText`) and the text it last synced.
    Every entry of an existing target must be one hb read, as written: an entry
    the ledger has not imported (or a target hb cannot read) makes it refuse,
    with InvalidInput naming path:line, so an export never loses an entry. With
    ``target`` (a file about to be written), the result is recorded as the text
    last exported.
    """
    db = family.db
    stored = _Stored.load(db, kind)
    workspace_file = default_path(family.ledger.workspace, kind)
    path = target if target is not None else workspace_file
    dialect = _read_dialect(family.dialect, stored.dialect)
    try:
        current = read_optional(path)
    except FileFormatError as exc:
        if path.is_dir():
            raise
        raise InvalidInput(f"{exc}; hb export does not overwrite a file it cannot read") from None
    imported = ImportedText.load(db, kind)
    base = _base_text(family.ledger.workspace, kind) if stored.ours else None
    if base is not None and digest(base) != stored.hash:
        base = None  # the copy is not the text the ledger recorded
    rows = family.load()
    by_id = {row.id: row for row in rows}
    numbered: dict[int, str] | None = None  # the laid-over text is the imported one: its line -> row id
    if current is not None:
        laid = current
        if imported is not None and digest(current) == imported.text_hash:
            numbered = imported.rows
    elif imported is not None and (base is None or imported.base == stored.hash):
        laid, numbered = imported.text, imported.rows
    elif base is not None:
        laid = base
    elif path.resolve() != workspace_file.resolve():
        try:  # never synced: a copy of the workspace's file
            laid = read_optional(workspace_file) or ""
        except FileFormatError:
            laid = ""
    else:
        laid = ""
    f = _read(kind, path, laid if laid or current is not None else None, dialect)
    known = _known_lines(kind, rows, base, imported, dialect) if numbered is None else Counter()
    seen: Counter[str] = Counter()
    by_line: dict[str, list[_Row]] = {}
    for row in sorted(rows, key=lambda r: (r.position, r.pk)):
        if row.base_place == kind and row.base_line is not None:
            by_line.setdefault(row.base_line, []).append(row)
    if imported is not None and numbered is None:
        for number, raw in _entry_lines(kind, imported.text, dialect):
            found = by_id.get(imported.rows.get(number, ""))
            if found is not None:
                by_line.setdefault(raw, []).append(found)
    final: dict[int, _Record] = {}
    taken: set[int] = set()
    for it in f.items:
        it.record = family.entry_record(kind, it.entry) if it.entry is not None else None
        if numbered is not None:
            found = by_id.get(numbered.get(it.number, ""))
        else:
            found = next((r for r in by_line.get(it.raw, ()) if r.pk not in taken), None)
            seen[it.raw] += 1
            if found is None and current is not None and seen[it.raw] > known[it.raw]:
                raise InvalidInput(
                    f"{path}:{it.number}: this entry is not in the ledger (hb has not imported it), and "
                    f"hb export does not overwrite it: run hb sync, or hb import {kind} {path}, first"
                )
        if found is None or found.pk in taken or found.record.place != kind:
            it.fate = "drop"  # imported, and since then removed or moved in the ledger
            continue
        taken.add(found.pk)
        it.row = found
        final[found.pk] = found.record
        if it.record != found.record:
            it.fate = "rewrite"
    incoming = [r for r in rows if r.pk not in taken and r.record.place == kind]
    for row in incoming:
        final[row.pk] = row.record
    report = SyncReport(kind=kind, path=str(path))
    text, slots = _render(family, f, incoming, final, dialect, report)
    if text is None:
        text = (
            f.text
            if f.text is not None
            else fmt.render(fmt.new_document(_KIND[kind], [], now=family.now, dialect=dialect))
        )
    if target is not None:
        lines = {slot.number: slot.row.id for slot in slots if slot.row is not None and slot.number}
        ImportedText(str(path), text, lines, stored.hash).save(db, kind, family.now)
    return text


def _entry_lines(kind: str, text: str, dialect: str) -> list[tuple[int, str]]:
    """(line number, text as written) of every entry of a text."""
    return [(it.number, it.raw) for it in _read(kind, Path(kind), text, dialect).items]


def _known_lines(
    kind: str, rows: Sequence[_Row], base: str | None, imported: ImportedText | None, dialect: str
) -> Counter[str]:
    """How often hb has read each entry line, as written: in the text it last synced, in the
    text it last imported or exported, and the lines its rows were last synced from."""
    known = Counter(row.base_line for row in rows if row.base_place == kind and row.base_line is not None)
    for text in (base, imported.text if imported is not None else None):
        if text is not None:
            known |= Counter(raw for _number, raw in _entry_lines(kind, text, dialect))
    return known


def _importer(kind: str) -> Any:
    def run(ledger: Ledger, session: Session, text: str, path: Path, now: datetime) -> ImportReport:
        with _plain(session) as db:
            return import_family(_family(kind, ledger, db, now), kind, Path(path), text)

    return run


def _renderer(kind: str) -> Any:
    def run(ledger: Ledger, session: Session, path: Path | None = None) -> str | None:
        with _plain(session) as db:
            return render_family(_family(kind, ledger, db, ledger.now()), kind, path)

    return run


# --- hb sync entry points ---------------------------------------------------------------------


def sync_plain(
    ledger: Ledger, db: Conn, files: dict[str, tuple[Path, str | None]], now: datetime, *, sealed: bool
) -> dict[str, tuple[SyncReport, str | None]]:
    """Sync TODO.md + TODO.DONE.md together (or TODO.RECUR.md) on the driver connection;
    ``sealed``: the engine's seal holds (the ledger is as the last full sync left it)."""
    kinds = tuple(files)
    return sync_family(_family(kinds[0], ledger, db, now), files, sealed=sealed)


def sync_group(
    ledger: Ledger, session: Session, files: dict[str, tuple[Path, str | None]], now: datetime
) -> dict[str, tuple[SyncReport, str | None]]:
    """Sync TODO.md + TODO.DONE.md together (or TODO.RECUR.md) in a SQLAlchemy session."""
    with _plain(session) as db:
        return sync_family(_family(next(iter(files)), ledger, db, now), files)


def _syncer(kind: str) -> Any:
    """The registry's one-kind syncer: TODO.md and TODO.DONE.md are still synced as a pair;
    the sibling file is read here and written after the commit."""

    def run(
        ledger: Ledger, session: Session, path: Path, text: str | None, now: datetime
    ) -> tuple[SyncReport, str | None]:
        with _plain(session) as db:
            family = _family(kind, ledger, db, now)
            given = {
                k: (Path(path), text) if k == kind else (default_path(ledger.workspace, k), None)
                for k in family.kinds
            }
            for k in family.kinds:
                if k != kind:
                    given[k] = (given[k][0], read_optional(given[k][0]))
            result = sync_family(family, given)
        for k, (_report, out) in result.items():
            if k != kind and out is not None and out != given[k][1]:
                _write_after_commit(session, given[k][0], out)
        return result[kind]

    return run


def _write_after_commit(session: Session, path: Path, text: str) -> None:
    _after_commit(session, lambda: atomic_write(path, text))


def _after_commit(session: Session, action: Callable[[], None]) -> None:
    from sqlalchemy import event

    event.listen(session, "after_commit", lambda _session: action(), once=True)


def _baseline_of(kind: str) -> Any:
    def baseline(ledger: Ledger, db: Conn) -> str | None:
        """The text of the file as the last sync left it (or meant to), when the copy kept beside
        the ledger is that text (see heartbeat.sync.writeback)."""
        stored = _Stored.load(db, kind)
        text = _base_text(ledger.workspace, kind) if stored.ours else None
        return text if text is not None and digest(text) == stored.hash else None

    return baseline


BASELINE_TEXT = {kind: _baseline_of(kind) for kind in ("todo", "done", "recur")}
SYNC_GROUPS = {("todo", "done"): sync_group, ("recur",): sync_group}
PLAIN_SYNC_GROUPS = {("todo", "done"): sync_plain, ("recur",): sync_plain}  # the engine's fast path
SYNCERS = {kind: _syncer(kind) for kind in ("todo", "done", "recur")}
IMPORTERS = {kind: _importer(kind) for kind in ("todo", "done", "recur")}
RENDERERS = {kind: _renderer(kind) for kind in ("todo", "done", "recur")}


# --- a Markdown task made in the ledger ---------------------------------------------------------


def todo_title_problem(title: str, chat_id: str | None = None) -> str | None:
    """Why ``title`` (with ``chat_id``) cannot be the text of a TODO.md entry (None: it can)."""
    if "\n" in title or "\r" in title:
        return "an entry is one line; the title has a line break"
    created = datetime(2000, 1, 1, tzinfo=UTC)  # any valid stamp: the line's text is in question
    entry = Entry(kind=TodoKind.TODO, content=title.strip(), created=created, chat_id=chat_id)
    return _checked_entry(entry, "strict")


def add_todo(
    ledger: Ledger, db: Db, title: str, now: datetime, *, chat_id: str | None, **fields: Any
) -> TaskRow:
    """A TODO.md task created in the ledger (``hb add --source todo``); the next sync writes it."""
    from heartbeat import tasks as tasks_mod

    content = title.strip()
    if chat_id is not None and chat_id.strip():
        try:
            chat_id = fmt.normalize_chat_id(chat_id)  # as mistermorph's AddWithChatID stores it
        except ValueError as exc:
            raise InvalidInput(
                f"--chat-id {chat_id!r} is not a protocol:id reference like tg:-100123: {exc}"
            ) from None
    else:
        chat_id = None
    entry = Entry(kind=TodoKind.TODO, content=content, created=now, chat_id=chat_id)
    problem = todo_title_problem(title, chat_id)
    if problem is not None:
        raise InvalidInput(f"cannot be a TODO.md entry: {problem}")
    family = _Tasks(ledger, db, now)
    record = family.entry_record("todo", entry)
    key = family.keys(record)[0]
    scopes = db.rows(
        f"SELECT scope FROM tasks WHERE source = '{TODO_SOURCE}' AND external_key = :key", {"key": key}
    )
    if any(scope == "" for (scope,) in scopes):
        key = family.dup_key(key, record)
    [task_id] = family.new_ids([key], [None])
    changes = tasks_mod.Changes.from_input({**fields, "chat_id": chat_id}, ledger.zone)
    task = tasks_mod.add(db, content, changes, now, scope="", source=TODO_SOURCE, task_id=task_id)
    task.external_key = key
    return task
