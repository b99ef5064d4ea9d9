"""hb sync with TODO.md and TODO.DONE.md: identity, conflicts, removals, lossless files (issue 4)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from heartbeat.db.models import Task, TaskStatus
from tests.conftest import Runner
from tests.sync.helpers import (
    LINE_JOHN,
    LINE_MILK,
    LINE_TYPO,
    done_text,
    events,
    ledger,
    read,
    report,
    todo_rows,
    todo_text,
    write,
)

NOW = "2026-05-03T10:00:00Z"


def sync(hb: Runner, *args: str, now: str = NOW, code: int = 0) -> dict[str, Any]:
    result = hb("sync", "--json", *args, HB_NOW=now, code=code)
    return json.loads(result.stdout) if code == 0 else {"stderr": result.stderr}


def ids_by_title(hb: Runner) -> dict[str, str]:
    return {t["title"]: t["id"] for t in hb.json("list", "--all", "--source", "todo")}


@pytest.fixture
def todo(workspace: Path) -> Path:
    path = workspace / "TODO.md"
    write(path, todo_text(LINE_JOHN, LINE_MILK, LINE_TYPO))
    return path


def test_first_sync_imports_entries_keeps_the_file_and_reports_the_typo(
    hb_db: Runner, todo: Path, workspace: Path
) -> None:
    before = todo.read_bytes()
    result = hb_db("sync", HB_NOW=NOW)
    assert f"{todo}:11: bad timestamp '2026-05-0 13:00' in Created" in result.stderr
    out = sync(hb_db)
    assert out["changed"] is False
    assert report(out, "todo")["preserved"] == [f"{todo}:11: bad timestamp '2026-05-0 13:00' in Created"]
    tasks = hb_db.json("list", "--source", "todo")
    assert [(t["title"], t["status"], t["scope"]) for t in tasks] == [
        ("Remind [John](tg:@john) to submit report.", "todo", None),
        ("Buy milk | and eggs", "todo", None),
    ]
    john = tasks[0]
    assert john["id"].startswith("todo-") and len(john["id"]) == 13
    assert john["chat_id"] == "tg:-100123"
    assert john["created_at"] == "2026-05-01T12:41:00+00:00"
    assert todo.read_bytes() == before
    assert not (workspace / "TODO.DONE.md").exists()


def test_editing_a_line_updates_the_same_task(
    hb_db: Runner, todo: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    [john] = [t for t in hb_db.json("list") if t["chat_id"] == "tg:-100123"]
    write(todo, read(todo).replace("to submit report.", "to submit the Q2 report."))
    out = sync(hb_db, now="2026-05-03T11:00:00Z")
    assert report(out, "todo")["updated"] == [john["id"]]
    assert report(out, "todo")["added"] == [] and report(out, "todo")["removed"] == []
    got = hb_db.json("show", john["id"])
    assert got["title"] == "Remind [John](tg:@john) to submit the Q2 report."
    assert got["updated_at"] == "2026-05-03T11:00:00+00:00"
    [updated] = [e for e in events(workspace, john["id"], db_url) if e["kind"] == "updated"]
    assert updated["before"]["title"] == "Remind [John](tg:@john) to submit report."
    assert len(hb_db.json("list", "--source", "todo")) == 2


def test_a_line_added_to_the_file_and_a_task_added_to_the_ledger_reach_both_sides(
    hb_db: Runner, todo: Path
) -> None:
    sync(hb_db)
    write(todo, read(todo) + "- [ ] [Created](2026-05-02 08:00), [ChatID](tg:-100123) | Call the bank\n")
    made = hb_db.json(
        "add", "Book the venue", "--source", "todo", "--chat-id", "tg:-42", HB_NOW="2026-05-03T09:30:45Z"
    )
    assert made["source"] == "todo" and made["id"].startswith("todo-") and made["chat_id"] == "tg:-42"
    out = sync(hb_db)
    todo_report = report(out, "todo")
    titles = ids_by_title(hb_db)
    assert sorted(todo_report["added"]) == sorted([titles["Call the bank"], made["id"]])
    assert todo_report["written"] is True
    text = read(todo)
    assert "- [ ] [Created](2026-05-03 09:30), [ChatID](tg:-42) | Book the venue\n" in text
    assert "open_count: 4\n" in text and 'updated_at: "2026-05-03T10:00:00Z"\n' in text
    assert LINE_TYPO + "\n" in text
    again = sync(hb_db, now="2026-05-04T00:00:00Z")
    assert again["changed"] is False


def test_queue_tasks_do_not_go_into_todo_md(hb: Runner, todo: Path, workspace: Path) -> None:
    sync(hb)
    before = todo.read_bytes()
    task = hb.json("add", "Deep research", "--priority", "high")
    out = sync(hb)
    assert report(out, "tasks-json")["added"] == [task["id"]]
    assert todo.read_bytes() == before
    tasks_json = json.loads((workspace / ".agent" / "state" / "tasks.json").read_text())
    assert [t["id"] for t in tasks_json["pending"]] == [task["id"]]


def test_a_task_changed_on_both_sides_is_a_conflict_the_file_wins(
    hb_db: Runner, todo: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    milk = ids_by_title(hb_db)["Buy milk | and eggs"]
    hb_db("update", milk, "--title", "Buy oat milk", HB_NOW="2026-05-03T10:10:00Z")
    write(todo, read(todo).replace("Buy milk | and eggs", "Buy milk, eggs and bread"))
    before = todo.read_bytes()
    out = sync(hb_db, now="2026-05-03T10:20:00Z")
    assert report(out, "todo")["conflicts"] == [milk]
    assert report(out, "todo")["written"] is False
    assert hb_db.json("show", milk)["title"] == "Buy milk, eggs and bread"
    assert todo.read_bytes() == before
    [conflict] = [e for e in events(workspace, milk, db_url) if e["kind"] == "conflict"]
    assert conflict["before"]["title"] == "Buy oat milk"
    history = hb_db.json("show", milk, "--history")["history"]
    assert [h["kind"] for h in history] == ["created", "updated", "conflict"]


def test_a_deleted_line_removes_the_task_and_keeps_its_history(
    hb_db: Runner, todo: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    milk = ids_by_title(hb_db)["Buy milk | and eggs"]
    write(todo, read(todo).replace(LINE_MILK + "\n", ""))
    out = sync(hb_db)
    assert report(out, "todo")["removed"] == [milk]
    assert report(out, "todo")["written"] is False
    hb_db("show", milk, code=1)
    assert milk not in [t["id"] for t in hb_db.json("list", "--all")]
    kinds = [(e["kind"], e["task_pk"]) for e in events(workspace, milk, db_url)]
    assert [k for k, _ in kinds] == ["created", "removed"]
    assert all(pk is None for _, pk in kinds)  # the row is gone; its history stays
    removed = events(workspace, milk, db_url)[-1]
    assert removed["before"]["title"] == "Buy milk | and eggs" and removed["before"]["status"] == "todo"


def test_a_line_deleted_after_a_ledger_change_is_removed_and_reported_as_a_conflict(
    hb: Runner, todo: Path
) -> None:
    sync(hb)
    milk = ids_by_title(hb)["Buy milk | and eggs"]
    hb("update", milk, "--title", "Buy oat milk")
    write(todo, read(todo).replace(LINE_MILK + "\n", ""))
    out = sync(hb)
    assert report(out, "todo")["removed"] == [milk] and report(out, "todo")["conflicts"] == [milk]
    hb("show", milk, code=1)


def test_a_typo_line_survives_ten_syncs_byte_identical(hb: Runner, todo: Path) -> None:
    before = todo.read_bytes()
    stats = todo.stat()
    for day in range(10):
        out = sync(hb, now=f"2026-05-{10 + day:02d}T08:00:00Z")
        assert report(out, "todo")["preserved"] == [f"{todo}:11: bad timestamp '2026-05-0 13:00' in Created"]
    assert todo.read_bytes() == before
    assert todo.stat().st_mtime_ns == stats.st_mtime_ns


def test_a_typo_line_stays_in_place_while_hb_rewrites_the_file(hb: Runner, todo: Path) -> None:
    for day in range(10):
        hb("add", f"ledger task {day}", "--source", "todo", HB_NOW=f"2026-05-{10 + day:02d}T08:00:00Z")
        out = sync(hb, now=f"2026-05-{10 + day:02d}T09:00:00Z")
        assert report(out, "todo")["written"] is True
        lines = read(todo).splitlines()
        assert lines[-1] == LINE_TYPO  # kept where it is, the last line
        # a new entry goes on top of the list, where mistermorph's Add puts one
        first = next(ln for ln in lines if ln.startswith("- ["))
        assert first == f"- [ ] [Created](2026-05-{10 + day:02d} 08:00) | ledger task {day}"
        assert sum(1 for ln in lines if ln == LINE_TYPO) == 1
    assert len(hb.json("list", "--source", "todo")) == 12


def test_a_sync_with_nothing_changed_writes_nothing(hb_db: Runner, todo: Path, workspace: Path) -> None:
    hb_db("add", "from the ledger", "--source", "todo", HB_NOW=NOW)
    first = sync(hb_db)
    assert report(first, "todo")["written"] is True
    stamps = {p.name: p.stat().st_mtime_ns for p in workspace.iterdir() if p.is_file()}
    out = sync(hb_db, now="2026-05-09T00:00:00Z")
    assert out["changed"] is False
    assert all(not r["written"] for r in out["reports"])
    assert {p.name: p.stat().st_mtime_ns for p in workspace.iterdir() if p.is_file()} == stamps
    # the fixture's typo line is kept only in the file: the summary points at its warning
    again = hb_db("sync", HB_NOW=NOW)
    assert again.stdout == "No changes; 1 warning above.\n" and "bad timestamp" in again.stderr


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        (
            "---\ncreated_at: [unclosed\nopen_count: 1\n---\n\n# TODO Work In Progress (WIP)\n\n"
            + LINE_JOHN
            + "\n",
            2,  # where the [ opened
            "front matter is not valid YAML",
        ),
        (
            "---\ncreated_at: x\n\n# TODO Work In Progress (WIP)\n\n" + LINE_JOHN + "\n",
            1,
            "front matter has no closing '---'",
        ),
        (  # an integer past Python's 4,300 digits: its length and line, not Python's advice
            "---\ncreated_at: x\nopen_count: "
            + "9" * 5000
            + "\n---\n\n# TODO Work In Progress (WIP)\n\n"
            + LINE_JOHN
            + "\n",
            3,
            "front matter is not valid YAML: a number with 5000 digits (at most 4300); kept as written",
        ),
    ],
)
def test_unreadable_front_matter_is_kept_and_the_entries_are_synced(
    hb_db: Runner, workspace: Path, text: str, where: int, reason: str
) -> None:
    """mistermorph still reads the entries of such a file: hb syncs them, warns with path:line
    and never edits that front matter."""
    todo = workspace / "TODO.md"
    write(todo, text)
    out = sync(hb_db)
    preserved = report(out, "todo")["preserved"]
    assert preserved[0].startswith(f"{todo}:{where}: {reason}")
    assert [t["title"] for t in hb_db.json("list")] == ["Remind [John](tg:@john) to submit report."]
    assert read(todo) == text
    [john] = hb_db.json("list")
    hb_db("done", john["id"], HB_NOW=NOW)
    sync(hb_db)
    assert read(todo) == text.replace(LINE_JOHN + "\n", "")
    assert LINE_JOHN.removeprefix("- [ ] [Created](2026-05-01 12:41)") in read(workspace / "TODO.DONE.md")


def test_undecodable_bytes_name_the_line(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    todo.write_bytes(todo_text(LINE_JOHN).encode() + b"- [ ] [Created](2026-05-01 13:00) | caf\xe9\n")
    result = hb("sync", code=1)
    assert f"{todo}:10:" in result.stderr and "UTF-8" in result.stderr
    assert hb.json("list", "--all") == []


def test_dry_run_reports_the_same_and_changes_nothing(hb_db: Runner, todo: Path, workspace: Path) -> None:
    sync(hb_db)
    write(todo, read(todo).replace("Buy milk | and eggs", "Buy bread"))
    new = hb_db.json("add", "from the ledger", "--source", "todo", HB_NOW=NOW)
    before_file = todo.read_bytes()
    before_ledger = hb_db.json("list", "--all")
    dry = hb_db("sync", "--dry-run", "--json", HB_NOW=NOW)
    assert "dry run" in dry.stderr
    preview = json.loads(dry.stdout)
    assert preview["dry_run"] is True
    assert report(preview, "todo")["added"] == [new["id"]]
    assert len(report(preview, "todo")["updated"]) == 1 and report(preview, "todo")["written"] is True
    assert todo.read_bytes() == before_file
    assert hb_db.json("list", "--all") == before_ledger
    real = sync(hb_db)
    assert [{**r, "written": r["written"]} for r in real["reports"]] == preview["reports"]
    assert todo.read_bytes() != before_file


def test_done_moves_the_task_to_the_top_of_todo_done_md(hb_db: Runner, todo: Path, workspace: Path) -> None:
    """mistermorph's Complete puts the completed entry first in TODO.DONE.md's list."""
    done_file = workspace / "TODO.DONE.md"
    old = "- [x] [Created](2026-04-20 08:00), [Done](2026-04-21 09:00) | Old chore"
    write(done_file, done_text(old))
    sync(hb_db)
    john = ids_by_title(hb_db)["Remind [John](tg:@john) to submit report."]
    got = hb_db.json("done", john, HB_NOW="2026-05-03T12:34:56+02:00")
    assert got["completed_at"] == "2026-05-03T10:34:56+00:00"
    out = sync(hb_db, now="2026-05-03T11:00:00Z")
    assert report(out, "done")["completed"] == [john]
    assert report(out, "todo")["written"] is True and report(out, "done")["written"] is True
    assert LINE_JOHN not in read(todo)
    assert "open_count: 1\n" in read(todo)
    lines = read(done_file).splitlines()
    assert lines[-2:] == [
        "- [x] [Created](2026-05-01 12:41), [Done](2026-05-03 10:34), [ChatID](tg:-100123) | "
        "Remind [John](tg:@john) to submit report.",
        old,
    ]
    assert "done_count: 2" in lines
    assert hb_db.json("show", john)["status"] == "done"
    assert sync(hb_db, now="2026-05-04T00:00:00Z")["changed"] is False


def test_done_creates_todo_done_md_in_the_runtime_form(hb: Runner, todo: Path, workspace: Path) -> None:
    sync(hb)
    milk = ids_by_title(hb)["Buy milk | and eggs"]
    hb("done", milk, HB_NOW="2026-05-03T10:05:00Z")
    sync(hb)
    assert read(workspace / "TODO.DONE.md") == (
        '---\ncreated_at: "2026-05-03T10:00:00Z"\nupdated_at: "2026-05-03T10:00:00Z"\ndone_count: 1\n---\n\n'
        "# TODO Done\n\n- [x] [Created](2026-05-01 13:00), [Done](2026-05-03 10:05) | Buy milk | and eggs\n"
    )
    assert (workspace / "TODO.DONE.md").stat().st_mode & 0o777 == 0o600


def test_the_runtime_completing_an_entry_completes_the_task(hb: Runner, todo: Path, workspace: Path) -> None:
    sync(hb)
    john = ids_by_title(hb)["Remind [John](tg:@john) to submit report."]
    write(todo, read(todo).replace(LINE_JOHN + "\n", ""))
    moved = LINE_JOHN.replace(
        "- [ ] [Created](2026-05-01 12:41)", "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 18:00)"
    )
    write(workspace / "TODO.DONE.md", done_text(moved))
    out = sync(hb)
    assert report(out, "done")["completed"] == [john]
    assert report(out, "todo")["removed"] == []
    got = hb.json("show", john)
    assert got["status"] == "done" and got["completed_at"] == "2026-05-02T18:00:00+00:00"
    assert report(out, "todo")["written"] is False and report(out, "done")["written"] is False


def test_cancelling_a_task_takes_its_line_out(hb: Runner, todo: Path) -> None:
    sync(hb)
    milk = ids_by_title(hb)["Buy milk | and eggs"]
    hb("cancel", milk)
    out = sync(hb)
    assert report(out, "todo")["removed"] == [milk]
    assert LINE_MILK not in read(todo)
    assert hb.json("show", milk)["status"] == "cancelled"
    assert sync(hb)["changed"] is False


def test_crlf_and_a_missing_final_newline_survive(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    text = todo_text(LINE_JOHN, LINE_MILK).replace("\n", "\r\n").removesuffix("\r\n")
    write(todo, text)
    sync(hb)
    assert read(todo) == text
    hb("add", "Water the plants", "--source", "todo", HB_NOW=NOW)
    sync(hb, now="2026-05-03T10:30:00Z")
    got = read(todo)
    added = "- [ ] [Created](2026-05-03 10:00) | Water the plants\r\n"
    assert got.endswith("\r\n" + LINE_MILK)  # still no final newline
    assert "\n" not in got.replace("\r\n", "")
    # the new entry on top, as mistermorph's Add puts one; every other byte as it was
    assert added + LINE_JOHN in got
    assert (
        got.replace(added, "")
        .replace('updated_at: "2026-05-03T10:30:00Z"', 'updated_at: "2026-05-02T00:00:00Z"')
        .replace("open_count: 3", "open_count: 2")
    ) == text


def test_a_file_that_keeps_its_mode(hb: Runner, todo: Path) -> None:
    os.chmod(todo, 0o640)
    sync(hb)
    hb("add", "another", "--source", "todo")
    assert report(sync(hb), "todo")["written"] is True
    assert todo.stat().st_mode & 0o777 == 0o640


def test_entries_sharing_created_and_chat_keep_their_own_identity(hb: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    a = "- [ ] [Created](2026-05-01 09:00), [ChatID](tg:-1) | First twin"
    b = "- [ ] [Created](2026-05-01 09:00), [ChatID](tg:-1) | Second twin"
    write(todo, todo_text(a, b))
    sync(hb)
    ids = ids_by_title(hb)
    assert len(set(ids.values())) == 2
    write(todo, read(todo).replace("Second twin", "Second twin, edited"))
    out = sync(hb)
    assert report(out, "todo")["updated"] == [ids["Second twin"]]
    assert hb.json("show", ids["First twin"])["title"] == "First twin"
    write(todo, read(todo).replace(a + "\n", ""))
    out = sync(hb)
    assert report(out, "todo")["removed"] == [ids["First twin"]]
    assert hb.json("show", ids["Second twin"])["title"] == "Second twin, edited"


def test_new_tasks_go_by_position_a_lower_one_to_the_top(hb: Runner, todo: Path, workspace: Path) -> None:
    sync(hb)
    rows = todo_rows(workspace)
    with ledger(workspace) as led, led.write() as s:
        s.add(
            Task(
                id="todo-0000beef",
                scope="",
                source="todo",
                title="2026-05-03 09:00 Materialised rule",
                status=TaskStatus.TODO,
                position=min(r["position"] for r in rows) - 1,
                created_at=datetime(2026, 5, 3, 9, 0, 30, tzinfo=UTC),
                updated_at=datetime(2026, 5, 3, 9, 0, 30, tzinfo=UTC),
            )
        )
    hb("add", "on top", "--source", "todo", HB_NOW=NOW)  # above the first, as mistermorph's Add
    out = sync(hb)
    assert sorted(report(out, "todo")["added"]) == sorted(["todo-0000beef", ids_by_title(hb)["on top"]])
    entries = [ln for ln in read(todo).splitlines() if ln.startswith("- [ ]")]
    assert entries[:2] == [
        "- [ ] [Created](2026-05-03 10:00) | on top",
        "- [ ] [Created](2026-05-03 09:00) | 2026-05-03 09:00 Materialised rule",
    ]
    assert entries[-1] == LINE_TYPO
    assert [t["title"] for t in todo_rows(workspace)] == [
        "on top",
        "2026-05-03 09:00 Materialised rule",
        "Remind [John](tg:@john) to submit report.",
        "Buy milk | and eggs",
    ]


def test_extended_dialect_writes_ids_and_matches_by_them(hb: Runner, workspace: Path) -> None:
    hb("config", "set", "todo.dialect", "extended")
    made = hb.json("add", "Renew the domain", "--source", "todo", HB_NOW=NOW)
    sync(hb)
    todo = workspace / "TODO.md"
    line = f"- [ ] [Created](2026-05-03 10:00), [ID]({made['id']}) | Renew the domain"
    assert line in read(todo)
    write(todo, read(todo).replace(line, f"- [ ] [Created](2026-05-04 07:00), [ID]({made['id']}) | Renew it"))
    out = sync(hb)
    assert report(out, "todo")["updated"] == [made["id"]]
    got = hb.json("show", made["id"])
    assert got["title"] == "Renew it" and got["created_at"] == "2026-05-04T07:00:00+00:00"
    hb("config", "set", "todo.dialect", "strict")
    out = sync(hb)
    assert report(out, "todo")["written"] is True and report(out, "todo")["preserved"] == []
    assert "- [ ] [Created](2026-05-04 07:00) | Renew it\n" in read(todo)
    assert [t["id"] for t in hb.json("list", "--source", "todo")] == [made["id"]]


def test_add_todo_rejects_what_cannot_be_a_line(hb: Runner) -> None:
    result = hb("add", "opens <!-- a comment", "--source", "todo", code=1)
    assert "TODO.md entry" in result.stderr
    hb("add", "x", "--source", "todo", "--chat-id", "no colon", code=1)
    hb("add", "x", "--source", "todo", "--scope", "_a_extension.q", code=2)
    assert hb.json("list", "--all") == []


def test_update_chat_id_of_a_todo_entry_is_stored_and_written_as_mistermorph_reads_it(
    hb_db: Runner, todo: Path
) -> None:
    """hb update --chat-id: a TODO.md entry's ChatID normalised as mistermorph's AddWithChatID
    stores one, one mistermorph would not read refused naming the task (nothing changes), none
    clearing it; the next sync writes the line."""
    sync(hb_db)
    milk = ids_by_title(hb_db)["Buy milk | and eggs"]
    assert hb_db.json("update", milk, "--chat-id", "TG : 5")["chat_id"] == "tg:5"
    out = sync(hb_db, now="2026-05-03T10:05:00Z")
    assert report(out, "todo")["updated"] == [milk]
    assert "- [ ] [Created](2026-05-01 13:00), [ChatID](tg:5) | Buy milk | and eggs\n" in read(todo)
    before = read(todo)
    refused = hb_db("update", milk, "--chat-id", "line-user:U1", code=1)
    assert refused.stderr.startswith(f"hb: {milk}: --chat-id 'line-user:U1' is not a protocol:id reference")
    assert hb_db.json("show", milk)["chat_id"] == "tg:5"
    assert hb_db.json("update", milk, "--chat-id", "none")["chat_id"] is None
    sync(hb_db, now="2026-05-03T10:10:00Z")
    assert read(todo) == before.replace(", [ChatID](tg:5)", "").replace(
        'updated_at: "2026-05-03T10:05:00Z"', 'updated_at: "2026-05-03T10:10:00Z"'
    )
    queue = hb_db.json("add", "queue job")["id"]  # not a TODO.md entry: kept as given
    assert hb_db.json("update", queue, "--chat-id", "whatever")["chat_id"] == "whatever"


def test_only_restricts_the_kinds(hb: Runner, todo: Path, workspace: Path) -> None:
    write(workspace / "TODO.RECUR.md", "- [ ] [Next](2026-05-02 09:00), [Repeat](daily) | Stand-up.\n")
    out = sync(hb, "--only", "recur")
    assert [r["kind"] for r in out["reports"]] == ["recur"]
    assert hb.json("list", "--all") == []
    out = sync(hb, "--only", "todo")
    assert [r["kind"] for r in out["reports"]] == ["todo", "done"]
    assert len(hb.json("list")) == 2


def test_text_report(hb: Runner, todo: Path) -> None:
    first = hb("sync", HB_NOW=NOW)
    lines = first.stdout.splitlines()
    assert lines[0] == f"{todo}: 2 added"
    assert sorted(ln.split()[0] for ln in lines[1:]) == ["added", "added"]
    assert first.stderr == f"hb: warning: {todo}:11: bad timestamp '2026-05-0 13:00' in Created\n"
    # the next sync changes nothing, but the typo is still only in the file: not "in sync"
    again = hb("sync", HB_NOW=NOW)
    assert again.stdout == "No changes; 1 warning above.\n"
    assert again.stderr == first.stderr


def test_identical_lines_edited_on_different_sides_are_no_conflict(hb_db: Runner, workspace: Path) -> None:
    path = workspace / "TODO.md"
    line = "- [ ] [Created](2026-05-01 09:00) | Same\n"
    write(path, "# TODO Work In Progress (WIP)\n\n" + line + line)
    sync(hb_db)
    first, second = [t["id"] for t in hb_db.json("list", "--source", "todo")]
    hb_db("update", second, "--title", "B edited in ledger", HB_NOW="2026-05-03T10:01:00Z")
    write(path, read(path).replace(line, line.replace("Same", "A edited in file"), 1))
    out = sync(hb_db, now="2026-05-03T10:02:00Z")
    assert report(out, "todo")["conflicts"] == []
    assert sorted(report(out, "todo")["updated"]) == sorted([first, second])
    assert read(path).endswith("| A edited in file\n- [ ] [Created](2026-05-01 09:00) | B edited in ledger\n")
    assert [(t["id"], t["title"]) for t in hb_db.json("list", "--source", "todo")] == [
        (first, "A edited in file"),
        (second, "B edited in ledger"),
    ]


def test_a_carriage_return_inside_an_entry_stays(hb_db: Runner, workspace: Path) -> None:
    """Only LF ends a line (FORMATS.md 1): a lone CR is part of the entry's text, kept as it is."""
    path = workspace / "TODO.md"
    line = "- [ ] [Created](2026-05-01 09:02) | lone\rCR\n"
    write(path, "# TODO Work In Progress (WIP)\n\n" + line)
    sync(hb_db)
    hb_db("add", "new", "--source", "todo", HB_NOW=NOW)
    out = sync(hb_db)
    assert report(out, "todo")["updated"] == [] and report(out, "todo")["conflicts"] == []
    assert path.read_bytes().endswith(b"| new\n- [ ] [Created](2026-05-01 09:02) | lone\rCR\n")
    assert sorted(t["title"] for t in hb_db.json("list", "--source", "todo")) == ["lone\rCR", "new"]


def test_many_identical_lines_get_ids_in_one_pass_and_keep_them(
    hb_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N identical lines share one identity key: the k-th gets the id of the key salted k, as
    before, but found in one pass (it was one pass per line, each hashing every line left:
    10 s for 4,000 lines), and a later sync pairs each line with its row by bisection (it
    scanned every identical row per line)."""
    import hashlib

    from heartbeat.ops.sync.markdown import family

    n = 600
    line = "- [ ] [Created](2026-05-01 09:00) | Same\n"
    path = workspace / "TODO.md"
    write(path, "# TODO Work In Progress (WIP)\n\n" + line * n)
    real = hashlib.sha256
    calls = []

    def counting(data: bytes = b"") -> Any:
        calls.append(data)
        return real(data)

    monkeypatch.setattr(family.hashlib, "sha256", counting)
    out = sync(hb_db)
    monkeypatch.setattr(family.hashlib, "sha256", real)
    assert len(report(out, "todo")["added"]) == n
    seeds = [data for data in calls if data.startswith(b"2026-05-01 09:00|")]  # the ids' seeds
    assert n <= len(seeds) <= n + 5  # one per line (it was n * (n + 1) / 2)
    ids = [t["id"] for t in hb_db.json("list", "--source", "todo")]
    key = seeds[0].decode()
    salted = (key if k == 0 else f"{key}#{k}" for k in range(n))
    assert set(ids) == {"todo-" + real(seed.encode()).hexdigest()[:8] for seed in salted}
    hb_db("add", "new", "--source", "todo", HB_NOW=NOW)
    again = sync(hb_db)
    assert [report(again, "todo")[k] for k in ("updated", "removed", "conflicts")] == [[], [], []]
    assert (
        read(path) == "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-03 10:00) | new\n" + line * n
    )
    assert sorted(t["id"] for t in hb_db.json("list", "--source", "todo") if t["title"] == "Same") == sorted(
        ids
    )
