"""A family of ledger rows one or two Markdown files show (the generic part, bulk writes).

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.plain import Conn, in_list
from heartbeat.db.shape import TASK_EVENTS, Shape
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import take_turns
from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import Entry
from heartbeat.ops.sync.markdown.base import ACTOR, CHUNK_SIZE, ID_PATTERN, KIND_OF, EntryRecord, chunked

if TYPE_CHECKING:
    from heartbeat.context import Context

    pass


class Row:
    """A ledger row as the sync sees it: loaded in bulk, written back in bulk."""

    __slots__ = ("_alt", "_record", "data", "extra", "family", "id", "key", "pk", "position", "synced_hash")

    def __init__(self, family: Family, data: Any) -> None:
        self.family = family
        self.data = data
        self.pk: int = data.pk
        self.id: str = data.id
        self.key: str | None = data.external_key
        self.position: int = data.position or 0
        self.synced_hash: str | None = data.synced_hash
        self.extra: dict[str, Any] = dict(data.extra or {})
        self._record: EntryRecord | None = None
        self._alt: str | None = None

    @property
    def record(self) -> EntryRecord:
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
class Item:
    """An entry line of a file, with the row it was matched to."""

    kind: str
    number: int  # 1-based line in the file as read (0: not known, see known_file)
    raw: str  # the line without its ending
    entry: Entry | None  # None: a line known unchanged since the last sync (``row`` set)
    row: Row | None = None
    record: EntryRecord | None = None  # the file's version (None when ``entry`` is None)
    key: str = ""
    alt: str = ""
    fate: str = "keep"  # keep | rewrite (the row's version) | merged (``entry`` as merged) | drop
    final_extra: dict[str, Any] | None = None  # a new row's extra and synced_hash
    final_hash: str | None = None


@dataclass
class ParsedFile:
    kind: str
    path: Path
    text: str | None
    items: list[Item]
    warnings: list[tuple[int, str, str]]  # (line, text, reason)
    doc: fmt.Document | None = None  # full parse, made when the file is rendered
    written: fmt.Document | None = None  # the text render_file last gave, as read back (or None)


# --- the two families: tasks (TODO.md + TODO.DONE.md) and recurrences (TODO.RECUR.md) ------


class Family:
    """What differs between TODO/DONE tasks and TODO.RECUR.md rules."""

    kinds: tuple[str, ...]
    prefix: str
    shape: Shape
    columns: tuple[str, ...]  # what a Row is made of
    where: str  # the family's rows (SQL)
    keyed: str  # the family's condition for lookups by key (what the index serves)

    def __init__(self, ctx: Context, db: Conn, now: datetime) -> None:
        self.ctx = ctx
        self.db = db
        self.now = now
        self.dialect = ctx.settings.todo_dialect
        self.actor = ACTOR

    # reading
    def mark(self) -> Any:
        """A cheap fingerprint of the rows: unchanged means the ledger side did not move."""
        raise NotImplementedError

    def load(self, condition: str | None = None, params: dict[str, Any] | None = None) -> list[Row]:
        """The family's rows (``condition``: only those, looked up by an index of it)."""
        where = self.where if condition is None else f"{self.keyed} AND ({condition})"
        sql = f"SELECT {', '.join(self.columns)} FROM {self.shape.name} WHERE {where}"
        out = []
        for values in self.db.rows(sql, params):
            data = Data(self.shape.decode(values, self.columns))
            if self.mine(data):
                out.append(Row(self, data))
        return out

    def full_rows(self, pks: Sequence[int]) -> list[dict[str, Any]]:
        """Whole rows (every column, decoded) by primary key."""
        out: list[dict[str, Any]] = []
        for chunk in chunked(list(pks)):
            frag, params = in_list("pk", chunk)
            sql = f"SELECT {self.shape.select()} FROM {self.shape.name} WHERE pk IN {frag}"
            out.extend(self.shape.decode(values) for values in self.db.rows(sql, params))
        return out

    def delete(self, pks: Sequence[int]) -> None:
        self.before_change(pks)
        for chunk in chunked(list(pks)):
            frag, params = in_list("pk", chunk)
            self.db.execute(f"DELETE FROM {self.shape.name} WHERE pk IN {frag}", params)

    def mine(self, data: Any) -> bool:
        return True

    def before_change(self, pks: Sequence[int]) -> None:
        """Called before these rows are deleted, or their titles or extras rewritten."""

    def row_record(self, data: Any) -> EntryRecord:
        raise NotImplementedError

    def entry_record(self, kind: str, entry: Entry) -> EntryRecord:
        raise NotImplementedError

    def keys(self, record: EntryRecord) -> tuple[str, str]:
        """(identity key, fallback key) of a record."""
        raise NotImplementedError

    def dup_key(self, key: str, record: EntryRecord) -> str:
        raise NotImplementedError

    def row_alt(self, row: Row) -> str:
        line = row.base_line
        place = row.base_place
        if line is not None and place is not None:
            try:
                entry = fmt.parse_entry(line, KIND_OF[place], dialect="extended")
            except ValueError:
                pass
            else:
                return self.keys(self.entry_record(place, entry))[1]
        return self.keys(row.record)[1]

    # writing
    def entry(self, row: Row, kind: str) -> Entry:
        raise NotImplementedError

    def apply(self, changes: list[tuple[Row, Item, bool]], label: dict[int, str]) -> None:
        """Import the file's version of each (row, item, conflict)."""
        raise NotImplementedError

    removed: str  # the history's reason for a row whose line was deleted

    def history(
        self, row: dict[str, Any], kind: str, detail: dict[str, Any], before: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A ``task_events`` row for ``row`` (``before``: its snapshot, default the row as it is)."""
        raise NotImplementedError

    def remove(self, rows: list[Row], conflicts: set[int]) -> None:
        """Delete the rows of deleted lines, each with a ``removed`` history row."""
        if not rows:
            return
        events = []
        for row in self.full_rows([r.pk for r in rows]):
            detail = {"reason": self.removed}
            if row["pk"] in conflicts:
                detail["note"] = "changed in the ledger too; the file won"
            events.append(self.history(row, "removed", detail))
        record_events(self.db, events, self.now, self.actor)
        self.delete([r.pk for r in rows])

    def insert(self, items: list[Item], positions: dict[int, int], label: dict[int, str]) -> list[str]:
        """Add rows for new entries; returns their ids (in order)."""
        raise NotImplementedError

    def incoming_order(self, kind: str, rows: list[Row]) -> list[Row]:
        return sorted(rows, key=lambda r: (r.position, r.pk))

    def arrivals(self, kind: str) -> str:
        """Where rows arriving in this file go: ``top`` or ``end`` of its list, or ``position``."""
        return "position"

    def merge(self, row: Row, entry: Entry) -> Entry | None:
        """For a conflict (the line and the row both changed): the line's version with what the
        ledger changed and the line did not, when that is not just the line (None: the line wins)."""
        return None

    def report_kind(self, before: str | None, after: str) -> str:
        """Which report list a row arriving in ``after`` (from ``before``) goes to."""
        return "updated" if before is not None else "added"

    # shared

    def bookkeeping(self, rows: Sequence[tuple[Row, dict[str, Any]]]) -> None:
        """Record, in bulk, what each row looks like in its file now."""
        db = self.db
        self.before_change([row.pk for row, _values in rows])
        db.executemany(
            f"UPDATE {self.shape.name} SET synced_hash = :synced_hash, extra = {{json:extra}}, "
            "external_key = :external_key, position = :position WHERE pk = :b_pk",
            [{**values, "b_pk": row.pk, "extra": db.json(values["extra"])} for row, values in rows],
        )

    def new_ids(self, keys: Sequence[str], wanted: Sequence[str | None]) -> list[str]:
        """Stable ``<prefix>xxxxxxxx`` ids derived from the identity keys, unique in the ledger.

        On PostgreSQL the transactions that make entry ids take turns (:data:`ENTRY_IDS`) from
        here to their commit: two that asked for the same id at once both took it, and the second
        failed on the unique index (SQLite's write lock serialises them already)."""
        take_turns(self.db, ENTRY_IDS)
        out: list[str | None] = [None] * len(keys)
        used: set[str] = set()
        salt = [0] * len(keys)
        # per key, the salt after the last one taken: entries with the same key (identical lines)
        # take the next salts in one pass, not one salt per pass (quadratic: 10 s at 4,000 lines)
        next_salt: dict[str, int] = {}
        pending = list(range(len(keys)))
        first = True

        def generated(key: str, n: int) -> str:
            seed = key if n == 0 else f"{key}#{n}"
            return self.prefix + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:8]

        while pending:
            candidates: dict[str, int] = {}
            retry: list[int] = []
            for i in pending:
                asked = wanted[i] if first else None
                if asked is not None and ID_PATTERN.fullmatch(asked) and asked.startswith(self.prefix):
                    cand = asked
                    if cand in used or cand in candidates:
                        salt[i] += 1
                        retry.append(i)
                        continue
                else:
                    n = max(salt[i], next_salt.get(keys[i], 0))
                    cand = generated(keys[i], n)
                    while cand in used or cand in candidates:
                        n += 1
                        cand = generated(keys[i], n)
                    salt[i] = n
                    next_salt[keys[i]] = n + 1
                candidates[cand] = i
            if len(candidates) > CHUNK_SIZE:  # many at once (a first sync): read every id once
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


ENTRY_IDS = "entry-ids"  # the turns of the transactions that give Markdown entries new ids


class Data:
    """A loaded row's columns as attributes."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:  # typed access for mypy; every column is set
        raise AttributeError(name)


def record_events(db: Conn, events: list[dict[str, Any]], now: datetime, actor: str) -> None:
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


def insert_rows(db: Conn, shape: Shape, rows: list[dict[str, Any]]) -> list[int]:
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
