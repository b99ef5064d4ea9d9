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
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heartbeat import settings as settings_mod
from heartbeat.db.models import Notification, Run, Setting, SyncState
from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats import state as state_fmt
from heartbeat.formats.timestamps import timestamp_or_none
from heartbeat.sync.files import digest
from heartbeat.sync.queue_files import remember
from heartbeat.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

KIND = "state"

# Where each fact the file holds lives in the file, for report labels.
_LABELS = {key: ".".join(paths[0]) for key, paths in state_fmt.FACT_PATHS.items()}
_LABELS.update({key: ".".join(paths[0]) for key, paths in state_fmt.SETTING_PATHS.items()})


# --- reading -------------------------------------------------------------------------


def _parse(text: str, path: Path) -> state_fmt.HeartbeatState:
    try:
        return state_fmt.parse(text)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None


def _read(
    ledger: Ledger, doc: state_fmt.HeartbeatState, path: Path, problems: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's settings (validated as hb settings) and facts; InvalidInput names the path.

    With ``problems`` (hb sync), a value hb cannot use is left out and its reason put there:
    the runtime owns this file, and one odd value must not stop every heartbeat."""
    try:
        raw = state_fmt.settings_from_state(doc, problems)
        facts = state_fmt.facts_from_state(doc, tz=ledger.zone, problems=problems)
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


def _store_setting(session: Session, key: str, value: Any, now: datetime) -> bool:
    """Set ``key`` to ``value``; whether the stored value changed."""
    row = session.get(Setting, key)
    if row is None:
        if value == settings_mod.KEYS[key].default:
            return False  # the default already: nothing to store
        session.add(Setting(key=key, value=value, updated_at=now))
        return True
    if row.value == value and type(row.value) is type(value):
        return False
    row.value = value
    row.updated_at = now
    return True


def _import_facts(ledger: Ledger, session: Session, facts: dict[str, datetime | None]) -> list[str]:
    """Record the file's times that are newer than the ledger's; the keys taken."""
    from heartbeat.clock import isoformat

    taken = []
    known = _facts(session)
    for key, moment in facts.items():
        if moment is None or key == "todo_watch.next_scan_at":
            continue  # nextScanAt travels with lastScanAt
        latest = known.get(key)
        if latest is not None and moment <= latest:
            continue
        if key == "proactive.last_conversation_at":
            session.add(Run(kind="seen", status="imported", started_at=moment, finished_at=moment))
        elif key == "hygiene.last_run_at":
            session.add(Run(kind="hygiene", status="imported", started_at=moment, finished_at=moment))
        elif key == "proactive.last_proactive_at":
            day = moment.astimezone(ledger.zone).date().isoformat()
            session.add(Notification(at=moment, local_day=day, kind="proactive", decision="sent"))
        elif key == "todo_watch.last_scan_at":
            detail = {
                "lastScanAt": isoformat(moment, ledger.zone),
                "nextScanAt": isoformat(facts.get("todo_watch.next_scan_at"), ledger.zone),
                "imported": True,
            }
            session.add(
                Run(kind="check", status="imported", started_at=moment, finished_at=moment, detail=detail)
            )
        taken.append(key)
    return taken


def _facts(session: Session) -> dict[str, datetime | None]:
    """The latest time of each fact the ledger knows (None: never)."""

    def latest_run(kind: str) -> datetime | None:
        return _aware(session.scalar(select(func.max(Run.started_at)).where(Run.kind == kind)))

    last_proactive = session.scalar(
        select(func.max(Notification.at)).where(
            Notification.kind == "proactive", Notification.decision == "sent"
        )
    )
    check = _last_check(session)
    return {
        "proactive.last_conversation_at": latest_run("seen"),
        "proactive.last_proactive_at": _aware(last_proactive),
        "hygiene.last_run_at": latest_run("hygiene"),
        "todo_watch.last_scan_at": check[0] if check else None,
        "todo_watch.next_scan_at": check[1] if check else None,
    }


def _last_check(session: Session) -> tuple[datetime, datetime | None] | None:
    """The newest scan watermark: (lastScanAt, nextScanAt) of the latest check run."""
    run = session.scalars(
        select(Run).where(Run.kind == "check").order_by(Run.started_at.desc(), Run.pk.desc()).limit(1)
    ).first()
    if run is None:
        return None
    detail = run.detail or {}
    next_scan = timestamp_or_none(detail.get("nextScanAt"))
    return run.started_at, next_scan


def _aware(value: Any) -> datetime | None:
    from heartbeat.clock import to_utc

    if value is None:
        return None
    if isinstance(value, str):  # an aggregate SQLite returned as text
        value = datetime.fromisoformat(value)
    result: datetime = to_utc(value)
    return result


def _apply(
    ledger: Ledger,
    session: Session,
    doc: state_fmt.HeartbeatState,
    path: Path,
    now: datetime,
    *,
    skip_settings: set[str] | None = None,
    problems: dict[str, str] | None = None,
) -> tuple[list[str], int]:
    """Take the file's settings and newer facts into the ledger; (labels changed, unchanged count)."""
    settings, facts = _read(ledger, doc, path, problems)
    changed = []
    unchanged = 0
    for key, value in settings.items():
        if skip_settings is not None and key in skip_settings:
            continue
        if _store_setting(session, key, value, now):
            changed.append(_LABELS[key])
        else:
            unchanged += 1
    taken = _import_facts(ledger, session, facts)
    changed.extend(_LABELS[key] for key in taken)
    unchanged += sum(1 for key, moment in facts.items() if moment is not None and key not in taken)
    return changed, unchanged


# --- writing -------------------------------------------------------------------------


def _updated(
    ledger: Ledger,
    session: Session,
    doc: state_fmt.HeartbeatState,
    path: Path | None = None,
    keep: Collection[str] = (),
) -> state_fmt.HeartbeatState:
    """The document with the ledger's settings and facts written in; an error names ``path``.
    The values at ``keep`` (ones hb could not read) stay as the file has them."""
    present = state_fmt.settings_from_state(doc, {})
    stored = {row.key for row in session.scalars(select(Setting))}
    values = _current_settings(session)
    settings = {
        key: values[key]
        for key in state_fmt.SETTING_PATHS
        if (key in present or key in stored) and key not in keep
    }
    # the file keeps whole seconds, like the runtimes write it; the ledger keeps the exact instant
    facts = {
        key: moment.replace(microsecond=0)
        for key, moment in _facts(session).items()
        if moment is not None and key not in keep
    }
    try:
        return state_fmt.with_updates(doc, settings=settings, facts=facts, tz=ledger.zone)
    except InvalidInput as exc:
        if path is None:
            raise
        raise InvalidInput(f"{path}: {exc.message}") from None


def _current_settings(session: Session) -> dict[str, Any]:
    """Settings as this session sees them (the ledger's cache may predate the transaction)."""
    stored = {row.key: row.value for row in session.scalars(select(Setting))}
    return settings_mod.as_dict(settings_mod.build(stored))


def _empty() -> state_fmt.HeartbeatState:
    return state_fmt.HeartbeatState(doc={})


def _has_anything(session: Session) -> bool:
    """Whether the ledger knows something the state file holds (worth creating the file for)."""
    stored = {row.key for row in session.scalars(select(Setting))}
    if stored & set(state_fmt.SETTING_PATHS):
        return True
    return any(moment is not None for moment in _facts(session).values())


# --- the registry's three entry points -------------------------------------------------


def import_state(ledger: Ledger, session: Session, text: str, path: Path, now: datetime) -> ImportReport:
    """``hb import state``: the file's settings win; its times are taken when newer."""
    doc = _parse(text, path)
    changed, unchanged = _apply(ledger, session, doc, path, now)
    remember(session, KIND, path, text, now)
    return ImportReport(KIND, str(path), updated=changed, unchanged=unchanged)


def render_state(ledger: Ledger, session: Session, path: Path | None = None) -> str | None:
    """``hb export state``: the file at ``path`` (default: the workspace's; else the last one
    synced) with the ledger's values.

    None when there is no file and nothing worth writing.
    """
    from heartbeat.errors import HbError
    from heartbeat.sync.files import default_path, other_file, read_text

    base: state_fmt.HeartbeatState | None = None
    workspace_file = default_path(ledger.workspace, KIND)
    other = other_file(path, workspace_file)
    if other is not None:  # another existing file: its text is the base, and must be readable
        return state_fmt.render(_updated(ledger, session, _parse(read_text(other), other), other))
    try:
        base = state_fmt.parse(read_text(workspace_file))
    except HbError:
        row = session.get(SyncState, KIND)
        if row is not None and row.skeleton and "text" in row.skeleton:
            try:
                base = state_fmt.parse(row.skeleton["text"])
            except FileFormatError:
                base = None
    if base is None:
        if not _has_anything(session):
            return None
        base = _empty()
    return state_fmt.render(_updated(ledger, session, base, workspace_file))


def sync_state(
    ledger: Ledger, session: Session, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """One step of ``hb sync``: file changes in, ledger changes out; a setting changed on both sides
    since the last sync is a conflict the file wins."""
    report = SyncReport(kind=KIND, path=str(path))
    last = session.get(SyncState, KIND)
    if text is None:
        if not _has_anything(session):
            return report, None
        new = state_fmt.render(_updated(ledger, session, _empty()))
        report.added.extend(sorted(_labels_in(new)))
        report.written = True
        remember(session, KIND, path, new, now)
        return report, new
    doc = _parse(text, path)
    file_changed = last is None or last.content_hash != digest(text)
    problems: dict[str, str] = {}
    file_settings, _ = _read(ledger, doc, path, problems)
    report.preserved.extend(f"{path}: {reason}: kept as written, not read" for reason in problems.values())
    if file_changed:
        baseline = _baseline(last)
        keep_ledger = set()
        for key, value in file_settings.items():
            before = baseline.get(key) if baseline is not None else None
            edited_in_file = baseline is None or before != value
            row = session.get(Setting, key)
            edited_in_ledger = row is not None and last is not None and row.updated_at > last.synced_at
            if not edited_in_file:
                keep_ledger.add(key)  # the file did not change it: the ledger's value stands
            elif edited_in_ledger and row is not None and row.value != value:
                report.conflicts.append(_LABELS[key])
        changed, _ = _apply(ledger, session, doc, path, now, skip_settings=keep_ledger, problems={})
        report.updated.extend(label for label in changed if label not in report.conflicts)
    new = state_fmt.render(_updated(ledger, session, doc, path, keep=problems))
    if new == text:
        remember(session, KIND, path, text, now)
        return report, None
    report.written = True
    remember(session, KIND, path, new, now)
    return report, new


def _baseline(last: SyncState | None) -> dict[str, Any] | None:
    """The settings the file held at the last sync (None: no usable record)."""
    if last is None or not last.skeleton or "text" not in last.skeleton:
        return None
    try:
        return state_fmt.settings_from_state(state_fmt.parse(last.skeleton["text"]), {})
    except FileFormatError:
        return None


def _labels_in(text: str) -> set[str]:
    doc = state_fmt.parse(text)
    present = set(state_fmt.settings_from_state(doc)) | set(state_fmt.facts_from_state(doc))
    return {_LABELS[key] for key in present}


IMPORTERS = {KIND: import_state}
RENDERERS = {KIND: render_state}
SYNCERS = {KIND: sync_state}
