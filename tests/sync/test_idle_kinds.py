"""Idle kinds: a file that does not exist, for a kind the ledger holds nothing of, is left out of
hb sync without loading its module; the statement that decides it must agree with the syncer."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from heartbeat.ops.sync import engine
from heartbeat.ops.sync.files import default_path
from heartbeat.ops.sync.registry import KINDS, holds_sql, syncer
from tests.conftest import Runner
from tests.recur.test_proactive import FILE as PROACTIVE_FILE
from tests.sync.helpers import LINE_JOHN, LINE_MILK, ledger, report, todo_text, write
from tests.sync.test_seal import probe

IDLE_KINDS = [kind for kind in KINDS if holds_sql(kind) is not None]


def holds(workspace: Path, kind: str) -> bool:
    sql = holds_sql(kind)
    assert sql is not None
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    try:
        return con.execute(sql).fetchone() is not None
    finally:
        con.close()


def test_every_kind_but_the_markdown_files_can_be_idle() -> None:
    assert IDLE_KINDS == ["tasks-json", "errors-json", "last-run", "proactive", "state"]


@pytest.mark.parametrize("kind", IDLE_KINDS)
def test_on_an_empty_ledger_each_idle_kinds_syncer_changes_and_writes_nothing(
    hb: Runner, workspace: Path, kind: str
) -> None:
    hb("init")
    assert holds(workspace, kind) is False
    with ledger(workspace) as led, led.ctx.write() as db:
        before = led.ctx.raw.total_changes
        path = default_path(workspace, kind)
        got, out = syncer(kind)(led.ctx, db, path, None, led.now())
        assert out is None
        assert got.changed is False
        db.flush()
        assert led.ctx.raw.total_changes == before  # not a row inserted, updated or deleted


def _queue_task(hb: Runner, workspace: Path) -> None:
    hb("add", "queue job")


def _failed_task(hb: Runner, workspace: Path) -> None:
    task = hb.json("add", "flaky job", "--json")
    hb("pop")
    hb("fail", task["id"], "--reason", "it broke")


def _run_record(hb: Runner, workspace: Path) -> None:
    task = hb.json("add", "quick job", "--json")
    hb("pop")
    hb("complete", task["id"])


def _proactive_rules(hb: Runner, workspace: Path) -> None:
    (workspace / "PROACTIVE.md").write_text(PROACTIVE_FILE, encoding="utf-8")
    hb("sync")


def _conversation(hb: Runner, workspace: Path) -> None:
    hb("seen")


SETUPS: dict[str, Callable[[Runner, Path], None]] = {
    "tasks-json": _queue_task,
    "errors-json": _failed_task,
    "last-run": _run_record,
    "proactive": _proactive_rules,
    "state": _conversation,
}


@pytest.mark.parametrize("kind", IDLE_KINDS)
def test_a_kind_the_ledger_holds_is_not_idle_and_its_missing_file_is_written(
    hb: Runner, workspace: Path, kind: str
) -> None:
    hb("init")
    SETUPS[kind](hb, workspace)
    path = default_path(workspace, kind)
    path.unlink(missing_ok=True)
    assert holds(workspace, kind) is True
    out = hb.json("sync", "--json")
    assert path.exists(), f"hb sync did not write {path.name}"
    assert report(out, kind)["written"] is True


def test_a_todo_only_workspace_is_synced_the_first_time_without_sqlalchemy(
    hb: Runner, workspace: Path
) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN, LINE_MILK))
    hb("init")
    out, loaded = probe(workspace)
    assert loaded is False
    assert len(report(out, "todo")["added"]) == 2
    assert [r["kind"] for r in out["reports"]] == list(KINDS)
    others = [r for r in out["reports"] if r["kind"] not in ("todo", "done")]
    assert all(not r["written"] and not r["added"] for r in others)
    assert sorted(p.name for p in workspace.iterdir() if p.is_file()) == ["TODO.md"]
    assert [t["title"] for t in hb.json("list", "--json")] == [
        "Remind [John](tg:@john) to submit report.",
        "Buy milk | and eggs",
    ]
    again, loaded = probe(workspace)
    assert loaded is False and again["changed"] is False


def test_a_kind_that_stops_being_idle_before_the_transaction_is_synced_after_all(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hb("init")
    hb("add", "queue job")
    # as if the task arrived between the check and the sync's transaction
    monkeypatch.setattr(engine, "_idle_kinds", lambda _ledger: frozenset(IDLE_KINDS))
    with ledger(workspace) as led:
        result = engine.run(led.ctx)
    assert report(result, "tasks-json")["written"] is True
    assert "queue job" in (workspace / ".agent" / "state" / "tasks.json").read_text()


def test_the_state_files_settings_are_the_ones_the_idle_check_looks_for() -> None:
    from heartbeat.formats.state import SETTING_PATHS

    sql = holds_sql("state")
    assert sql is not None
    named = set(re.findall(r"'([a-z_.]+)'", sql.split("UNION ALL")[0]))
    assert named == set(SETTING_PATHS)
