"""The seal: a sync with nothing to do is answered without loading SQLAlchemy; any change breaks it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner
from tests.sync.helpers import LINE_JOHN, LINE_MILK, LINE_TYPO, read, report, todo_text, write

PROBE = (
    "import sys, json\n"
    "from heartbeat.cli.main import main\n"
    "try:\n    main(['sync', '--json'])\nexcept SystemExit:\n    pass\n"
    "print(json.dumps({'sqlalchemy': 'sqlalchemy' in sys.modules}))\n"
)


def titles(hb: Runner) -> str:
    return "\n".join(t["title"] for t in hb.json("list"))


def probe(workspace: Path, version: str | None = None) -> tuple[dict[str, Any], bool]:
    """hb sync --json in a new interpreter (as hb ``version``, when given); its report, and
    whether it loaded SQLAlchemy."""
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "HB_NOW": "2026-05-03T10:00:00Z"}
    env.pop("HB_DATABASE_URL", None)
    code = PROBE if version is None else f"import heartbeat\nheartbeat.__version__ = {version!r}\n{PROBE}"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    *report_lines, last = done.stdout.strip().splitlines()
    return json.loads("\n".join(report_lines)), json.loads(last)["sqlalchemy"]


def test_a_sync_with_nothing_to_do_does_not_load_sqlalchemy(hb: Runner, workspace: Path) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN, LINE_MILK, LINE_TYPO))
    hb("sync")
    out, loaded = probe(workspace)
    assert loaded is False
    assert out["changed"] is False
    assert report(out, "todo")["preserved"] == [
        f"{workspace / 'TODO.md'}:11: bad timestamp '2026-05-0 13:00' in Created"
    ]
    write(workspace / "TODO.md", read(workspace / "TODO.md").replace("Buy milk", "Buy bread"))
    out, loaded = probe(workspace)  # only a TODO file moved: synced on plain SQL
    assert loaded is False and len(report(out, "todo")["updated"]) == 1
    assert "Buy bread" in titles(hb) and "Buy milk" not in titles(hb)
    again, loaded = probe(workspace)
    assert loaded is False and again["changed"] is False  # sealed again


def test_a_changed_tasks_json_is_synced_without_sqlalchemy(hb: Runner, workspace: Path) -> None:
    hb("add", "queue job")
    hb("sync")
    tasks_json = workspace / ".agent" / "state" / "tasks.json"
    tasks_json.write_text(tasks_json.read_text().replace("queue job", "queue job, edited"))
    out, loaded = probe(workspace)
    assert loaded is False and len(report(out, "tasks-json")["updated"]) == 1
    assert probe(workspace)[1] is False


def test_the_copy_of_the_last_synced_text_is_only_a_cache(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN, LINE_MILK))
    hb("sync")
    base = workspace / ".agent" / "state" / "sync" / "todo.base"
    assert base.read_text() == read(todo)
    write(todo, read(todo).replace("Buy milk", "Buy bread"))
    hb("sync", "--dry-run")
    assert "Buy milk" in base.read_text()  # a dry run writes nothing, not even the copy
    base.write_text(read(todo).replace("Remind", "Something else"))  # a copy gone wrong
    out, loaded = probe(workspace)
    assert loaded is False and len(report(out, "todo")["updated"]) == 1
    assert "Buy bread" in titles(hb) and "Remind [John]" in titles(hb)
    assert base.read_text() == read(todo)
    base.unlink()
    write(todo, read(todo).replace("Buy bread", "Buy cheese"))
    out, _ = probe(workspace)
    assert len(report(out, "todo")["updated"]) == 1
    assert "Buy cheese" in titles(hb) and "Remind [John]" in titles(hb)


def test_rewriting_a_file_with_the_same_bytes_keeps_the_seal(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("sync")
    write(todo, read(todo))
    assert probe(workspace)[1] is False


def sealed(workspace: Path) -> bool:
    """Whether the next hb sync would be answered by the seal (nothing moved since the last one)."""
    from heartbeat import Ledger
    from heartbeat.ops.sync import engine

    with Ledger.open(workspace=workspace) as led:
        seal = engine._check_seal(led)
        return seal is not None and not seal.changed


def test_ledger_changes_break_the_seal(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("sync")
    assert sealed(workspace)
    [john] = hb.json("list")
    hb("update", john["id"], "--note", "not in the file")  # a version bump the file does not show
    assert not sealed(workspace)
    out, loaded = probe(workspace)  # the TODO files' full sync, still on plain SQL
    assert loaded is False and out["changed"] is False
    assert sealed(workspace)
    hb("config", "set", "todo.dialect", "extended")
    assert not sealed(workspace)
    probe(workspace)
    assert sealed(workspace)
    hb("add", "queue job")
    assert not sealed(workspace)
    out, loaded = probe(workspace)  # tasks.json has something to show: its syncer runs
    assert loaded is False and report(out, "tasks-json")["written"] is True
    assert sealed(workspace)


def test_only_and_dry_run_never_use_or_write_the_seal(hb: Runner, workspace: Path) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("sync", "--dry-run")
    hb("sync", "--only", "todo")
    assert not sealed(workspace)  # no full sync yet: nothing was sealed
    probe(workspace)
    assert sealed(workspace)


def test_a_title_the_file_cannot_hold_is_reported_and_the_line_kept(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("sync")
    [john] = hb.json("list")
    refused = hb("update", john["id"], "--title", "Remind John <!-- later", code=1)
    assert refused.stderr.startswith(f"hb: {john['id']}: cannot be a TODO.md entry: ")
    hb("update", john["id"], "--title", "Remind John\nlater", code=1)
    assert hb.json("show", john["id"])["title"] == "Remind [John](tg:@john) to submit report."
    # a title set behind hb's back is still never written into the file
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    with con:
        con.execute(
            "UPDATE tasks SET title = 'Remind John <!-- later', version = version + 1 WHERE id = ?",
            (john["id"],),
        )
    con.close()
    for _ in range(2):
        out = json.loads(hb("sync", "--json").stdout)
        [message] = report(out, "todo")["preserved"]
        assert message.startswith(f"{todo}:9: {john['id']} not rewritten: ") and "HTML comment" in message
        assert report(out, "todo")["updated"] == [] and LINE_JOHN in read(todo)
    hb("update", john["id"], "--title", "Remind John later")
    out = json.loads(hb("sync", "--json").stdout)
    assert report(out, "todo")["updated"] == [john["id"]]
    assert "| Remind John later\n" in read(todo)


PARTIAL_PROBE = (
    "import sys, json\n"
    "from heartbeat.cli.main import main\n"
    "try:\n    main(['sync', '--json'])\nexcept SystemExit:\n    pass\n"
    "print(json.dumps({'queue_files': 'heartbeat.ops.sync.queue_files' in sys.modules}))\n"
)


def test_only_the_kinds_whose_file_changed_are_synced(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("add", "queue job")
    hb("sync")
    write(todo, todo_text(LINE_JOHN, LINE_MILK))
    env = {**os.environ, "HB_WORKSPACE": str(workspace)}
    env.pop("HB_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PARTIAL_PROBE], env=env, capture_output=True, text=True, check=True
    )
    *lines, last = done.stdout.strip().splitlines()
    out = json.loads("\n".join(lines))
    assert json.loads(last) == {"queue_files": False}
    assert [r["kind"] for r in out["reports"]][:4] == ["tasks-json", "errors-json", "last-run", "todo"]
    assert len(report(out, "todo")["added"]) == 1 and report(out, "tasks-json")["added"] == []
    assert probe(workspace)[1] is False  # sealed again, every kind


def test_a_ledger_change_after_the_seal_check_syncs_every_kind(
    hb: Runner, workspace: Path, monkeypatch: Any
) -> None:
    from heartbeat import Ledger
    from heartbeat.ops.sync import engine

    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("sync")
    write(todo, todo_text(LINE_JOHN, LINE_MILK))
    real = engine._check_seal

    def stale(ledger: Any) -> Any:
        seen = real(ledger)
        assert seen is not None and seen.changed == ["todo"]
        with Ledger.open(workspace=workspace) as other:  # another process, right after the check
            other.add("queue job from elsewhere")
        return seen

    monkeypatch.setattr(engine, "_check_seal", stale)
    with Ledger.open(workspace=workspace) as led:
        out = led.sync()
    assert len(report(out, "todo")["added"]) == 1
    assert report(out, "tasks-json")["written"] is True
    tasks = json.loads((workspace / ".agent" / "state" / "tasks.json").read_text())
    assert [t["description"] for t in tasks["pending"]] == ["queue job from elsewhere"]


def test_a_seal_another_hb_wrote_is_not_replayed(hb: Runner, workspace: Path) -> None:
    """The seal replays the warnings of the sync that wrote it. hb's version is part of its
    fingerprint: a seal another version wrote (an upgrade since) is not used, so the warnings are
    read again, in this version's words."""
    write(workspace / "TODO.md", todo_text(LINE_JOHN, LINE_TYPO))
    hb("sync")
    now = f"{workspace / 'TODO.md'}:10: bad timestamp '2026-05-0 13:00' in Created"
    assert report(probe(workspace)[0], "todo")["preserved"] == [now]
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    try:  # the warning as an older hb worded it, in the seal this hb wrote
        (text,) = con.execute("SELECT skeleton FROM sync_state WHERE kind = 'sync.seal'").fetchone()
        seal = json.loads(text)
        seal["preserved"]["todo"] = ["TODO.md line 10: older words"]
        con.execute("UPDATE sync_state SET skeleton = ? WHERE kind = 'sync.seal'", (json.dumps(seal),))
        con.commit()
    finally:
        con.close()
    assert report(probe(workspace)[0], "todo")["preserved"] == ["TODO.md line 10: older words"]
    out, _ = probe(workspace, version="0.0.1")  # the next version of hb: read again
    assert out["changed"] is False and report(out, "todo")["preserved"] == [now]
    assert report(probe(workspace, version="0.0.1")[0], "todo")["preserved"] == [now]  # its own seal


def test_a_heartbeat_leaves_the_seal_its_export_made(hb: Runner, workspace: Path) -> None:
    """A tick syncs, runs the round and writes the files back (a full sync that seals); then the
    guard's run row is closed. That row is in no file, so the seal stands, and the next tick's
    first sync is answered by it instead of reading and merging every file again."""
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("add", "queue job")
    write(workspace / "HEARTBEAT.md", "- check the queue\n")
    hb("--now", "2026-05-03T10:00:00Z", "heartbeat")
    assert sealed(workspace)
    hb("--now", "2026-05-03T10:30:00Z", "heartbeat")
    assert sealed(workspace)
    hb("--now", "2026-05-03T10:31:00Z", "pop")  # a pop that takes nothing writes no filed run either
    assert not sealed(workspace)  # the pop moved a task tasks.json shows
    hb("sync")
    assert hb("--now", "2026-05-03T10:33:00Z", "pop").stdout == "No pending tasks.\n"
    assert sealed(workspace)


@contextmanager
def _refused(*modules: str) -> Iterator[None]:
    """The syncers of ``modules`` fail when called: the seal must vouch for their kinds."""
    import importlib

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a kind the seal vouches for was synced")

    with pytest.MonkeyPatch.context() as patch:
        for name in modules:
            module = importlib.import_module(name)
            for table in ("SYNCERS", "SYNC_GROUPS"):
                for key in getattr(module, table, {}):
                    patch.setitem(getattr(module, table), key, refused)
        yield


def test_after_the_round_only_the_files_showing_what_it_changed_are_synced(
    hb: Runner, workspace: Path
) -> None:
    """The round records a check run (heartbeat-state.json's todoWatch) and the decisions it
    took. The tick's export then reads and writes heartbeat-state.json alone: the seal holds for
    the parts of the ledger every other file shows, so TODO.md, PROACTIVE.md and tasks.json are not
    parsed again. A change to one of those parts brings exactly its files back in."""
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("add", "queue job")
    state = workspace / "memory" / "heartbeat-state.json"
    state.parent.mkdir()
    write(state, '{"todoWatch": {"lastScanAt": null}}\n')
    hb("--now", "2026-05-03T10:00:00Z", "heartbeat")
    todo_before = read(workspace / "TODO.md")
    markdown, proactive = "heartbeat.ops.sync.markdown", "heartbeat.ops.sync.proactive_files"
    with _refused(markdown, proactive, "heartbeat.ops.sync.queue_files"):
        hb("--now", "2026-05-03T10:30:00Z", "heartbeat")
    assert json.loads(read(state))["todoWatch"]["lastScanAt"].startswith("2026-05-03T")
    assert "10:30:00" in read(state)  # this tick's scan, written by the export
    assert read(workspace / "TODO.md") == todo_before
    hb("--now", "2026-05-03T10:40:00Z", "add", "another queue job")
    with _refused(markdown, proactive):
        hb("--now", "2026-05-03T11:00:00Z", "heartbeat")  # tasks.json's part moved: its file is synced
    tasks = json.loads((workspace / ".agent" / "state" / "tasks.json").read_text())
    assert [t["description"] for t in tasks["pending"]] == ["queue job", "another queue job"]
    assert sealed(workspace)


def test_a_setting_any_file_may_show_syncs_every_kind(hb: Runner, workspace: Path) -> None:
    from heartbeat import Ledger
    from heartbeat.ops.sync import engine

    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("sync")
    hb("config", "set", "proactive.max_per_day", "3")  # a setting heartbeat-state.json holds
    with Ledger.open(workspace=workspace) as led:
        seal = engine._check_seal(led)
        assert seal is not None and seal.changed == ["state"] and seal.moved == {"state"}
    hb("sync")
    hb("config", "set", "todo.dialect", "extended")  # may change how every file is written
    with Ledger.open(workspace=workspace) as led:
        assert engine._check_seal(led) is None


def test_a_sync_that_changes_what_another_file_shows_starts_over_with_every_kind(
    hb: Runner, workspace: Path, monkeypatch: Any
) -> None:
    """Each kind's sync changes only the parts of the ledger its own file shows (the queue's three
    files are synced together). Should one change a part another file shows (here the TODO
    files' sync made to touch the queue's tasks), the seal could no longer vouch for that file:
    the sync starts over with every kind."""
    from heartbeat.ops.sync import engine, markdown

    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("add", "queue job")
    hb("sync")
    write(todo, todo_text(LINE_JOHN, LINE_MILK))
    real_group = markdown.SYNC_GROUPS[("todo", "done")]

    def reaching_further(ctx: Any, db: Any, files: Any, now: Any, *, sealed: bool) -> Any:
        done = real_group(ctx, db, files, now, sealed=sealed)
        db.execute(
            "UPDATE tasks SET title = 'queue job, renamed', version = version + 1 WHERE source = 'cli'"
        )
        return done

    monkeypatch.setitem(markdown.SYNC_GROUPS, ("todo", "done"), reaching_further)
    runs: list[Any] = []
    real = engine._run

    def counted(*args: Any) -> Any:
        runs.append(args[4])  # the seal the run starts from (None: every kind)
        return real(*args)

    monkeypatch.setattr(engine, "_run", counted)
    out = hb.json("sync")
    assert [r is None for r in runs] == [False, True]  # the partial sync, then the full one
    assert len(report(out, "todo")["added"]) == 1 and "Buy milk | and eggs" in titles(hb)
    assert [r["kind"] for r in out["reports"]][:3] == ["tasks-json", "errors-json", "last-run"]
