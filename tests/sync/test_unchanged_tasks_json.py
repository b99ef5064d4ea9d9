"""A sync that finds tasks.json and the ledger's tasks both as hb last rendered them reads nothing.

hb keeps, with the text it last rendered, the stamp of the tasks it showed (their count and
versions) and the warnings the text reads with. When the file still holds that text and the
stamp still holds, the three-way sync would find nothing to do: it is skipped, and its warnings
are still reported. Any change on either side takes the whole path again.
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
    "pending": [{"id": f"t{i}", "priority": "low", "description": f"job {i}"} for i in range(4)],
    "in_progress": [],
    "completed": [],
    "failed": [],
    "_round3_extension": {"queue": [{"order": 1, "task_id": "s1", "status": "parked"}]},  # a warning
}


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per reading of a tasks.json text."""
    calls: list[int] = []
    real = tasks_json.parse

    def counted(text: str) -> tasks_json.TasksDocument:
        calls.append(1)
        return real(text)

    monkeypatch.setattr(tasks_json, "parse", counted)
    return calls


@pytest.fixture
def ledger(hb_db: Runner, workspace: Path, db_url: str) -> Iterator[Ledger]:
    dumped_tasks_json(workspace, DOC)
    hb_db("sync")
    with Ledger.open(workspace=workspace, db=db_url) as opened:
        yield opened


def _tasks_report(result: dict[str, object]) -> dict[str, object]:
    reports = result["reports"]
    assert isinstance(reports, list)
    return next(r for r in reports if r["kind"] == "tasks-json")


def test_nothing_changed_nothing_read_and_the_warning_still_told(ledger: Ledger, parses: list[int]) -> None:
    first = _tasks_report(ledger.sync())  # the text as hb last read it: its warnings are learnt
    parses.clear()
    second = _tasks_report(ledger.sync())
    assert parses == []
    assert second["preserved"] == first["preserved"]
    assert any("unknown status 'parked'" in w for w in second["preserved"])  # type: ignore[union-attr]


def test_a_change_in_the_ledger_is_written(ledger: Ledger, workspace: Path, parses: list[int]) -> None:
    ledger.sync()
    ledger.update("t2", title="renamed in the ledger", scope="")
    parses.clear()
    ledger.sync()
    assert parses  # the whole path
    doc = json.loads((workspace / ".agent" / "state" / "tasks.json").read_text())
    assert doc["pending"][2]["description"] == "renamed in the ledger"


def test_a_hand_edit_is_read(ledger: Ledger, workspace: Path) -> None:
    ledger.sync()
    path = workspace / ".agent" / "state" / "tasks.json"
    doc = json.loads(path.read_text())
    doc["pending"][0]["description"] = "edited by hand"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ledger.sync()
    assert ledger.get("t0", scope="")["title"] == "edited by hand"


def test_after_spliced_exports_a_sync_still_reads_nothing(
    hb_db: Runner, workspace: Path, db_url: str, parses: list[int]
) -> None:
    """A text that read without warnings still does after hb splices a moved task into it."""
    clean = {key: value for key, value in DOC.items() if not key.startswith("_")}
    path = dumped_tasks_json(workspace, clean)
    hb_db("config", "set", "sync.auto_export", "true")
    hb_db("sync")
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        ledger.sync()
        for _ in range(3):
            task = ledger.pop(worker="w1")
            assert task is not None
            ledger.complete(task["id"], claim=task["claim"])
        parses.clear()
        report = _tasks_report(ledger.sync())
        assert parses == []
        assert report["preserved"] == []
        assert path.read_text() == ledger.export_text("tasks-json")
