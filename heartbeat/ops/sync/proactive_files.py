"""PROACTIVE.md <-> the ledger (FORMATS.md section 3).

Each task of the task section, as CraftBot's parser reads it, is a
``recurrences`` row (source ``proactive``, ``id`` = the yaml id, ``extra`` = the
yaml fields as last read from or written to the file). The file defines the
tasks; the ledger adds what happened since: outcomes recorded with ``hb recur
outcome`` (written as CraftBot's manager writes them: run_count + 1,
outcome_history with the last five kept, ``last_run`` and ``next_run``) and ``hb
recur update --enable/--disable``. A ``last_run`` in the file (CraftBot ran the
task) newer than the ledger's becomes the row's last run, so hb does not hand
the task out again in that period (also one a little ahead of hb's clock, in
the same period as now).

A block that stops being a task CraftBot runs (bad YAML, a schedule it never
runs or fails on) while its id is still in the file keeps its row, dormant: hb
does not hand it out until the block reads again, as CraftBot does not run it.

Writing always starts from the file's current text, never from a copy: only
the blocks of tasks the ledger changed are re-rendered, so prose, comments,
unknown keys and malformed blocks come back byte-identical. Ledger changes are
found per row against ``extra`` (the file's version): ``run_count`` above the
file's means that many outcomes are not in the file yet. Merging is idempotent:
an outcome already in the file's history is never added twice, so exporting
twice (or to stdout) does not repeat it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from heartbeat.db.rows import OutcomeRow, RecurrenceRow, SyncStateRow
from heartbeat.db.store import Db, statements
from heartbeat.errors import FileFormatError, InvalidInput, NotFound
from heartbeat.formats import proactive
from heartbeat.formats.proactive import MAX_OUTCOMES, ProactiveDocument, ProactiveTask, record_outcome
from heartbeat.formats.timestamps import format_timestamp
from heartbeat.ops.recur import DORMANT_KEY, dormant_reason
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import default_path, other_file, read_text
from heartbeat.ops.sync.queue_files import remember
from heartbeat.ops.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context

    pass

KIND = "proactive"
SOURCE = "proactive"
SQL = statements("proactive_files")
RECUR_SQL = statements("recur")


# --- reading the file ------------------------------------------------------------------------


def _rows(db: Db) -> dict[str, RecurrenceRow]:
    return {row.id: row for row in db.load(RecurrenceRow, RECUR_SQL.list, {"source": SOURCE})}


def _jsonable(value: Any) -> Any:
    """YAML values as JSON can hold them (dates become ISO text, odd floats text)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return format_timestamp(value) if value.tzinfo is not None else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# --- what the ledger changed since the file was read -------------------------------------------


def _file_run_count(row: RecurrenceRow) -> int:
    """The file's run_count as the ledger's own count was read from it (so that a count hb cannot
    hold, read as 0, leaves every run recorded since to be written)."""
    return proactive.held_run_count((row.extra or {}).get("run_count"))


def _file_enabled(row: RecurrenceRow) -> bool:
    return bool((row.extra or {}).get("enabled", True))  # as CraftBot (and formats.proactive) reads it


def _file_fields(task: ProactiveTask) -> dict[str, Any]:
    """The task's yaml fields as the row keeps them (never the row's own dormant mark)."""
    return {key: value for key, value in _jsonable(task.fields).items() if key != DORMANT_KEY}


def _aware(when: datetime | None, zone: ZoneInfo) -> datetime | None:
    """A time from the file as an instant: a naive one (CraftBot writes its local time) in ``zone``."""
    if when is None:
        return None
    if when.tzinfo is None or when.utcoffset() is None:
        from heartbeat.rules.recurrence import resolve_local

        return resolve_local(when.replace(tzinfo=None), zone)
    return when.astimezone(UTC)


def _ran(task: ProactiveTask, zone: ZoneInfo, now: datetime) -> datetime | None:
    """The file's ``last_run`` as a run that happened: None when there is none, or when it is
    later than ``now`` in a later period (a clock ahead, a hand edit): CraftBot's manager compares
    its date with today's, so it runs such a task, and the run hb then records replaces the stamp.
    One later than ``now`` in the same period (CraftBot's clock a little ahead of hb's) is this
    period's run, as CraftBot does not run the task again in it."""
    ran = _aware(task.last_run, zone)
    if ran is None or task.last_run is None:
        return None
    return ran if ran <= now or _same_period(task, task.last_run, ran, now.astimezone(zone)) else None


def _same_period(task: ProactiveTask, written: datetime, ran: datetime, now_local: datetime) -> bool:
    """Whether CraftBot's should_run takes a ``last_run`` written as ``written`` (read as the instant
    ``ran``) for a run in the period of its local ``now_local``: it compares the stamp's own date,
    ISO week number and calendar year, or month, as written, with its local now's. Hourly tasks it
    runs at every tick; hb's period is the clock hour."""
    if task.frequency == "daily":
        return written.date() == now_local.date()
    if task.frequency == "weekly":
        return written.isocalendar()[1] == now_local.isocalendar()[1] and written.year == now_local.year
    if task.frequency == "monthly":
        return (written.year, written.month) == (now_local.year, now_local.month)
    if task.frequency == "hourly":
        from heartbeat.rules.recurrence import Frequency, period_key

        local = ran.astimezone(now_local.tzinfo)
        return period_key(Frequency.HOURLY, local) == period_key(Frequency.HOURLY, now_local)
    return False


def _next_run(task: ProactiveTask, last_run: datetime, recorded: datetime) -> datetime | None:
    """When hb next hands out a task whose last run (``last_run``, local) was recorded at
    ``recorded``: the opening of the first later period whose time window is still to come, or
    still open, at ``recorded`` (an outcome recorded late, after the next window closed, skips it
    as hb's ``recur due`` does)."""
    from heartbeat.rules.recurrence import Frequency, due_period, next_due, outcome_period

    time, day = task.time, task.day
    try:
        freq = Frequency(task.frequency)
        upcoming = next_due(freq, time=time, day=day, last_run=last_run)
        at = recorded.astimezone(last_run.tzinfo)
        used = outcome_period(freq, time=time, day=day, when_local=last_run)
        open_then = due_period(freq, time=time, day=day, last_period=used, now_local=at)
        while upcoming < at and outcome_period(freq, time=time, day=day, when_local=upcoming) != open_then:
            upcoming = next_due(freq, time=time, day=day, last_run=upcoming)
    except (ValueError, InvalidInput):
        return None
    return upcoming


def _run_stamp(task: ProactiveTask, outcome: OutcomeRow, zone: ZoneInfo) -> datetime:
    """The ``last_run`` to write for ``outcome``, in ``zone``: a time inside the period it used up.

    That is the period it was handed out for (an outcome answering a hand-out) or the one it falls
    in (see ``ops.recur.outcome``), and CraftBot's manager reads the period from ``last_run``'s own
    date, ISO week and month. So: its completion when that falls in the period; else (an outcome
    recorded after the period ended, "just past midnight") the hand-out time; else (handed out as
    a window that opened late the day before closed past midnight) the period's last second.
    Written as the completion, CraftBot would take the run for the next period's and skip that.
    """
    from heartbeat.rules.recurrence import Frequency, outcome_period, period_key, resolve_local

    done = outcome.completed_at.astimezone(zone)
    handed = outcome.claimed_at.astimezone(zone) if outcome.claimed_at is not None else None
    try:
        freq = Frequency(task.frequency)
        used = outcome_period(freq, time=task.time, day=task.day, when_local=handed or done)
    except (ValueError, InvalidInput):
        return done
    for when in (done, handed):
        if when is not None and period_key(freq, when) == used:
            return when
    midnight = resolve_local(datetime.combine((handed or done).date(), datetime.min.time()), zone)
    return (midnight - timedelta(seconds=1)).astimezone(zone)


def _entry_key(entry: Mapping[str, Any]) -> tuple[str, str, bool]:
    stamp = entry.get("timestamp")
    if isinstance(stamp, datetime):
        stamp = format_timestamp(stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
    return (str(stamp), str(entry.get("result")), entry.get("success") is True)


def _outcome_text(outcome: OutcomeRow) -> str:
    result = outcome.result
    if isinstance(result, Mapping) and "result" in result:
        return str(result["result"])
    return "" if result is None else str(result)


def _with_outcomes(
    task: ProactiveTask, unwritten: int, outcomes: Sequence[OutcomeRow], zone: ZoneInfo, now: datetime
) -> ProactiveTask:
    """``task`` with the ledger's newest ``unwritten`` outcomes added (``outcomes``: the last of them).

    Outcomes already in the file's history (an earlier export wrote them) are
    not added again, and neither are the ones before them. ``last_run`` becomes
    the newest run (the file's own when CraftBot ran it later, but not one later than ``now``),
    in ``zone``, stamped inside the period the run used up (:func:`_run_stamp`).
    """
    in_file = {_entry_key(entry) for entry in task.outcome_history}
    keys = [(format_timestamp(o.completed_at), _outcome_text(o), o.success) for o in outcomes]
    written = max((i for i, key in enumerate(keys) if key in in_file), default=-1)
    if written >= 0:
        unwritten = len(outcomes) - written - 1
    for outcome in outcomes[written + 1 :]:
        local = _run_stamp(task, outcome, zone)
        before = _ran(task, zone, now)
        if before is not None and before > local:
            local = before.astimezone(zone)
        task = record_outcome(
            task,
            result=_outcome_text(outcome),
            success=outcome.success,
            now=outcome.completed_at,
            last_run=local,
            next_run=_next_run(task, local, outcome.completed_at),
            zone=zone,
        )
    surplus = unwritten - (len(outcomes) - written - 1)  # runs older than the five kept
    if surplus > 0:
        count = proactive.counted_in_file(task) + surplus
        fields = {**task.fields, "run_count": count}
        task = replace(task, run_count=proactive.held_run_count(count), fields=fields)
    return task


def _older_than_written(task: ProactiveTask, row: RecurrenceRow) -> bool:
    """Whether the file's block ``task`` is older than the one hb last wrote (``row.extra``): a
    lower run count, and an outcome hb wrote missing from its history. CraftBot's manager reads
    the file once, when it starts, and writes its whole copy from memory at each save (a run of any
    task), so its save drops the runs hb wrote in the meantime; it never lowers a count itself.
    A count lowered by hand, the outcomes kept, is the file's word."""
    written = row.extra or {}
    if task.run_count >= _file_run_count(row):
        return False
    history = written.get("outcome_history")
    if not isinstance(history, list):
        return False
    have = {_entry_key(entry) for entry in task.outcome_history}
    return any(isinstance(entry, Mapping) and _entry_key(entry) not in have for entry in history)


def merged_task(
    db: Db, task: ProactiveTask, row: RecurrenceRow | None, zone: ZoneInfo, now: datetime
) -> ProactiveTask:
    """The file's ``task`` with what changed in the ledger since the file was read (times
    written in ``zone``, the workspace's, which is CraftBot's local time)."""
    if row is None:
        return task
    if row.enabled != _file_enabled(row):
        task = replace(task, enabled=row.enabled, fields={**task.fields, "enabled": row.enabled})
    in_file = _file_run_count(row)
    if _older_than_written(task, row):
        in_file = task.run_count  # the runs hb wrote since are written again, not undone
    unwritten = row.run_count - in_file
    if unwritten > 0:
        newest = db.load(
            OutcomeRow, SQL.newest_outcomes, {"recurrence_pk": row.pk, "limit": min(unwritten, MAX_OUTCOMES)}
        )
        task = _with_outcomes(task, unwritten, list(reversed(newest)), zone, now)
    return task


def _task_from_row(row: RecurrenceRow) -> ProactiveTask:
    """The task as the file last had it (for a file that has to be written from the ledger)."""
    fields = {key: value for key, value in (row.extra or {}).items() if key != DORMANT_KEY}
    history = fields.get("outcome_history")
    return ProactiveTask(
        id=row.id,
        name=row.title,
        frequency=row.rule,
        time=row.time_of_day,
        day=row.day,
        enabled=_file_enabled(row),
        priority=row.priority if row.priority is not None else proactive.DEFAULT_PRIORITY,
        permission_tier=row.permission_tier if row.permission_tier is not None else proactive.DEFAULT_TIER,
        conditions=tuple(str(c) for c in row.conditions or ()),
        instruction=row.instruction or "",
        run_count=_file_run_count(row),
        outcome_history=tuple(h for h in history if isinstance(h, dict)) if isinstance(history, list) else (),
        fields=fields,
    )


# --- the file -> the ledger ----------------------------------------------------------------------


def _columns(task: ProactiveTask, position: int) -> dict[str, Any]:
    return {
        "title": task.name or task.id,
        "rule": task.frequency,
        "time_of_day": task.time,
        "day": task.day,
        "enabled": task.enabled,
        "priority": task.priority,
        "permission_tier": task.permission_tier,
        "conditions": list(task.conditions),
        "instruction": task.instruction or None,
        "run_count": task.run_count,
        "position": position,
    }


def _still_in_file(text: str, task_id: str) -> bool:
    """A task whose block became unreadable is still there: its row is kept."""
    pattern = rf"^[ \t]*id[ \t]*:[ \t]*[\"']?{re.escape(task_id)}[\"']?[ \t]*(?:#.*)?$"
    return re.search(pattern, text, re.MULTILINE) is not None


def _not_a_task(doc: ProactiveDocument, text: str, task_id: str) -> str | None:
    """Why the block of ``task_id`` is no task now, when it is still in the file (None: it is gone)."""
    for warning in doc.warnings:
        if warning.task_id == task_id:
            return f"line {warning.line}: {warning.reason}"
    if _still_in_file(text, task_id):
        return "its block in PROACTIVE.md is no task CraftBot reads (see the warnings of hb sync)"
    return None


@dataclass
class _Changes:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def _reconcile(
    db: Db,
    doc: ProactiveDocument,
    text: str,
    path: Path,
    now: datetime,
    zone: ZoneInfo,
    *,
    written: bool,
) -> tuple[list[ProactiveTask], _Changes]:
    """Bring the rows in line with the file's tasks; returns the tasks as they should be written.

    ``written``: the merged tasks are about to be written to the file, so they
    become the rows' file version; otherwise the file as read is.
    """
    rows = _rows(db)
    changes = _Changes()
    merged: list[ProactiveTask] = []
    for position, task in enumerate(doc.tasks):
        row = rows.pop(task.id, None)
        if row is None:
            clash = db.first(RecurrenceRow, RECUR_SQL.find, {"id": task.id})
            if clash is not None:
                raise InvalidInput(
                    f"{path}:{task.line}: task id {task.id!r} is already a {clash.source} recurrence"
                )
            row = RecurrenceRow(
                id=task.id,
                source=SOURCE,
                missed_policy="once",
                created_at=now,
                updated_at=now,
                **_columns(task, position),
                extra=_file_fields(task),
                last_run_at=_ran(task, zone, now),
            )
            db.add(row)
            changes.added.append(task.id)
            merged.append(task)
            continue
        wanted = merged_task(db, task, row, zone, now)
        values = _columns(wanted, position)
        extra = _file_fields(wanted if written else task)
        changed = [name for name, value in values.items() if getattr(row, name) != value]
        for name in changed:
            setattr(row, name, values[name])
        ran = _ran(task, zone, now)
        if ran is not None and (row.last_run_at is None or ran > row.last_run_at):
            row.last_run_at = ran  # CraftBot ran it (its manager wrote last_run)
            changed.append("last_run_at")
        if dormant_reason(row) is not None:
            changed.append("dormant")  # its block reads again
        if changed and changed != ["position"]:
            row.updated_at = now
            changes.updated.append(task.id)
        elif written and wanted != task:
            changes.updated.append(task.id)  # the file gets the ledger's changes
        else:
            changes.unchanged += 1
        row.extra = extra
        merged.append(wanted)
    for row in rows.values():
        reason = _not_a_task(doc, text, row.id)
        if reason is None:
            db.delete(row)  # its outcomes stay, unlinked
            changes.removed.append(row.id)
        elif dormant_reason(row) != reason:
            row.extra = {**(row.extra or {}), DORMANT_KEY: reason}  # not handed out meanwhile
    db.flush()
    return merged, changes


def _parse(text: str, path: Path) -> ProactiveDocument:
    """PROACTIVE.md as read; a file hb refuses to load (an alias bomb) or to store (a NUL in a
    task's text: :func:`heartbeat.formats.proactive.refuse_nul`) names ``path``."""
    try:
        doc = proactive.parse(text)
        proactive.refuse_nul(doc)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None
    return doc


def _warnings(doc: ProactiveDocument) -> list[str]:
    return [f"line {w.line}: {w.reason}" for w in doc.warnings]


def import_proactive(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    """``hb import proactive``: the file's tasks become the ledger's (outcomes not yet written are kept)."""
    doc = _parse(text, path)
    _, changes = _reconcile(db, doc, text, path, now, ctx.zone, written=False)
    report = ImportReport(
        KIND,
        str(path),
        added=changes.added,
        updated=changes.updated,
        removed=changes.removed,
        unchanged=changes.unchanged,
        warnings=_warnings(doc),
    )
    remember(db, KIND, path, text, now)
    return report


# --- the ledger -> the file ----------------------------------------------------------------------


def _last_synced_text(db: Db) -> str:
    row = db.get(SyncStateRow, KIND)
    kept = bookmarks.kept_text(row.skeleton) if row is not None else None
    return kept if kept is not None else ""


def _from_ledger(
    db: Db, doc: ProactiveDocument, rows: Mapping[str, RecurrenceRow], zone: ZoneInfo, now: datetime
) -> list[ProactiveTask]:
    """Every row's task, for a file that no longer exists: the last synced text plus the ledger
    (a dormant row's block is in that text as it was, so it is not written twice)."""
    present = {task.id: task for task in doc.tasks}
    return [
        merged_task(db, present.get(row.id) or _task_from_row(row), row, zone, now)
        for row in rows.values()
        if row.id in present or dormant_reason(row) is None
    ]


def render_proactive(ctx: Context, db: Db, path: Path | None = None) -> str | None:
    """PROACTIVE.md as it should be now: the current text of the file at ``path`` (default: the
    workspace's) with the ledger's changes."""
    workspace_file = default_path(ctx.workspace, KIND)
    path = other_file(path, workspace_file) or workspace_file  # a new file: a copy of the workspace's
    rows = _rows(db)
    now = ctx.now()
    try:
        text = read_text(path)
    except NotFound:
        if not rows:
            return None
        doc = proactive.parse(_last_synced_text(db) or "")
        tasks = _from_ledger(db, doc, rows, ctx.zone, now)
    else:
        doc = _parse(text, path)
        tasks = [merged_task(db, task, rows.get(task.id), ctx.zone, now) for task in doc.tasks]
    return proactive.render(proactive.with_tasks(doc, tasks, now=now))


def sync_proactive(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """One ``hb sync`` step: file edits into the ledger, the ledger's outcomes into the file.

    A deleted PROACTIVE.md with tasks in the ledger is written back (from the
    last synced text), so nothing is lost.
    """
    report = SyncReport(KIND, str(path))
    if text is None:
        rows = _rows(db)
        if not rows:
            return report, None
        doc = proactive.parse(_last_synced_text(db) or "")
        tasks = _from_ledger(db, doc, rows, ctx.zone, now)
        for task in tasks:
            rows[task.id].extra = _file_fields(task)
        report.added = list(rows)
        report.written = True
        out = proactive.render(proactive.with_tasks(doc, tasks, now=now))
        remember(db, KIND, path, out, now)
        return report, out
    doc = _parse(text, path)
    merged, changes = _reconcile(db, doc, text, path, now, ctx.zone, written=True)
    report.added = changes.added
    report.updated = changes.updated
    report.removed = changes.removed
    report.preserved = [f"{path}:{w.line}: {w.reason}" for w in doc.warnings]
    out = proactive.render(proactive.with_tasks(doc, merged, now=now))
    remember(db, KIND, path, out, now)
    if out == text:
        return report, None
    report.written = True
    return report, out


def rebase_proactive(db: Db, text: str) -> None:
    """The file was found to be a copy made from ``text`` (a runtime's save racing hb's write,
    see :mod:`heartbeat.ops.sync.writeback`): each row's file version becomes its task's in
    ``text``, so the sync that follows reads only what the copy changed in it, and the runs hb
    wrote since (``run_count``, the outcomes) are written again rather than undone."""
    try:
        doc = proactive.parse(text)
    except FileFormatError:
        return
    rows = _rows(db)
    for task in doc.tasks:
        row = rows.get(task.id)
        if row is not None and DORMANT_KEY not in (row.extra or {}):
            row.extra = _file_fields(task)


IMPORTERS = {KIND: import_proactive}
RENDERERS = {KIND: render_proactive}
SYNCERS = {KIND: sync_proactive}
REBASERS = {KIND: rebase_proactive}
