"""hb list --json streams: the same text as one json.dumps of the list, in flat memory."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.db.rows import TaskRow
from heartbeat.db.status import TaskStatus
from tests.conftest import Runner

NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _fill(workspace: Path, n: int) -> None:
    with Ledger.open(workspace) as ledger, ledger.ctx.write() as db:
        db.add_all(
            [
                TaskRow(
                    id=f"task-{i:08x}",
                    title=f"task number {i} — ünïcode",
                    status=TaskStatus.TODO,
                    source="cli",
                    created_at=NOW,
                    updated_at=NOW,
                    position=i,
                    extra={"n": i},
                )
                for i in range(n)
            ]
        )


def test_the_streamed_json_is_the_text_of_the_whole_list(hb: Runner, workspace: Path) -> None:
    _fill(workspace, 1203)  # more than two batches
    hb("update", "task-00000001", "--after", "task-00000002")

    out = hb("list", "--json").stdout

    with Ledger.open(workspace) as ledger:
        whole = ledger.list()
    assert out == json.dumps(whole, ensure_ascii=False, indent=2, default=str) + "\n"
    assert json.loads(out)[1]["after"] == ["task-00000002"]
    lean = hb("list", "--json", "--fields", "id,status", "--limit", "2").stdout
    assert json.loads(lean) == [
        {"id": "task-00000000", "status": "todo"},
        {"id": "task-00000001", "status": "todo"},
    ]
    assert hb("list", "--json", "--status", "done").stdout == "[]\n"


def test_listing_holds_one_batch_of_tasks_at_a_time(workspace: Path) -> None:
    _fill(workspace, 20_000)
    with Ledger.open(workspace) as ledger:
        tracemalloc.start()
        try:
            count = sum(1 for _ in ledger.iter_list())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert count == 20_000
    # the 20,000 task objects held at once take over 80 MB; one batch of 500 about 2
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


def test_a_reader_that_stops_reading_ends_hb_quietly_with_141(workspace: Path) -> None:
    """``hb list --json | head``: when the reader closes the pipe, hb stops with 141 (what a shell
    shows for a process SIGPIPE ended) and nothing on stderr, not an internal error (70)."""
    import subprocess
    import sys

    _fill(workspace, 3000)  # more output than a pipe buffers
    for argv in (["list", "--json"], ["sql", "--format", "csv", "SELECT * FROM tasks"]):
        with subprocess.Popen(
            [sys.executable, "-m", "heartbeat", *argv],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            assert proc.stdout.read(100)  # the first bytes, then the reader goes away
            proc.stdout.close()
            err = proc.stderr.read()
            assert (proc.wait(timeout=60), err) == (141, b""), argv


def test_a_broken_pipe_that_is_not_stdout_is_still_an_internal_error(
    hb: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ledger import Ledger

    def broken(*args: object, **kwargs: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(Ledger, "iter_list", broken)
    result = hb("list", code=70)
    assert result.stderr.startswith("hb: internal error: BrokenPipeError")
