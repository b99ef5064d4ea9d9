"""A sync after a few lines changed reads only those lines; it must agree with a full read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.ops.sync import markdown
from tests.sync.helpers import done_text, read, todo_rows, todo_text, write

N = 300


def line(i: int, text: str | None = None) -> str:
    return f"- [ ] [Created](2026-04-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}), [ChatID](tg:-{i}) | " + (
        text or f"Task {i}"
    )


@pytest.fixture
def led(workspace: Path) -> Iterator[Ledger]:
    write(workspace / "TODO.md", todo_text(*(line(i) for i in range(N))))
    with Ledger.open(workspace=workspace, now="2026-05-01T00:00:00Z") as ledger:
        ledger.sync()
        yield ledger


@pytest.fixture
def targeted_only(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Call it to fail the test if a later sync falls back to reading every line."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a full sync ran where only a few lines changed")

    def arm() -> None:
        monkeypatch.setattr(markdown, "full_sync", refuse)

    return arm


def todo_report(result: dict[str, Any], kind: str = "todo") -> dict[str, Any]:
    [found] = [r for r in result["reports"] if r["kind"] == kind]
    return found


def titles(workspace: Path) -> list[str]:
    return [r["title"] for r in todo_rows(workspace) if r["status"].value == "todo"]


def test_an_edited_line_in_the_middle(
    led: Ledger, workspace: Path, targeted_only: Callable[[], None]
) -> None:
    targeted_only()
    before = {r["title"]: r["id"] for r in todo_rows(workspace)}
    todo = workspace / "TODO.md"
    write(todo, read(todo).replace(line(150), line(150, "Task 150, edited")))
    got = todo_report(led.sync())
    assert got["updated"] == [before["Task 150"]] and got["added"] == [] and got["removed"] == []
    assert titles(workspace)[150] == "Task 150, edited"
    assert led.sync()["changed"] is False


def test_deleted_and_inserted_lines(led: Ledger, workspace: Path, targeted_only: Callable[[], None]) -> None:
    targeted_only()
    before = {r["title"]: r["id"] for r in todo_rows(workspace)}
    todo = workspace / "TODO.md"
    text = read(todo).replace(line(10) + "\n", "")
    text = text.replace(line(200) + "\n", line(200) + "\n" + "- [ ] [Created](2026-04-30 10:00) | Inserted\n")
    text = text.replace(line(250) + "\n", line(250) + "\n- [ ] [Created](2026-04-3 10:00) | typo\n")
    write(todo, text)
    got = todo_report(led.sync())
    assert got["removed"] == [before["Task 10"]]
    assert len(got["added"]) == 1
    # line(i) is line 9 + i; one line above it went, one came: the typo follows at 9 + 250 + 1
    assert got["preserved"] == [f"{todo}:{9 + 250 + 1}: bad timestamp '2026-04-3 10:00' in Created"]
    order = titles(workspace)
    assert order.index("Inserted") == order.index("Task 200") + 1
    assert "Task 10" not in order and len(order) == N
    assert read(todo) == text  # nothing written back


def test_the_runtime_moving_a_line_to_todo_done(
    led: Ledger, workspace: Path, targeted_only: Callable[[], None]
) -> None:
    write(workspace / "TODO.DONE.md", done_text())
    led.sync()  # a new file is read whole
    targeted_only()
    task = next(r for r in todo_rows(workspace) if r["title"] == "Task 42")
    todo = workspace / "TODO.md"
    write(todo, read(todo).replace(line(42) + "\n", ""))
    moved = line(42).replace(
        "- [ ] [Created](2026-04-15 18:42)", "- [x] [Created](2026-04-15 18:42), [Done](2026-04-30 09:00)"
    )
    done = workspace / "TODO.DONE.md"
    write(done, read(done) + moved + "\n")
    result = led.sync()
    assert todo_report(result, "done")["completed"] == [task["id"]]
    assert todo_report(result, "todo")["removed"] == []
    row = next(r for r in todo_rows(workspace) if r["id"] == task["id"])
    assert row["status"].value == "done" and row["extra"]["file"] == "done"


def test_one_of_two_identical_lines_deleted(
    led: Ledger, workspace: Path, targeted_only: Callable[[], None]
) -> None:
    targeted_only()
    twin = "- [ ] [Created](2026-04-29 07:00) | Twin"
    todo = workspace / "TODO.md"
    text = read(todo).replace(line(20) + "\n", line(20) + "\n" + twin + "\n")
    text = text.replace(line(280) + "\n", line(280) + "\n" + twin + "\n")
    write(todo, text)
    led.sync()
    twins = [r for r in todo_rows(workspace) if r["title"] == "Twin"]
    assert len(twins) == 2 and twins[0]["position"] < twins[1]["position"]
    lines = read(todo).split("\n")
    last = len(lines) - 1 - lines[::-1].index(twin)
    write(todo, "\n".join(lines[:last] + lines[last + 1 :]))
    got = todo_report(led.sync())
    assert got["removed"] == [twins[1]["id"]]
    assert [r["id"] for r in todo_rows(workspace) if r["title"] == "Twin"] == [twins[0]["id"]]


def test_a_change_in_the_ledger_too_takes_the_full_path(led: Ledger, workspace: Path) -> None:
    first = todo_rows(workspace)[0]
    led.update(first["id"], title="Changed in the ledger")
    todo = workspace / "TODO.md"
    write(todo, read(todo).replace(line(299), line(299, "Changed in the file")))
    got = todo_report(led.sync())
    assert len(got["updated"]) == 2 and got["written"] is True
    assert "| Changed in the ledger\n" in read(todo) and "| Changed in the file\n" in read(todo)
