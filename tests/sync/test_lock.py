"""The workspace file lock: a bounded wait, then exit 75 naming who holds it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import sys, time
from pathlib import Path
from heartbeat.ops.sync.files import file_lock
with file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held(workspace: Path) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(workspace)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.communicate()


def test_a_held_lock_is_waited_for_a_bounded_time_then_busy(
    hb: Runner, workspace: Path, held: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hb("init")
    monkeypatch.setenv("HB_LOCK_TIMEOUT", "1s")
    result = hb("sync", code=75)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hb: busy: ")
    assert f"held by pid {held.pid} (" in lines[0] and "waited 1s" in lines[0]


def test_the_setting_bounds_the_wait_and_the_environment_wins(
    hb: Runner, workspace: Path, held: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hb("init")
    hb("config", "set", "sync.lock_timeout", "1s")
    assert "waited 1s" in hb("sync", code=75).stderr
    monkeypatch.setenv("HB_LOCK_TIMEOUT", "2s")
    assert "waited 2s" in hb("sync", code=75).stderr
    monkeypatch.setenv("HB_LOCK_TIMEOUT", "soon")
    assert hb("sync", code=1).stderr.startswith("hb: bad HB_LOCK_TIMEOUT 'soon'")


def test_the_lock_is_taken_once_free(hb: Runner, workspace: Path) -> None:
    hb("init")
    assert hb("sync").exit_code == 0
    lock = workspace / ".agent" / "state" / ".files.lock"
    assert lock.read_text().startswith("pid ")  # the last holder, for the next one's message
