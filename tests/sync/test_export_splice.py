"""``sync.auto_export`` after a queue operation: tasks.json rewritten where the moved tasks are.

A pop, completion or failure changes one task; the export after it splices that task's object
into the text hb last rendered (:mod:`heartbeat.formats.tasks_splice`) instead of rendering the
whole file, but only when the file is that text and nothing else in the ledger changed since.
Either way the file must be what a whole render writes, on both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.formats import tasks_json
from tests.conftest import Runner
from tests.sync.helpers import dumped_tasks_json

DOC = {
    "pending": [
        {"id": f"t{i}", "priority": "high" if i % 3 else "low", "description": f"tâche {i}"} for i in range(6)
    ],
    "in_progress": [],
    "completed": [],
    "failed": [],
    "_round3_extension": {
        "queue": [{"order": i, "task_id": f"s{i}", "gh_issue": 400 + i} for i in range(3)],
        "ag_pushed_branches": ["round3/edit"],
    },
}


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times tasks.json was rendered whole (one entry per render)."""
    calls: list[int] = []
    real = tasks_json.render_layout

    def counted(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks_json, "render_layout", counted)
    return calls


@pytest.fixture
def ledger(hb_db: Runner, workspace: Path, db_url: str) -> Iterator[Ledger]:
    hb_db("config", "set", "sync.auto_export", "true")
    dumped_tasks_json(workspace, DOC)
    hb_db("sync")
    with Ledger.open(workspace=workspace, db=db_url) as opened:
        yield opened


def _file(workspace: Path) -> str:
    return (workspace / ".agent" / "state" / "tasks.json").read_text()


def test_each_export_writes_what_a_whole_render_writes(
    ledger: Ledger, workspace: Path, renders: list[int]
) -> None:
    steps = [
        lambda: ledger.pop(scope="", worker="w1"),
        lambda: ledger.pop(scope="", worker="w1"),
        lambda: ledger.complete("t1", scope=""),
        lambda: ledger.fail("t2", scope="", reason="flaky", final=True),
        lambda: ledger.pop(scope="_round3_extension.queue", worker="w2"),
        lambda: ledger.complete("s0", scope="_round3_extension.queue"),
        lambda: ledger.pop(scope="", worker="w1"),
        lambda: ledger.pop(scope="", worker="w1"),
    ]
    whole = []
    for step in steps:
        renders.clear()
        step()
        whole.append(len(renders))
        assert _file(workspace) == ledger.export_text("tasks-json")
    # the first export renders the file the sync read whole (the sync found nothing to change,
    # so it never laid it out itself); every later one splices
    assert whole == [1] + [0] * (len(steps) - 1)
    doc = json.loads(_file(workspace))
    assert [t["id"] for t in doc["in_progress"]] == ["t4", "t5"]  # in the order they were popped
    assert [t["id"] for t in doc["completed"]] == ["t1"]
    assert [t["id"] for t in doc["failed"]] == ["t2"]
    assert doc["_round3_extension"]["queue"][0]["status"] == "completed"
    assert "t\\u00e2che 0" in _file(workspace)  # the file's own escapes (json.dumps's ASCII mode)


def test_a_change_the_export_was_not_told_of_is_rendered_whole(
    ledger: Ledger, workspace: Path, renders: list[int]
) -> None:
    """A task added since hb rendered the file (hb add does not export): the pop's export cannot
    splice, it renders all, and the new task is in the file."""
    ledger.pop(scope="", worker="w1")  # spliced
    ledger.add("added by hand", task_id="late")
    renders.clear()
    ledger.pop(scope="", worker="w1")
    assert renders  # rendered whole
    assert _file(workspace) == ledger.export_text("tasks-json")
    assert "late" in [t["id"] for t in json.loads(_file(workspace))["pending"]]


def test_a_task_returned_to_pending_is_rendered_whole(
    ledger: Ledger, workspace: Path, renders: list[int]
) -> None:
    popped = ledger.pop(scope="", worker="w1")
    assert popped is not None
    renders.clear()
    ledger.fail(popped["id"], scope="", reason="retry me")  # back in pending
    assert renders  # only a whole render knows where the queue's order puts the rest
    pending = [t["id"] for t in json.loads(_file(workspace))["pending"]]
    assert pending[0] == popped["id"]  # high, and first in the queue's order: the next pop's
    assert _file(workspace) == ledger.export_text("tasks-json")


def test_a_file_edited_since_is_synced_not_spliced(ledger: Ledger, workspace: Path) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    ledger.pop(scope="", worker="w1")
    doc = json.loads(path.read_text())
    doc["pending"].append({"id": "hand", "priority": "low"})
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ledger.pop(scope="", worker="w1")
    ids = [t["id"] for t in json.loads(path.read_text())["pending"]]
    assert "hand" in ids
    assert _file(workspace) == ledger.export_text("tasks-json")


def test_a_change_by_another_connection_between_two_pops_is_rendered(
    ledger: Ledger, workspace: Path, db_url: str, renders: list[int]
) -> None:
    """Between two pops of one long-lived ledger, another process (its own connection) renames a
    task: the second pop's export must not take the ledger for unchanged since the first (on
    SQLite it knows so without counting the tasks only when no other connection committed)."""
    ledger.pop(scope="", worker="w1")
    ledger.pop(scope="", worker="w1")  # two spliced exports: the ledger's own changes, known
    with Ledger.open(workspace=workspace, db=db_url) as other:
        other.update("t0", scope="", title="renamed elsewhere")
    renders.clear()
    ledger.pop(scope="", worker="w1")
    assert renders  # rendered whole: something besides the pop changed
    assert _file(workspace) == ledger.export_text("tasks-json")
    assert "renamed elsewhere" in _file(workspace)
    ledger.complete("t4", scope="")  # and the exports after it splice again
    assert _file(workspace) == ledger.export_text("tasks-json")


def test_a_new_priority_moves_the_task_where_the_next_pop_takes_it(ledger: Ledger, workspace: Path) -> None:
    """heartbeat.py pops pending[0]: a pending task raised to critical is written first, as
    hb pop would take it, not rewritten where it stood."""
    ledger.pop(scope="", worker="w1")
    ledger.update("t3", scope="", priority="critical")
    ledger.pop(scope="", worker="w1")  # the export after this pop writes the file
    assert [t["id"] for t in json.loads(_file(workspace))["in_progress"]][-1] == "t3"
    ledger.update("t0", scope="", priority="critical")
    ledger.fail("t3", scope="", reason="again")  # rendered whole: t0 and t3 both critical
    pending = [t["id"] for t in json.loads(_file(workspace))["pending"]]
    assert pending[:2] == ["t0", "t3"]
    assert _file(workspace) == ledger.export_text("tasks-json")
