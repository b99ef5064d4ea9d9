"""A Markdown sync reads each distinct line of its files once.

The files are read, the document a render starts from is read again, the render checks its
result by reading it, and the warnings of the text written are read from it: four readings of
every line where one serves (heartbeat.formats.todo.lines_remembered). After hb completes an
entry, the sync that moves it to TODO.DONE.md rewrites both files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.formats import todo as fmt
from tests.sync.helpers import done_text, read, report, todo_rows, todo_text, write

N = 200


def _open(i: int) -> str:
    return f"- [ ] [Created](2026-04-{1 + i % 28:02d} 10:{i % 60:02d}), [ChatID](tg:-{i}) | Open {i}"


def _done(i: int) -> str:
    return f"- [x] [Created](2026-03-{1 + i % 28:02d} 09:00), [Done](2026-04-01 10:{i % 60:02d}) | Done {i}"


def test_the_sync_after_hb_done_reads_each_line_once(
    workspace: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace / "TODO.md", todo_text(*(_open(i) for i in range(N))))
    write(workspace / "TODO.DONE.md", done_text(*(_done(i) for i in range(N))))
    with Ledger.open(workspace=workspace, db=db_url, now="2026-05-01T00:00:00Z") as led:
        led.sync()
        target = next(r for r in todo_rows(workspace, db_url) if r["title"] == "Open 7")
        led.done(target["id"])

        reads: Counter[tuple[str, str]] = Counter()
        documents: Counter[str] = Counter()
        read_line, parse = fmt._read_line, fmt.parse

        def counted_parse(text: str, kind: fmt.TodoKind, **options: Any) -> fmt.Document:
            documents[kind.value] += 1
            return parse(text, kind, **options)

        monkeypatch.setattr(fmt, "parse", counted_parse)

        def counted(visible: str, kind: fmt.TodoKind, dialect: str, first: bool) -> Any:
            reads[(visible, kind.value)] += 1
            return read_line(visible, kind, dialect, first)

        monkeypatch.setattr(fmt, "_read_line", counted)
        result = led.sync()

    assert report(result, "done")["completed"] == [target["id"]] and report(result, "done")["written"]
    todo, done = read(workspace / "TODO.md"), read(workspace / "TODO.DONE.md")
    assert "| Open 7\n" not in todo and "| Open 7\n" in done and done.count("- [x] ") == N + 1
    # every entry line of both files was read, and none twice (without the memo: four times)
    assert len(reads) >= 2 * N + 1
    assert max(reads.values()) == 1, reads.most_common(3)
    # each file written is made into a document twice: the text read, to render from, and the
    # text written, which the render reads back (its warnings are that reading's)
    assert documents == {"todo": 2, "done": 2}
