"""hb sql and hb report --format csv|json write rows as they read them: the memory they hold stays
flat in the number of rows."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.reporting import output
from heartbeat.reporting.table import Stream
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
# runs one command as `hb` would; its peak resident memory (KiB) on stderr's last line: VmHWM, which
# (unlike ru_maxrss, which a child inherits from the process it was forked from) is its own
PROBE = """
import sys
from pathlib import Path
from heartbeat.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    if done.code:
        raise
sys.stdout.flush()
status = Path("/proc/self/status").read_text().splitlines()
print(next(line.split()[1] for line in status if line.startswith("VmHWM:")), file=sys.stderr)
"""


def numbers(n: int) -> str:
    """A query answering ``n`` rows of two columns, whatever the ledger holds."""
    return (
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) "
        "SELECT x, 'row ' || x AS label FROM c"
    )


def peak_rss(workspace: Path, out: Path, *args: str) -> int:
    """The peak resident memory (KiB) of ``hb ARGS`` in a fresh interpreter, its stdout in ``out``."""
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    env.pop("HB_DATABASE_URL", None)
    with out.open("w") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
            timeout=300,
        )
    return int(done.stderr.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from Linux's /proc")
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_hb_sql_holds_no_more_for_200000_rows_than_for_2000(
    hb: Runner, workspace: Path, tmp_path: Path, fmt: str
) -> None:
    hb("init")
    answer = tmp_path / "answer"
    small = peak_rss(workspace, answer, "sql", numbers(2_000), "--format", fmt)
    large = peak_rss(workspace, answer, "sql", numbers(200_000), "--format", fmt)
    if fmt == "csv":
        lines = answer.read_text().splitlines()
        assert (len(lines), lines[1], lines[-1]) == (200_001, "1,row 1", "200000,row 200000")
    else:
        rows = json.loads(answer.read_text())
        assert (len(rows), rows[-1]) == (200_000, {"x": 200_000, "label": "row 200000"})
    # holding the rows (or the text) would take tens of MiB more
    assert large < small + 4096, (small, large)


def _notifications(workspace: Path, tasks: int) -> None:
    """One reminder decision for each of ``tasks`` tasks."""
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    with con:
        con.execute("DELETE FROM notifications")
        con.executemany(
            "INSERT INTO notifications (at, local_day, kind, task_id, decision) "
            "VALUES ('2026-05-01 09:00:00.000000', '2026-05-01', 'reminder', ?, 'sent')",
            ((f"task-{i:07d}",) for i in range(tasks)),
        )
    con.close()


Opener = Callable[[Ledger], AbstractContextManager[Stream]]
WRITERS: dict[str, Callable[[Stream, Callable[[str], Any]], None]] = {
    "csv": lambda s, write: output.write_csv(s.names, s.rows, s.zone, write),
    "json": output.write_document,
}


def blocks_while_writing(workspace: Path, open_stream: Opener, fmt: str) -> tuple[int, int]:
    """The most memory blocks Python held above the start while the answer was written (looked at
    on every write), and the rows written."""
    peak = rows = 0
    with Ledger.open(workspace=workspace, now="2026-05-02T00:00:00Z") as ledger:
        start = sys.getallocatedblocks()

        def write(text: str) -> None:
            nonlocal peak, rows
            rows += text.count("\n") if fmt == "csv" else text.count('"task_id": "task-')
            peak = max(peak, sys.getallocatedblocks() - start)

        with open_stream(ledger) as stream:
            WRITERS[fmt](stream, write)
    return peak, rows


def by_task(ledger: Ledger) -> AbstractContextManager[Stream]:
    return ledger.report_stream("notifications", by="task")


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_report_row_per_task_holds_no_more_for_50000_tasks_than_for_2000(
    hb: Runner, workspace: Path, fmt: str
) -> None:
    hb("init")
    _notifications(workspace, 2_000)
    small, _ = blocks_while_writing(workspace, by_task, fmt)
    _notifications(workspace, 50_000)
    large, rows = blocks_while_writing(workspace, by_task, fmt)
    assert rows == (50_001 if fmt == "csv" else 50_000)
    # 50,000 rows held would be some 200,000 blocks more
    assert large < small + 5_000, (small, large)


def traced_peak(workspace: Path, open_stream: Opener, fmt: str) -> tuple[int, int]:
    """The most bytes Python held above the start (tracemalloc) from the report's query to its
    last row written (a report that builds its rows before the first is written counts them
    too), and the rows written."""
    rows = 0

    def write(text: str) -> None:
        nonlocal rows
        rows += text.count("\n") if fmt == "csv" else text.count('"task_id": "task-')

    with Ledger.open(workspace=workspace, now="2026-05-02T00:00:00Z") as ledger:
        tracemalloc.start()
        try:
            with open_stream(ledger) as stream:
                WRITERS[fmt](stream, write)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return peak, rows


def _outcomes(workspace: Path, tasks: int) -> None:
    """One outcome for each of ``tasks`` tasks."""
    con = sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")
    with con:
        con.execute("DELETE FROM outcomes")
        con.executemany(
            "INSERT INTO outcomes (task_id, scope, source, success, completed_at, duration_s) "
            "VALUES (?, '', 'cli', 1, '2026-05-01 09:00:00.000000', ?)",
            ((f"task-{i:07d}", i % 97 / 4) for i in range(tasks)),
        )
    con.close()


@pytest.mark.parametrize("limit", [None, 10])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_outcomes_per_task_hold_no_more_for_50000_tasks_than_for_2000(
    hb: Runner, workspace: Path, fmt: str, limit: int | None
) -> None:
    """The tasks are ranked in the query (--limit too) and read as they come: every task's row
    was built and sorted first, then cut to --limit."""

    def outcomes_by_task(ledger: Ledger) -> AbstractContextManager[Stream]:
        return ledger.report_stream("outcomes", by="task", limit=limit)

    hb("init")
    _outcomes(workspace, 2_000)
    small, _ = traced_peak(workspace, outcomes_by_task, fmt)
    _outcomes(workspace, 50_000)
    large, rows = traced_peak(workspace, outcomes_by_task, fmt)
    assert rows == (limit or 50_000) + (1 if fmt == "csv" else 0)
    # 50,000 rows held would be some 20 MB more
    assert large < small + 2 * 1024 * 1024, (small, large)
