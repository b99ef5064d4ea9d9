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


def _block_after(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```sh\n", readme.index(heading)) + len("```sh\n")
    return readme[start : readme.index("\n```\n", start)]


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "TZ": "UTC"}
    env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "LANG")})
    return env


def test_the_quick_tour_runs_as_written_in_a_fresh_directory(tmp_path: Path) -> None:
    script = "set -euo pipefail\n" + _block_after("## Quick tour")
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert '"claim"' in done.stdout and '"task_id": "round3-edit-item-33"' in done.stdout
    assert "(2 ready / 0 in_progress / 0 completed / 2 total)" in done.stdout
    assert done.stdout.splitlines()[-1].split() == ["_round3_extension.ag_implementation_queue", "1"]


def test_the_readme_first_command_runs_the_main_job_on_the_example(tmp_path: Path) -> None:
    """The README's first command, without its install step (tests/install covers that)."""
    first = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].split("\n```", 1)[0]
    job = first.split(" && ", 2)[2]  # after `python3 -m venv .venv && .venv/bin/pip install -q .`
    job = job.replace(".venv/bin/hb", "hb").replace("/tmp/hb-demo", str(tmp_path / "demo"))
    done = subprocess.run(
        ["bash", "-c", job], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the heartbeat printed its brief"


def test_api_reference_is_current_and_every_public_method_is_documented() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_api_doc.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    import inspect

    from heartbeat.ledger import Ledger

    undocumented = [
        name
        for name in dir(Ledger)
        if not name.startswith("_")
        and callable(getattr(Ledger, name))
        and not inspect.getdoc(getattr(Ledger, name))
    ]
    assert undocumented == []
    api = (ROOT / "docs" / "api.md").read_text()
    for name in ("pop", "complete", "fail", "renew", "ready", "sync", "heartbeat", "sql"):
        assert f"## `{name}`" in api


def test_the_cli_reference_shows_help_as_the_commands_print_it() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text()
    out = subprocess.run([sys.executable, "-m", "heartbeat", "pop", "--help"], capture_output=True, text=True)
    assert "-h, --help" in out.stdout and "-h, --help" in reference
    assert "\n  --help " not in reference
