"""Bad input at the edges: a failed init, a blank quiet_hours, text that is not UTF-8.

Each is one line on stderr, exit 1, and no change to the ledger or the files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click.testing
import pytest

from heartbeat.cli.main import cli
from tests.conftest import Runner


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hb: "), stderr
    return lines[0]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- hb init --------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["Bad/Zone", "", "  "])
def test_a_failed_init_creates_nothing(hb: Runner, workspace: Path, zone: str) -> None:
    result = hb("init", "--timezone", zone, code=1)

    assert "timezone" in _one_line(result.stderr)
    assert list(workspace.iterdir()) == []  # no .agent/state, no heartbeat.db


@pytest.mark.parametrize("command", [["init"], ["list"], ["sync"]])
def test_a_bad_now_creates_no_ledger(hb: Runner, workspace: Path, command: list[str]) -> None:
    result = hb("--now", "garbage", *command, code=1)

    assert _one_line(result.stderr).startswith("hb: bad --now time 'garbage'")
    assert list(workspace.iterdir()) == []


def test_a_failed_init_leaves_an_existing_ledger_untouched(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    before = _snapshot(workspace)

    result = hb("init", "--timezone", "Bad/Zone", code=1)

    assert "Bad/Zone" in _one_line(result.stderr)
    assert _snapshot(workspace) == before
    assert hb("config", "get", "timezone").stdout.strip() == "Asia/Tokyo"


def test_init_with_a_good_zone_still_sets_it(hb: Runner) -> None:
    hb("init", "--timezone", "America/New_York")
    assert hb("config", "get", "timezone").stdout.strip() == "America/New_York"


# --- hb config set quiet_hours ----------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_quiet_hours_is_refused(hb: Runner, blank: str) -> None:
    hb("config", "set", "quiet_hours", "22:00-07:00")

    result = hb("config", "set", "quiet_hours", blank, code=1)

    line = _one_line(result.stderr)
    assert "quiet_hours" in line and "use off" in line
    assert hb("config", "get", "quiet_hours").stdout.strip() == "22:00-07:00"


@pytest.mark.parametrize("off", ["off", "OFF", " off "])
def test_off_still_turns_quiet_hours_off(hb: Runner, off: str) -> None:
    assert hb.json("config", "set", "quiet_hours", off)["value"] == "off"
    assert hb("config", "get", "quiet_hours").stdout.strip() == "off"


# --- text that is not UTF-8 ---------------------------------------------------------------


def _no_tasks(hb: Runner) -> None:
    assert hb.json("list", "--all") == []


def test_poke_stdin_that_is_not_utf8_is_refused(hb: Runner) -> None:
    hb("init")
    # stdin is read as bytes and decoded as UTF-8 whatever the locale: the bad byte is named
    result = click.testing.CliRunner().invoke(
        cli, ["poke", "-"], input=b"ok \xff\xfe", catch_exceptions=False
    )

    assert result.exit_code == 1, result.stderr
    assert _one_line(result.stderr) == "hb: <stdin>:1:4: not UTF-8 text (byte 3)"
    _no_tasks(hb)


def test_poke_argument_with_surrogate_escapes_is_refused(hb: Runner) -> None:
    hb("init")
    # What Python makes of argv b"caf\xe9": the bad byte as a lone surrogate.
    result = hb("poke", "caf\udce9", "au lait", code=1)

    assert _one_line(result.stderr) == "hb: TEXT is not valid UTF-8 text (byte 3)"
    _no_tasks(hb)


def test_poke_stdin_not_utf8_in_a_real_process(hb: Runner, workspace: Path) -> None:
    """The reported case, in a real process (in UTF-8 mode a text stdin would have surrogates)."""
    hb("init")
    env = {**os.environ, "PYTHONUTF8": "1", "HB_WORKSPACE": str(workspace)}
    proc = subprocess.run(
        [sys.executable, "-m", "heartbeat", "poke", "-"],
        input=b"\xff\xfe",
        capture_output=True,
        env=env,
        check=False,
    )

    assert proc.returncode == 1, proc.stderr
    assert _one_line(proc.stderr.decode()) == "hb: <stdin>:1:1: not UTF-8 text (byte 0)"
    _no_tasks(hb)


def test_poke_with_utf8_text_still_works(hb: Runner) -> None:
    hb("init")
    task = hb.json("poke", "-", input="Café au lait ☕")
    assert task["title"].startswith("Café")


def test_a_negative_duration_is_a_bad_value_not_a_help_request(hb: Runner) -> None:
    for key in ("check_interval", "queue.lease"):
        before = hb.json("config", "get", key)["value"]
        result = hb("config", "set", key, "-1h", code=1)
        reason = "bad duration '-1h' (expected e.g. 30m, 6h, 2d, 1w or PT6H)"
        assert result.stderr == f"hb: setting {key}: {reason}\n"
        assert hb.json("config", "get", key)["value"] == before
    assert "Validate and store a setting." in hb("config", "set", "--help").stdout
