"""A runtime that edits its file while hb syncs it loses nothing: per file kind and writer style,
a runtime process makes 200 edits while hb writes the same file at least 20 times; afterwards
every entry either side added is in the file or the ledger (0 lost, in every run).

Writer styles: ``replace`` (a temporary file renamed over it: mistermorph, CraftBot),
``in_place`` (``open(path, "w")`` and write: heartbeat.py), ``append`` (the TODO files).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.errors import FileFormatError

EDITS = 200
HB_WRITES = 20

WRITER = r"""
import json, os, sys, time
path, kind, style, edits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def edit(text, n):
    if kind == "tasks-json":
        doc = json.loads(text)
        doc["pending"].append({"id": f"w{n}", "priority": "low", "description": f"from the runtime {n}"})
        return json.dumps(doc, indent=2)
    if kind == "state":
        doc = json.loads(text)
        doc.setdefault("lastChecks", {})[f"w{n}"] = n
        return json.dumps(doc, indent=2)
    if kind == "todo":  # mistermorph's Add puts its entry at the top of the list
        line = f"- [ ] [Created](2026-05-01 12:00) | from the runtime {n}\n"
        if style == "append":
            return line
        head, sep, rest = text.partition("# TODO Work In Progress (WIP)\n\n")
        return head + sep + line + rest
    if kind == "proactive":
        block = (f"### [DAILY] From the runtime {n}\n```yaml\nid: w{n}\nfrequency: daily\n"
                 f"instruction: check {n}\n```\n\n")
        end = "<!-- PROACTIVE_TASKS_END -->"
        return text.replace(end, block + end, 1)
    raise SystemExit(kind)

for n in range(edits):
    while True:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        try:
            new = edit(text, n)
            break
        except ValueError:  # caught the file between two of hb's renames: read again
            time.sleep(0.001)
    if style == "append":
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(new)
    elif style == "replace":
        tmp = path + ".runtime.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(new)
        os.replace(tmp, path)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    time.sleep(0.01)
"""


def _clock() -> Callable[[], datetime]:
    ticks = itertools.count()
    start = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    return lambda: start + timedelta(seconds=next(ticks))


def _race(
    workspace: Path, db: str | None, kind: str, style: str, path: Path, step: Callable[[Ledger, int], None]
) -> Ledger:
    """Run the runtime's writer against hb's ``step`` (a ledger change, then a sync of ``kind``)."""
    ledger = Ledger.open(workspace=workspace, db=db, now=_clock())
    ledger.sync()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), kind, style, str(EDITS)])
    writes = 0
    deadline = time.monotonic() + 180
    try:
        for i in itertools.count():
            if (proc.poll() is not None and writes >= HB_WRITES) or time.monotonic() > deadline:
                break
            step(ledger, i)
            try:
                result = ledger.sync(only=[kind])
            except FileFormatError:  # read between the runtime's truncate and its write: refused
                continue
            writes += sum(1 for r in result["reports"] if r["kind"] == kind and r["written"])
    finally:
        proc.wait(120)
    assert proc.returncode == 0
    ledger.sync()
    assert writes >= HB_WRITES
    return ledger


@pytest.mark.slow
@pytest.mark.parametrize("style", ["replace", "in_place"])
def test_tasks_json(db_url: str, workspace: Path, style: str) -> None:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pending": [], "in_progress": [], "completed": [], "failed": []}, indent=2))
    added: list[str] = []

    def step(ledger: Ledger, i: int) -> None:
        added.append(ledger.add(f"from hb {i}", priority="high")["id"])

    ledger = _race(workspace, db_url, "tasks-json", style, path, step)
    in_file = {
        t["id"]
        for name in ("pending", "in_progress", "completed", "failed")
        for t in json.loads(path.read_text())[name]
    }
    in_ledger = {t["id"] for t in ledger.list(status="all")}
    ledger.close()
    lost = [f"w{n}" for n in range(EDITS) if f"w{n}" not in in_file and f"w{n}" not in in_ledger]
    assert lost == [], f"{len(lost)} of {EDITS} runtime edits lost"
    assert [i for i in added if i not in in_file] == []


@pytest.mark.slow
@pytest.mark.parametrize("style", ["replace", "in_place"])
def test_heartbeat_state_json(db_url: str, workspace: Path, style: str) -> None:
    path = workspace / "memory" / "heartbeat-state.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"proactiveChat": {"enabled": True}, "lastChecks": {}}, indent=2))

    def step(ledger: Ledger, _i: int) -> None:
        ledger.seen()  # a new lastConversationAt for hb to write

    ledger = _race(workspace, db_url, "state", style, path, step)
    ledger.close()
    checks = json.loads(path.read_text())["lastChecks"]
    lost = [n for n in range(EDITS) if checks.get(f"w{n}") != n]
    assert lost == [], f"{len(lost)} of {EDITS} runtime edits lost"


PROACTIVE = """---
version: 1
---

# Proactive

<!-- PROACTIVE_TASKS_START -->
### [DAILY] Briefing
```yaml
id: briefing
frequency: daily
instruction: brief me
```

<!-- PROACTIVE_TASKS_END -->
"""


@pytest.mark.slow
@pytest.mark.parametrize("style", ["replace", "in_place"])
def test_proactive_md(db_url: str, workspace: Path, style: str) -> None:
    path = workspace / "PROACTIVE.md"
    path.write_text(PROACTIVE)

    def step(ledger: Ledger, i: int) -> None:
        ledger.recur_outcome("briefing", result=f"briefed {i}")  # run_count, outcome_history, last_run

    ledger = _race(workspace, db_url, "proactive", style, path, step)
    text = path.read_text()
    in_ledger = {r["id"] for r in ledger.recur_list()}
    ledger.close()
    lost = [n for n in range(EDITS) if f"id: w{n}\n" not in text and f"w{n}" not in in_ledger]
    assert lost == [], f"{len(lost)} of {EDITS} runtime edits lost"


TODO = (
    '---\ncreated_at: "2026-05-01T03:41:00Z"\nupdated_at: "2026-05-01T03:41:00Z"\nopen_count: 0\n---\n\n'
    "# TODO Work In Progress (WIP)\n\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("style", ["replace", "in_place", "append"])
def test_todo_md(db_url: str, workspace: Path, style: str) -> None:
    path = workspace / "TODO.md"
    path.write_text(TODO)
    added: list[str] = []

    def step(ledger: Ledger, i: int) -> None:
        added.append(ledger.add_todo(f"from hb {i}")["title"])

    ledger = _race(workspace, db_url, "todo", style, path, step)
    text = path.read_text()
    titles = {t["title"] for t in ledger.list(status="all")}
    ledger.close()
    lost = [
        n
        for n in range(EDITS)
        if f"| from the runtime {n}\n" not in text and f"from the runtime {n}" not in titles
    ]
    assert lost == [], f"{len(lost)} of {EDITS} runtime edits lost"
    assert [t for t in added if f"| {t}\n" not in text] == []


def test_a_read_lease_is_taken_on_linux_and_never_asked_for_where_python_names_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hb waits out a writer with a read lease, which only Linux has. It sent Linux's command
    numbers (1024, 10) to fcntl on every system: on macOS and the BSDs those numbers are other
    commands. They come from Python's fcntl now, which names them on Linux only; elsewhere hb
    reads after the caller's settling time, as where a lease is refused."""
    import fcntl
    import os
    import sys

    from heartbeat.ops.sync.files import no_writers

    path = tmp_path / "TODO.md"
    path.write_text("- [ ] one\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        if sys.platform.startswith("linux"):
            with no_writers(fd) as leased:
                assert leased  # a file nobody holds open to write, owned by this user
        sent: list[int] = []
        monkeypatch.setattr(fcntl, "fcntl", lambda _fd, command, *_: sent.append(command))
        monkeypatch.delattr(fcntl, "F_SETLEASE", raising=False)
        started = time.monotonic()
        with no_writers(fd, fallback=0.05) as leased:
            assert not leased
        assert time.monotonic() - started >= 0.05
        assert sent == []  # no command at all: none of Linux's numbers sent
    finally:
        os.close(fd)
