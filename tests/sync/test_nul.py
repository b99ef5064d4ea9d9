"""A NUL character (U+0000) in a workspace file, on both backends.

PostgreSQL's text columns cannot store a NUL: a TODO entry, a tasks.json string ("\\u0000"
decodes to one), an errors.json / last-run.json member or a PROACTIVE.md task holding one in a
text the ledger stores made ``hb sync`` and ``hb import`` fail with "database error", naming
nothing, while SQLite stored it. Both refuse it now at the file's line (and column, in JSON),
naming the field, and nothing changes: not the ledger, not a file. Where hb keeps the text as it
is (a tasks.json field it does not read, which the ledger holds as JSON; a comment, a line that
is no entry, prose), a NUL is kept on both backends, as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heartbeat.ops.sync import markdown
from tests.conftest import Runner, every_row, workspace_files
from tests.sync.helpers import LINE_JOHN, done_text, recur_text, todo_text, write

N = "\x00"
TAIL = "which the ledger does not store; nothing changed"
EXAMPLE_PROACTIVE = Path(__file__).parents[2] / "examples" / "workspace" / "PROACTIVE.md"
STATE = ".agent/state"


def _tasks(entry: str, extra: str = "") -> str:
    return '{"pending": [\n  ' + entry + '\n], "in_progress": [], "completed": []' + extra + "}\n"


# (kind for hb import, file, good text, the text with a NUL, where: "line" or "line:column", what)
REFUSED = {
    "todo-content": (
        "todo",
        "TODO.md",
        todo_text(LINE_JOHN),
        todo_text(LINE_JOHN.replace("submit", "sub" + N + "mit")),
        "9",
        "the entry's content holds a NUL character (at 31)",
    ),
    "todo-chat-id": (
        "todo",
        "TODO.md",
        todo_text(LINE_JOHN),
        todo_text(LINE_JOHN.replace("tg:-100123", "tg:-100" + N + "123")),
        "9",
        "the entry's ChatID holds a NUL character (at 8)",
    ),
    "done-content": (
        "done",
        "TODO.DONE.md",
        done_text("- [x] [Created](2026-04-29 07:00), [Done](2026-04-30 09:12) | Send the invoice."),
        done_text("- [x] [Created](2026-04-29 07:00), [Done](2026-04-30 09:12) | Send" + N + " the invoice."),
        "9",
        "the entry's content holds a NUL character (at 5)",
    ),
    "recur-content": (
        "recur",
        "TODO.RECUR.md",
        recur_text("- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | Play tennis."),
        recur_text(
            "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | " + N + "Play tennis."
        ),
        "12",
        "the entry's content holds a NUL character (at 1)",
    ),
    "tasks-description": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks('{"id": "a", "description": "one", "priority": "high"}'),
        _tasks('{"id": "a", "description": "o\\u0000ne", "priority": "high"}'),
        "2:32",
        "pending[0].description holds a NUL character (at 2)",
    ),
    "tasks-id": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks('{"id": "a", "description": "one", "priority": "high"}'),
        _tasks('{"id": "\\\\\\u0000", "description": "one", "priority": "high"}'),  # an escaped \ then a NUL
        "2:13",
        "pending[0].id holds a NUL character (at 2)",
    ),
    "tasks-priority": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks('{"id": "a", "description": "one", "priority": "high"}'),
        _tasks('{"id": "a", "description": "one \\\\u0000", "priority": "high\\u0000"}'),  # "\\u0000" is text
        "2:62",
        "pending[0].priority holds a NUL character (at 5)",
    ),
    "tasks-skill": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks('{"id": "a", "description": "one", "assigned_skill": "s"}'),
        _tasks('{"id": "a", "description": "one", "assigned_skill": "\\u0000s"}'),
        "2:56",
        "pending[0].assigned_skill holds a NUL character (at 1)",
    ),
    "tasks-scoped-id": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks("", ', "_r1_extension": {"q": [{"task_id": "t1", "order": 1}]}'),
        _tasks("", ', "_r1_extension": {"q": [{"task_id": "t\\u0000", "order": 1}]}'),
        "3:78",
        "_r1_extension.q[0].task_id holds a NUL character (at 2)",
    ),
    "tasks-queue-name": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks("", ', "_r1_extension": {"q": [{"task_id": "t1", "order": 1}]}'),
        _tasks("", ', "_r1_extension": {"q\\u0000": [{"task_id": "t1", "order": 1}]}'),
        "3:69",  # the queue's list, after its name
        "the queue path _r1_extension.q\\u0000 holds a NUL character (at 16)",
    ),
    "tasks-blocker": (
        "tasks-json",
        f"{STATE}/tasks.json",
        _tasks(
            "",
            ', "_r1_extension": {"q": [{"task_id": "t1", "gh_issue": 5}],'
            ' "blocked_on_x": [{"issues": [5], "blocker": "translator"}]}',
        ),
        _tasks(
            "",
            ', "_r1_extension": {"q": [{"task_id": "t1", "gh_issue": 5}],'
            ' "blocked_on_x": [{"issues": [5], "blocker": "trans\\u0000lator"}]}',
        ),
        "3:149",
        "the blocker of _r1_extension.q[0] holds a NUL character (at 20)",
    ),
    "errors-reason": (
        "errors-json",
        f"{STATE}/errors.json",
        '[{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a", "reason": "boom", "resolved": false}]\n',
        '[{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a",\n'
        '  "reason": "bo\\u0000om", "resolved": false}]\n',
        "2:16",
        "[0].reason holds a NUL character (at 3)",
    ),
    "errors-task-id": (
        "errors-json",
        f"{STATE}/errors.json",
        '[{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a", "reason": "boom", "resolved": false}]\n',
        '[{"timestamp": "2026-05-01T10:00:00Z", "task_id": "\\u0000",'
        ' "reason": "boom", "resolved": false}]\n',
        "1:52",
        "[0].task_id holds a NUL character (at 1)",
    ),
    "last-run-status": (
        "last-run",
        f"{STATE}/last-run.json",
        '{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a", "status": "completed", "outcome": {}}\n',
        '{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a",'
        ' "status": "completed\\u0000", "outcome": {}}\n',
        "1:75",
        "status holds a NUL character (at 10)",
    ),
    "proactive-name": (
        "proactive",
        "PROACTIVE.md",
        EXAMPLE_PROACTIVE.read_text(),
        EXAMPLE_PROACTIVE.read_text().replace("Renewal Watch", "Renewal" + N + " Watch"),
        "43",
        "the task's name holds a NUL character (at 8)",
    ),
    "proactive-id": (
        "proactive",
        "PROACTIVE.md",
        EXAMPLE_PROACTIVE.read_text(),
        EXAMPLE_PROACTIVE.read_text().replace("id: renewal_watch", 'id: "renewal\\0watch"'),
        "46",
        "the task's id holds a NUL character (at 8)",
    ),
    "proactive-instruction": (
        "proactive",
        "PROACTIVE.md",
        EXAMPLE_PROACTIVE.read_text(),
        EXAMPLE_PROACTIVE.read_text().replace(
            "instruction: Look for domains, subscriptions and documents expiring within 14 days;"
            " add a TODO for each.",
            'instruction: "Look for domains\\x00."',
        ),
        "53",
        "the task's instruction holds a NUL character (at 17)",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_nul_in_a_text_the_ledger_stores_is_refused_at_its_line_and_nothing_changes(
    hb_db: Runner, workspace: Path, db_url: str, case: str
) -> None:
    kind, name, good, bad, where, what = REFUSED[case]
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    hb_db("init")
    write(path, good)
    hb_db("sync")  # the ledger holds the file's good version
    write(path, bad)
    rows, files = every_row(db_url), workspace_files(workspace)
    expected = f"hb: {path}:{where}: {what}, {TAIL}\n"

    for args in (("sync",), ("sync", "--dry-run"), ("import", kind, str(path))):
        refused = hb_db(*args, code=1)
        assert (refused.stdout, refused.stderr) == ("", expected), args
        assert every_row(db_url) == rows, args
        assert workspace_files(workspace) == files, args

    copy = workspace / "elsewhere" / path.name  # a file of that kind anywhere: the same refusal
    copy.parent.mkdir()
    write(copy, bad)
    refused = hb_db("import", kind, str(copy), code=1)
    assert refused.stderr == f"hb: {copy}:{where}: {what}, {TAIL}\n"
    assert every_row(db_url) == rows


def test_an_edited_todo_line_holding_a_nul_is_refused_by_the_sync_that_reads_only_it(
    hb_db: Runner, workspace: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a sync, an edit of one line is read alone (the targeted sync): it refuses too."""
    lines = [f"- [ ] [Created](2026-05-01 1{i}:00) | Task {i}" for i in range(5)]
    path = workspace / "TODO.md"
    hb_db("init")
    write(path, todo_text(*lines))
    hb_db("sync")

    def full_sync(*args: object, **kwargs: object) -> None:
        raise AssertionError("a full sync ran where one line changed")

    monkeypatch.setattr(markdown, "full_sync", full_sync)
    lines[3] = lines[3] + N
    write(path, todo_text(*lines))
    rows, files = every_row(db_url), workspace_files(workspace)
    refused = hb_db("sync", code=1)
    assert refused.stderr == f"hb: {path}:12: the entry's content holds a NUL character (at 7), {TAIL}\n"
    assert every_row(db_url) == rows and workspace_files(workspace) == files


def test_export_over_a_file_whose_entry_holds_a_nul_is_refused(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    hb_db("init")
    write(workspace / "TODO.md", todo_text(LINE_JOHN))
    hb_db("sync")
    target = workspace / "copy.md"
    write(target, todo_text("- [ ] [Created](2026-05-01 13:00) | Buy " + N + "milk"))
    rows, files = every_row(db_url), workspace_files(workspace)
    refused = hb_db("export", "todo", str(target), code=1)
    assert refused.stderr.splitlines() == [
        f"hb: {target}:9: the entry's content holds a NUL character (at 5), {TAIL}"
    ]
    assert every_row(db_url) == rows and workspace_files(workspace) == files


def test_the_heartbeat_py_drop_in_refuses_a_tasks_json_holding_a_nul_by_its_place(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    hb_db("init")
    subprocess_git_init(workspace)
    path = workspace / STATE / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, _tasks('{"id": "a", "description": "o\\u0000ne", "priority": "high"}'))
    rows, files = every_row(db_url), workspace_files(workspace)
    refused = hb_db("compat", "heartbeat-py", "pop", code=1)
    assert refused.stdout == ""
    assert refused.stderr == f"hb: {path}:2:32: pending[0].description holds a NUL character (at 2), {TAIL}\n"
    assert every_row(db_url) == rows and workspace_files(workspace) == files


def subprocess_git_init(directory: Path) -> None:
    """heartbeat.py keeps its files under the git top level of the current directory."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(directory)], check=True)


# a NUL where hb keeps the text as written (or as JSON): kept, on both backends alike
KEPT = {
    "tasks-field-hb-does-not-read": (
        f"{STATE}/tasks.json",
        _tasks('{"id": "a", "description": "one", "note": "x\\u0000y", "k\\u0000": 1}'),
    ),
    "tasks-key-hb-does-not-read": (f"{STATE}/tasks.json", _tasks("", ', "mine\\u0000": [1]')),
    "errors-decision-log": (
        f"{STATE}/errors.json",
        '[{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a", "reason": "r", "decision_log": "\\u0000"}]\n',
    ),
    "todo-comment-and-unread-line": (
        "TODO.md",
        todo_text(LINE_JOHN, "<!-- a" + N + " -->", "- [ ] [Craeted](2026-05-01 09:00) | typo" + N),
    ),
    "proactive-prose": (
        "PROACTIVE.md",
        EXAMPLE_PROACTIVE.read_text().replace("Keep it light", "Keep" + N + " it light"),
    ),
    "state-unknown-member": (
        "memory/heartbeat-state.json",
        '{"todoWatch": {"lastScanAt": "2026-05-04T08:30:00+08:00"}, "mine": "x\\u0000"}\n',
    ),
}


@pytest.mark.parametrize("case", list(KEPT))
def test_a_nul_in_what_hb_keeps_as_written_is_kept_on_both_backends(
    hb_db: Runner, workspace: Path, case: str
) -> None:
    name, text = KEPT[case]
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    hb_db("init")
    write(path, text)
    hb_db("sync")
    files = workspace_files(workspace)
    assert files[name] == text.encode()
    hb_db("sync")  # nothing new to read or to write back
    assert workspace_files(workspace) == files
    if case == "tasks-field-hb-does-not-read":  # the ledger holds them, as JSON
        popped = json.loads(hb_db("pop").stdout)
        assert (popped["note"], popped["k" + N]) == ("x" + N + "y", 1)
