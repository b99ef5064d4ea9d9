"""The workspace guard, hb poke, and two hb heartbeat processes at once (SPEC.md section 7)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.clock import isoformat
from heartbeat.errors import Busy, InvalidInput
from heartbeat.ops.guard import acquire
from tests.conftest import Runner
from tests.round.conftest import open_ledger, runs

ROOT = Path(__file__).resolve().parents[2]
T0 = "2026-05-01T10:00"


def test_poke_makes_a_legacy_queue_task(sh_db: Runner) -> None:
    task = sh_db.json("--now", T0, "poke", "Check", "whether", "the", "build", "is", "green")
    assert task["title"] == "Check whether the build is green"
    assert task["source"] == "poke" and task["scope"] is None and task["status"] == "todo"
    assert task["id"].startswith("task-")
    popped = sh_db.json("pop")
    assert popped["id"] == task["id"] and popped["description"] == "Check whether the build is green"
    [run] = runs(sh_db, "poke")
    assert (run["status"], run["guard"], run["task_id"]) == ("ok", None, task["id"])


def test_poke_reads_standard_input(sh: Runner) -> None:
    tid = sh("poke", "-", input="Summarise today's mail\n").stdout.strip()
    assert sh.json("show", tid)["title"] == "Summarise today's mail"


def test_empty_poke_is_a_usage_error(sh: Runner) -> None:
    for args, stdin in ((("poke", ""), None), (("poke", "  "), None), (("poke", "-"), "\n\n")):
        result = sh(*args, input=stdin, code=2)
        assert "poke text is empty" in result.stderr
    sh("poke", code=2)
    assert sh.json("list") == []
    assert runs(sh, "poke") == []


def test_a_poke_of_only_a_byte_order_mark_is_empty(sh: Runner) -> None:
    """Python's str.strip() keeps U+FEFF, which JavaScript's trim() (and hb's HEARTBEAT.md
    reader) takes for a blank: a poke of a BOM and a space made a task with an invisible title."""
    blanks = ((("poke", "\ufeff"), None), (("poke", "\ufeff \u2028"), None), (("poke", "-"), "\ufeff \n"))
    for args, stdin in blanks:
        result = sh(*args, input=stdin, code=2)
        assert "poke text is empty" in result.stderr
    assert sh.json("list") == []
    assert runs(sh, "poke") == []
    # the API (and hb serve's POST /poke) alike
    with open_ledger(sh, T0) as ledger, pytest.raises(InvalidInput, match="poke text is empty"):
        ledger.poke("\ufeff\t")
    tid = sh("poke", "-", input="\ufeffSummarise today's mail\n").stdout.strip()
    assert sh.json("show", tid)["title"] == "Summarise today's mail"  # a BOM before the text goes too


def test_poke_and_heartbeat_exit_75_while_the_guard_is_held(sh_db: Runner) -> None:
    with open_ledger(sh_db, T0) as ledger, ledger.guard("heartbeat") as held:
        poked = sh_db("--now", T0, "poke", "hello", code=75)
        assert poked.stdout == ""
        lines = poked.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("hb: busy: a heartbeat")
        assert f"(pid {os.getpid()})" in lines[0]
        sh_db("--now", T0, "heartbeat", code=75)
        holder = ledger.guard_holder()
        assert holder is not None and holder["kind"] == "heartbeat" and holder["expired"] is False
    assert sh_db.json("list") == []
    [run] = runs(sh_db, "heartbeat")
    assert run["pk"] == held.pk and run["status"] == "ok" and run["guard"] is None
    sh_db("--now", T0, "poke", "hello")  # free again


def test_guard_left_by_a_dead_holder_expires(sh_db: Runner) -> None:
    with open_ledger(sh_db, T0) as ledger:
        dead = acquire(ledger.ctx, "heartbeat")  # taken and never released, as after a SIGKILL
    assert isoformat(dead.expires_at) == "2026-05-01T02:10:00+00:00"  # setting heartbeat.guard, 10m
    sh_db("--now", "2026-05-01T10:09:59", "poke", "too early", code=75)
    sh_db("--now", "2026-05-01T10:10", "poke", "just in time")  # expires_at has passed (inclusive)
    by_pk = {r["pk"]: r for r in runs(sh_db, "heartbeat")}
    assert by_pk[dead.pk]["status"] == "expired" and by_pk[dead.pk]["guard"] is None
    assert by_pk[dead.pk]["detail"]["taken_over_by"] == "poke"


def test_guard_lifetime_is_a_setting(sh: Runner) -> None:
    sh("config", "set", "heartbeat.guard", "2m")
    with open_ledger(sh, T0) as ledger:
        acquire(ledger.ctx, "heartbeat")
    sh("--now", "2026-05-01T10:01", "poke", "x", code=75)
    sh("--now", "2026-05-01T10:02", "poke", "x")


def test_guard_released_with_error_when_the_run_fails(sh_db: Runner) -> None:
    with open_ledger(sh_db, T0) as ledger:
        with pytest.raises(RuntimeError), ledger.guard("heartbeat"):
            raise RuntimeError("sync exploded")
        with ledger.guard("heartbeat"), pytest.raises(Busy), ledger.guard("poke"):
            pass  # nested: the inner one is refused, the outer one ends well
    rows = runs(sh_db, "heartbeat")
    assert [(r["status"], r["guard"]) for r in rows] == [("error", None), ("ok", None)]
    assert rows[0]["detail"]["error"] == "sync exploded"
    assert runs(sh_db, "poke") == []


def test_a_run_that_outlived_its_guard_stays_expired(sh: Runner) -> None:
    with open_ledger(sh, T0) as slow, slow.guard("heartbeat") as held:
        sh("--now", "2026-05-01T10:11", "poke", "took over")
    [row] = [r for r in runs(sh, "heartbeat") if r["pk"] == held.pk]
    assert row["status"] == "expired"
    assert row["detail"]["finished_after_expiry"] == "ok"
    assert runs(sh, "poke")[0]["status"] == "ok"


# --- two processes -------------------------------------------------------------------


def _hb(workspace: Path, db: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "HB_DATABASE_URL": db, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "heartbeat", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_holder(workspace: Path, db: str, pid: int, timeout: float = 30) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    with Ledger.open(workspace=workspace, db=db) as ledger:
        while time.monotonic() < deadline:
            holder = ledger.guard_holder()
            if holder is not None and holder["pid"] == pid:
                return holder
            time.sleep(0.05)
    raise AssertionError(f"process {pid} never took the guard")


@pytest.mark.slow
def test_two_heartbeats_at_once_one_runs_the_other_exits_75_then_sigkill(
    db_url: str, workspace: Path
) -> None:
    hb_env = Runner({"HB_DATABASE_URL": db_url})
    hb_env("init")
    # HEARTBEAT.md as a named pipe the test holds open: the heartbeat holding the guard waits
    # reading it (up to 15 s) while the test looks at the other one
    os.mkfifo(workspace / "HEARTBEAT.md")
    held_open = os.open(workspace / "HEARTBEAT.md", os.O_RDWR)
    procs = [_hb(workspace, db_url, "heartbeat") for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        done = [p for p in procs if p.poll() is not None]
        assert len(done) == 1, "one of the two heartbeats should have given up at once"
        loser = done[0]
        [winner] = [p for p in procs if p is not loser]
        out, err = loser.communicate()
        assert loser.returncode == 75, err
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("hb: busy: a heartbeat")
        holder = _wait_for_holder(workspace, db_url, winner.pid)
        assert holder["kind"] == "heartbeat"
        # a poke while the heartbeat runs is refused too
        busy = _hb(workspace, db_url, "poke", "are you there?")
        _, busy_err = busy.communicate(timeout=60)
        assert busy.returncode == 75, busy_err
        # the holder dies without releasing the guard
        winner.send_signal(signal.SIGKILL)
        winner.wait(60)
    finally:
        os.close(held_open)
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    hb_env("poke", "still held", code=75)  # the dead holder's guard has not expired yet
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        later = isoformat(ledger.now() + timedelta(minutes=10, seconds=1))
    assert later is not None
    task = hb_env.json("--now", later, "poke", "free again")
    assert task["title"] == "free again"
    assert [r["status"] for r in runs(hb_env, "heartbeat")] == ["expired"]
