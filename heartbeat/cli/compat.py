"""``hb compat``: exact drop-ins for the runtimes' own scripts (see :mod:`heartbeat.compat`)."""

from __future__ import annotations

import click

from heartbeat.cli.base import state


@click.group()
def compat() -> None:
    """Exact drop-ins for the runtimes' own scripts, over the ledger.

    \b
    Example:
      hb compat heartbeat-py pop
    """


@compat.command(
    "heartbeat-py",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def heartbeat_py(args: tuple[str, ...]) -> None:
    """The claude-skills heartbeat skill's heartbeat.py: its arguments, stdout, exit codes and files.

    ARGS are the script's: add, pop, complete, fail, list, and the skill's 1.2.0 scopes,
    clear-stale, --scope and --accept-stale (`hb compat heartbeat-py --help` prints its own help).
    The project is the git top-level of the current directory, else the current directory
    (or --workspace); --db and --now are hb's. Also installed as the `heartbeat-py` command.

    \b
    Example:
      hb compat heartbeat-py add --priority high --skill deep-research "Survey LLM orchestration"
      hb compat heartbeat-py pop
      hb compat heartbeat-py complete task-1a2b3c4d --outcome '{"result": "report.md"}'
    """
    from heartbeat.compat.heartbeat_py import run

    st = state()
    code = run(args, workspace=st.workspace, db=st.db, now=st.now, quiet=st.quiet, verbose=st.verbose)
    click.get_current_context().exit(code)


COMMANDS = [compat]
