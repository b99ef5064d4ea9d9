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
(``.agent/state/sync/<kind>.base``, written as ``<kind>.base.next`` before the
commit and renamed after it) and trusted only while its hash is the one
``sync_state`` recorded; rewriting a 1 MB copy inside
the database on every sync cost more than the sync itself. Rows are loaded,
inserted and updated with bulk statements; unchanged rows are not written.

Plain SQL. The module speaks plain SQL on the driver connection of the
transaction it is given (:class:`heartbeat.db.plain.Conn`), with the
column types of :mod:`heartbeat.db.shape`, so it never imports SQLAlchemy.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.plain import Conn
from heartbeat.errors import HbError, InvalidInput
from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import Entry, TodoKind
from heartbeat.ops.sync.files import atomic_write, default_path, digest, read_optional, same_place
from heartbeat.ops.sync.markdown.base import (
    TASK_KINDS,
    TODO_SOURCE,
    Stored,
    base_text,
    content_of,
    on_top,
    read_dialect,
)
from heartbeat.ops.sync.markdown.family import ENTRY_IDS, Family
from heartbeat.ops.sync.markdown.imports import import_family, render_family
from heartbeat.ops.sync.markdown.merge import checked_entry, full_sync, labels_of, line_size_problem
from heartbeat.ops.sync.markdown.reading import diff_since_sync
from heartbeat.ops.sync.markdown.recurrences import RecurrenceFamily
from heartbeat.ops.sync.markdown.targeted import targeted
from heartbeat.ops.sync.markdown.tasks import TaskFamily
from heartbeat.ops.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context
    from heartbeat.db.rows import TaskRow
    from heartbeat.db.store import Db


def sync_family(
    family: Family, given: dict[str, tuple[Path, str | None]], *, sealed: bool = False
) -> dict[str, tuple[SyncReport, str | None]]:
    """One sync of a family's files; returns each kind's report and the text to write (or None).

    ``sealed``: the engine checked that no table changed since the last full sync, which
    recorded the family's mark; that mark is then taken as it is instead of recomputed.
    Each distinct line is read once (:func:`heartbeat.formats.todo.lines_remembered`).
    """
    with fmt.lines_remembered():
        return _sync_family(family, given, sealed)


def _sync_family(
    family: Family, given: dict[str, tuple[Path, str | None]], sealed: bool
) -> dict[str, tuple[SyncReport, str | None]]:
    db = family.db
    stored = {k: Stored.load(db, k) for k in family.kinds}
    reports = {k: SyncReport(kind=k, path=str(given[k][0])) for k in family.kinds}
    marks = [stored[k].mark for k in family.kinds if stored[k].ours]
    if sealed and len(marks) == len(family.kinds) and all(m == marks[0] for m in marks):
        mark = marks[0]
    else:
        mark = family.mark()

    hashes = {k: None if text is None else digest(text) for k, (_path, text) in given.items()}

    def unchanged(kind: str) -> bool:
        st = stored[kind]
        return (
            st.ours
            and st.path is not None
            and same_place(db, st.path, given[kind][0])
            and st.hash == hashes[kind]
        )

    ledger_same = all(stored[k].ours and stored[k].mark == mark and not stored[k].retry for k in family.kinds)
    if ledger_same and all(unchanged(k) for k in family.kinds):
        for k in family.kinds:
            reports[k].preserved = labels_of(given[k][0], stored[k].warnings)
        return {k: (reports[k], None) for k in family.kinds}
    previous = next((stored[k].dialect for k in family.kinds if stored[k].dialect), None)
    dialect = read_dialect(family.dialect, previous)
    if ledger_same and isinstance(family, TaskFamily):
        changed = [k for k in family.kinds if not unchanged(k)]
        diffs = {
            k: diff_since_sync(
                stored[k], base_text(family.ctx.workspace, k, stored[k].hash), given[k][1], dialect
            )
            for k in changed
        }
        if all(d is not None for d in diffs.values()):
            done = targeted(family, given, stored, {k: d for k, d in diffs.items() if d}, reports, dialect)
            if done is not None:
                return done
    return full_sync(family, given, stored, reports, dialect, ledger_same, unchanged)


# --- one-way import and export ---------------------------------------------------------------


def _family(kind: str, ctx: Context, db: Conn, now: datetime) -> Family:
    if kind in TASK_KINDS:
        return TaskFamily(ctx, db, now)
    return RecurrenceFamily(ctx, db, now)


def _importer(kind: str) -> Any:
    def run(ctx: Context, db: Conn, text: str, path: Path, now: datetime) -> ImportReport:
        with fmt.lines_remembered():
            return import_family(_family(kind, ctx, db, now), kind, Path(path), text)

    return run


def _renderer(kind: str) -> Any:
    def run(ctx: Context, db: Conn, path: Path | None = None) -> str | None:
        with fmt.lines_remembered():
            return render_family(_family(kind, ctx, db, ctx.now()), kind, path)

    return run


# --- hb sync entry points ---------------------------------------------------------------------


def sync_group(
    ctx: Context, db: Conn, files: dict[str, tuple[Path, str | None]], now: datetime, *, sealed: bool
) -> dict[str, tuple[SyncReport, str | None]]:
    """Sync TODO.md + TODO.DONE.md together (or TODO.RECUR.md); ``sealed``: the engine's seal
    holds (the ledger is as the last full sync left it)."""
    return sync_family(_family(next(iter(files)), ctx, db, now), files, sealed=sealed)


def _syncer(kind: str) -> Any:
    """The registry's one-kind syncer: TODO.md and TODO.DONE.md are still synced as a pair;
    the sibling file is read here and written after the commit."""

    def run(
        ctx: Context, db: Conn, path: Path, text: str | None, now: datetime
    ) -> tuple[SyncReport, str | None]:
        family = _family(kind, ctx, db, now)
        given = {
            k: (Path(path), text) if k == kind else (default_path(ctx.workspace, k), None)
            for k in family.kinds
        }
        for k in family.kinds:
            if k != kind:
                given[k] = (given[k][0], read_optional(given[k][0]))
        result = sync_family(family, given)
        for k, (_report, out) in result.items():
            if k != kind and out is not None and out != given[k][1]:
                db.after_commit.append(functools.partial(atomic_write, given[k][0], out))
        return result[kind]

    return run


def _baseline_of(kind: str) -> Any:
    def baseline(ctx: Context, db: Conn) -> str | None:
        """The text of the file as the last sync left it (or meant to), when the copy kept beside
        the ledger is that text (see heartbeat.ops.sync.writeback)."""
        stored = Stored.load(db, kind)
        return base_text(ctx.workspace, kind, stored.hash) if stored.ours else None

    return baseline


def _recounter(kind: str) -> Any:
    def recount(ctx: Context, text: str, now: datetime) -> str:
        """``text`` with its front matter's count matching its entries (see :func:`fmt.recounted`)."""
        doc = fmt.parse(text, TodoKind(kind), dialect=ctx.settings.todo_dialect)
        counted = fmt.recounted(doc, now=now)
        return text if counted is doc else fmt.render(counted)

    return recount


def _entry_keys(kind: str) -> Any:
    def keys(text: str) -> list[tuple[str, str | None]]:
        """Each entry of ``text`` as (the entry whole, as it reads: a task entry's Created stamp,
        ChatID and content, which mistermorph's Complete carries into TODO.DONE.md; a rule with
        its Next) and, for a rule, the rule without its Next (which a materialisation advances).
        An entry with the extended dialect's ``[ID]`` is that id, whatever else it says: only a
        text made from hb's can hold the id of an entry hb added. Nothing for a text hb cannot
        read."""
        try:
            doc = fmt.parse(text, TodoKind(kind), dialect="extended")
        except (HbError, ValueError):
            return []
        out: list[tuple[str, str | None]] = []
        for e in doc.entries:
            ident = dict(e.extra).get("ID")
            if ident is not None:
                out.append((f"[ID]{ident}", f"[ID]{ident}" if kind == "recur" else None))
            elif kind == "recur":
                out.append(_rule_keys(e))
            else:
                out.append(
                    (f"{e.created.isoformat() if e.created else ''}|{e.chat_id or ''}|{e.content}", None)
                )
        return out

    return keys


def _rule_schedules(text: str) -> list[tuple[str, str, str]]:
    """Each rule of a TODO.RECUR.md ``text`` without an ``[ID]`` as (the rule whole, the rule
    without its Next, as :func:`_entry_keys` gives them, and its schedule: Next, Repeat, TZ and
    ChatID without its text). Nothing for a text hb cannot read."""
    try:
        doc = fmt.parse(text, TodoKind.RECUR, dialect="extended")
    except (HbError, ValueError):
        return []
    out = []
    for e in doc.entries:
        if dict(e.extra).get("ID") is None:
            schedule = f"{e.next.isoformat() if e.next else ''}|{e.repeat}|{e.tz or ''}|{e.chat_id or ''}"
            out.append((*_rule_keys(e), schedule))
    return out


def _rule_keys(e: Entry) -> tuple[str, str]:
    """A rule as (the rule whole, with its Next; the rule without its Next)."""
    rule = f"{e.repeat}|{e.tz or ''}|{e.chat_id or ''}|{e.content}"
    return f"{e.next.isoformat() if e.next else ''}|{rule}", rule


BASELINE_TEXT = {kind: _baseline_of(kind) for kind in ("todo", "done", "recur")}
# how a copy of a file is told to come from hb's text by its entries (engine._from_hbs_text)
ENTRY_KEYS = {kind: _entry_keys(kind) for kind in ("todo", "done", "recur")}
MOVED_TO = {"todo": "done"}  # where the runtime moves an entry it takes out of the file
SCHEDULES = {"recur": _rule_schedules}  # a rule whose Next hb moved on, edited (engine._edits_a_moved_rule)
# a text merged from hb's and a stale copy's lines, under the copy's front matter: counted again
RECOUNTERS = {kind: _recounter(kind) for kind in ("todo", "done", "recur")}
SYNC_GROUPS = {("todo", "done"): sync_group, ("recur",): sync_group}
SYNCERS = {kind: _syncer(kind) for kind in ("todo", "done", "recur")}
IMPORTERS = {kind: _importer(kind) for kind in ("todo", "done", "recur")}
RENDERERS = {kind: _renderer(kind) for kind in ("todo", "done", "recur")}


# --- a Markdown task made in the ledger ---------------------------------------------------------


# a TODO file line's bytes besides its title: the checkbox, stamps, ChatID, Repeat and separator
_METADATA_ROOM = 512


def todo_chat_id(chat_id: str | None) -> str | None:
    """A TODO.md entry's ChatID as mistermorph's AddWithChatID stores it (``TG : 5`` -> ``tg:5``;
    None for none); InvalidInput for one mistermorph would not read."""
    if chat_id is None or not chat_id.strip():
        return None
    try:
        return fmt.normalize_chat_id(chat_id)
    except ValueError as exc:
        raise InvalidInput(
            f"--chat-id {chat_id!r} is not a protocol:id reference like tg:-100123: {exc}"
        ) from None


def todo_title_problem(title: str, chat_id: str | None = None) -> str | None:
    """Why ``title`` (with ``chat_id``) cannot be the text of a TODO.md entry (None: it can).

    Its line is checked as TODO.DONE.md will hold it too (26 bytes longer, the Done stamp), so
    completing the entry never writes a line mistermorph's reader stops at."""
    if "\n" in title or "\r" in title:
        return "an entry is one line; the title has a line break"
    if len(title.encode("utf-8", "surrogatepass")) + _METADATA_ROOM >= fmt.SCANNER_LIMIT:
        return (
            "the title is too long for a line of a TODO file: mistermorph's reader stops at a line "
            "of 64 KiB and loses every line after it"
        )
    entry = Entry(kind=TodoKind.TODO, content=title.strip(), created=ANY_STAMP, chat_id=chat_id)
    return checked_entry(entry, "strict") or todo_done_problem(title, chat_id)


ANY_STAMP = datetime(2000, 1, 1, tzinfo=UTC)  # stamps have one width: the line's text is in question


def todo_done_problem(title: str, chat_id: str | None, task_id: str | None = None) -> str | None:
    """Why a TODO.md entry's line in TODO.DONE.md would be too long for mistermorph's reader
    (None: it is not). ``task_id``: its [ID], with the extended dialect."""
    extra = () if task_id is None else (("ID", task_id),)
    done = Entry(
        kind=TodoKind.DONE,
        content=content_of(title),
        created=ANY_STAMP,
        done=ANY_STAMP,
        chat_id=chat_id,
        extra=extra,
    )
    try:
        text = fmt.render_entry(done)
    except InvalidInput:
        return None  # not a line hb writes at all: the sync says why
    return line_size_problem(text, " in TODO.DONE.md")


def add_todo(
    ctx: Context, db: Db, title: str, now: datetime, *, chat_id: str | None, **fields: Any
) -> TaskRow:
    """A TODO.md task created in the ledger (``hb add --source todo``); the next sync writes it
    on top of TODO.md's entries, where mistermorph's Add puts a new one."""
    from heartbeat.db import tasks as tasks_mod

    content = title.strip()
    chat_id = todo_chat_id(chat_id)
    entry = Entry(kind=TodoKind.TODO, content=content, created=now, chat_id=chat_id)
    problem = todo_title_problem(title, chat_id)
    if problem is not None:
        raise InvalidInput(f"cannot be a TODO.md entry: {problem}")
    family = TaskFamily(ctx, db, now)
    record = family.entry_record("todo", entry)
    key = family.keys(record)[0]
    db.take_turns(ENTRY_IDS)  # until the commit: a concurrent add of the same minute sees this one
    scopes = db.rows(
        f"SELECT scope FROM tasks WHERE source = '{TODO_SOURCE}' AND external_key = :key", {"key": key}
    )
    if any(scope == "" for (scope,) in scopes):
        key = family.dup_key(key, record)
    [task_id] = family.new_ids([key], [None])
    changes = tasks_mod.Changes.from_input({**fields, "chat_id": chat_id}, ctx.zone)
    top = db.value(f"SELECT min(position) FROM tasks WHERE source = '{TODO_SOURCE}'")
    task = tasks_mod.add(db, content, changes, now, scope="", source=TODO_SOURCE, task_id=task_id)
    task.external_key = key
    task.position = on_top(top)  # the next sync writes it there
    return task
