#!/usr/bin/env python3
"""hb's benchmark: measured in one run on this machine, with ratios against raw sqlite3.

    python scripts/bench.py                 # everything (a few minutes)
    python scripts/bench.py --only queue    # one section: queue, processes, markdown, report
    python scripts/bench.py --quick         # smaller sizes, for a smoke run

Prints a table per section and one JSON line per measurement (prefix "JSON ").
Uses only the standard library and hb itself; whole-process timings run the
installed ``hb`` next to the Python interpreter's own start-up as the floor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heartbeat import Ledger  # noqa: E402

RESULTS: list[dict[str, Any]] = []
PRIORITIES = ("critical", "high", "medium", "low")


def record(section: str, name: str, value: float, unit: str, **extra: Any) -> None:
    row = {"section": section, "name": name, "value": round(value, 6), "unit": unit, **extra}
    RESULTS.append(row)
    print("JSON " + json.dumps(row), flush=True)


def table(title: str, rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n== {title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    print(flush=True)


def hb_command() -> list[str]:
    exe = Path(sys.executable).with_name("hb")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "heartbeat"]


# --- workloads ----------------------------------------------------------------------


def tasks_json_doc(n: int) -> dict[str, Any]:
    return {
        "pending": [
            {
                "id": f"task-{i:07d}",
                "priority": PRIORITIES[i % 4],
                "description": f"job {i}",
                "assigned_skill": "deep-research",
                "created_at": "2026-04-25T12:00:00Z",
                "completed_at": None,
            }
            for i in range(n)
        ],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }


def make_ledger(n: int) -> Path:
    """A workspace whose ledger holds ``n`` pending tasks (imported from tasks.json)."""
    ws = Path(tempfile.mkdtemp(prefix="hb-bench-"))
    src = ws / "seed-tasks.json"
    src.write_text(json.dumps(tasks_json_doc(n)))
    with Ledger.open(workspace=ws) as ledger:
        ledger.import_file("tasks-json", src)
    return ws


def raw_baseline_db(n: int) -> str:
    """The minimal queue the raw baseline claims from: one table, one partial index."""
    path = os.path.join(tempfile.mkdtemp(prefix="hb-raw-"), "queue.db")
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(
        "CREATE TABLE queue (pk INTEGER PRIMARY KEY, id TEXT NOT NULL, status TEXT NOT NULL, "
        "priority_rank INTEGER NOT NULL, position INTEGER NOT NULL, claimed_at TEXT, claimed_by TEXT, "
        "payload TEXT)"
    )
    con.execute("CREATE INDEX ix_ready ON queue (priority_rank, position, pk) WHERE status = 'todo'")
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO queue (id, status, priority_rank, position, payload) VALUES (?, 'todo', ?, ?, ?)",
        [(f"task-{i:07d}", i % 4, i, json.dumps({"description": f"job {i}"})) for i in range(n)],
    )
    con.execute("COMMIT")
    con.close()
    return path


def raw_drain(path: str, worker: str, limit: int | None = None) -> list[str]:
    """The minimal claim: BEGIN IMMEDIATE; UPDATE ... RETURNING; COMMIT; then a completing UPDATE."""
    con = sqlite3.connect(path, isolation_level=None, timeout=60)
    done = raw_drain_on(con, worker, limit)
    con.close()
    return done


def raw_drain_on(con: sqlite3.Connection, worker: str, limit: int | None = None) -> list[str]:
    """raw_drain on an open connection."""
    con.execute("PRAGMA synchronous=NORMAL")
    done: list[str] = []
    while limit is None or len(done) < limit:
        con.execute("BEGIN IMMEDIATE")
        row = con.execute(
            "UPDATE queue SET status = 'doing', claimed_at = ?, claimed_by = ? WHERE pk = "
            "(SELECT pk FROM queue WHERE status = 'todo' ORDER BY priority_rank, position, pk LIMIT 1) "
            "RETURNING pk, id, payload",
            (datetime.now(UTC).isoformat(), worker),
        ).fetchone()
        con.execute("COMMIT")
        if row is None:
            break
        con.execute("UPDATE queue SET status = 'done' WHERE pk = ?", (row[0],))
        done.append(row[1])
    return done


def hb_drain(workspace: str, worker: str, limit: int | None = None, fenced: bool = False) -> list[str]:
    """pop+complete through the API; ``fenced``: each completion given its claim (`--claim`)."""
    done: list[str] = []
    with Ledger.open(workspace=workspace) as ledger:
        while limit is None or len(done) < limit:
            task = ledger.pop(worker=worker)
            if task is None:
                break
            ledger.complete(task["id"], outcome={"ok": True}, claim=task["claim"] if fenced else None)
            done.append(task["id"])
    return done


def _in_turns(
    n: int, first: Callable[[str], int], second: Callable[[str], int], rounds: int = 3
) -> tuple[float, float, float]:
    """pop+complete pairs/s of two drains (each given a fresh ledger of ``n`` tasks, returning how
    many it completed), run in turns (A B B A ...) so that the machine's drift weighs on both
    alike: the median of each, and the median of the ratios A/B of the drains run side by side."""
    rates: tuple[list[float], list[float]] = ([], [])
    for i in range(rounds * 2):
        side = 1 if i % 4 in (1, 2) else 0
        ws = make_ledger(n)
        start = time.perf_counter()
        done = (first, second)[side](str(ws))
        rates[side].append(done / (time.perf_counter() - start))
        shutil.rmtree(ws, ignore_errors=True)
        assert done == n, "a drain lost tasks"
    ratios = [a / b for a, b in zip(*rates, strict=True)]
    return statistics.median(rates[0]), statistics.median(rates[1]), statistics.median(ratios)


def _fenced_rates(n: int) -> tuple[float, float, float]:
    """pop+complete pairs/s with and without the claim check (`--claim`), and their ratio."""
    return _in_turns(n, lambda ws: len(hb_drain(ws, "w0", fenced=True)), lambda ws: len(hb_drain(ws, "w0")))


def _api_and_floor_rates(n: int, log: Sequence[Any]) -> tuple[float, float, float]:
    """pop+complete pairs/s through the API and of its statements replayed (``log``), and the
    API's share of the floor."""
    return _in_turns(n, lambda ws: len(hb_drain(ws, "w0")), lambda ws: replay_drain(ws, log))


def floor_drain(workspace: str, worker: str) -> list[str]:
    """hb's own statements for pop+complete, replayed on raw sqlite3 with no Python logic between.

    The same SQL text :mod:`heartbeat.db.queue` runs (the checked claim; the completing update,
    the claim it closed cleared, and the outcome row built from the task's), on a connection with
    hb's pragmas and constant parameters: what the ledger's write set costs the database alone.
    """
    from heartbeat.db.queue import Dialect
    from heartbeat.db.sqlite import connect

    sql = Dialect("sqlite").sql
    claim, run, done, unclaim, outcome = (
        sql("claim_checked_legacy"),
        sql("run"),
        sql("done_short_by_id"),
        sql("unclaim"),
        sql("outcome_of_task"),
    )
    at, until = "2026-04-25 12:00:00.000000", "2026-04-25 12:30:00.000000"
    con = connect(Path(workspace) / ".agent" / "state" / "heartbeat.db")
    claim_p = {"scope": "", "now": at, "worker": worker, "lease_until": until, "claim": "0" * 24}
    run_p: dict[str, Any] = {"scope": None, "status": "empty", "now": at, "worker": worker, "detail": None}
    done_ids: list[str] = []
    while True:
        con.execute("BEGIN IMMEDIATE")
        row = con.execute(claim, claim_p).fetchone()
        if row is None:
            con.execute(run, {**run_p, "kind": "pop", "task_id": None, "record": None})
            con.execute("COMMIT")
            break
        con.execute("COMMIT")
        con.execute("BEGIN IMMEDIATE")
        closed = con.execute(done, {"now": at, "id": row[1]}).fetchone()[3]
        con.execute(unclaim, {"pk": row[0]})
        outcome_p = {"pk": row[0], "true": True, "result": '{"ok": true}', "now": at, "duration_s": 0.0}
        con.execute(outcome, {**outcome_p, "claim": closed})
        con.execute("COMMIT")
        done_ids.append(row[1])
    con.close()
    return done_ids


class _RecordingCursor:
    """A cursor that notes each statement with its parameters in ``log`` before running it."""

    def __init__(self, cur: Any, log: list[Any]) -> None:
        self._cur = cur
        self._log = log

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._log.append((sql, dict(params) if isinstance(params, dict) else params))
        self._cur.execute(sql, params)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


class _RecordingConnection:
    """The ledger's driver connection, noting every statement, its parameters and each commit."""

    def __init__(self, raw: Any, log: list[Any]) -> None:
        self._raw = raw
        self._log = log

    def cursor(self) -> _RecordingCursor:
        return _RecordingCursor(self._raw.cursor(), self._log)

    def commit(self) -> None:
        self._log.append(None)
        self._raw.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def recorded_drain(workspace: str, worker: str) -> list[Any]:
    """An API drain (as :func:`hb_drain`) that notes what it sent the database: each statement
    with hb's own parameters (its times, tokens, last-run records), and each commit (None)."""
    log: list[Any] = []
    with Ledger.open(workspace=workspace) as ledger:
        ledger.ctx.raw = _RecordingConnection(ledger.ctx.raw, log)
        while (task := ledger.pop(worker=worker)) is not None:
            ledger.complete(task["id"], outcome={"ok": True})
        ledger.ctx.raw = ledger.ctx.raw._raw
    return log


def replay_drain(
    workspace: str, log: Sequence[Any], skip: tuple[str, ...] = (), drop: tuple[str, ...] = ()
) -> int:
    """``log`` (from :func:`recorded_drain` on an identical ledger) replayed on raw sqlite3 with
    hb's pragmas and nothing between the statements: what the API's own write set costs the
    database alone. Returns how many tasks were completed. ``skip``: statements that start so are
    left out; ``drop``: indexes dropped first (what the floor would be without them)."""
    from heartbeat.db.sqlite import connect

    con = connect(Path(workspace) / ".agent" / "state" / "heartbeat.db")
    for index in drop:
        con.execute(f"DROP INDEX {index}")
    cur = con.cursor()
    for entry in log:
        if entry is None:
            con.commit()
        elif not entry[0].startswith(skip):
            cur.execute(*entry).fetchall()
    done = con.execute("SELECT count(*) FROM tasks WHERE status = 'done'").fetchone()[0]
    con.close()
    return int(done)


_REPORTING_INDEXES = (
    "ix_outcomes_task_pk",
    "ix_outcomes_completed_at_duration_s",
    "ix_outcomes_scope_skill_source_duration_s",
)
FLOOR_PARTS = (
    ("without the outcome's three indexes", (), _REPORTING_INDEXES),
    ("without the outcome row", ("INSERT INTO outcomes",), ()),
    ("with only the claim and the completing update", ("INSERT",), ()),
)


def _floor_parts(n: int, log: Sequence[Any], raw_rate: float) -> list[tuple[str, str, str, str]]:
    """Where the floor goes: the same replay with parts of the write set left out, each on a
    fresh ledger of ``n`` tasks. With no Python at all, what would each design reach of raw?"""
    rows = []
    for name, skip, drop in FLOOR_PARTS:
        ws = make_ledger(n)
        start = time.perf_counter()
        done = replay_drain(str(ws), log, skip, drop)
        rate = done / (time.perf_counter() - start)
        shutil.rmtree(ws, ignore_errors=True)
        assert done == n, "a replay lost tasks"
        key = name.replace("'", "").replace(" ", "_")
        record("queue", f"floor_{key}_pairs_per_s", rate, "pairs/s", vs_raw=round(rate / raw_rate, 3))
        rows.append((f"  the floor {name}", f"{rate:,.0f}", f"{rate / raw_rate:.2f}", ""))
    return rows


def _pool_drain(fn: Callable[[str, str], list[str]], target: str, workers: int) -> tuple[float, list[str]]:
    ctx = mp.get_context("spawn")
    start = time.perf_counter()
    with ctx.Pool(workers) as pool:
        parts = pool.starmap(fn, [(target, f"w{i}") for i in range(workers)])
    elapsed = time.perf_counter() - start
    return elapsed, [tid for part in parts for tid in part]


# --- sections -------------------------------------------------------------------------


def bench_queue(n: int) -> None:
    """1. pop+complete pairs/s through the Python API vs raw sqlite3 (one process)."""
    raw = raw_baseline_db(n)
    start = time.perf_counter()
    raw_done = raw_drain(raw, "w0")
    raw_rate = len(raw_done) / (time.perf_counter() - start)

    # the floor: the statements and parameters the API sent, noted on one ledger and replayed on
    # an identical one with nothing between them (what Python between the statements costs)
    log_ws = make_ledger(n)
    log = recorded_drain(str(log_ws), "w0")
    shutil.rmtree(log_ws, ignore_errors=True)
    hb_rate, replay_rate, of_floor = _api_and_floor_rates(n, log)
    ratio = hb_rate / raw_rate
    parts = _floor_parts(n, log, raw_rate)
    # the same statements with small constant parameters (a one-key record, one time)
    floor_ws = make_ledger(n)
    start = time.perf_counter()
    floor_done = floor_drain(str(floor_ws), "w0")
    floor_rate = len(floor_done) / (time.perf_counter() - start)
    shutil.rmtree(floor_ws, ignore_errors=True)
    assert len(floor_done) == len(raw_done) == n, "a drain lost tasks"
    fenced_rate, plain_rate, fencing = _fenced_rates(n // 2)
    record("queue", "raw_sqlite3_pairs_per_s", raw_rate, "pairs/s", tasks=n)
    record("queue", "hb_statements_replayed_pairs_per_s", replay_rate, "pairs/s", tasks=n)
    record("queue", "hb_statements_small_parameters_pairs_per_s", floor_rate, "pairs/s", tasks=n)
    record("queue", "hb_api_pairs_per_s", hb_rate, "pairs/s", tasks=n)
    record("queue", "hb_statements_vs_raw", replay_rate / raw_rate, "ratio")
    record("queue", "hb_api_vs_raw", ratio, "ratio", target=">= 0.5")
    record("queue", "hb_api_vs_hb_statements", of_floor, "ratio", target=">= 0.8")
    record("queue", "hb_api_pairs_per_s_without_claim", plain_rate, "pairs/s", tasks=n // 2)
    record("queue", "hb_api_pairs_per_s_with_claim", fenced_rate, "pairs/s", tasks=n // 2)
    record("queue", "hb_api_with_claim_vs_without", fencing, "ratio", target=">= 0.95")
    raw_pages = _raw_pages_per_pair()
    pop_pages, complete_pages = _hb_pages_per_operation()
    record("queue", "raw_sqlite3_pages_per_pair", raw_pages, "pages")
    record("queue", "hb_api_pages_per_pop", pop_pages, "pages")
    record("queue", "hb_api_pages_per_complete", complete_pages, "pages")
    table(
        f"1. pop+complete, one process, {n} tasks",
        [
            (
                "raw sqlite3 (BEGIN IMMEDIATE; UPDATE..RETURNING; COMMIT; UPDATE)",
                f"{raw_rate:,.0f}",
                "1.00",
                f"{raw_pages:.1f}",
            ),
            (
                "hb's statements with small constant parameters, on raw sqlite3",
                f"{floor_rate:,.0f}",
                f"{floor_rate / raw_rate:.2f}",
                "",
            ),
            (
                "hb's statements and parameters replayed on raw sqlite3 (the floor; median of 3)",
                f"{replay_rate:,.0f}",
                f"{replay_rate / raw_rate:.2f}",
                f"{pop_pages + complete_pages:.1f}",
            ),
            *parts,
            (
                "hb Ledger API (claim; completion + outcome row; median of 3)",
                f"{hb_rate:,.0f}",
                f"{ratio:.2f}",
                f"{pop_pages:.1f} + {complete_pages:.1f}; {of_floor:.2f} of the floor (target >= 0.8)",
            ),
            (
                f"hb Ledger API, complete without --claim (median of 3, {n // 2:,} tasks)",
                f"{plain_rate:,.0f}",
                f"{plain_rate / raw_rate:.2f}",
                "",
            ),
            (
                f"hb Ledger API, complete --claim: fenced (median of 3, {n // 2:,} tasks)",
                f"{fenced_rate:,.0f}",
                f"{fenced_rate / raw_rate:.2f}",
                f"with / without {fencing:.3f} (target >= 0.95)",
            ),
        ],
        ["implementation", "pairs/s", "vs raw", "WAL pages per pair"],
    )


_FRAME = 4096 + 24  # a WAL frame: one page and its header


def _wal_growth(wal: Path, before: int) -> int:
    return (wal.stat().st_size if wal.exists() else 0) - before


def _raw_pages_per_pair(pairs: int = 500) -> float:
    """Pages the raw baseline writes per pop+complete (WAL growth, no checkpoint in between)."""
    path = Path(raw_baseline_db(pairs + 100))
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path.with_name(path.name + "-wal")
    before = wal.stat().st_size if wal.exists() else 0
    raw_drain_on(con, "w0", pairs)
    grown = _wal_growth(wal, before)
    con.close()
    shutil.rmtree(path.parent, ignore_errors=True)
    return grown / _FRAME / pairs


def _hb_pages_per_operation(pairs: int = 500) -> tuple[float, float]:
    """Pages the API writes per pop and per complete (WAL growth, no checkpoint in between)."""
    ws = make_ledger(pairs + 100)
    wal = ws / ".agent" / "state" / "heartbeat.db-wal"
    pops = completes = 0
    with Ledger.open(workspace=ws) as ledger:
        ledger.raw.execute("PRAGMA wal_autocheckpoint = 0")
        ledger.raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for _ in range(pairs):
            before = _wal_growth(wal, 0)
            task = ledger.pop(worker="w0")
            assert task is not None
            middle = _wal_growth(wal, 0)
            ledger.complete(task["id"], outcome={"ok": True})
            pops += middle - before
            completes += _wal_growth(wal, middle)
    shutil.rmtree(ws, ignore_errors=True)
    return pops / _FRAME / pairs, completes / _FRAME / pairs


def bench_workers(n: int, workers: int = 4) -> None:
    """2. the same with several worker processes: throughput, duplicates, losses."""
    raw = raw_baseline_db(n)
    raw_time, raw_ids = _pool_drain(raw_drain, raw, workers)
    ws = make_ledger(n)
    hb_time, hb_ids = _pool_drain(hb_drain, str(ws), workers)
    rows = []
    for name, elapsed, ids in (("raw sqlite3", raw_time, raw_ids), ("hb Ledger API", hb_time, hb_ids)):
        dups = len(ids) - len(set(ids))
        lost = n - len(set(ids))
        rate = len(ids) / elapsed
        key = "raw" if name.startswith("raw") else "hb"
        record("workers", f"{key}_pairs_per_s", rate, "pairs/s", workers=workers, tasks=n)
        record("workers", f"{key}_duplicates", dups, "tasks")
        record("workers", f"{key}_lost", lost, "tasks")
        rows.append((name, f"{rate:,.0f}", dups, lost))
    ratio = (len(hb_ids) / hb_time) / (len(raw_ids) / raw_time)
    record("workers", "hb_vs_raw", ratio, "ratio", workers=workers)
    rows.append(("ratio hb / raw", f"{ratio:.2f}", "", ""))
    table(
        f"2. pop+complete, {workers} processes, {n} tasks",
        rows,
        ["implementation", "pairs/s", "dups", "lost"],
    )
    shutil.rmtree(ws, ignore_errors=True)


def _pop_latency(ws: Path, pops: int) -> float:
    samples = []
    with Ledger.open(workspace=ws) as ledger:
        ledger.pop(worker="warm")
        for _ in range(pops):
            start = time.perf_counter()
            task = ledger.pop(worker="lat")
            samples.append(time.perf_counter() - start)
            assert task is not None
            ledger.complete(task["id"])
    return statistics.median(samples)


def bench_depth(small: int, large: int, pops: int = 300) -> None:
    """3. pop latency with a small vs a large ledger (flat is the goal)."""
    lat = {}
    for n in (small, large):
        ws = make_ledger(n)
        lat[n] = _pop_latency(ws, pops)
        record("depth", f"pop_median_{n}", lat[n] * 1e6, "us", tasks=n)
        shutil.rmtree(ws, ignore_errors=True)
    ratio = lat[large] / lat[small]
    record("depth", "pop_large_vs_small", ratio, "ratio", target="<= 1.3")
    table(
        "3. pop latency by queue depth (median)",
        [
            (f"{small:,} tasks", f"{lat[small] * 1e6:.0f}"),
            (f"{large:,} tasks", f"{lat[large] * 1e6:.0f}"),
            ("ratio", f"{ratio:.2f}"),
        ],
        ["ledger", "us per pop"],
    )


def _median_runs(argv: list[str], runs: int, env: dict[str, str], cwd: Path) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_process(runs: int = 20) -> None:
    """4. hb pop + hb complete as whole processes, next to the interpreter's floor."""
    ws = make_ledger(runs * 2 + 10)
    env = {**os.environ, "HB_WORKSPACE": str(ws)}
    floor = _median_runs([sys.executable, "-c", "import sqlite3"], runs, env, ws)
    times_pop, times_complete = [], []
    hb = hb_command()
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([*hb, "pop"], env=env, cwd=ws, capture_output=True, text=True, check=True)
        times_pop.append(time.perf_counter() - start)
        task_id = json.loads(out.stdout)["id"]
        start = time.perf_counter()
        subprocess.run([*hb, "complete", task_id], env=env, cwd=ws, capture_output=True, check=True)
        times_complete.append(time.perf_counter() - start)
    pop_ms, complete_ms = statistics.median(times_pop) * 1e3, statistics.median(times_complete) * 1e3
    help_ms = _median_runs([*hb, "--help"], runs, env, ws) * 1e3
    record("process", "python_floor_ms", floor * 1e3, "ms")
    record("process", "hb_help_ms", help_ms, "ms")
    record("process", "hb_pop_ms", pop_ms, "ms", vs_floor=round(pop_ms / (floor * 1e3), 2))
    record("process", "hb_complete_ms", complete_ms, "ms", vs_floor=round(complete_ms / (floor * 1e3), 2))
    table(
        f"4. whole processes (median of {runs})",
        [
            ('python -c "import sqlite3" (floor)', f"{floor * 1e3:.1f}", "1.00"),
            ("hb --help", f"{help_ms:.1f}", f"{help_ms / (floor * 1e3):.2f}"),
            ("hb pop", f"{pop_ms:.1f}", f"{pop_ms / (floor * 1e3):.2f}"),
            ("hb complete ID", f"{complete_ms:.1f}", f"{complete_ms / (floor * 1e3):.2f}"),
        ],
        ["command", "ms", "vs floor"],
    )
    _import_profile(hb, env, ws)
    shutil.rmtree(ws, ignore_errors=True)


def _import_profile(hb: list[str], env: dict[str, str], ws: Path) -> None:
    """Where `hb pop`'s start-up goes: the top-level packages by cumulative import time."""
    cmd = [sys.executable, "-X", "importtime", "-m", "heartbeat", "pop"]
    out = subprocess.run(cmd, env=env, cwd=ws, capture_output=True, text=True, check=False)
    totals: dict[str, int] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line.split(":", 1)[1].split("|")]
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name = parts[2]
        if name.startswith(" ") or name != name.lstrip():
            continue
        top = name.split(".")[0]
        totals[top] = max(totals.get(top, 0), int(parts[1]))
    rows = sorted(totals.items(), key=lambda kv: -kv[1])[:8]
    for name, us in rows:
        record("process", f"import_{name}_ms", us / 1e3, "ms")
    table(
        "   where hb pop's start-up goes (python -X importtime, top-level, cumulative)",
        [(n, f"{us / 1e3:.1f}") for n, us in rows],
        ["package", "ms"],
    )


def json_script_pop(path: Path) -> dict[str, Any] | None:
    """A faithful model of heartbeat.py's pop: read the file, sort, move, rewrite it whole."""
    data = json.loads(path.read_text())
    rank = {p: i for i, p in enumerate(PRIORITIES)}
    pending = sorted(data["pending"], key=lambda t: rank.get(t.get("priority"), 2))
    if not pending:
        return None
    task = pending[0]
    data["pending"].remove(task)
    data["in_progress"].append(task)
    path.write_text(json.dumps(data, indent=2))
    return task


def json_script_complete(path: Path, task_id: str) -> None:
    data = json.loads(path.read_text())
    task = next(t for t in data["in_progress"] if t["id"] == task_id)
    data["in_progress"].remove(task)
    task["completed_at"] = datetime.now(UTC).isoformat() + "Z"  # the script's +00:00Z, faithfully
    data["completed"].append(task)
    path.write_text(json.dumps(data, indent=2))


def bench_json_script(n: int) -> None:
    """5. the same workload through the JSON-file script model, at n tasks."""
    ws = Path(tempfile.mkdtemp(prefix="hb-json-"))
    path = ws / "tasks.json"
    path.write_text(json.dumps(tasks_json_doc(n), indent=2))
    start = time.perf_counter()
    count = 0
    while (task := json_script_pop(path)) is not None:
        json_script_complete(path, task["id"])
        count += 1
    json_rate = count / (time.perf_counter() - start)
    hb_ws = make_ledger(n)
    start = time.perf_counter()
    hb_rate = len(hb_drain(str(hb_ws), "w0")) / (time.perf_counter() - start)
    record("json_script", "json_script_pairs_per_s", json_rate, "pairs/s", tasks=n)
    record("json_script", "hb_pairs_per_s", hb_rate, "pairs/s", tasks=n)
    record("json_script", "hb_vs_json_script", hb_rate / json_rate, "ratio")
    table(
        f"5. JSON-file script model vs hb, {n} tasks (one process)",
        [
            ("heartbeat.py model (read, move, rewrite)", f"{json_rate:,.0f}", "1.00"),
            ("hb Ledger API", f"{hb_rate:,.0f}", f"{hb_rate / json_rate:.1f}"),
        ],
        ["implementation", "pairs/s", "vs script"],
    )
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(hb_ws, ignore_errors=True)


_TODO_HEAD = (
    '---\ncreated_at: "2026-05-01T00:00:00Z"\nupdated_at: "2026-05-01T00:00:00Z"\n'
    "{key}: {n}\n---\n\n# {title}\n\n"
)


def todo_text(entries: int) -> str:
    """A TODO.md of ``entries`` lines, in the runtime's format."""
    lines = [
        f"- [ ] [Created](2026-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}), "
        f"[ChatID](tg:-100{i % 97}) | Task {i}: follow up with [contact {i}](tg:@user{i}) | ref {i}\n"
        for i in range(entries)
    ]
    return _TODO_HEAD.format(key="open_count", n=entries, title="TODO Work In Progress (WIP)") + "".join(
        lines
    )


def recur_text(rules: int) -> str:
    """A TODO.RECUR.md of ``rules`` lines, in the runtime's format."""
    repeats = ("daily", "weekly", "every 3 days", "every 6 hours")
    zones = ("", ", [TZ](Asia/Tokyo)", ", [TZ](America/New_York)", ", [TZ](UTC)")
    lines = [
        f"- [ ] [Next](2026-05-{1 + i % 28:02d} {i % 24:02d}:00), [Repeat]({repeats[i % 4]})"
        f"{zones[i % 4]} | Rule {i}\n"
        for i in range(rules)
    ]
    return _TODO_HEAD.format(key="recurring_count", n=rules, title="TODO Recurring") + "".join(lines)


def todo_files(ws: Path, entries: int, rules: int) -> None:
    """A TODO.md of ``entries`` lines and a TODO.RECUR.md of ``rules`` lines, in the runtime's format."""
    (ws / "TODO.md").write_text(todo_text(entries))
    (ws / "TODO.RECUR.md").write_text(recur_text(rules))


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed


def bench_markdown(entries: int, rules: int, runs: int) -> None:
    """6. import of a large TODO.md + TODO.RECUR.md, a no-change sync, a one-line change."""
    hb = hb_command()
    imports, nochange, oneline = [], [], []
    for _ in range(runs):
        ws = Path(tempfile.mkdtemp(prefix="hb-md-"))
        todo_files(ws, entries, rules)
        env = {**os.environ, "HB_WORKSPACE": str(ws), "HB_NOW": "2026-05-01T00:00:00Z"}
        subprocess.run([*hb, "init"], env=env, cwd=ws, capture_output=True, check=True)
        imports.append(_timed([*hb, "sync"], env, ws))
        nochange.append(_timed([*hb, "sync"], env, ws))
        todo = ws / "TODO.md"
        text = todo.read_text()
        todo.write_text(text.replace(f"Task {entries // 2}:", f"Task {entries // 2} (edited):", 1))
        oneline.append(_timed([*hb, "sync"], env, ws))
        shutil.rmtree(ws, ignore_errors=True)
    rows = []
    for name, samples, target in (
        (f"first sync: import {entries:,} TODO.md + {rules:,} TODO.RECUR.md", imports, 1.0),
        ("no-change sync", nochange, 0.2),
        ("sync after one line changed", oneline, 0.3),
    ):
        med = statistics.median(samples)
        key = name.split(":")[0].replace(" ", "_").replace("-", "_")
        record("markdown", key, med * 1e3, "ms", target_ms=target * 1e3, runs=runs)
        rows.append((name, f"{med * 1e3:.0f}", f"< {target * 1e3:.0f}"))
    table(
        f"6. Markdown TODO files as whole processes (median of {runs})", rows, ["operation", "ms", "target"]
    )


def _script_workspace(n: int) -> tuple[Path, dict[str, str]]:
    """A workspace whose tasks.json heartbeat.py wrote with ``n`` pending tasks, and its env."""
    ws = Path(tempfile.mkdtemp(prefix="hb-tj-"))
    state = ws / ".agent" / "state"
    state.mkdir(parents=True)
    (state / "tasks.json").write_text(json.dumps(tasks_json_doc(n), indent=2))
    env = {**os.environ, "HB_WORKSPACE": str(ws), "HB_NOW": "2026-05-01T00:00:00Z"}
    subprocess.run([*hb_command(), "init"], env=env, cwd=ws, capture_output=True, check=True)
    return ws, env


def bench_tasks_sync(small: int, large: int, runs: int) -> None:
    """13. hb sync of tasks.json after one pop by heartbeat.py, at two queue sizes, as whole
    processes: the steady state (hb synced the file before the pop) against the first sync."""
    hb = hb_command()
    spaces = {n: _script_workspace(n) for n in (small, large)}
    first = {n: _timed([*hb, "sync"], env, ws) for n, (ws, env) in spaces.items()}
    for ws, env in spaces.values():  # the first pop after the import: the steady state from here
        json_script_pop(ws / ".agent" / "state" / "tasks.json")
        _timed([*hb, "sync"], env, ws)
    after: dict[int, list[float]] = {small: [], large: []}
    for _ in range(runs):  # the sizes take turns
        for n, (ws, env) in spaces.items():
            json_script_pop(ws / ".agent" / "state" / "tasks.json")
            after[n].append(_timed([*hb, "sync"], env, ws))
    # the script's completion, whose +00:00Z stamp hb writes back whole; then the next pop's sync
    ws, env = spaces[large]
    path = ws / ".agent" / "state" / "tasks.json"
    written_back: list[float] = []
    for _ in range(max(3, runs // 3)):
        task = json_script_pop(path)
        assert task is not None
        _timed([*hb, "sync"], env, ws)
        json_script_complete(path, task["id"])
        _timed([*hb, "sync"], env, ws)
        json_script_pop(path)
        written_back.append(_timed([*hb, "sync"], env, ws))
    for ws, _env in spaces.values():
        shutil.rmtree(ws, ignore_errors=True)
    med = {n: statistics.median(samples) * 1e3 for n, samples in after.items()}
    ratio, of_first = med[large] / med[small], med[large] / (first[large] * 1e3)
    after_write = statistics.median(written_back) * 1e3
    record("tasks_sync", "sync_after_pop_following_a_write_back_ms", after_write, "ms", tasks=large)
    record("tasks_sync", "first_sync_large_ms", first[large] * 1e3, "ms", tasks=large)
    record("tasks_sync", "sync_after_pop_small_ms", med[small], "ms", tasks=small, runs=runs)
    record(
        "tasks_sync",
        "sync_after_pop_large_ms",
        med[large],
        "ms",
        tasks=large,
        runs=runs,
        vs_small=round(ratio, 2),
        vs_first_sync=round(of_first, 3),
    )
    table(
        f"13. hb sync of tasks.json after one heartbeat.py pop, whole processes (median of {runs})",
        [
            (f"first sync: import {large:,} tasks", f"{first[large] * 1e3:.0f}", "", ""),
            (f"sync after a pop, {small:,} tasks", f"{med[small]:.0f}", "", ""),
            (
                f"sync after a pop, {large:,} tasks",
                f"{med[large]:.0f}",
                f"{ratio:.2f} x the small one",
                f"{of_first:.2f} x the first sync",
            ),
            (
                f"sync after a pop that follows a completion hb wrote back, {large:,} tasks",
                f"{after_write:.0f}",
                f"{after_write / med[small]:.2f} x the small one",
                f"{after_write / (first[large] * 1e3):.2f} x the first sync",
            ),
        ],
        ["operation", "ms", "vs small", "vs first sync"],
    )


REPORTS = ("outcomes", "failures", "notifications", "queue", "recurrences")


def report_ledger(outcomes: int, notifications: int, cache: Path | None) -> Path:
    """A workspace filled by scripts/demo_data.py (reused from ``cache`` when it is there)."""
    if cache is not None and (cache / ".agent" / "state" / "heartbeat.db").exists():
        return cache
    ws = cache or Path(tempfile.mkdtemp(prefix="hb-report-"))
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "demo_data.py"),
        "--workspace",
        str(ws),
        "--end",
        "2026-05-31T00:00:00Z",
        "--outcomes",
        str(outcomes),
        "--notifications",
        str(notifications),
    ]
    print(f"   filling a ledger: {outcomes:,} outcomes, {notifications:,} notifications ...", flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print(f"   filled in {time.perf_counter() - start:.0f} s", flush=True)
    return ws


def _query_plans(ws: Path, kind: str, shapes: int = 8) -> list[str]:
    """EXPLAIN QUERY PLAN of the statements one report runs (captured in-process).

    Statements that differ only in their values (one per day, per group, ...)
    are one shape, shown once with how many times it ran.
    """
    import re

    statements: list[str] = []
    with Ledger.open(workspace=ws, now="2026-05-31T00:00:00Z") as ledger:
        ledger.raw.set_trace_callback(statements.append)
        ledger.report(kind)
        ledger.raw.set_trace_callback(None)
        first: dict[str, str] = {}
        runs: dict[str, int] = {}
        for sql in statements:
            head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
            if head not in ("SELECT", "WITH") or "FROM settings" in sql:
                continue
            shape = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", "?", re.sub(r"'[^']*'", "?", sql))
            first.setdefault(shape, sql)
            runs[shape] = runs.get(shape, 0) + 1
        plans = []
        for shape, sql in list(first.items())[:shapes]:
            rows = ledger.raw.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            plans.append(f"[x{runs[shape]}] " + " ".join(shape.split())[:110] + " ...")
            plans.extend("     " + str(r[-1]) for r in rows)
        if len(first) > shapes:
            plans.append(f"(and {len(first) - shapes} more statement shapes)")
        return plans


def bench_reports(outcomes: int, notifications: int, runs: int, cache: Path | None) -> None:
    """7. every `hb report` kind over a large ledger, as whole processes."""
    ws = report_ledger(outcomes, notifications, cache)
    env = {**os.environ, "HB_WORKSPACE": str(ws), "HB_NOW": "2026-05-31T00:00:00Z"}
    hb = hb_command()
    rows = []
    for kind in REPORTS:
        samples = [_timed([*hb, "report", kind, "--format", "json"], env, ws) for _ in range(runs)]
        med = statistics.median(samples)
        record(
            "reports",
            f"report_{kind}_ms",
            med * 1e3,
            "ms",
            target_ms=1000,
            outcomes=outcomes,
            notifications=notifications,
        )
        rows.append((f"hb report {kind}", f"{med * 1e3:.0f}", "< 1000"))
    table(
        f"7. hb report over {outcomes:,} outcomes and {notifications:,} notifications "
        f"(whole processes, median of {runs})",
        rows,
        ["command", "ms", "target"],
    )
    _bench_views(ws)
    print("   query plans (the first statements of each report):")
    for kind in REPORTS:
        print(f"   -- {kind}")
        for line in _query_plans(ws, kind):
            print("   " + line)
    if cache is None:
        shutil.rmtree(ws, ignore_errors=True)


VIEWS = (
    "outcomes_by_skill",
    "outcomes_by_scope",
    "outcomes_by_source",
    "outcomes_by_day",
    "outcomes_by_task",
)


def _bench_views(ws: Path, runs: int = 3) -> None:
    """The outcomes_by_* views read whole (SELECT * on a read-only connection), median of ``runs``."""
    path = ws / ".agent" / "state" / "heartbeat.db"
    rows = []
    for view in VIEWS:
        samples = []
        for _ in range(runs):
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            start = time.perf_counter()
            got = len(con.execute(f"SELECT * FROM {view}").fetchall())
            samples.append(time.perf_counter() - start)
            con.close()
        med = statistics.median(samples)
        record("reports", f"view_{view}_ms", med * 1e3, "ms", target_ms=1000, rows=got)
        rows.append((f"SELECT * FROM {view}", f"{med * 1e3:.0f}", f"{got:,}", "< 1000"))
    # outcomes_by_task's floor: its rows handed to Python from a table, the grouping alone, and the
    # grouping with the view's aggregates (one sort of every outcome, as the view's first step)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.execute("CREATE TEMP TABLE by_task AS SELECT * FROM outcomes_by_task")
    for label, name, query in (
        ("  its rows read from a table", "view_task_rows_floor_ms", "SELECT * FROM temp.by_task"),
        (
            "  GROUP BY scope, task_id alone",
            "view_task_group_floor_ms",
            "SELECT scope, task_id, COUNT(*) FROM outcomes NOT INDEXED GROUP BY scope, task_id",
        ),
        (
            "  the grouping with the view's aggregates",
            "view_task_aggregates_floor_ms",
            "SELECT scope, task_id, COUNT(*), SUM(CASE WHEN success THEN 1 ELSE 0 END), COUNT(duration_s), "
            "MIN(duration_s), MAX(duration_s), MIN(completed_at), MAX(completed_at) "
            "FROM outcomes NOT INDEXED GROUP BY scope, task_id",
        ),
    ):
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            got = len(con.execute(query).fetchall())
            samples.append(time.perf_counter() - start)
        med = statistics.median(samples)
        record("reports", name, med * 1e3, "ms", rows=got)
        rows.append((label, f"{med * 1e3:.0f}", f"{got:,}", "floor"))
    con.close()
    table("   the outcomes_by_* views, whole (median)", rows, ["query", "ms", "rows", "target"])


# --- the heartbeat round, recurrences, reports and settings (issue 17) ------------------------

EXAMPLE = ROOT / "examples" / "workspace"
DUE_TASKS = 10_000


def _hb_json(hb: list[str], env: dict[str, str], cwd: Path, *args: str) -> Any:
    done = subprocess.run(
        [*hb, "--json", *args], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def _round_commands(
    hb: list[str], env: dict[str, str], ws: Path, runs: int
) -> list[tuple[str, list[list[str]]]]:
    """(name, the argv of each run) of every command of the round, recurrence, report and settings
    slice, prepared on the example workspace: each run gets what it needs (a rule to remove, ...)."""
    task = _hb_json(hb, env, ws, "add", "pay the rent", "--due", "2026-01-01T09:00", "--next-action", "pay")[
        "id"
    ]
    rule = _hb_json(hb, env, ws, "recur", "add", "water the plants", "--repeat", "daily")["id"]
    doomed = [
        _hb_json(hb, env, ws, "recur", "add", f"rule {i}", "--repeat", "weekly")["id"] for i in range(runs)
    ]
    finished = [_hb_json(hb, env, ws, "add", f"errand {i}")["id"] for i in range(2 * runs)]
    scores = ["--impact", "4", "--risk", "4", "--cost", "4", "--urgency", "4", "--confidence", "4"]
    same = {
        "hb add": ["add", "buy milk"],
        "hb list": ["list"],
        "hb list --json": ["list", "--json"],
        "hb show ID": ["show", task],
        "hb update ID": ["update", task, "--note", "called the landlord"],
        "hb ready": ["ready"],
        "hb sync": ["sync"],
        "hb due": ["due"],
        "hb check": ["check"],
        "hb notify ID": ["notify", task],
        "hb proactive": ["proactive", "--topic", "flight", "--suggestion", "book the train"],
        "hb seen": ["seen"],
        "hb hygiene done": ["hygiene", "done"],
        "hb poke TEXT": ["poke", "check the build"],
        "hb recur list": ["recur", "list"],
        "hb recur due": ["recur", "due"],
        "hb recur add": ["recur", "add", "feed the cat", "--repeat", "daily"],
        "hb recur update ID": ["recur", "update", rule, "--title", "water the garden"],
        "hb recur materialize": ["recur", "materialize"],
        "hb recur outcome ID": ["recur", "outcome", rule, "--result", "watered"],
        "hb recur evaluate ID": ["recur", "evaluate", rule, *scores],
        "hb report outcomes": ["report", "outcomes"],
        "hb report failures": ["report", "failures"],
        "hb report notifications": ["report", "notifications"],
        "hb report queue": ["report", "queue"],
        "hb report recurrences": ["report", "recurrences"],
        "hb sql": ["sql", "SELECT status, count(*) FROM tasks GROUP BY status"],
        "hb config get": ["config", "get", "lang"],
        "hb config set": ["config", "set", "lang", "en"],
        "hb config unset": ["config", "unset", "hygiene.enabled"],
        "hb config list": ["config", "list"],
        "hb init (existing)": ["init"],
    }
    out = [(name, [[*hb, *args]] * runs) for name, args in same.items()]
    out.insert(21, ("hb recur remove ID", [[*hb, "recur", "remove", rid] for rid in doomed]))
    out.insert(5, ("hb done ID", [[*hb, "done", tid] for tid in finished[:runs]]))
    out.insert(6, ("hb cancel ID", [[*hb, "cancel", tid] for tid in finished[runs:]]))
    return out


FLOOR = [sys.executable, "-c", "import sqlite3"]


def _paired(argvs: list[list[str]], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """The median of the runs of a command and of the floor run just before each: the two are
    measured in the same moments, so a machine that gets busier during the bench moves both."""
    took: list[float] = []
    floor: list[float] = []
    for argv in argvs:
        for samples, run in ((floor, FLOOR), (took, argv)):
            start = time.perf_counter()
            subprocess.run(
                run, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
            )
            samples.append(time.perf_counter() - start)
    return statistics.median(took), statistics.median(floor)


def _served_poke_ms(ws: Path, pokes: int) -> float:
    """The median time of POST /poke on hb serve (in this process, on 127.0.0.1)."""
    import http.client
    import threading

    from heartbeat import serve

    token = "bench-token-" + "x" * 24
    server = serve.make_server(lambda: Ledger.open(workspace=ws), port=0, token=token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    times = []
    try:
        host, port = server.server_address[:2]
        for i in range(pokes):
            con = http.client.HTTPConnection(str(host), int(port), timeout=30)
            start = time.perf_counter()
            con.request(
                "POST", "/poke", body=f"served poke {i}", headers={"Authorization": f"Bearer {token}"}
            )
            status = con.getresponse().status
            times.append(time.perf_counter() - start)
            con.close()
            assert status == 202, f"POST /poke answered {status}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    return statistics.median(times)


def _due_workspace(due: bool) -> Path:
    """A workspace whose ledger holds DUE_TASKS queue tasks (as `hb add --due ... --next-action`
    makes them), all due at the tick or none."""
    from datetime import timedelta

    from heartbeat.db.rows import TaskRow
    from heartbeat.db.status import TaskStatus

    ws = Path(tempfile.mkdtemp(prefix="hb-due-"))
    start = datetime(2026, 5, 1, 8, tzinfo=UTC)
    due_at = start + timedelta(hours=1 if due else 24 * 30)
    with Ledger.open(workspace=ws, now=start) as ledger:
        ledger.config_set("timezone", "UTC")
        with ledger.ctx.write() as db:
            db.add_all(
                [
                    TaskRow(
                        id=f"task-{i:07d}",
                        title=f"job {i}",
                        status=TaskStatus.TODO,
                        source="cli",
                        created_at=start,
                        updated_at=start,
                        last_update_at=start,
                        due_at=due_at,
                        next_action=f"do job {i}",
                        position=i,
                    )
                    for i in range(DUE_TASKS)
                ]
            )
    subprocess.run([*hb_command(), "sync"], env={**os.environ, "HB_WORKSPACE": str(ws)}, capture_output=True)
    return ws


def _tick_seconds(template: Path, runs: int) -> float:
    """The median `hb heartbeat` on a fresh copy of ``template`` (the same tick every run)."""
    times = []
    for _ in range(runs):
        ws = Path(tempfile.mkdtemp(prefix="hb-tick-")) / "ws"
        shutil.copytree(template, ws)
        env = {**os.environ, "HB_WORKSPACE": str(ws), "HB_NOW": "2026-05-01T10:00:00Z"}
        times.append(_timed([*hb_command(), "heartbeat"], env, ws))
        shutil.rmtree(ws.parent, ignore_errors=True)
    return statistics.median(times)


def bench_round(runs: int) -> None:
    """11. every round, recurrence, report and settings command as a whole process next to
    the interpreter's floor; hb heartbeat on the example workspace; a tick with 10,000 due tasks."""
    hb = hb_command()
    ws = Path(tempfile.mkdtemp(prefix="hb-round-")) / "workspace"
    shutil.copytree(EXAMPLE, ws)
    env = {**os.environ, "HB_WORKSPACE": str(ws)}
    subprocess.run(
        [*hb, "init", "--timezone", "Asia/Shanghai"], env=env, cwd=ws, capture_output=True, check=True
    )
    subprocess.run([*hb, "heartbeat"], env=env, cwd=ws, capture_output=True, check=True)  # the first import
    rows = []
    commands = [("hb heartbeat (example workspace)", [[*hb, "heartbeat"]] * runs)]
    for name, argvs in [*commands, *_round_commands(hb, env, ws, runs)]:
        took, floor = _paired(argvs, env, ws)
        key = (
            name.removeprefix("hb ").split(" (")[0].replace(" ID", "").replace(" TEXT", "").replace(" ", "_")
        )
        target = "<= 6" if key == "heartbeat" else "<= 5"
        record(
            "round",
            f"hb_{key}_ms",
            took * 1e3,
            "ms",
            floor_ms=round(floor * 1e3, 1),
            vs_floor=round(took / floor, 2),
        )
        rows.append((name, f"{took * 1e3:.1f}", f"{floor * 1e3:.1f}", f"{took / floor:.2f}", target))
    served, floor = _served_poke_ms(ws, runs), _median_runs(FLOOR, runs, env, ws)
    record(
        "round",
        "served_poke_ms",
        served * 1e3,
        "ms",
        floor_ms=round(floor * 1e3, 1),
        vs_floor=round(served / floor, 2),
    )
    rows.append(
        (
            "POST /poke on hb serve (in process)",
            f"{served * 1e3:.1f}",
            f"{floor * 1e3:.1f}",
            f"{served / floor:.2f}",
            "<= 5",
        )
    )
    table(
        f"11. the round, recurrences, reports, settings: whole processes, each next to the floor "
        f'(python -c "import sqlite3") run just before it (medians of {runs})',
        rows,
        ["command", "ms", "floor ms", "vs floor", "target"],
    )
    shutil.rmtree(ws.parent, ignore_errors=True)

    ticks = max(3, runs // 4)
    due_ws, idle_ws = _due_workspace(True), _due_workspace(False)
    due_tick, idle_tick = _tick_seconds(due_ws, ticks), _tick_seconds(idle_ws, ticks)
    with Ledger.open(workspace=due_ws, now="2026-05-01T10:00:00Z") as ledger:
        _ = ledger.zone  # the settings are read before the clock starts
        start = time.perf_counter()
        checked = ledger.check(dry_run=True)["checked"]
        round_only = time.perf_counter() - start
    assert checked == DUE_TASKS, f"{checked} tasks entered the round, not {DUE_TASKS}"
    per_due = (due_tick - idle_tick) / DUE_TASKS * 1e6
    record("round", "heartbeat_10k_due_ms", due_tick * 1e3, "ms", tasks=DUE_TASKS)
    record("round", "heartbeat_10k_none_due_ms", idle_tick * 1e3, "ms", tasks=DUE_TASKS)
    record("round", "heartbeat_us_per_due_task", per_due, "us", target="<= 100")
    record("round", "heartbeat_whole_tick_us_per_task", due_tick / DUE_TASKS * 1e6, "us")
    record("round", "round_only_us_per_due_task", round_only / DUE_TASKS * 1e6, "us")
    table(
        f"   hb heartbeat with {DUE_TASKS:,} tasks (whole processes, median of {ticks})",
        [
            ("tick, every task due", f"{due_tick * 1e3:.0f} ms", ""),
            ("tick, none due", f"{idle_tick * 1e3:.0f} ms", ""),
            ("per due task: (due - none due) / tasks", f"{per_due:.0f} us", "<= 100 us"),
            ("per task, the whole tick / tasks", f"{due_tick / DUE_TASKS * 1e6:.0f} us", ""),
            (
                "the round alone (Ledger.check, dry run, in process)",
                f"{round_only / DUE_TASKS * 1e6:.0f} us",
                "",
            ),
        ],
        ["measurement", "value", "target"],
    )
    shutil.rmtree(due_ws, ignore_errors=True)
    shutil.rmtree(idle_ws, ignore_errors=True)


# --- PostgreSQL: hb's queue against a bare SKIP LOCKED queue ---------------------------------


def _pg_url() -> str | None:
    return os.environ.get("HB_BENCH_DATABASE_URL") or os.environ.get("HB_TEST_DATABASE_URL")


def _pg_dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _pg_database(base: str, name: str, template: str | None = None) -> str:
    """A fresh database ``name`` on the server of ``base`` (dropped first; a copy of ``template``
    when given); its URL."""
    import psycopg

    with psycopg.connect(_pg_dsn(base), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}"


def _pg_drop(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(_pg_dsn(base), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_raw_queue(url: str, n: int) -> None:
    """The bare PostgreSQL queue: one table, one partial index."""
    import psycopg

    with psycopg.connect(_pg_dsn(url), autocommit=True) as con:
        con.execute(
            "CREATE TABLE queue (pk bigserial PRIMARY KEY, id text NOT NULL, status text NOT NULL, "
            "priority_rank int NOT NULL, position int NOT NULL, claimed_at timestamptz, claimed_by text, "
            "payload json)"
        )
        con.execute("CREATE INDEX ix_ready ON queue (priority_rank, position, pk) WHERE status = 'todo'")
        with con.cursor() as cur:
            cur.executemany(
                "INSERT INTO queue (id, status, priority_rank, position, payload) "
                "VALUES (%s, 'todo', %s, %s, %s)",
                [(f"task-{i:07d}", i % 4, i, json.dumps({"description": f"job {i}"})) for i in range(n)],
            )


def pg_raw_drain(url: str, worker: str) -> tuple[list[str], float, float]:
    """The bare claim and completion, each one autocommitted statement (two round trips a pair)."""
    import psycopg

    done: list[str] = []
    with psycopg.connect(_pg_dsn(url), autocommit=True) as con:
        start = time.time()
        while True:
            row = con.execute(
                "UPDATE queue SET status = 'doing', claimed_at = now(), claimed_by = %s WHERE pk = "
                "(SELECT pk FROM queue WHERE status = 'todo' ORDER BY priority_rank, position, pk "
                "LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING pk, id, payload",
                (worker,),
            ).fetchone()
            if row is None:
                break
            con.execute("UPDATE queue SET status = 'done' WHERE pk = %s", (row[0],))
            done.append(row[1])
        return done, start, time.time()


def pg_hb_drain(url: str, worker: str) -> tuple[list[str], float, float]:
    """pop+complete through hb's API on PostgreSQL."""
    done: list[str] = []
    ws = Path(tempfile.mkdtemp(prefix="hb-pg-"))
    with Ledger.open(workspace=ws, db=url) as ledger:
        ledger.settings  # noqa: B018 - read before the clock starts, as a long-lived worker has
        start = time.time()
        while (task := ledger.pop(worker=worker)) is not None:
            ledger.complete(task["id"], outcome={"ok": True}, claim=task["claim"])
            done.append(task["id"])
        end = time.time()
    shutil.rmtree(ws, ignore_errors=True)
    return done, start, end


def _pg_pool(
    fn: Callable[[str, str], tuple[list[str], float, float]], url: str, workers: int
) -> tuple[float, list[str]]:
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers) as pool:
        parts = pool.starmap(fn, [(url, f"w{i}") for i in range(workers)])
    elapsed = max(p[2] for p in parts) - min(p[1] for p in parts)
    return elapsed, [tid for part in parts for tid in part[0]]


def bench_postgres(n: int, workers: int = 8) -> None:
    """8. PostgreSQL: pop+complete pairs/s of hb's API against a bare SKIP LOCKED queue.

    The two drain fresh copies of their seeded databases in the order raw, hb, hb, raw, twice,
    and each side's median is taken: this machine's speed drifts by a third within minutes, and
    runs side by side see the same drift."""
    base = _pg_url()
    if not base:
        print("\n8. PostgreSQL: skipped (set HB_BENCH_DATABASE_URL or HB_TEST_DATABASE_URL)")
        return
    names = ("hb_bench_raw_seed", "hb_bench_hb_seed", "hb_bench_run")
    try:
        raw_seed = _pg_database(base, names[0])
        pg_raw_queue(raw_seed, n)
        hb_seed = _pg_database(base, names[1])
        seed = Path(tempfile.mkdtemp(prefix="hb-pg-seed-"))
        src = seed / "seed-tasks.json"
        src.write_text(json.dumps(tasks_json_doc(n)))
        with Ledger.open(workspace=seed, db=hb_seed) as ledger:
            ledger.import_file("tasks-json", src)
        shutil.rmtree(seed, ignore_errors=True)
        sides = {
            "raw": ("raw psycopg SKIP LOCKED", pg_raw_drain, names[0]),
            "hb": ("hb Ledger API", pg_hb_drain, names[1]),
        }
        rates: dict[str, list[float]] = {"raw": [], "hb": []}
        dups = {"raw": 0, "hb": 0}
        lost = {"raw": 0, "hb": 0}
        for key in ("raw", "hb", "hb", "raw") * 2:
            _, fn, template = sides[key]
            url = _pg_database(base, names[2], template)
            elapsed, ids = _pg_pool(fn, url, workers)
            dups[key] += len(ids) - len(set(ids))
            lost[key] += n - len(set(ids))
            rates[key].append(len(ids) / elapsed)
        rows = []
        for key, (name, _, _) in sides.items():
            rate = statistics.median(rates[key])
            runs = ", ".join(f"{r:,.0f}" for r in rates[key])
            record("postgres", f"{key}_pairs_per_s", rate, "pairs/s", workers=workers, tasks=n, runs=runs)
            record("postgres", f"{key}_duplicates", dups[key], "tasks")
            record("postgres", f"{key}_lost", lost[key], "tasks")
            rows.append((name, f"{rate:,.0f}", runs, dups[key], lost[key]))
        ratio = statistics.median(rates["hb"]) / statistics.median(rates["raw"])
        record("postgres", "hb_vs_raw", ratio, "ratio", target=">= 0.5", workers=workers)
        rows.append(("ratio hb / raw, medians (target >= 0.5)", f"{ratio:.2f}", "", "", ""))
        table(
            f"8. PostgreSQL pop+complete, {workers} processes, {n} tasks (runs: raw hb hb raw, twice)",
            rows,
            ["implementation", "pairs/s (median)", "each run", "dups", "lost"],
        )
    finally:
        for name in names:
            _pg_drop(base, name)


def bench_mcp(process_pairs: int, mcp_pairs: int) -> None:
    """9. pop + complete pairs through one `hb mcp` stdio session, vs `hb pop` / `hb complete` processes."""
    try:
        import anyio
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
    except ImportError:
        print("\n== 9. hb mcp: skipped (the MCP SDK is not installed: pip install 'hb-ledger[mcp]')")
        return
    ws = make_ledger(process_pairs + mcp_pairs + 10)
    env = {**os.environ, "HB_WORKSPACE": str(ws)}
    hb = hb_command()
    start = time.perf_counter()
    for _ in range(process_pairs):
        out = subprocess.run([*hb, "pop"], env=env, cwd=ws, capture_output=True, text=True, check=True)
        task = json.loads(out.stdout)
        finish = [*hb, "complete", task["id"], "--claim", task["claim"]]
        subprocess.run(finish, env=env, cwd=ws, stdout=subprocess.DEVNULL, check=True)
    process_rate = process_pairs / (time.perf_counter() - start)

    timings: dict[str, float] = {}

    async def session_pairs() -> None:
        started = time.perf_counter()
        params = StdioServerParameters(command=hb[0], args=[*hb[1:], "--workspace", str(ws), "mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            timings["startup"] = time.perf_counter() - started
            began = time.perf_counter()
            for _ in range(mcp_pairs):
                popped = await session.call_tool("pop", {})
                task = json.loads(popped.content[0].text)["task"]
                done = await session.call_tool("complete", {"id": task["id"], "claim": task["claim"]})
                assert not done.is_error, done.content
            timings["pairs"] = time.perf_counter() - began

    anyio.run(session_pairs)
    mcp_rate = mcp_pairs / timings["pairs"]
    ratio = mcp_rate / process_rate
    record("mcp", "process_pairs_per_s", process_rate, "pairs/s", pairs=process_pairs)
    record("mcp", "mcp_pairs_per_s", mcp_rate, "pairs/s", pairs=mcp_pairs)
    record("mcp", "mcp_startup_ms", timings["startup"] * 1e3, "ms")
    record("mcp", "mcp_vs_process_ratio", ratio, "x")
    table(
        "9. pop + complete pairs: one hb mcp stdio session vs hb pop / hb complete processes",
        [
            (
                f"hb pop + hb complete --claim (processes, {process_pairs} pairs)",
                f"{process_rate:.1f}",
                "1.0",
            ),
            (f"pop + complete tools (one MCP session, {mcp_pairs} pairs)", f"{mcp_rate:.1f}", f"{ratio:.1f}"),
            ("hb mcp start-up to initialised session (ms, once)", f"{timings['startup'] * 1e3:.0f}", ""),
        ],
        ["pairs through", "pairs/s", "ratio"],
    )
    print(f"   MCP / processes: {ratio:.1f}x")
    shutil.rmtree(ws, ignore_errors=True)


DASHBOARD_PAGES = (
    ("now", "/", ""),
    ("decisions", "/decisions", ""),
    ("decisions_one_day", "/decisions", "day=2026-05-30"),
    ("task", "/task", None),  # a task with outcomes, found in the ledger
    ("outcomes", "/outcomes", ""),
    ("outcomes_by_skill", "/outcomes", "by=skill"),
    ("outcomes_by_scope", "/outcomes", "by=scope"),
    ("outcomes_by_source", "/outcomes", "by=source"),
    ("runs", "/runs", ""),
)


def bench_dashboard(outcomes: int, notifications: int, runs: int, cache: Path | None) -> None:
    """10. every dashboard page (its HTML, default window) over the large reporting ledger,
    in-process, the ledger opened for each page as hb serve opens it for each request."""
    from heartbeat.web import app

    ws = report_ledger(outcomes, notifications, cache)
    now = "2026-05-31T00:00:00Z"

    def open_ledger() -> Ledger:
        return Ledger.open(workspace=ws, now=now)

    # hb serve keeps the ledger it opened at start-up open while it serves (so closing a page's
    # connection is never the last close, which would checkpoint the WAL); so does this section
    served = open_ledger()  # an older ledger is upgraded here, not in a measurement
    found = served.sql(
        "SELECT task_id, scope FROM outcomes WHERE task_pk IS NOT NULL ORDER BY completed_at DESC LIMIT 1"
    )
    ticks = served.sql("SELECT COUNT(*) AS n FROM runs")[0]["n"]
    rows = []
    for name, path, query in DASHBOARD_PAGES:
        if query is None:
            query = f"id={found[0]['task_id']}&scope={found[0]['scope']}"
        reply = app.page(open_ledger, path, query, None)  # the first: templates compiled, caches warm
        assert reply.status == 200, (path, query, reply.status, reply.body[:300])
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            reply = app.page(open_ledger, path, query, None)
            samples.append(time.perf_counter() - start)
        med = statistics.median(samples)
        record(
            "dashboard",
            f"page_{name}_ms",
            med * 1e3,
            "ms",
            target_ms=200,
            ratio_to_target=round(med / 0.2, 3),
            outcomes=outcomes,
            notifications=notifications,
            html_bytes=len(reply.body),
        )
        shown = path + (f"?{query}" if query else "")
        rows.append((shown, f"{med * 1e3:.0f}", f"{med / 0.2:.2f}", f"{len(reply.body) / 1024:.0f}", "< 200"))
    table(
        f"10. dashboard pages over {outcomes:,} outcomes, {notifications:,} notifications and {ticks:,} runs "
        f"(HTML, in-process, ledger opened per page as hb serve does; median of {runs})",
        rows,
        ["page", "ms", "of target", "KiB", "target ms"],
    )
    served.close()
    if cache is None:
        shutil.rmtree(ws, ignore_errors=True)


# --- exports that cost what changed, imports in bulk, lists that stream ------------------------


def _auto_export_pop_ms(n: int, pops: int) -> tuple[float, float]:
    """The median in-process pop with ``sync.auto_export`` on, over a workspace of ``n`` tasks
    whose tasks.json hb has written (each pop re-renders what it moved), and the median bare
    atomic replacement of that tasks.json (write a temporary file, fsync, rename, fsync the
    directory): the floor of any export that writes the whole file."""
    ws = make_ledger(n)
    with Ledger.open(workspace=ws) as ledger:
        ledger.config_set("sync.auto_export", "true")
        ledger.sync()  # the workspace's tasks.json, written from the ledger
        times = []
        for _ in range(pops):
            start = time.perf_counter()
            task = ledger.pop()
            times.append(time.perf_counter() - start)
            assert task is not None
            ledger.complete(task["id"], claim=task["claim"])
    path = ws / ".agent" / "state" / "tasks.json"
    data = path.read_bytes()
    bare = []
    for _ in range(pops):
        start = time.perf_counter()
        fd, tmp = tempfile.mkstemp(dir=path.parent)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        os.fsync(dir_fd)
        os.close(dir_fd)
        bare.append(time.perf_counter() - start)
    shutil.rmtree(ws, ignore_errors=True)
    return statistics.median(times) * 1e3, statistics.median(bare) * 1e3


def _auto_export_process_ms(small: int, large: int, runs: int) -> tuple[float, float]:
    """The median whole ``hb pop`` process with ``sync.auto_export`` on, over workspaces of
    ``small`` and ``large`` tasks whose tasks.json hb has written, the two sizes taking turns (as
    an agent calls it: each pop a new process, which reads the file before and after its claim)."""
    spaces = []
    for n in (small, large):
        ws = make_ledger(n)
        with Ledger.open(workspace=ws) as ledger:
            ledger.config_set("sync.auto_export", "true")
            ledger.sync()
        spaces.append(ws)
    times: list[list[float]] = [[], []]
    hb = hb_command()
    for _ in range(runs):
        for i, ws in enumerate(spaces):
            env = {**os.environ, "HB_WORKSPACE": str(ws)}
            start = time.perf_counter()
            subprocess.run([*hb, "pop"], env=env, cwd=ws, capture_output=True, check=True)
            times[i].append(time.perf_counter() - start)
    for ws in spaces:
        shutil.rmtree(ws, ignore_errors=True)
    return statistics.median(times[0]) * 1e3, statistics.median(times[1]) * 1e3


def _replayed_import_s(ws: Path) -> float:
    """The rows hb's import wrote into the ledger at ``ws`` (its tasks and their history), inserted
    again into a new ledger of hb's schema with one raw executemany each, naming the columns hb's
    import names (the others keep their defaults), in one transaction: the floor of hb's import
    statements, with no Python of hb's around them."""
    from heartbeat.ops.sync.queue_files import EVENT_COLUMNS, FRESH_COLUMNS

    fresh = Path(tempfile.mkdtemp(prefix="hb-import-floor-"))
    with Ledger.open(workspace=fresh):
        pass  # the schema at head
    tables = {"tasks": FRESH_COLUMNS, "task_events": EVENT_COLUMNS}
    with contextlib.closing(sqlite3.connect(str(ws / ".agent" / "state" / "heartbeat.db"))) as source:
        written = {}
        for name, named in tables.items():
            cursor = source.execute(f"SELECT {', '.join(named)} FROM {name} ORDER BY pk")
            written[name] = (list(named), cursor.fetchall())
    con = sqlite3.connect(str(fresh / ".agent" / "state" / "heartbeat.db"), isolation_level=None)
    con.execute("PRAGMA synchronous=NORMAL")
    start = time.perf_counter()
    con.execute("BEGIN")
    for name in tables:
        columns, rows = written[name]
        con.executemany(
            f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )
    con.execute("COMMIT")
    took = time.perf_counter() - start
    con.close()
    shutil.rmtree(fresh, ignore_errors=True)
    return took


def _first_import_s(n: int) -> tuple[float, float, float]:
    """(hb's first import of an n-task tasks.json, a bare json.load + executemany of the same rows,
    hb's own rows replayed into its schema)."""
    doc = json.dumps(tasks_json_doc(n))
    ws = Path(tempfile.mkdtemp(prefix="hb-import-"))
    src = ws / "seed-tasks.json"
    src.write_text(doc)
    with Ledger.open(workspace=ws) as ledger:
        start = time.perf_counter()
        ledger.import_file("tasks-json", src)
        took = time.perf_counter() - start
    replayed = _replayed_import_s(ws)
    con = sqlite3.connect(str(ws / "bare.db"), isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(
        "CREATE TABLE tasks (pk INTEGER PRIMARY KEY, id TEXT, scope TEXT, title TEXT, priority TEXT, "
        "status TEXT, skill TEXT, created_at TEXT, position INTEGER, extra TEXT, UNIQUE (scope, id))"
    )
    start = time.perf_counter()
    data = json.loads(src.read_text())
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO tasks (id, scope, title, priority, status, skill, created_at, position, extra) "
        "VALUES (?, '', ?, ?, 'todo', ?, ?, ?, ?)",
        [
            (
                t["id"],
                t["description"],
                t["priority"],
                t["assigned_skill"],
                t["created_at"],
                i,
                json.dumps({}),
            )
            for i, t in enumerate(data["pending"])
        ],
    )
    con.execute("COMMIT")
    bare = time.perf_counter() - start
    con.close()
    shutil.rmtree(ws, ignore_errors=True)
    return took, bare, replayed


_RSS = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _peak_rss_mb(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """The peak resident memory of one process (Linux: ru_maxrss in KiB), started by a small
    interpreter of its own: a child forked from this (large) process would count its pages."""
    out = subprocess.run(
        [sys.executable, "-c", _RSS, *argv], env=env, cwd=cwd, capture_output=True, text=True
    )
    code, kib = out.stdout.split()
    if code != "0":
        raise SystemExit(f"{' '.join(argv)} failed ({code})")
    return int(kib) / 1024


def bench_exports(small: int, large: int, listed: int, pops: int) -> None:
    """12. auto_export pops at two queue sizes, the first import of a large tasks.json against a
    bare json.load + executemany, and the peak memory of hb list --json over many tasks."""
    (at_small, _), (at_large, write_large) = (
        _auto_export_pop_ms(small, pops),
        _auto_export_pop_ms(large, pops),
    )
    whole = (at_small + write_large) / at_small  # the small pop plus a whole write of the large file
    record("exports", "auto_export_pop_small_ms", at_small, "ms", tasks=small)
    record(
        "exports",
        "auto_export_pop_large_ms",
        at_large,
        "ms",
        tasks=large,
        vs_small=round(at_large / at_small, 2),
        whole_file_floor=round(whole, 2),
    )
    record("exports", "bare_atomic_write_large_ms", write_large, "ms", tasks=large)
    process_small, process_large = _auto_export_process_ms(small, large, pops)
    record("exports", "auto_export_hb_pop_small_ms", process_small, "ms", tasks=small)
    record(
        "exports",
        "auto_export_hb_pop_large_ms",
        process_large,
        "ms",
        tasks=large,
        vs_small=round(process_large / process_small, 2),
    )
    # medians of three rounds, each side in turn: the bare script's time moves by half with what
    # the collector finds in the heap when it runs
    rounds = [_first_import_s(large) for _ in range(3)]
    took, bare, replayed = (statistics.median(r[i] for r in rounds) for i in range(3))
    record("exports", "first_import_s", took, "s", tasks=large, vs_bare=round(took / bare, 2))
    record("exports", "bare_json_executemany_s", bare, "s", tasks=large)
    record("exports", "import_rows_replayed_s", replayed, "s", tasks=large, vs_bare=round(replayed / bare, 2))
    ws = make_ledger(listed)
    env = {**os.environ, "HB_WORKSPACE": str(ws)}
    rss = _peak_rss_mb([*hb_command(), "list", "--json", "--status", "all"], env, ws)
    floor = _peak_rss_mb(FLOOR, env, ws)
    shutil.rmtree(ws, ignore_errors=True)
    record("exports", "list_json_peak_rss_mb", rss, "MB", tasks=listed, floor_mb=round(floor, 1))
    table(
        "12. exports that cost what changed, imports in bulk, lists that stream",
        [
            (f"auto_export pop at {small:,} tasks (median of {pops})", f"{at_small:.1f} ms", "", ""),
            (
                f"auto_export pop at {large:,} tasks (median of {pops})",
                f"{at_large:.1f} ms",
                f"{at_large / at_small:.2f} x the small one",
                "<= 1.5",
            ),
            (
                f"hb pop process, auto_export, {small:,} tasks (median of {pops})",
                f"{process_small:.0f} ms",
                "",
                "",
            ),
            (
                f"hb pop process, auto_export, {large:,} tasks (median of {pops})",
                f"{process_large:.0f} ms",
                f"{process_large / process_small:.2f} x the small one",
                "<= 1.5",
            ),
            (
                f"bare atomic write of that tasks.json ({large:,} tasks)",
                f"{write_large:.1f} ms",
                f"floor {whole:.2f} x (small pop + this write)",
                "",
            ),
            (f"bare json.load + executemany, {large:,} tasks (median of 3)", f"{bare:.2f} s", "", ""),
            (
                f"hb import tasks-json, {large:,} tasks, first (median of 3)",
                f"{took:.2f} s",
                f"{took / bare:.2f} x bare",
                "<= 3",
            ),
            (
                f"  its rows replayed into hb's schema (raw executemany, {large:,} tasks + history)",
                f"{replayed:.2f} s",
                f"floor {replayed / bare:.2f} x bare",
                "",
            ),
            (
                f"hb list --json --status all, {listed:,} tasks: peak RSS",
                f"{rss:.0f} MB",
                f"floor {floor:.0f} MB",
                "<= 150 MB",
            ),
        ],
        ["measurement", "value", "ratio", "target"],
    )


# --- readers that grow with their input -----------------------------------------------------


def _periodic_md(n: int) -> str:
    body = "".join(f"- name: t{i}\n  interval: 30m\n  prompt: check {i}\n" for i in range(n))
    return f"tasks:\n{body}\nRead CURRENT.md\n"


def _proactive_md(n: int) -> str:
    block = (
        '### [DAILY] T{0}\n\n```yaml\nid: t{0}\nfrequency: daily\ntime: "08:00"\ninstruction: do {0}\n```\n\n'
    )
    tasks = "".join(block.format(i) for i in range(n))
    return f"# Proactive\n\n<!-- PROACTIVE_TASKS_START -->\n\n{tasks}<!-- PROACTIVE_TASKS_END -->\n"


def _state_json(n: int) -> str:
    return json.dumps({"lastChecks": {f"check-{i}": 1714550400 + i for i in range(n)}}, indent=2)


def bench_inputs(scale: int = 10) -> None:
    """14. each reader of a workspace file on an input ``scale`` times larger: the time grows by
    about ``scale`` (a reader that copied the rest of its input at each item took 19.5 s over a
    HEARTBEAT.md of 50,000 periodic tasks; 0.5 s since)."""
    from heartbeat.formats import proactive, state, tasks_json, todo
    from heartbeat.rules import checklist

    def heartbeat_md(text: str) -> Any:
        return checklist.periodic_tasks(text), checklist.without_periodic_tasks(text)

    readers: list[tuple[str, Callable[[int], str], Callable[[str], Any], int]] = [
        ("HEARTBEAT.md periodic tasks", _periodic_md, heartbeat_md, 2_000),
        ("TODO.md entries", todo_text, lambda t: todo.parse(t, todo.TodoKind.TODO), 2_000),
        ("TODO.RECUR.md rules", recur_text, lambda t: todo.parse(t, todo.TodoKind.RECUR), 2_000),
        ("PROACTIVE.md task blocks", _proactive_md, proactive.parse, 200),
        ("heartbeat-state.json keys", _state_json, state.parse, 2_000),
        ("tasks.json tasks", lambda n: json.dumps(tasks_json_doc(n), indent=2), tasks_json.parse, 2_000),
    ]
    rows = []
    for name, make, read, n in readers:
        small, large = make(n), make(n * scale)
        took = [min(_seconds(read, text) for _ in range(3)) for text in (small, large)]
        ratio = took[1] / took[0]
        record("inputs", name, ratio, "ratio", items=n, scale=scale, target=f"<= {scale * 1.5:g}")
        rows.append((name, f"{n:,}", f"{took[0] * 1e3:.1f}", f"{took[1] * 1e3:.1f}", f"{ratio:.1f}"))
    table(
        f"14. readers on an input {scale} times larger (best of 3; target: at most {scale * 1.5:g} x)",
        rows,
        ["reader", "items", "ms", f"ms at {scale} x", "ratio"],
    )


def _seconds(fn: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "queue": lambda a: bench_queue(a.tasks),
    "processes": lambda a: bench_workers(a.tasks, 4),
    "depth": lambda a: bench_depth(1_000, a.large),
    "startup": lambda a: bench_process(a.runs),
    "json": lambda a: bench_json_script(1_000),
    "markdown": lambda a: bench_markdown(a.entries, a.entries // 10, a.md_runs),
    "reports": lambda a: bench_reports(a.outcomes, a.outcomes // 10, a.report_runs, a.report_cache),
    "postgres": lambda a: bench_postgres(a.tasks // 4, 8),
    "mcp": lambda a: bench_mcp(a.runs, a.runs * 10),
    "dashboard": lambda a: bench_dashboard(a.outcomes, a.outcomes // 10, 3 if a.quick else 7, a.report_cache),
    "round": lambda a: bench_round(a.runs),
    "exports": lambda a: bench_exports(100, a.tasks, 5 * a.tasks, 5 if a.quick else 15),
    "tasks_sync": lambda a: bench_tasks_sync(100, a.tasks, 3 if a.quick else 7),
    "inputs": lambda a: bench_inputs(10),
}


def byte_compile() -> None:
    """Byte-compile hb's modules first, as installing a package does: the whole-process
    timings then measure hb, not the compiling of its source (which an editable install
    under PYTHONDONTWRITEBYTECODE would otherwise repeat on every run)."""
    import compileall

    import heartbeat

    compileall.compile_dir(str(Path(heartbeat.__file__).parent), quiet=1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), help="run only these sections")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not a measurement)")
    parser.add_argument("--json-out", type=Path, help="also write every measurement to this file")
    parser.add_argument(
        "--report-cache", type=Path, help="keep (or reuse) the large reporting ledger in this directory"
    )
    args = parser.parse_args(argv)
    args.tasks = 2_000 if args.quick else 20_000
    args.large = 10_000 if args.quick else 100_000
    args.runs = 5 if args.quick else 20
    args.entries = 1_000 if args.quick else 10_000
    args.md_runs = 1 if args.quick else 5
    args.outcomes = 20_000 if args.quick else 1_000_000
    args.report_runs = 1 if args.quick else 3
    print(
        f"hb benchmark  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  python {sys.version.split()[0]}  "
        f"sqlite {sqlite3.sqlite_version}  cpus {os.cpu_count()}"
    )
    byte_compile()
    for name in args.only or list(SECTIONS):
        SECTIONS[name](args)
    if args.json_out:
        args.json_out.write_text(json.dumps(RESULTS, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
