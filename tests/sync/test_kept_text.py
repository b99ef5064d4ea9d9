"""The text hb keeps of a file it last read or wrote (the next sync's baseline), compressed when
large: a 20,000-task tasks.json is 4 MB of JSON, written again with every export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat import Ledger
from heartbeat.ops.sync.bookmarks import PACK_FROM, keep, kept_text
from tests.conftest import Runner
from tests.sync.helpers import dumped_tasks_json


def _large_doc() -> dict[str, Any]:
    """A tasks.json of 1,500 legacy tasks: well over PACK_FROM characters."""
    return {
        "pending": [{"id": f"t{i:04d}", "priority": "low", "description": f"tâche {i}"} for i in range(1500)],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }


def _kept(ledger: Ledger) -> tuple[dict[str, Any], str | None, str]:
    """tasks.json's sync_state skeleton, the text it keeps, and the recorded hash."""
    from heartbeat.ops.sync.files import digest

    with ledger.ctx.read() as db:
        skeleton, content_hash = db.rows(
            "SELECT skeleton, content_hash FROM sync_state WHERE kind = 'tasks-json'"
        )[0]
        kept = json.loads(skeleton) if isinstance(skeleton, str) else skeleton
        text = kept_text(kept, db)
    assert text is None or digest(text) == content_hash
    return kept, text, content_hash


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.integers(0, 2))
def test_what_is_kept_is_the_text(text: str, scale: int) -> None:
    text = text * (1 + scale * (PACK_FROM // max(len(text), 1)))  # some beyond PACK_FROM
    skeleton = keep(text)
    assert ("zlib" in skeleton) == (len(text) >= PACK_FROM)
    assert kept_text(json.loads(json.dumps(skeleton))) == text


def test_a_damaged_or_missing_text_is_none_not_an_error() -> None:
    assert kept_text({"zlib": "not base64!"}) is None
    assert kept_text({"zlib": "aGVsbG8="}) is None  # base64, not zlib
    assert kept_text({"rendered": {}}) is None
    assert kept_text(None) is None


def test_a_large_tasks_json_is_kept_compressed_and_still_merges_hand_edits(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    doc = _large_doc()
    path = dumped_tasks_json(workspace, doc)
    assert len(path.read_text()) > PACK_FROM
    hb_db("sync")
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        kept, text, _ = _kept(ledger)
    assert text == path.read_text()
    assert "zlib" in kept and "text" not in kept
    assert len(json.dumps(kept)) < len(path.read_text()) / 4
    # a hand edit against that baseline: one task changed, one deleted, one added
    hb_db("update", "t0003", "--title", "changed in the ledger")  # the ledger's side, another task
    doc["pending"][1]["description"] = "edited by hand"
    del doc["pending"][2]
    doc["pending"].append({"id": "hand", "priority": "low"})
    path.write_text(json.dumps(doc, indent=2) + "\n")
    hb_db("sync")
    assert hb_db.json("show", "t0001")["title"] == "edited by hand"
    assert hb_db("show", "t0002", code=None).exit_code != 0  # deleted in the file: removed
    assert hb_db.json("show", "hand")["status"] == "todo"
    written = json.loads(path.read_text())["pending"]
    assert next(t for t in written if t["id"] == "t0003")["description"] == "changed in the ledger"


@pytest.mark.parametrize("n", [10, 1500])
def test_the_heartbeat_py_drop_in_reads_the_kept_text(hb: Runner, workspace: Path, n: int) -> None:
    """The drop-in compares the files with what hb kept of them, small or compressed."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    doc = {"pending": [{"id": f"t{i}", "priority": "low", "description": "x" * 60} for i in range(n)]}
    (state / "tasks.json").write_text(json.dumps(doc, indent=2))
    hb("sync")
    out = hb("compat", "heartbeat-py", "pop")
    assert json.loads(out.stdout)["id"] == "t0"
    assert hb.json("show", "t0")["status"] == "doing"
    assert [t["id"] for t in json.loads((state / "tasks.json").read_text())["in_progress"]] == ["t0"]


def test_the_same_large_text_remembered_again_is_not_compressed_again(
    hb_db: Runner, workspace: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync that finds tasks.json as hb kept it (the ledger moved elsewhere: a TODO.md entry)
    keeps the stored text as it is."""
    from heartbeat.ops.sync import bookmarks

    doc = {"pending": [{"id": f"t{i:04d}", "priority": "low"} for i in range(3000)], "failed": []}
    path = dumped_tasks_json(workspace, doc)
    assert len(path.read_text()) > PACK_FROM
    hb_db("sync")
    hb_db("sync")  # the warnings of the text hb kept are known from here on
    packed: list[int] = []
    real = bookmarks.keep
    monkeypatch.setattr(bookmarks, "keep", lambda text: packed.append(1) or real(text))
    hb_db("add", "a checklist entry", "--source", "todo")  # the ledger moved: the sync runs
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        result = ledger.sync()
        assert "tasks-json" in [r["kind"] for r in result["reports"]]
        assert packed == []
        assert path.read_text() == ledger.export_text("tasks-json")


def test_auto_exported_pops_keep_a_large_text_as_edits_beside_the_older_one(
    hb_db: Runner, workspace: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a spliced export the baseline is the older text plus the few edits (no compression
    of the whole text, no rewrite of it in the ledger); it reads as the file hb wrote, and after
    EDITS_UP_TO edits it is kept whole again."""
    from heartbeat.ops.sync import bookmarks

    doc = _large_doc()
    path = dumped_tasks_json(workspace, doc)
    hb_db("config", "set", "sync.auto_export", "true")
    hb_db("sync")
    packed: list[int] = []
    real = bookmarks.keep
    monkeypatch.setattr(
        bookmarks, "keep", lambda text: (len(text) >= PACK_FROM and packed.append(1)) or real(text)
    )
    forms = []
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        for _ in range(bookmarks.EDITS_UP_TO // 2 + 3):
            task = ledger.pop(scope="")  # a pop and a completion: two edits each (a cut, an insert)
            assert task is not None
            for step in ("pop", "complete"):
                if step == "complete":
                    ledger.complete(task["id"], scope="", claim=task["claim"])
                kept, text, _ = _kept(ledger)
                assert text == path.read_text()
                forms.append("edits" if "edits" in kept else "whole")
                assert len(kept.get("edits", {}).get("steps", [])) <= bookmarks.EDITS_UP_TO
    # the first export after hb sync renders the file whole; then spliced exports keep edits, and
    # once there are too many the text is kept whole (compressed once) and the next export starts
    # a new list of edits beside it
    assert forms[:2] == ["whole", "edits"]
    assert forms.count("whole") >= 2 and forms[-1] == "edits"
    assert len(packed) == forms.count("whole")
    with Ledger.open(workspace=workspace, db=db_url) as ledger, ledger.ctx.read() as db:
        (row,) = db.rows("SELECT skeleton FROM sync_state WHERE kind = 'tasks-json'")
        assert len(row[0] if isinstance(row[0], str) else json.dumps(row[0])) < 20_000
    # a hand edit against that baseline merges as against any other: one task changed by hand,
    # another in the ledger; neither is lost and nothing is a conflict
    hb_db("update", "t1400", "--title", "changed in the ledger")
    edited = json.loads(path.read_text())
    edited["pending"][5]["description"] = "edited by hand"
    path.write_text(json.dumps(edited, indent=2) + "\n")
    out = hb_db.json("sync")
    assert not [r for r in out["reports"] if r.get("conflicts")]
    assert hb_db.json("show", edited["pending"][5]["id"])["title"] == "edited by hand"
    written = json.loads(path.read_text())["pending"]
    assert next(t for t in written if t["id"] == "t1400")["description"] == "changed in the ledger"


def test_edits_whose_older_text_is_gone_or_another_read_as_none(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    """A baseline that cannot be rebuilt is no baseline (the sync then reads the file as new),
    never a wrong text."""
    from heartbeat.ops.sync import bookmarks

    doc = {"pending": [{"id": f"t{i:04d}", "priority": "low"} for i in range(3000)], "in_progress": []}
    dumped_tasks_json(workspace, doc)
    hb_db("config", "set", "sync.auto_export", "true")
    hb_db("sync")
    hb_db("pop", "--scope", "")  # the first export after hb sync renders the file whole
    hb_db("pop", "--scope", "")  # the next one splices it: the baseline is kept as edits
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        kept, text, _ = _kept(ledger)
        assert "edits" in kept and text is not None
        steps = kept["edits"]["steps"]
        with ledger.ctx.read() as db:
            assert kept_text({"edits": {**kept["edits"], "hash": "0" * 64}}, db) is None
            assert kept_text({"edits": {**kept["edits"], "steps": [[5, 2, "x"]]}}, db) is None
            assert kept_text({"edits": {**kept["edits"], "steps": [[0, 10**9, "x"]]}}, db) is None
            assert kept_text({"edits": {**kept["edits"], "steps": "no"}}, db) is None
            assert kept_text({"edits": {**kept["edits"], "steps": steps}}) is None  # no db to read it from
        with ledger.ctx.write() as db:
            db.execute(
                "DELETE FROM sync_state WHERE kind = :kind", {"kind": bookmarks.base_kind("tasks-json")}
            )
        assert _kept(ledger)[1] is None


def test_a_text_measured_again_gets_its_own_hash_and_size() -> None:
    """The hash of the last large text is reused only for an equal text."""
    import hashlib

    from heartbeat.ops.sync.files import digest, measure

    def expected(text: str) -> tuple[str, int]:
        return hashlib.sha256(text.encode("utf-8")).hexdigest(), len(text.encode("utf-8"))

    big = "é" * PACK_FROM
    same = "".join(["é" * (PACK_FROM // 2)] * 2)  # equal, another object
    last_differs = big[:-1] + "e"  # as long, one character apart
    for text in (big, same, last_differs, big, "small", big):
        assert measure(text) == expected(text)
        assert digest(text) == expected(text)[0]
