"""hb prime: a short workflow for AGENTS.md / CLAUDE.md that names only tools and commands that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from heartbeat.cli.main import cli
from tests.conftest import Runner
from tests.mcp.conftest import ROOT, TOOLS


def test_prime_is_at_most_40_lines_and_names_only_real_tools_and_commands(hb: Runner) -> None:
    text = hb("prime").stdout
    lines = text.splitlines()
    assert 10 <= len(lines) <= 40 and text.endswith("\n")
    assert "HEARTBEAT_OK" in text and '{"ok": true}' in text

    quoted = re.findall(r"`([^`]+)`", text)
    tools = {q for q in quoted if not q.startswith("hb ")}
    assert tools <= TOOLS, tools - TOOLS
    assert {"heartbeat", "pop", "renew", "complete", "fail"} <= tools

    commands = [q.split() for q in quoted if q.startswith("hb ")]
    assert len(commands) >= 4
    ctx = click.Context(cli)
    for words in commands:
        command = cli.get_command(ctx, words[1])
        assert command is not None, words
        options = {opt for param in command.params for opt in param.opts} | {"--json"}
        for word in words[2:]:
            if word.startswith("--"):
                assert word in options, (words, word)


def test_prime_needs_neither_the_extra_nor_a_ledger(workspace: Path) -> None:
    script = (
        "import sys; sys.modules['mcp'] = None\n"  # as if the [mcp] extra were not installed
        "from heartbeat.cli.main import main\n"
        f"main(['--workspace', {str(workspace)!r}, 'prime'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("# hb: this workspace's task ledger\n")
    assert not (workspace / ".agent").exists(), "printing the workflow opened no ledger"
