"""Docs that cannot drift: the command reference is generated, and every command is in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from heartbeat.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]


def _commands(group: click.Group, prefix: str = "hb") -> list[str]:
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        out.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            out.extend(_commands(command, f"{prefix} {name}"))
    return out


def test_cli_reference_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_cli_doc.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_every_command_is_documented() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for command in _commands(cli):
        assert f"## {command}\n" in reference, command
        top = " ".join(command.split()[:2])
        assert f"`{top}" in readme, f"{top} is not in the README"


def test_the_lazy_command_map_matches_the_command_modules() -> None:
    import importlib

    from heartbeat.cli.main import COMMAND_MODULES

    defined = {}
    for module in set(COMMAND_MODULES.values()):
        for command in importlib.import_module(f"heartbeat.cli.{module}").COMMANDS:
            defined[command.name] = module
    assert defined == COMMAND_MODULES
