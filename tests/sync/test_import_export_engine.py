"""hb import/export of the TODO files, and the sync engine's guarantees."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.errors import InvalidInput
from heartbeat.formats import todo as fmt
from heartbeat.ops.sync import engine, markdown
from tests.conftest import Runner
from tests.sync.helpers import LINE_JOHN, LINE_MILK, LINE_TYPO, done_text, read, report, todo_text, write

NOW = "2026-05-03T10:00:00Z"


def test_import_of_the_workspace_file_is_a_sync_baseline(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN, LINE_MILK, LINE_TYPO))
    result = hb("import", "todo", str(todo), HB_NOW=NOW)
    assert result.stdout == f"{todo}: 2 added, 0 updated, 0 unchanged\n"
    assert result.stderr == f"hb: warning: {todo}:11: bad timestamp '2026-05-0 13:00' in Created\n"
    again = hb.json("import", "todo", str(todo))
    assert again["added"] == [] and again["unchanged"] == 2
    assert again["preserved"] == [f"{todo}:11: bad timestamp '2026-05-0 13:00' in Created"]
    out = json.loads(hb("sync", "--json", HB_NOW=NOW).stdout)
    assert report(out, "todo")["added"] == [] and report(out, "todo")["written"] is False
    assert hb("export", "todo", "-").stdout == read(todo)


def test_import_of_another_file_adds_tasks_that_sync_writes(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    hb("sync", HB_NOW=NOW)
    other = workspace / "inbox.md"
    write(other, todo_text(LINE_MILK, front=False))
    got = hb.json("import", "todo", str(other), HB_NOW=NOW)
    [milk] = got["added"]
    out = json.loads(hb("sync", "--json", HB_NOW="2026-05-03T11:00:00Z").stdout)
    assert report(out, "todo")["added"] == [milk]
    assert read(todo).endswith(LINE_JOHN + "\n" + LINE_MILK + "\n")
    assert read(other) == todo_text(LINE_MILK, front=False)


def test_import_done_and_export(hb: Runner, workspace: Path) -> None:
    done = workspace / "TODO.DONE.md"
    line = "- [x] [Created](2026-04-20 08:00), [Done](2026-04-21 09:00), [ChatID](tg:-1) | Old chore"
    write(done, done_text(line))
    [task_id] = hb.json("import", "done", str(done))["added"]
    got = hb.json("show", task_id)
    assert (got["status"], got["completed_at"]) == ("done", "2026-04-21T09:00:00+00:00")
    assert hb("export", "done", "-").stdout == read(done)
    exported = workspace / "copy.md"
    assert hb.json("export", "done", str(exported))["written"] is True
    assert read(exported) == read(done)


def test_export_without_a_file_writes_the_runtime_form(hb: Runner) -> None:
    hb("add", "Pay the invoice", "--source", "todo", HB_NOW=NOW)
    text = hb("export", "todo", "-", HB_NOW=NOW).stdout
    doc = fmt.parse(text, fmt.TodoKind.TODO)
    assert [e.content for e in doc.entries] == ["Pay the invoice"]
    assert text.startswith('---\ncreated_at: "2026-05-03T10:00:00Z"\n')


def test_nothing_to_sync(hb: Runner, workspace: Path) -> None:
    assert hb("sync").stdout == "Everything is in sync.\n"
    assert sorted(p.name for p in workspace.iterdir()) == [".agent"]


def _patch_todo_sync(
    monkeypatch: pytest.MonkeyPatch, before: Callable[[], None], after: Callable[[], None]
) -> None:
    """Run ``before``/``after`` around the TODO family's sync."""

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        def racing(*args: Any, **kwargs: Any) -> Any:
            before()
            out = real(*args, **kwargs)
            after()
            return out

        return racing

    real = markdown.sync_group
    monkeypatch.setattr(markdown, "SYNC_GROUPS", {("todo", "done"): wrap(real), ("recur",): real})


def test_a_file_changed_while_syncing_is_taken_in_not_written_over(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync commits what it read; the agent's edit made meanwhile stays in the file (hb's
    write is a compare-and-swap against the text it read) and the next sync imports it."""
    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    calls: list[int] = []

    def meanwhile() -> None:
        if not calls:
            write(todo, todo_text(LINE_JOHN, LINE_MILK))  # the agent writes meanwhile
        calls.append(1)

    _patch_todo_sync(monkeypatch, lambda: None, meanwhile)
    with Ledger.open(workspace=workspace, now=NOW) as led:
        led.add_todo("Call the bank")  # hb has a line of its own to write
        led.sync()
        assert LINE_MILK in todo.read_text()  # never written over
        led.sync()
        titles = [t["title"] for t in led.list()]
    assert "Buy milk | and eggs" in titles and "Call the bank" in titles
    text = todo.read_text()
    assert "| Call the bank" in text and LINE_MILK in text and LINE_JOHN in text


def test_a_file_that_never_settles_is_left_to_the_next_sync(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ops.sync import swap

    todo = workspace / "TODO.md"
    write(todo, todo_text(LINE_JOHN))
    count = [0]
    real = swap.replace_if

    def another_edit_each_time(path: Path, text: str, expected: str | None, **kw: Any) -> swap.Swapped:
        count[0] += 1  # the agent saves again just before each of hb's writes
        write(
            todo,
            todo_text(
                LINE_JOHN, *(f"- [ ] [Created](2026-05-01 14:0{i}) | edit {i}" for i in range(count[0]))
            ),
        )
        return real(path, text, expected, **kw)

    monkeypatch.setattr(swap, "replace_if", another_edit_each_time)
    with Ledger.open(workspace=workspace, now=NOW) as led:
        led.add_todo("Call the bank")
        led.sync()
        assert any("kept changing while hb wrote them" in n for n in led.notices)
        assert count[0] == engine.ATTEMPTS
        assert "| Call the bank" not in todo.read_text()  # hb's line is not written over theirs
        monkeypatch.setattr(swap, "replace_if", real)
        led.sync()  # the agent has stopped: hb's line and every edit are there
        titles = [t["title"] for t in led.list()]
    text = todo.read_text()
    assert "| Call the bank" in text and all(f"| edit {i}" in text for i in range(engine.ATTEMPTS))
    assert "Call the bank" in titles and all(f"edit {i}" in titles for i in range(engine.ATTEMPTS))


def test_kinds_without_a_syncer_are_skipped(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(engine.MODULES, "proactive", "heartbeat.ops.sync.no_such_module")
    units, skipped = engine.plan(["proactive", "recur"])
    assert [u.kinds for u in units] == [("recur",)] and skipped == ["proactive"]
    with pytest.raises(InvalidInput, match="unknown file kind"):
        engine.plan(["nonsense"])


def test_the_registry_syncer_for_one_kind_still_moves_entries(workspace: Path) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    with Ledger.open(workspace=workspace, now=NOW) as led:
        led.sync()
        [john] = led.list()
        led.done(john["id"])
        path = workspace / "TODO.md"
        with led.ctx.write() as db:
            rep, out = markdown.SYNCERS["todo"](led, db, path, read(path), led.now())
        assert out is not None and LINE_JOHN not in out and rep.written is False
    assert "| Remind [John](tg:@john) to submit report." in read(workspace / "TODO.DONE.md")


def test_export_to_another_file_keeps_that_files_own_lines_in_place(hb: Runner, workspace: Path) -> None:
    other = workspace / "list.md"
    text = (
        "# TODO Work In Progress (WIP)\n<!-- keep me -->\n"
        "- [ ] [Created](2026-05-01 12:41) | A.\n"
        "- [ ] [Craeted](2026-05-01 12:42) | B typo.\n"
        "notes: call Bob\n"
    )
    write(other, text)
    hb("import", "todo", str(other), HB_NOW=NOW)
    out = hb.json("export", "todo", str(other))
    assert out["written"] is False and read(other) == text  # nothing changed: not rewritten
    [a] = hb.json("list")
    hb("update", a["id"], "--title", "A, edited.")
    hb("export", "todo", str(other))
    assert read(other) == text.replace("| A.\n", "| A, edited.\n")


def test_export_into_a_directory_names_the_target_not_a_temporary_file(hb: Runner, workspace: Path) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("sync")
    target = workspace / "TODO.DONE.md"
    target.mkdir()
    result = hb("export", "todo", str(target), code=1)
    assert result.stderr == f"hb: {target}: is a directory, not a file\n"
    assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("kind", ["todo", "tasks-json", "proactive"])
def test_import_of_a_directory_is_a_one_line_error_and_changes_nothing(
    hb: Runner, workspace: Path, kind: str
) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("sync")
    before = hb.json("list")
    target = workspace / "a-directory"
    target.mkdir()
    result = hb("import", kind, str(target), code=1)
    assert result.stderr == f"hb: {target}: is a directory, not a file\n"
    assert hb.json("list") == before


def test_export_with_nothing_to_write_says_so_and_json_output_is_one_document(
    hb: Runner, workspace: Path
) -> None:
    hb("init")
    target = workspace / "last-run.json"
    result = hb("export", "last-run", str(target))
    assert result.stdout == f"{target}: not written (the ledger holds nothing for this file yet)\n"
    assert not target.exists()
    assert hb.json("export", "last-run", str(target))["empty"] is True
    assert hb.json("export", "last-run", "-") == {"kind": "last-run", "path": "-", "text": None}
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb("sync")
    doc = hb.json("export", "todo", "-")
    assert doc["kind"] == "todo" and doc["text"] == read(workspace / "TODO.md")


def test_import_of_undecodable_bytes_names_the_line_and_column(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    before = todo_text(LINE_JOHN).encode()
    bad = b"- [ ] [Created](2026-05-01 13:00) | caf"
    todo.write_bytes(before + bad + b"\xe9\n")
    result = hb("import", "todo", str(todo), code=1)
    line, column, offset = before.count(b"\n") + 1, len(bad) + 1, len(before) + len(bad)
    assert result.stderr == f"hb: {todo}:{line}:{column}: not UTF-8 text (byte {offset})\n"
    assert hb.json("list") == []


@pytest.mark.parametrize(
    "args", [("--only", "todo", "recur"), ("--only", "todo,recur"), ("--only", "todo", "--only", "recur")]
)
def test_sync_only_takes_kinds_listed_repeated_or_comma_separated(
    hb: Runner, workspace: Path, args: tuple[str, ...]
) -> None:
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    out = hb.json("sync", *args)
    assert [r["kind"] for r in out["reports"]] == ["todo", "done", "recur"]
    assert len(report(out, "todo")["added"]) == 1
    hb("sync", "recur", code=2)  # kinds without --only are a usage error
    hb("sync", "--only", "todo,nope", code=2)


@pytest.mark.skipif(not Path("/proc/self/pagemap").exists(), reason="Linux's /proc files")
def test_a_file_that_will_not_be_read_or_never_ends_is_one_line(hb: Runner, workspace: Path) -> None:
    """Files of /proc read as regular files of size 0: ``/proc/self/mem`` gives an I/O error (exit
    70, an internal error), ``/proc/self/pagemap`` reads on and on (hb hung). A read error, or a file
    reading on far past its size, is one line naming the file, exit 1, nothing changed."""
    result = hb("import", "todo", "/proc/self/mem", code=1)
    assert result.stderr == "hb: /proc/self/mem: cannot read it (Input/output error)\n"
    result = hb("import", "tasks-json", "/proc/self/pagemap", code=1)
    assert (
        result.stderr
        == "hb: /proc/self/pagemap: cannot read it (it reads on more than 256 MiB past its size)\n"
    )
    (workspace / "TODO.md").symlink_to("/proc/self/mem")
    assert hb("sync", code=1).stderr == f"hb: {workspace / 'TODO.md'}: cannot read it (Input/output error)\n"
    assert hb.json("list", "--all") == []


def test_a_workspace_file_that_is_not_a_regular_file_is_refused(hb: Runner, workspace: Path) -> None:
    """A FIFO would block the read forever: one line, exit 1, nothing changed."""
    fifo = workspace / "TODO.md"
    os.mkfifo(fifo)
    result = hb("sync", code=1)
    assert result.stderr == f"hb: {fifo}: not a regular file (hb reads and writes plain files only)\n"
    assert hb("import", "todo", code=1).stderr == result.stderr
    assert hb.json("list", "--all") == []


@pytest.mark.parametrize("written_by", ["sync", "export"])
@pytest.mark.parametrize("scope", [None, "_round3_extension.q"])
def test_import_of_the_tasks_json_hb_wrote_changes_nothing(
    hb_db: Runner, workspace: Path, written_by: str, scope: str | None
) -> None:
    """A task made by ``hb add`` keeps no object of its own (``extra`` null); the file holds the
    object hb writes for it. An import of that file read the object as new: "1 updated", a new
    version, and "updated extra" in the history. A file that really adds a key still updates."""
    path = workspace / ".agent" / "state" / "tasks.json"
    hb_db("init", "--timezone", "UTC", HB_NOW=NOW)
    task = hb_db("add", "one", *(["--scope", scope] if scope else []), HB_NOW=NOW).stdout.strip()
    hb_db(
        "sync" if written_by == "sync" else "export",
        *([] if written_by == "sync" else ["tasks-json"]),
        HB_NOW=NOW,
    )
    before = hb_db.json("show", task, "--history", HB_NOW=NOW)
    result = hb_db("import", "tasks-json", str(path), HB_NOW="2026-05-03T11:00:00Z")
    assert result.stdout == f"{path}: 0 added, 0 updated, 1 unchanged\n"
    after = hb_db.json("show", task, "--history", HB_NOW=NOW)
    assert after == before
    doc = json.loads(path.read_text())
    [entry] = _entries(doc)
    entry["note"] = "a key of the file's own"
    path.write_text(json.dumps(doc, indent=2))
    result = hb_db("import", "tasks-json", str(path), HB_NOW="2026-05-03T11:00:00Z")
    assert result.stdout == f"{path}: 0 added, 1 updated, 0 unchanged\n"
    changed = hb_db.json("show", task, "--history", HB_NOW=NOW)
    assert changed["version"] == before["version"] + 1
    assert changed["history"][-1]["detail"]["fields"] == ["extra"]
    hb_db("export", "tasks-json", HB_NOW=NOW)
    assert _entries(json.loads(path.read_text())) == [entry]


def _entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every task object of a tasks.json: the legacy lists' and the scoped queues'."""
    lists = [v for v in doc.values() if isinstance(v, list)]
    lists += [q for v in doc.values() if isinstance(v, dict) for q in v.values() if isinstance(q, list)]
    return [task for tasks in lists for task in tasks]


def test_import_of_tasks_spread_over_the_lists_changes_nothing_but_places(
    hb_db: Runner, db_url: str, workspace: Path
) -> None:
    """Each of tasks.json's lists counts its places from 0. An import of the file hb wrote with
    tasks in pending, in_progress and completed said "2 updated", bumped their versions and
    wrote "updated position" into their history, where a sync of the same file changes nothing.
    The places are the file's; a place is no change of the task."""
    from tests.conftest import every_row

    path = workspace / ".agent" / "state" / "tasks.json"
    hb_db("init", "--timezone", "UTC", HB_NOW=NOW)
    for name in ("t1", "t2", "t3"):
        hb_db("add", name, "--id", name, HB_NOW=NOW)
    hb_db("pop", HB_NOW=NOW)  # t1 in_progress
    hb_db("pop", "--id", "t3", HB_NOW=NOW)
    hb_db("complete", "t3", HB_NOW=NOW)  # t3 completed, t2 alone in pending
    hb_db("export", "tasks-json", HB_NOW=NOW)
    versions = {t["id"]: t["version"] for t in hb_db.json("list", "--all")}
    history = every_row(db_url)["task_events"]

    for _ in range(2):
        result = hb_db("import", "tasks-json", str(path), HB_NOW="2026-05-03T11:00:00Z")
        assert result.stdout == f"{path}: 0 added, 0 updated, 3 unchanged\n"
    assert {t["id"]: t["version"] for t in hb_db.json("list", "--all")} == versions
    assert every_row(db_url)["task_events"] == history
    assert hb_db.json("ready") and hb_db.json("ready")[0]["id"] == "t2"

    doc = json.loads(path.read_text())
    doc["pending"].insert(0, {**doc["pending"][0], "id": "t0", "description": "t0"})
    path.write_text(json.dumps(doc, indent=2))  # a task put before t2 by hand: t2 moves to place 1
    result = hb_db("import", "tasks-json", str(path), HB_NOW="2026-05-03T11:00:00Z")
    assert result.stdout == f"{path}: 1 added, 0 updated, 3 unchanged\n"
    assert [t["id"] for t in hb_db.json("ready")] == ["t0", "t2"]  # the file's order is the queue's
