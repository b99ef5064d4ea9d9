"""HTML comment markers in TODO.md / TODO.DONE.md entries: hb reads a comment across lines as
mistermorph does, never loses an entry it cannot move, keeps the lines a comment hides, and
names the line when a comment keeps it from writing a file (FORMATS.md section 1)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import CommentMarkerError, TodoKind, parse, with_entries
from tests.conftest import Runner
from tests.sync.helpers import read, report, todo_rows, write

NOW = "2026-05-02T10:00"
HEADER = "# TODO Work In Progress (WIP)\n\n"
OPENS = "- [ ] [Created](2026-05-01 12:41) | fix the <!-- comment parser\n"
PLAIN = "- [ ] [Created](2026-05-01 12:42) | plain\n"
OLD_DONE = "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | old\n"
ESCAPE = (
    "- [ ] [Created](2026-05-01 12:41) | escape html like <!-- in docs\n"
    "- [ ] [Created](2026-05-01 12:42) | second\n"
    "- [ ] [Created](2026-05-01 12:43) | third --> end\n"
)


@pytest.fixture
def run(hb: Runner) -> Runner:
    hb("init", "--timezone", "UTC", HB_NOW=NOW)
    return hb


def sync(hb: Runner, code: int = 0) -> Any:
    result = hb("sync", "--json", HB_NOW=NOW, code=code)
    return json.loads(result.stdout) if code == 0 else result


def ids(hb: Runner) -> dict[str, str]:
    return {t["title"]: t["id"] for t in hb.json("list", "--all", "--source", "todo")}


def test_a_completed_entry_that_opens_an_unclosed_comment_moves_to_done(run: Runner, workspace: Path) -> None:
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    write(todo, HEADER + OPENS)
    sync(run)
    [task_id] = ids(run).values()
    run("done", task_id, HB_NOW=NOW)

    out = sync(run)

    assert report(out, "done")["completed"] == [task_id]
    assert [report(out, k)["preserved"] for k in ("todo", "done")] == [[], []]
    assert read(todo) == HEADER
    assert read(done) == (
        '---\ncreated_at: "2026-05-02T10:00:00Z"\nupdated_at: "2026-05-02T10:00:00Z"\ndone_count: 1\n---\n\n'
        "# TODO Done\n\n"
        "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 10:00) | fix the <!-- comment parser\n"
    )
    assert sync(run)["changed"] is False
    [row] = todo_rows(workspace)
    assert (row["status"], row["extra"]["file"]) == ("done", "done")


def test_an_entry_the_done_file_cannot_take_keeps_its_line_in_todo(run: Runner, workspace: Path) -> None:
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    write(todo, HEADER + OPENS + PLAIN)
    # a completed entry goes on top: a '<!--' in it would reach this '-->'
    write(done, "# TODO Done\n\n" + OLD_DONE + "<!-- notes -->\n")
    sync(run)
    by_title = ids(run)
    opens, plain = by_title["fix the <!-- comment parser"], by_title["plain"]
    run("done", opens, HB_NOW=NOW)
    run("done", plain, HB_NOW=NOW)

    out = sync(run)

    warning = (
        f"{done}: {opens} not written: the result would not read back as written (an HTML comment "
        f"marker would change which lines are hidden); its line stays at {todo}:3"
    )
    assert report(out, "done")["preserved"] == [warning]
    assert report(out, "done")["completed"] == [plain]
    assert read(todo) == HEADER + OPENS
    assert read(done) == (
        "# TODO Done\n\n- [x] [Created](2026-05-01 12:42), [Done](2026-05-02 10:00) | plain\n"
        + OLD_DONE
        + "<!-- notes -->\n"
    )
    rows = {r["id"]: r for r in todo_rows(workspace)}
    assert rows[opens]["status"] == "done"  # the ledger keeps what the user did
    assert rows[opens]["extra"]["line"] == OPENS.rstrip("\n")  # and knows where the line is
    before = (read(todo), read(done))
    again = run("sync", HB_NOW=NOW)
    assert warning in again.stderr and (read(todo), read(done)) == before

    # once the file can take it, the next sync moves it
    write(done, read(done).replace("<!-- notes -->\n", ""))
    out = sync(run)
    assert report(out, "done")["completed"] == [opens] and report(out, "done")["preserved"] == []
    assert read(todo) == HEADER
    assert read(done) == (
        "# TODO Done\n\n"
        "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 10:00) | fix the <!-- comment parser\n"
        "- [x] [Created](2026-05-01 12:42), [Done](2026-05-02 10:00) | plain\n" + OLD_DONE
    )


def test_a_comment_opened_in_an_entry_joins_the_lines_it_spans_into_that_entry(
    run: Runner, workspace: Path
) -> None:
    """mistermorph cuts '<!-- in docs ... third -->' out before splitting lines: lines 3-5 read
    as the one entry 'escape html like  end' (two spaces: one each side of the comment)."""
    todo = workspace / "TODO.md"
    write(todo, HEADER + ESCAPE)

    out = sync(run)

    assert report(out, "todo")["preserved"] == [
        f"{todo}:3: an HTML comment joins lines 3-5 into this one entry (mistermorph reads them as one line)"
    ]
    assert list(ids(run)) == ["escape html like  end"]
    assert read(todo) == HEADER + ESCAPE
    assert sync(run)["changed"] is False


def test_completing_an_entry_that_spans_lines_keeps_the_comment_and_the_lines_it_hides(
    run: Runner, workspace: Path
) -> None:
    todo = workspace / "TODO.md"
    write(todo, HEADER + ESCAPE)
    sync(run)
    [task_id] = ids(run).values()
    run("done", task_id, HB_NOW=NOW)

    out = sync(run)

    assert report(out, "done")["completed"] == [task_id]
    hidden = ESCAPE.split("<!--", 1)[1].rsplit("-->", 1)[0]
    assert read(todo) == HEADER + "<!--" + hidden + "-->\n"
    assert fmt.parse(read(todo), TodoKind.TODO).entries == []  # as the runtime reads it: nothing
    assert read(workspace / "TODO.DONE.md").endswith(
        "# TODO Done\n\n- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 10:00) | escape html like  end\n"
    )
    [row] = todo_rows(workspace)
    assert (row["status"], row["extra"]["file"]) == ("done", "done")
    assert sync(run)["changed"] is False


def test_an_entry_rewritten_in_place_keeps_the_comments_on_its_line(run: Runner, workspace: Path) -> None:
    """A one-line entry the ledger changed is written with its HTML comments after the new text
    (they were dropped: the line was replaced whole); completed, its line goes whole."""
    todo = workspace / "TODO.md"
    write(
        todo,
        HEADER
        + "- [ ] [Created](2026-05-01 12:41) | alpha <!-- keep me -->\n"
        + "- [ ] [Created](2026-05-01 12:42) | beta <!-- note --> gamma\n",
    )
    sync(run)
    found = ids(run)
    assert set(found) == {"alpha", "beta  gamma"}  # as mistermorph reads them: comments cut
    run("update", found["alpha"], "--title", "alpha2", HB_NOW=NOW)
    run("done", found["beta  gamma"], HB_NOW=NOW)
    out = sync(run)
    assert report(out, "todo")["updated"] == [found["alpha"]]
    assert read(todo) == HEADER + "- [ ] [Created](2026-05-01 12:41) | alpha2 <!-- keep me -->\n"
    assert read(workspace / "TODO.DONE.md").endswith(
        "- [x] [Created](2026-05-01 12:42), [Done](2026-05-02 10:00) | beta  gamma\n"
    )
    assert sync(run)["changed"] is False
    assert ids(run)["alpha2"] == found["alpha"]


def test_with_entries_names_the_line_whose_new_text_would_hide_others() -> None:
    text = HEADER + "- [ ] [Created](2026-05-01 12:41) | first\n- [ ] [Created](2026-05-01 12:42) | b -->\n"
    doc = parse(text, TodoKind.TODO)
    first, second = doc.entries

    with pytest.raises(CommentMarkerError) as caught:
        with_entries(
            doc, [replace(first, content="first <!-- hides b"), second], now=datetime(2026, 5, 2, tzinfo=UTC)
        )

    assert caught.value.line == 3
    assert str(caught.value) == (
        "TODO.md:3: the result would not read back as written: the new text of this entry holds an "
        "HTML comment marker that would change which lines are hidden"
    )
    assert str(caught.value.at_path("/w/TODO.md")).startswith("/w/TODO.md:3: ")
