"""The first import of tasks.json binds each new task's row in bulk (``fresh_binder``): exactly the
columns and values ``_fresh`` says a new task holds, bound as the ledger stores them; the other
columns keep the table's defaults. On both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heartbeat import Ledger
from heartbeat.db.shape import TASKS
from heartbeat.db.status import TaskStatus
from heartbeat.formats.tasks_json import QueueRecord
from heartbeat.ops.sync.queue_files.tasks import FRESH_COLUMNS, _fresh, fresh_binder

NOW = datetime(2026, 5, 1, 9, 0, 0, 250, tzinfo=UTC)
maybe_text = st.one_of(st.none(), st.sampled_from(["", "deep-research", "p-1", "é"]))
times = st.one_of(st.none(), st.just(datetime(2026, 4, 25, 12, tzinfo=UTC)))
records = st.builds(
    QueueRecord,
    id=st.sampled_from(["t-1", "42", "task-0000001"]),
    scope=st.sampled_from(["", "_round3_extension.q"]),
    status=st.sampled_from(["todo", "doing", "done", "failed"]),
    title=st.sampled_from(["job", ""]),
    priority=st.sampled_from([None, "high", "critical", "urgent"]),
    position=st.integers(0, 5),
    blocked_by=st.one_of(st.none(), st.just("blocked_on_x: translator")),
    fields=st.dictionaries(st.sampled_from(["id", "note", "n"]), st.integers(0, 3) | maybe_text, max_size=3),
    created_at=times,
    completed_at=times,
    skill=maybe_text,
    project_id=maybe_text,
    agent_id=maybe_text,
    user_id=maybe_text,
)


def _bound(db: Any, name: str, value: Any) -> Any:
    """A value of :func:`_fresh` as the ledger binds it (the generic path of a row's columns)."""
    if value is None:
        return None
    if name in TASKS.times:
        return db.time(value)
    if name in TASKS.json:
        return db.json(value)
    if name in TASKS.flags:
        return db.flag(value)
    return value.value if isinstance(value, TaskStatus) else value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=records)
def test_a_new_tasks_bound_row_is_what_fresh_says(db_url: str, workspace: Path, record: QueueRecord) -> None:
    with Ledger.open(workspace, db=db_url) as ledger, ledger.ctx.read() as db:
        got = dict(zip(FRESH_COLUMNS, fresh_binder(db, NOW)(record, 7), strict=True))
        expected = {name: _bound(db, name, value) for name, value in _fresh(record, NOW).items()}
    assert got == {"pk": 7, **expected}


def test_an_imported_task_holds_the_tables_defaults_elsewhere(db_url: str, workspace: Path) -> None:
    doc = {
        "pending": [{"id": "t1", "priority": "high", "description": "job", "project_id": "p"}],
        "in_progress": [{"id": "t2", "description": "busy", "created_at": "2026-04-25T12:00:00Z"}],
        "completed": [],
        "failed": [],
    }
    src = workspace / "seed.json"
    src.write_text(json.dumps(doc))
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        ledger.import_file("tasks-json", src)
        with ledger.ctx.read() as db:
            rows = db.dicts(
                "SELECT id, status, attempts, version, follow_up, risk, due_at, next_action, claim, "
                "idempotency_key, external_key, synced_hash FROM tasks ORDER BY id"
            )
    assert [(r["id"], r["status"], r["attempts"], r["version"], bool(r["follow_up"])) for r in rows] == [
        ("t1", "todo", 0, 1, False),
        ("t2", "doing", 1, 1, False),
    ]
    for row in rows:
        rest = {k: row[k] for k in row if k not in ("id", "status", "attempts", "version", "follow_up")}
        assert set(rest.values()) == {None}, rest


def _doc(records: list[QueueRecord]) -> str:
    """tasks.json holding ``records`` (ids made unique) in the lists of their statuses."""
    lists: dict[str, list[dict[str, Any]]] = {"pending": [], "in_progress": [], "completed": [], "failed": []}
    home = {"todo": "pending", "doing": "in_progress", "done": "completed", "failed": "failed"}
    for n, record in enumerate(records):
        item: dict[str, Any] = {**record.fields, "id": f"{record.id}-{n}", "description": record.title}
        for name in ("priority", "skill", "project_id", "agent_id", "user_id"):
            value = getattr(record, name)
            if value is not None:
                item["assigned_skill" if name == "skill" else name] = value
        if record.created_at is not None:
            item["created_at"] = record.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        lists[home[record.status]].append(item)
    return json.dumps(lists, indent=2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(records, min_size=1, max_size=6))
def test_the_tasks_a_sync_inserts_in_bulk_are_what_it_keeps_in_hand(
    db_url: str, workspace: Path, batch: list[QueueRecord]
) -> None:
    """hb sync inserts the tasks new in tasks.json in bulk and keeps its own copy of each to write
    the file back and make later changes: that copy is the row as stored, column for column."""
    from heartbeat.db.rows import TaskRow
    from heartbeat.ops.sync.queue_files import sync_tasks

    path = workspace / "tasks.json"
    text = _doc(batch)
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger, ledger.ctx.write() as db:
        before = db.value("SELECT COUNT(*) FROM tasks") or 0
        sync_tasks(ledger.ctx, db, path, text, NOW)
        names, rows = next(db.batches("SELECT * FROM tasks ORDER BY pk"))
        stored = db.rows_of(TaskRow, names, rows)
        assert len(stored) == before + len(batch)
        for row in stored:
            kept = db.get(TaskRow, row.pk)  # the sync's own copy, from the transaction's rows
            assert kept is not None and kept is not row
            assert kept.values() == row.values(), row.id
        events = db.rows("SELECT task_pk, task_id, kind, actor FROM task_events ORDER BY pk")
        db.raw.rollback()
    assert [(pk, kind, actor) for pk, _id, kind, actor in events][-len(batch) :] == [
        (row.pk, "created", "sync") for row in stored[-len(batch) :]
    ]


def test_an_import_pauses_the_collector_only_while_it_runs(
    db_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import reads a large file with the cyclic collector paused (heartbeat.bulk): it is on
    again after the import, also after one the file's error stopped, and a caller that had it off
    finds it off."""
    import gc

    from heartbeat.errors import FileFormatError

    good, bad = workspace / "seed.json", workspace / "bad.json"
    good.write_text(json.dumps({"pending": [{"id": "t1", "description": "job"}]}))
    bad.write_text('{"pending": [{"id": "t2"}, {"id": "t2"}]}')
    seen: list[bool] = []
    real = gc.disable

    def disable() -> None:
        seen.append(True)
        real()

    assert gc.isenabled()
    with Ledger.open(workspace, db=db_url, now=NOW) as ledger:
        monkeypatch.setattr(gc, "disable", disable)
        try:
            ledger.import_file("tasks-json", good)
            assert seen and gc.isenabled()
            with pytest.raises(FileFormatError, match="duplicate id 't2'"):
                ledger.import_file("tasks-json", bad)
            assert gc.isenabled()
            real()
            ledger.import_file("tasks-json", good)
            assert not gc.isenabled()
        finally:
            gc.enable()
