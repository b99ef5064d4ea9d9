"""hb recur materialize and hb recur due read TODO.RECUR.md, TODO.md and PROACTIVE.md edited since
the last sync before they decide, as hb heartbeat does (it syncs first): an occurrence fires once
(SPEC.md section 6), and a rule removed from its file fires no more.

They decided from the ledger as of the last sync: a rule deleted from TODO.RECUR.md was
materialised (and the next sync wrote its occurrence into TODO.md), a Next moved on by hand
still fired, and an occurrence mistermorph had materialised itself was materialised again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import TodoKind
from tests.conftest import Runner
from tests.sync.helpers import read, write

RULE = "- [ ] [Next](2026-06-02 09:00), [Repeat](daily), [TZ](UTC) | standup"
HEAD = "# TODO Recurring\n\n"
SYNCED = "2026-06-02T08:00:00Z"
FIRES = "2026-06-02T09:07:00Z"
OCCURRENCE = "2026-06-02 09:00 (UTC) standup"


@pytest.fixture
def ws(hb_db: Runner, workspace: Path) -> Runner:
    """A workspace in UTC whose TODO.RECUR.md holds the standup rule, synced before it is due."""
    hb_db("config", "set", "timezone", "UTC")
    write(workspace / "TODO.RECUR.md", HEAD + RULE + "\n")
    hb_db("sync", HB_NOW=SYNCED)
    return hb_db


def todo_contents(workspace: Path) -> list[str]:
    path = workspace / "TODO.md"
    return [e.content for e in fmt.parse(read(path), TodoKind.TODO).entries] if path.exists() else []


def test_a_rule_deleted_from_the_file_is_not_materialised(ws: Runner, workspace: Path) -> None:
    write(workspace / "TODO.RECUR.md", HEAD)
    out = ws.json("recur", "materialize", HB_NOW=FIRES)
    assert (out["created"], out["advanced"]) == ([], [])
    assert ws.json("recur", "list") == []
    ws("sync", HB_NOW=FIRES)
    assert todo_contents(workspace) == []
    assert read(workspace / "TODO.RECUR.md") == HEAD


def test_a_next_moved_on_by_hand_does_not_fire(ws: Runner, workspace: Path) -> None:
    write(workspace / "TODO.RECUR.md", HEAD + RULE.replace("06-02 09:00", "06-03 09:00") + "\n")
    assert ws.json("recur", "due", HB_NOW=FIRES) == []
    out = ws.json("recur", "materialize", HB_NOW=FIRES)
    assert out["created"] == []
    ws("sync", HB_NOW=FIRES)
    assert todo_contents(workspace) == []
    assert [r["next"] for r in ws.json("recur", "list")] == ["2026-06-03 09:00"]


def test_an_occurrence_mistermorph_materialised_first_is_not_materialised_again(
    ws: Runner, workspace: Path
) -> None:
    """mistermorph's materialize at 09:06 adds the entry on top of TODO.md and moves Next on."""
    write(workspace / "TODO.md", f"- [ ] [Created](2026-06-02 09:06) | {OCCURRENCE}\n")
    write(workspace / "TODO.RECUR.md", HEAD + RULE.replace("06-02 09:00", "06-03 09:00") + "\n")
    out = ws.json("recur", "materialize", HB_NOW=FIRES)
    assert out["created"] == []
    ws("sync", HB_NOW=FIRES)
    assert todo_contents(workspace) == [OCCURRENCE]


def test_auto_export_materialises_once_after_mistermorph(ws: Runner, workspace: Path) -> None:
    ws("config", "set", "sync.auto_export", "true")
    write(workspace / "TODO.md", f"- [ ] [Created](2026-06-02 09:06) | {OCCURRENCE}\n")
    write(workspace / "TODO.RECUR.md", HEAD + RULE.replace("06-02 09:00", "06-03 09:00") + "\n")
    ws("recur", "materialize", HB_NOW=FIRES)
    assert todo_contents(workspace) == [OCCURRENCE]
    ws("sync", HB_NOW=FIRES)
    assert todo_contents(workspace) == [OCCURRENCE]


def test_recur_due_does_not_hand_out_a_deleted_rule(ws: Runner, workspace: Path) -> None:
    assert [r["title"] for r in ws.json("recur", "due", HB_NOW=FIRES)] == ["standup"]
    write(workspace / "TODO.RECUR.md", HEAD)
    assert ws.json("recur", "due", "--claim", HB_NOW=FIRES) == []


def test_an_unedited_file_is_not_synced_again(ws: Runner, workspace: Path) -> None:
    """Only the digests are compared when nothing changed: the files are not written."""
    before = read(workspace / "TODO.RECUR.md")
    assert [r["title"] for r in ws.json("recur", "due", HB_NOW=FIRES)] == ["standup"]
    assert read(workspace / "TODO.RECUR.md") == before
    out = ws.json("recur", "materialize", HB_NOW=FIRES)
    assert [e["title"] for e in out["created"]] == [OCCURRENCE]
    ws("sync", HB_NOW=FIRES)
    assert todo_contents(workspace) == [OCCURRENCE]
