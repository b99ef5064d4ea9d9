"""Long imports show progress on a terminal's stderr, and nothing when piped."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]


def _todo(path: Path, n: int) -> None:
    lines = "".join(f"- [ ] [Created](2026-05-01 {h % 24:02d}:{h % 60:02d}) | entry {h}\n" for h in range(n))
    path.write_text("# TODO Work In Progress (WIP)\n\n" + lines)


def test_a_long_import_shows_a_bar_on_a_terminal(hb: Runner, workspace: Path) -> None:
    hb("init")
    _todo(workspace / "TODO.md", 5000)
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "heartbeat", "import", "todo"], stdout=subprocess.PIPE, stderr=child, env=env
    )
    os.close(child)
    seen = b""
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    out, _ = proc.communicate(timeout=120)
    os.close(main)
    assert proc.returncode == 0
    assert b"writing tasks" in seen and b"100%" in seen
    assert b"writing tasks" not in out  # the bar is on stderr only


def test_piped_there_is_no_progress(hb: Runner, workspace: Path) -> None:
    hb("init")
    _todo(workspace / "TODO.md", 5000)
    result = hb("import", "todo")
    assert "writing" not in result.stderr and "%" not in result.stderr
    assert len(hb.json("list")) == 5000
