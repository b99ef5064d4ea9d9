"""Text tables line up by display width and fit a terminal, never a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from heartbeat.reporting.grid import cut, display_width, render
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]


def test_display_width_counts_wide_characters_twice_and_marks_not_at_all() -> None:
    assert display_width("abc") == 3
    assert display_width("发送发票") == 8
    assert display_width("ｈｂ") == 4  # fullwidth letters
    assert display_width("e\u0301") == 1  # e + combining acute
    assert cut("发送发票给客户", 7) == "发送发…"
    assert display_width(cut("发送发票给客户", 7)) <= 7


def _column_of(line: str, needle: str) -> int:
    """The display column where ``needle`` starts in ``line``."""
    return display_width(line[: line.index(needle)])


def test_chinese_titles_line_up() -> None:
    rows = [["t1", "发送发票", "due"], ["t2", "call", "later"], ["t3", "确认", "x"]]
    lines = render(["id", "title", "when"], rows).splitlines()
    starts = {_column_of(line, word) for line, word in zip(lines[2:], ["due", "later", "x"], strict=True)}
    assert starts == {_column_of(lines[0], "when")}  # the third column starts in one place
    numbers = render(["title", "n"], [["发送发票", "1"], ["call", "10"]], right=[False, True]).splitlines()
    assert display_width(numbers[2]) == display_width(numbers[3]) == display_width(numbers[1])


def test_a_table_wider_than_the_terminal_cuts_its_widest_text_column() -> None:
    rows = [["t1", "x" * 150, "3"], ["t2", "short", "12"]]
    text = render(["id", "title", "n"], rows, right=[False, False, True], fit=80)
    assert max(display_width(ln) for ln in text.splitlines()) <= 80
    assert "…" in text and "short" in text
    assert render(["id", "title", "n"], rows, right=[False, False, True]).count("x") == 150  # a pipe: whole


def _in_a_terminal(args: list[str], workspace: Path, columns: int) -> str:
    """Run hb with its stdout on a pseudo-terminal ``columns`` wide; what it printed."""
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "heartbeat", *args], stdout=child, stderr=subprocess.PIPE, env=env
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    proc.stderr.close()  # type: ignore[union-attr]
    os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_hb_list_fits_an_80_column_terminal_and_keeps_a_pipe_whole(hb: Runner, workspace: Path) -> None:
    hb("init")
    long = "Write the quarterly report for the board, with every figure checked twice " * 3
    hb("add", long.strip())
    hb("add", "发送发票给客户并确认收款")
    shown = _in_a_terminal(["list"], workspace, 80)
    assert shown.strip() and max(display_width(ln) for ln in shown.splitlines()) <= 80
    assert "…" in shown
    piped = hb("list").stdout
    assert long.strip() in piped  # never cut when piped


def test_hb_report_recurrences_fits_an_80_column_terminal(hb: Runner, workspace: Path) -> None:
    hb("init")
    title = "Water the plants in the office and the balcony, and note which of them need repotting"
    hb("recur", "add", title, "--repeat", "daily", "--next", "2026-05-01 09:00")
    shown = _in_a_terminal(["report", "recurrences"], workspace, 80)
    assert max(display_width(ln) for ln in shown.splitlines()) <= 80
