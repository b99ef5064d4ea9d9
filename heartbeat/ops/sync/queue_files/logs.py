"""errors.json and last-run.json, the two logs beside tasks.json: import, render, and the
two-way sync of each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.queue import last_run_of
from heartbeat.db.rows import ErrorRow, RunRow, SyncStateRow
from heartbeat.db.store import Db
from heartbeat.formats import tasks_json
from heartbeat.formats.timestamps import timestamp_or_none
from heartbeat.ops.sync.files import digest, same_place
from heartbeat.ops.sync.queue_files.base import (
    SQL,
    add_notice,
    current_text,
    last_text,
    read_storable,
    remember,
    what_to_write,
)
from heartbeat.ops.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context


def import_errors(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    """Read errors.json; an item the ledger already holds (the same object) is not added twice.

    errors.json is a log: two identical items are two failures, each kept.
    """
    items = read_storable(db, path, text, "errors-json", tasks_json.parse_errors)
    report = ImportReport("errors-json", str(path))
    known = _Items(_shown(e) for e in db.load(ErrorRow, SQL.errors))
    tasks = _legacy_tasks(db)
    fresh = []
    dated: list[tuple[tuple[int], dict[str, Any]]] = []  # the new items, for unread_times
    for index, item in enumerate(map(tasks_json.fix_malformed, items)):
        if item in known:
            known.remove(item)  # each row stands for one item of the file
            report.unchanged += 1
            continue
        fresh.append(_error_row(item, tasks, now))
        report.added.append(f"[{index}]")
        dated.append(((index,), item))
    db.add_all(fresh)
    report.warnings.extend(tasks_json.unread_times(text, dated))
    remember(db, "errors-json", path, text, now)
    return report


def _legacy_tasks(db: Db) -> dict[str, int]:
    """The pks of the legacy lists' tasks, by id."""
    return {task_id: pk for task_id, pk in db.rows(SQL.legacy_task_pks)}


def _error_row(item: dict[str, Any], tasks: Mapping[str, int], now: datetime) -> ErrorRow:
    """An errors.json item as an ``errors`` row (the item itself kept as written), to insert."""
    at = timestamp_or_none(item.get("timestamp")) or now
    task_id = item.get("task_id")
    return ErrorRow(
        task_pk=tasks.get(str(task_id)) if task_id is not None else None,
        task_id=None if task_id is None else str(task_id),
        scope="",
        skill=tasks_json.text_or_none(item.get("assigned_skill")),  # (the item keeps what it holds)
        at=at,
        reason=str(item.get("reason") or "Unknown failure"),
        trace_id=tasks_json.text_or_none(item.get("trace_id")),
        decision_log=item.get("decision_log"),
        resolved=bool(item.get("resolved", False)),
        final=False,
        extra=item,
    )


def _shown(e: ErrorRow) -> dict[str, Any]:
    """The errors.json item of a row as hb writes it: the item it was read from (a malformed
    ``+00:00Z`` time written ``Z``), or heartbeat.py's entry."""
    if e.extra is not None:
        return tasks_json.fix_malformed(e.extra)
    return tasks_json.error_entry(
        timestamp=e.at,
        task_id=e.task_id,
        assigned_skill=e.skill,
        reason=e.reason,
        trace_id=e.trace_id,
        decision_log=e.decision_log,
        resolved=e.resolved,
    )


def render_errors(ctx: Context, db: Db, path: Path | None = None) -> str:
    """errors.json as the ledger has it now, laid over ``path``'s text when that file exists,
    else over the text hb last read or wrote (its layout, ``1e999`` as written), as tasks.json is."""
    source = current_text(path)
    return _errors_text(db, source if source is not None else last_text(db, "errors-json"))


def _errors_text(db: Db, source: str | None) -> str:
    items = [_shown(e) for e in db.load(ErrorRow, SQL.errors)]
    return tasks_json.render_errors(items, source)


def import_last_run(ctx: Context, db: Db, text: str, path: Path, now: datetime) -> ImportReport:
    obj = read_storable(db, path, text, "last-run", tasks_json.parse_last_run)
    report = ImportReport("last-run", str(path))
    if last_run_of(db) == obj:
        report.unchanged = 1
    else:
        at = timestamp_or_none(obj.get("timestamp")) or now
        db.add(
            RunRow(
                kind="import",
                scope=tasks_json.text_or_none(obj.get("scope")),  # (the record keeps what it holds)
                status=str(obj.get("status") or "unknown"),
                started_at=at,
                finished_at=at,
                task_id=None if obj.get("task_id") is None else str(obj.get("task_id")),
                record=obj,
            )
        )
        report.added.append("last-run")
        report.warnings.extend(tasks_json.unread_times(text, [((), obj)]))
    remember(db, "last-run", path, text, now)
    return report


def render_last_run(ctx: Context, db: Db, path: Path | None = None) -> str | None:
    """last-run.json as the ledger has it now, laid over ``path``'s text when that file exists,
    else over the text hb last read or wrote."""
    source = current_text(path)
    return _last_run_text(db, source if source is not None else last_text(db, "last-run"))


def _last_run_text(db: Db, source: str | None) -> str | None:
    latest = last_run_of(db)
    return None if latest is None else tasks_json.render_last_run(latest, source)


_IDENTITY_KEYS = ("timestamp", "task_id", "reason", "trace_id")  # an errors.json item's


def _error_identity(item: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(item.get(k)) for k in _IDENTITY_KEYS)


class _Items:
    """errors.json items as a multiset under Python's equality (what ``in`` and ``remove`` on a
    list of them compared), kept in buckets that equal items share: a log of thousands of
    items is matched in linear time (a list's scans made it quadratic: 14 s at 8,000 items)."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._by: dict[tuple[Any, ...], list[Any]] = {}
        for item in items:
            self._by.setdefault(_bucket(item), []).append(item)

    def __contains__(self, item: Any) -> bool:
        return any(known == item for known in self._by.get(_bucket(item), ()))

    def remove(self, item: Any) -> None:
        """Take out one item equal to ``item`` (ValueError when none is)."""
        bucket = self._by.get(_bucket(item), [])
        bucket.remove(item)


def _bucket(item: Any) -> tuple[Any, ...]:
    """A key that equal items share: their identity fields, numbers by value (1, 1.0 and True
    are equal items), anything else by kind; unequal items may share it."""
    if not isinstance(item, dict):
        return ("", _part(item))
    return tuple(_part(item.get(k)) for k in _IDENTITY_KEYS)


def _part(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):  # bool included: True == 1 == 1.0
        try:
            return float(value)
        except OverflowError:
            return "big"
    return type(value).__name__ if value is not None else None


def sync_errors(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """errors.json is a log: new items in the file are added, an item edited in the file
    (e.g. ``resolved``) updates its row, and the ledger's full list is written back."""
    report = SyncReport(kind="errors-json", path=str(path))
    state = db.get(SyncStateRow, "errors-json")
    if text is not None and (
        state is None or state.content_hash != digest(text) or not same_place(db, state.path, path)
    ):
        read = read_storable(db, path, text, "errors-json", tasks_json.parse_errors)
        items = [tasks_json.fix_malformed(item) for item in read]
        rows = db.load(ErrorRow, SQL.errors)
        shown = {e.pk: _shown(e) for e in rows}
        by_identity: dict[tuple[str, ...], list[ErrorRow]] = {}
        for e in rows:
            by_identity.setdefault(_error_identity(shown[e.pk]), []).append(e)
        known = _Items(shown.values())
        in_file = _Items(items)
        fresh = []
        for index, item in enumerate(items):
            if item in known:
                known.remove(item)
                continue
            same = by_identity.get(_error_identity(item)) or []
            target = next((e for e in same if shown[e.pk] not in in_file), None)
            if target is not None:
                same.remove(target)  # one file item edits one row
                target.extra = item
                target.resolved = bool(item.get("resolved", False))
                shown[target.pk] = item
                report.updated.append(f"[{index}]")
            else:
                fresh.append((index, item))
        tasks = _legacy_tasks(db) if fresh else {}
        db.add_all([_error_row(item, tasks, now) for _index, item in fresh])
        report.added.extend(f"[{index}]" for index, _item in fresh)
        for warning in tasks_json.unread_times(text, [((index,), item) for index, item in fresh]):
            add_notice(ctx, f"{path}: {warning}")  # once, as the item comes in (not a note of the file)
    if text is None and db.value(SQL.any_error) is None:
        return report, None
    return what_to_write(db, "errors-json", path, text, _errors_text(db, text), now, report)


def sync_last_run(
    ctx: Context, db: Db, path: Path, text: str | None, now: datetime
) -> tuple[SyncReport, str | None]:
    """last-run.json: a run record written in the file is imported; the ledger's last one is written."""
    report = SyncReport(kind="last-run", path=str(path))
    state = db.get(SyncStateRow, "last-run")
    if text is not None and (
        state is None or state.content_hash != digest(text) or not same_place(db, state.path, path)
    ):
        imported = import_last_run(ctx, db, text, path, now)
        report.added.extend(imported.added)
        for warning in imported.warnings:
            add_notice(ctx, f"{path}: {warning}")
    out = _last_run_text(db, text)
    if out is None:
        return report, None
    return what_to_write(db, "last-run", path, text, out, now, report)
