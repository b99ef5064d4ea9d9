"""memory/heartbeat-state.json <-> the ledger (FORMATS.md section 4, OpenClaw).

The file holds settings and facts; the ledger keeps each where it belongs:

- settings (``proactiveChat.*`` limits, ``memoryHygiene.enabled/everyHours``)
  are ``settings`` rows;
- ``proactiveChat.lastConversationAt`` is a ``runs`` row of kind ``seen``,
  ``proactiveChat.lastProactiveAt`` a sent ``notifications`` row of kind
  ``proactive``, ``memoryHygiene.lastRunAt`` a ``runs`` row of kind ``hygiene``,
  ``todoWatch.lastScanAt/nextScanAt`` the detail of a ``runs`` row of kind
  ``check`` (``hb check`` writes one per round; an imported watermark is one
  with status ``imported``).

A fact from the file enters the ledger only when it is newer than what the
ledger knows, so times only move forward. Writing back goes through
:func:`heartbeat.formats.state.with_updates`: only values that changed are
edited, in place, in the workspace's offset; every unknown key stays.

hb writes a setting into the file only when the file already holds it or it
was set in the ledger (``hb config set``), so an untouched file with default
settings is never rewritten. In ``hb sync`` a setting changed on both sides
since the last sync is a conflict: the file wins and the report names it.

A file that holds no value (empty, ``null``, ``[]``) is read as an empty object and
kept as it is until hb writes a value (said once). ``proactiveChat``, ``memoryHygiene`` or
``todoWatch`` holding null is read as an
empty object, with a warning naming the line (:func:`heartbeat.formats.state.container_notes`),
and replaced by an object only when hb writes a value into it (said once). One
holding a string or a list is kept as written with a warning: ``hb sync`` leaves
out the values hb would write into it, ``hb export state`` refuses naming the line.
Neither stops the sync of the other files.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat import settings as settings_mod
from heartbeat.db.plain import read_time
from heartbeat.db.rows import NotificationRow, RunRow, SettingRow, SyncStateRow
from heartbeat.db.store import Db, statements
from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats import state as state_fmt
from heartbeat.formats.timestamps import timestamp_or_none
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import digest
from heartbeat.ops.sync.queue_files import remember
from heartbeat.ops.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context

    pass

KIND = "state"
SQL = statements("state_files")
SETTINGS_SQL = statements("settings")

# Where each fact the file holds lives in the file, for report labels.
_LABELS = {key: ".".join(paths[0]) for key, paths in state_fmt.FACT_PATHS.items()}
_LABELS.update({key: ".".join(paths[0]) for key, paths in state_fmt.SETTING_PATHS.items()})


# --- reading -------------------------------------------------------------------------


def _parse(text: str, path: Path) -> state_fmt.HeartbeatState:
    try:
        return state_fmt.parse(text)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None


def _notes(doc: state_fmt.HeartbeatState, path: Path) -> list[str]:
    """``path:line: note`` for each object hb reads that holds null or a value that is not one."""
    return [
        f"{path}:{line}: {note}" if line is not None else f"{path}: {note}"
        for line, note in state_fmt.container_notes(doc)
    ]


def _said(
    before: state_fmt.HeartbeatState, after: state_fmt.HeartbeatState, text: str, path: Path
) -> tuple[list[str], list[str]]:
    """What to say of the objects hb reads, in a file it leaves as ``text`` (``after``, made from
    ``before``): the :func:`_notes` of that text (what the next sync says again, at the lines it
    will find), and one line per null hb writes an object in place of (said once)."""
    from heartbeat.formats.json_edit import line_of

    filled = []
    if before.placeholder is not None and after.doc:
        held = "was empty" if before.placeholder == "empty" else f"held {before.placeholder}"
        filled.append(f"{path}:1: the file {held}: read as an empty object; hb writes an object in its place")
    for name in state_fmt.CONTAINERS:
        value = after.doc.get(name)
        if name in before.doc and before.doc[name] is None and isinstance(value, dict):
            places = ", ".join(f"{name}.{key}" for key in value)
            filled.append(
                f"{path}:{line_of(text, (name,))}: {name} was null: read as an empty object; "
                f"hb writes {places} in its place"
            )
    left = after if text == after.source else state_fmt.HeartbeatState(doc=after.doc, source=text)
    return _notes(left, path), filled


def _tell(ctx: Context, notes: list[str]) -> None:
    """Add ``notes`` to the notices, once each (a sync may run its syncers again)."""
    ctx.notices.extend(note for note in notes if note not in ctx.notices)


def _rendered(ctx: Context, db: Db, doc: state_fmt.HeartbeatState, path: Path) -> str:
    """An export's text of ``doc`` (read from ``path``), its notes told as notices."""
    after = _updated(ctx, db, doc, path)
    text = state_fmt.render(after)
    left, filled = _said(doc, after, text, path)
    _tell(ctx, left + filled)
    return text


FUTURE_SLACK = timedelta(minutes=10)


def _read(
    ctx: Context, doc: state_fmt.HeartbeatState, path: Path, problems: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's settings (validated as hb settings) and facts; InvalidInput names the path.

    With ``problems`` (hb sync), a value hb cannot use is left out and its reason put there:
    the runtime owns this file, and one odd value must not stop every heartbeat."""
    try:
        raw = state_fmt.settings_from_state(doc, problems)
        # (a few minutes' slack: the runtime may write its file while hb runs, from the same clock)
        facts = state_fmt.facts_from_state(
            doc, tz=ctx.zone, problems=problems, not_after=ctx.now() + FUTURE_SLACK
        )
        settings = {}
        for key, value in raw.items():
            try:
                settings[key] = settings_mod.validate(key, value)
            except InvalidInput as exc:
                if problems is None:
                    raise
                problems[key] = exc.message
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc.message}") from None
    return settings, facts


# the limits a setting's field names (pydantic's words) as comparisons
def _store_setting(db: Db, key: str, value: Any, now: datetime) -> bool:
    """Set ``key`` to ``value``; whether the stored value changed."""
    row = db.get(SettingRow, key)
    if row is None:
        if value == settings_mod.KEYS[key].default:
            return False  # the default already: nothing to store
        db.add(SettingRow(key=key, value=value, updated_at=now))
        return True
    if row.value == value and type(row.value) is type(value):
        return False
    row.value = value
    row.updated_at = now
    return True


def _import_facts(ctx: Context, db: Db, facts: dict[str, datetime | None]) -> list[str]:
    """Record the file's times that are newer than the ledger's; the keys taken."""
    from heartbeat.clock import isoformat

    taken = []
    known = _facts(db)
    for key, moment in facts.items():
        if moment is None or key == "todo_watch.next_scan_at":
            continue  # nextScanAt travels with lastScanAt
        latest = known.get(key)
        if latest is not None and moment <= latest:
            continue
        if key == "proactive.last_conversation_at":
            db.add(RunRow(kind="seen", status="imported", started_at=moment, finished_at=moment))
        elif key == "hygiene.last_run_at":
            db.add(RunRow(kind="hygiene", status="imported", started_at=moment, finished_at=moment))
        elif key == "proactive.last_proactive_at":
            day = moment.astimezone(ctx.zone).date().isoformat()
            db.add(NotificationRow(at=moment, local_day=day, kind="proactive", decision="sent"))
        elif key == "todo_watch.last_scan_at":
            detail = {
                "lastScanAt": isoformat(moment, ctx.zone),
                "nextScanAt": isoformat(facts.get("todo_watch.next_scan_at"), ctx.zone),
                "imported": True,
            }
            db.add(
                RunRow(kind="check", status="imported", started_at=moment, finished_at=moment, detail=detail)
            )
        taken.append(key)
    return taken


def _facts(db: Db) -> dict[str, datetime | None]:
    """The latest time of each fact the ledger knows (None: never)."""

    def latest_run(kind: str) -> datetime | None:
        return read_time(db.value(SQL.latest_run, {"kind": kind}))

    check = _last_check(db)
    return {
        "proactive.last_conversation_at": latest_run("seen"),
        "proactive.last_proactive_at": read_time(db.value(SQL.last_proactive)),
        "hygiene.last_run_at": latest_run("hygiene"),
        "todo_watch.last_scan_at": check[0] if check else None,
        "todo_watch.next_scan_at": check[1] if check else None,
    }


def _last_check(db: Db) -> tuple[datetime, datetime | None] | None:
    """The newest scan watermark: (lastScanAt, nextScanAt) of the latest check run."""
    run = db.first(RunRow, SQL.last_check)
    if run is None:
        return None
    detail = run.detail or {}
    next_scan = timestamp_or_none(detail.get("nextScanAt"))
    return run.started_at, next_scan


def _apply(
    ctx: Context,
    db: Db,
    doc: state_fmt.HeartbeatState,
    path: Path,
    now: datetime,
    *,
    skip_settings: set[str] | None = None,
    problems: dict[str, str] | None = None,
) -> tuple[list[str], int]:
    """Take the file's settings and newer facts into the ledger; (labels changed, unchanged count)."""
    settings, facts = _read(ctx, doc, path, problems)
    changed = []
    unchanged = 0
    for key, value in settings.items():
        if skip_settings is not None and key in skip_settings:
            continue
        if _store_setting(db, key, value, now):
            changed.append(_LABELS[key])
        else:
            unchanged += 1
    if changed:  # the settings read before are stale now, in this transaction and after it
        db.flush()
        ctx.forget_settings()
        db.after_commit.append(ctx.forget_settings)
    taken = _import_facts(ctx, db, facts)
    changed.extend(_LABELS[key] for key in taken)
    unchanged += sum(1 for key, moment in facts.items() if moment is not None and key not in taken)
    return changed, unchanged


# --- writing -------------------------------------------------------------------------


def _updated(
    ctx: Context,
    db: Db,
    doc: state_fmt.HeartbeatState,
    path: Path | None = None,
    keep: Collection[str] = (),
) -> state_fmt.HeartbeatState:
    """The document with the ledger's settings and facts written in; an error names ``path``.
    The values at ``keep`` (ones hb could not read) stay as the file has them."""
    present = state_fmt.settings_from_state(doc, {})
    rows = db.load(SettingRow, SQL.settings)
    stored = {row.key for row in rows}
    values = settings_mod.as_dict(settings_mod.build({row.key: row.value for row in rows}))
    settings = {
        key: values[key]
        for key in state_fmt.SETTING_PATHS
        if (key in present or key in stored) and key not in keep
    }
    # hb writes whole seconds, like the runtimes; the ledger keeps the exact instant, so a time
    # the file already holds to the microsecond (its fraction, its offset) stays as written
    written = state_fmt.facts_from_state(doc, tz=ctx.zone, problems={})
    facts = {
        key: moment if written.get(key) == moment else moment.replace(microsecond=0)
        for key, moment in _facts(db).items()
        if moment is not None and key not in keep
    }
    try:
        return state_fmt.with_updates(doc, settings=settings, facts=facts, tz=ctx.zone)
    except InvalidInput as exc:
        if path is None:
            raise
        line = getattr(exc, "line", None)
        where = f"{path}:{line}" if line is not None else str(path)
        raise InvalidInput(f"{where}: {exc.message}") from None


def _empty() -> state_fmt.HeartbeatState:
    return state_fmt.HeartbeatState(doc={})


def _has_anything(db: Db) -> bool:
    """Whether the ledger knows something the state file holds (worth creating the file for)."""
    stored = {key for (key,) in db.rows(SETTINGS_SQL.stored_keys)}
    if stored & set(state_fmt.SETTING_PATHS):
        return True
    return any(moment is not None for moment in _facts(db).values())


# --- the registry's three entry points -------------------------------------------------


def import_state(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    """``hb import state``: the file's settings win; its times are taken when newer."""
    doc = _parse(text, path)
    changed, unchanged = _apply(ctx, db, doc, path, now)
    remember(db, KIND, path, text, now)
    warnings = [
        f"line {line}: {note}" if line is not None else note for line, note in state_fmt.container_notes(doc)
    ]
    return ImportReport(KIND, str(path), updated=changed, unchanged=unchanged, warnings=warnings)


def render_state(ctx: Context, db: Db, path: Path | None = None) -> str | None:
    """``hb export state``: the file at ``path`` (default: the workspace's; else the last one
    synced) with the ledger's values.

    None when there is no file and nothing worth writing.
    """
    from heartbeat.errors import HbError
    from heartbeat.ops.sync.files import default_path, other_file, read_text

    base: state_fmt.HeartbeatState | None = None
    workspace_file = default_path(ctx.workspace, KIND)
    other = other_file(path, workspace_file)
    if other is not None:  # another existing file: its text is the base, and must be readable
        return _rendered(ctx, db, _parse(read_text(other), other), other)
    try:
        base = state_fmt.parse(read_text(workspace_file))
    except HbError:
        row = db.get(SyncStateRow, KIND)
        kept = bookmarks.kept_text(row.skeleton) if row is not None else None
        if kept is not None:
            try:
                base = state_fmt.parse(kept)
            except FileFormatError:
                base = None
    if base is None:
        if not _has_anything(db):
            return None
        base = _empty()
    return _rendered(ctx, db, base, workspace_file)


def sync_state(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """One step of ``hb sync``: file changes in, ledger changes out; a setting changed on both sides
    since the last sync is a conflict the file wins."""
    report = SyncReport(kind=KIND, path=str(path))
    last = db.get(SyncStateRow, KIND)
    if text is None:
        if not _has_anything(db):
            return report, None
        new = state_fmt.render(_updated(ctx, db, _empty()))
        report.added.extend(sorted(_labels_in(new)))
        report.written = True
        remember(db, KIND, path, new, now)
        return report, new
    doc = _parse(text, path)
    file_changed = last is None or last.content_hash != digest(text)
    problems: dict[str, str] = {}
    file_settings, _ = _read(ctx, doc, path, problems)
    report.preserved.extend(f"{path}: {reason}: kept as written, not read" for reason in problems.values())
    blocked = state_fmt.blocked_keys(doc)  # inside a string or a list (a note says so): left out
    if file_changed and doc.placeholder is None:
        from heartbeat.formats.json_edit import repeated_keys

        report.preserved.extend(  # as tasks.json says it: the first value is lost at a rewrite
            f"{path}:{line}: key {key!r} is repeated in its object: the last value counts, and a "
            "change to the object writes it out whole"
            for line, key in repeated_keys(text)
        )
    if file_changed:
        baseline = _baseline(last)
        keep_ledger = set()
        for key, value in file_settings.items():
            before = baseline.get(key) if baseline is not None else None
            edited_in_file = baseline is None or before != value
            row = db.get(SettingRow, key)
            edited_in_ledger = row is not None and last is not None and row.updated_at > last.synced_at
            if not edited_in_file:
                keep_ledger.add(key)  # the file did not change it: the ledger's value stands
            elif edited_in_ledger and row is not None and row.value != value:
                report.conflicts.append(_LABELS[key])
        changed, _ = _apply(ctx, db, doc, path, now, skip_settings=keep_ledger, problems={})
        report.updated.extend(label for label in changed if label not in report.conflicts)
    after = _updated(ctx, db, doc, path, keep=problems.keys() | blocked.keys())
    new = state_fmt.render(after)
    left, filled = _said(doc, after, new, path)
    report.preserved.extend(left)
    _tell(ctx, filled)
    if new == text:
        remember(db, KIND, path, text, now)
        return report, None
    report.written = True
    remember(db, KIND, path, new, now)
    return report, new


def _baseline(last: SyncStateRow | None) -> dict[str, Any] | None:
    """The settings the file held at the last sync (None: no usable record)."""
    kept = bookmarks.kept_text(last.skeleton) if last is not None else None
    if kept is None:
        return None
    try:
        return state_fmt.settings_from_state(state_fmt.parse(kept), {})
    except FileFormatError:
        return None


def _labels_in(text: str) -> set[str]:
    doc = state_fmt.parse(text)
    present = set(state_fmt.settings_from_state(doc)) | set(state_fmt.facts_from_state(doc))
    return {_LABELS[key] for key in present}


IMPORTERS = {KIND: import_state}
RENDERERS = {KIND: render_state}
SYNCERS = {KIND: sync_state}
