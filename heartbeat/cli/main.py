"""The ``hb`` command group and its global options."""

from __future__ import annotations

import sys
from typing import Any

import click

from heartbeat import __version__
from heartbeat.cli import admin, files, queue, recur, report, round, sync, tasks
from heartbeat.cli.base import HbGroup, State

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=HbGroup, context_settings=CONTEXT)
@click.option(
    "--workspace",
    "-w",
    envvar="HB_WORKSPACE",
    metavar="DIR",
    help="The agent's workspace directory [env HB_WORKSPACE; default: current directory].",
)
@click.option(
    "--db",
    envvar="HB_DATABASE_URL",
    metavar="URL",
    help="Database path or SQLAlchemy URL [env HB_DATABASE_URL; default: "
    "<workspace>/.agent/state/heartbeat.db].",
)
@click.option(
    "--now",
    envvar="HB_NOW",
    metavar="ISO8601",
    help="Pin the clock for this run; naive = workspace timezone [env HB_NOW].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Fewer notices on stderr.")
@click.option("-v", "--verbose", count=True, help="More detail on stderr.")
@click.version_option(__version__, "--version", prog_name="hb")
@click.pass_context
def cli(
    ctx: click.Context,
    workspace: str | None,
    db: str | None,
    now: str | None,
    as_json: bool,
    quiet: bool,
    verbose: int,
) -> None:
    """hb, the heartbeat ledger: one transactional database under an agent's files.

    \b
    Example:
      hb init
      hb add "Write the weekly report" --priority high --due 2026-05-02T17:00
      hb list --json
    """
    st = State(workspace=workspace, db=db, now=now or None, json=as_json, quiet=quiet, verbose=verbose)
    ctx.obj = st
    ctx.call_on_close(st.close)


for module in (admin, tasks, queue, files, sync, recur, round, report):
    for command in module.COMMANDS:
        cli.add_command(command)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``hb`` console script."""
    return cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="hb")
