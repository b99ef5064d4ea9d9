#!/usr/bin/env python3
"""Generate docs/cli.md, the command reference, from the commands' own --help.

python scripts/gen_cli_doc.py          # rewrite docs/cli.md
python scripts/gen_cli_doc.py --check  # exit 1 if docs/cli.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heartbeat.cli.main import cli  # noqa: E402

TARGET = ROOT / "docs" / "cli.md"


def _walk(group: click.Group, path: list[str]) -> list[tuple[list[str], click.Command]]:
    out: list[tuple[list[str], click.Command]] = []
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        assert command is not None
        out.append(([*path, name], command))
        if isinstance(command, click.Group):
            out.extend(_walk(command, [*path, name]))
    return out


def render() -> str:
    parts = [
        "# hb command reference",
        "",
        "Generated from each command's `--help` by `scripts/gen_cli_doc.py`; a test keeps it current.",
        "",
    ]
    help_names = ["-h", "--help"]  # as the real commands take them (heartbeat.cli.main.CONTEXT)
    ctx = click.Context(
        cli, info_name="hb", terminal_width=100, max_content_width=100, help_option_names=help_names
    )
    parts += ["## hb", "", "```", cli.get_help(ctx), "```", ""]
    for path, command in _walk(cli, []):
        parent = ctx
        for name in path[:-1]:
            group_cmd = parent.command.get_command(parent, name)  # type: ignore[attr-defined]
            parent = click.Context(group_cmd, info_name=name, parent=parent, help_option_names=help_names)
        sub = click.Context(
            command,
            info_name=path[-1],
            parent=parent,
            terminal_width=100,
            max_content_width=100,
            help_option_names=help_names,
        )
        parts += [f"## hb {' '.join(path)}", "", "```", command.get_help(sub), "```", ""]
    return "\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run python scripts/gen_cli_doc.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
