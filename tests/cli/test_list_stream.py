"""hb list --json streams: the same text as one json.dumps of the list, in flat memory. A reader
that stops reading (``| head``) ends hb with 141, whatever the command and however its output
is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.db.rows import TaskRow
from heartbeat.db.status import TaskStatus
from tests.conftest import Runner

# a query of many rows on either backend: more output than a pipe buffers, in every format
MANY_ROWS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
    "SELECT i, 'a row of text that fills the pipe' AS t FROM n"
)

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


def _read_then_close(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Run ``hb ARGV`` (on the test's workspace, HB_WORKSPACE), read the first bytes of its
    output and close the pipe, as ``head`` does; its exit code and standard error."""
    with subprocess.Popen(
        [sys.executable, "-m", "heartbeat", *argv],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(100)
        proc.stdout.close()
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        return proc.returncode, err


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_hb_sql_whose_reader_stops_reading_ends_with_141_in_every_format(db_url: str, fmt: str) -> None:
    """``hb sql ... | head -1``: a table is written whole, and Python dropped the rest of a write
    the closed pipe took part of, silently (exit 0); PostgreSQL's stream, left half-read, made hb
    wait forever for its connection (json, csv)."""
    Runner({"HB_DATABASE_URL": db_url})("init")
    assert _read_then_close(["sql", "--format", fmt, MANY_ROWS], {"HB_DATABASE_URL": db_url}) == (141, b"")


def test_a_whole_table_or_document_whose_reader_stops_reading_ends_with_141(
    hb: Runner, workspace: Path
) -> None:
    """``hb list`` and the drop-in's ``list`` print their text in one write, as ``hb sql`` a table."""
    _fill(workspace, 3000)
    hb("export", "tasks-json", str(workspace / ".agent" / "state" / "tasks.json"))
    for argv in (["list"], ["compat", "heartbeat-py", "list"]):
        assert _read_then_close(argv) == (141, b""), argv


def test_a_non_blocking_standard_output_gets_the_whole_output(hb: Runner, workspace: Path) -> None:
    """A pipe its reader made non-blocking, read slowly: hb waits until it takes the rest, where
    it printed the first 64 KiB and exited 0."""
    import fcntl
    import time

    _fill(workspace, 3000)
    whole = hb("list").stdout.encode("utf-8")
    assert len(whole) > 3 * 65536
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    with os.fdopen(read_end, "rb") as reader:
        proc = subprocess.Popen(
            [sys.executable, "-m", "heartbeat", "list"],
            cwd=workspace,
            stdout=write_end,
            stderr=subprocess.PIPE,
        )
        os.close(write_end)
        time.sleep(0.5)  # hb meets the full pipe
        out = reader.read()
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert (proc.wait(timeout=60), err, len(out)) == (0, b"", len(whole))
        proc.stderr.close()
    assert out == whole


def _hb(workspace: Path, argv: list[str], **streams: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "heartbeat", *argv], cwd=workspace, timeout=60, check=False, **streams
    )  # type: ignore[call-overload]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("n", [1, 3000])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_74(workspace: Path, n: int) -> None:
    """A full disk (/dev/full): one line saying so, exit 74 (EX_IOERR), where hb printed an
    internal error and then a traceback at exit, or exited 120. One task: the output is written
    at exit; 3,000: while the command streams it."""
    _fill(workspace, n)
    with open("/dev/full", "wb") as full:
        done = _hb(workspace, ["list", "--json"], stdout=full, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (
        74,
        b"hb: cannot write standard output: No space left on device\n",
    )


def test_a_closed_standard_output_is_one_line_and_exit_74(workspace: Path) -> None:
    """``hb export proactive - >&-``: one line, exit 74 (a traceback at exit before)."""
    (workspace / "PROACTIVE.md").write_text("---\nfoo: 1\n---\n# Proactive\n")
    done = _hb(
        workspace,
        ["export", "proactive", "-"],
        stdout=None,
        stderr=subprocess.PIPE,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert (done.returncode, done.stderr) == (
        74,
        b"hb: cannot write standard output: it was closed when hb started\n",
    )


def test_a_closed_standard_error_leaves_the_command_and_the_ledger_alone(workspace: Path) -> None:
    """``hb list 2>&-``: the list is printed and hb exits 0 (it was an internal error, exit 70, and
    nothing printed); the descriptor is taken by /dev/null, so the ledger the command opens
    does not become file 2, where a message would have been written into it."""
    _fill(workspace, 2)
    db = workspace / ".agent" / "state" / "heartbeat.db"
    done = _hb(workspace, ["list", "--fields", "id"], stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2))
    assert done.returncode == 0
    assert b"task-00000001" in done.stdout
    done = _hb(workspace, ["show", "task-nope"], stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2))
    assert done.returncode == 1  # the message went nowhere; the code still says what happened
    with Ledger.open(workspace) as ledger:
        assert [t["id"] for t in ledger.list()] == ["task-00000000", "task-00000001"]
    assert b"task-nope" not in db.read_bytes()
