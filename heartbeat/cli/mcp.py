"""hb mcp (the ledger as Model Context Protocol tools) and hb prime (the workflow for an agent)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from heartbeat.cli.base import (
    OUTPUT_CLOSED,
    OUTPUT_FAILED,
    HbClickError,
    devnull_onto,
    info,
    state,
    stdout_closed_by_caller,
    warn,
)

F = TypeVar("F", bound=Callable[..., Any])

EXTRA = "pip install 'hb-ledger[mcp]'"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8788

# What an agent is told once, in AGENTS.md / CLAUDE.md: at most 40 lines (a test counts them
# and checks that every tool and command named exists).
PRIME = """\
# hb: this workspace's task ledger
Tasks, claims, reminders and recurring work live in hb. Use its MCP tools (server: `hb mcp`),
or the same commands in a shell with --json (`hb pop --json`, `hb complete ID --claim TOKEN`).

## Each heartbeat
1. Call `heartbeat` (shell: `hb heartbeat`): it syncs the task files, runs the round and
   returns the brief.
2. {"ok": true} (shell: exactly HEARTBEAT_OK) means nothing to do or say: stay silent,
   reply HEARTBEAT_OK and message no one.
3. Otherwise follow its checklist, send each of its messages as written (the throttle has
   allowed them already), and take its recurring tasks (below).

## Take, keep and finish work
- `pop` (shell: `hb pop --scope S --worker NAME --lease 30m`) claims the next task and
  returns it with its claim token, or null and the reason when there is nothing to take.
- While you work, `renew` (id, claim) well inside the lease, e.g. every lease/3.
- Finish with `complete` (id, claim, outcome) or `fail` (id, claim, reason; final: no
  retry). Always pass the claim. "claim lost": someone else holds or ended the task now;
  stop working on it and do not retry.
- "choose a scope": pass one of the scopes listed. "stale claims": `pop` with accept_stale
  takes one over (look at what its last holder left first).
- New work: `add` (title; key makes a retried add safe; after, not_before to defer).
- `ready` shows what pop would hand out; explain says why the rest is not ready.

## Reminders and recurring work
- Outside the heartbeat, ask `notify` (id, risk) before messaging about a task, and
  `proactive` (topic, suggestion) before starting a conversation; send only when the
  decision is "sent", nothing when it is "suppressed".
- `recur_due` with claim hands you the recurring work due now, once per period; record
  each run with `recur_outcome` (id, result, success).

## Questions
- `due` lists what enters the round; `report` (outcomes, failures, notifications, queue,
  recurrences) and read-only `sql` answer what was done, failed, said and held back.
"""


def _global_option(name: str, metavar: str) -> Callable[[F], F]:
    """``hb --NAME`` repeated after ``mcp``, where agent runtimes' configs put a server's arguments."""

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
        if value is None:
            return
        if not value.strip():
            raise click.BadParameter("empty value", param_hint=f"--{name}")
        setattr(state(ctx), name, value)

    return click.option(
        f"--{name}", metavar=metavar, expose_value=False, callback=remember, help=f"As hb --{name}."
    )


@click.command("mcp")
@_global_option("workspace", "DIR")
@_global_option("db", "URL")
@_global_option("now", "ISO8601")
@click.option(
    "--http", "over_http", is_flag=True, help="Serve streamable HTTP (bearer token) instead of stdio."
)
@click.option(
    "--host", metavar="ADDRESS", help=f"With --http: address to listen on [default: {DEFAULT_HOST}]."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help=f"With --http: port to listen on; 0 for any free one [default: {DEFAULT_PORT}].",
)
@click.option(
    "--token-file",
    metavar="FILE",
    help="With --http: file holding the bearer token [default: <workspace>/.agent/state/serve.token].",
)
def mcp(over_http: bool, host: str | None, port: int | None, token_file: str | None) -> None:
    """Serve the workspace's ledger as Model Context Protocol tools (needs the [mcp] extra).

    Standard input and output by default, as agent runtimes launch MCP servers; the
    ledger is opened once and each tool call is one transaction. Tools: heartbeat,
    pop, complete, fail, renew, add, ready, due, notify, proactive, recur_due,
    recur_outcome, sql, report.

    With --http: streamable HTTP at /mcp, on loopback by default, with the same
    bearer-token rules as hb serve (401 without the token).

    \b
    Example:
      claude mcp add hb -- hb mcp --workspace ~/agent
      hb mcp --workspace ~/agent --http --port 8788 --token-file ~/agent/.agent/state/serve.token
    """
    if not over_http and (host is not None or port is not None or token_file is not None):
        raise click.UsageError("--host, --port and --token-file go with --http")
    if not over_http and sys.stdin is None:  # started with <&-
        raise click.UsageError("standard input is closed: hb mcp speaks MCP over stdio (or give --http)")
    if not over_http and (sys.stdout is None or stdout_closed_by_caller()):  # started with >&-
        raise HbClickError(
            "cannot write standard output: it was closed when hb started; hb mcp speaks MCP over "
            "stdio (or give --http)",
            OUTPUT_FAILED,
        )
    try:
        from heartbeat import mcp_server
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] == "heartbeat":
            raise
        raise HbClickError(f"hb mcp needs the MCP SDK, an optional extra: {EXTRA}", 1) from None
    st = state()
    ledger = st.ledger()  # opened (created or upgraded) once, before serving
    if not over_http:
        server, calls = mcp_server.build(ledger)
        try:  # (Ctrl-C: KeyboardInterrupt, exit 130; a full disk: OutputFailed, exit 74)
            terminated = mcp_server.serve_stdio(server)
        except KeyboardInterrupt:  # a running sql query is cancelled, as hb sql's: no wait
            calls.interrupt()
            raise
        except (BrokenPipeError, ConnectionResetError):  # the client went away: no one to tell
            devnull_onto(1)
            raise click.exceptions.Exit(OUTPUT_CLOSED) from None
        finally:
            calls.close()
        if terminated:
            info("hb mcp: stopped")
        return

    from pathlib import Path

    from heartbeat import serve as serve_mod
    from heartbeat.errors import NotFound

    if token_file is None and not (ledger.workspace / serve_mod.TOKEN_FILE).exists():
        raise NotFound(
            f"hb mcp --http needs a bearer token: pass --token-file F or create "
            f"{ledger.workspace / serve_mod.TOKEN_FILE} (one line, e.g. from "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    path = serve_mod.token_path(ledger, token_file)
    if not Path(path).exists():
        raise NotFound(f"{path}: no token file; hb mcp --http needs one (see hb mcp --help)")
    token = serve_mod.read_token(path)
    exposed = serve_mod.token_file_warning(path)
    if exposed is not None:
        warn(exposed)
    address = host or DEFAULT_HOST
    server, calls = mcp_server.build(ledger)
    sock = mcp_server.listen(address, DEFAULT_PORT if port is None else port)
    if not serve_mod.is_loopback(sock.getsockname()[0]):
        warn(
            f"listening on {address}, not loopback: anyone who can reach it and has the token can use "
            "the ledger"
        )
    info(f"hb mcp: listening on {mcp_server.url_of(sock)} (streamable HTTP, bearer token)")
    try:
        mcp_server.serve_http(server, sock, token)
    finally:
        sock.close()
        calls.close()
    info("hb mcp: stopped")


@click.command()
def prime() -> None:
    """Print the hb workflow for an agent (at most 40 lines), for AGENTS.md or CLAUDE.md.

    How to take, renew and finish work with hb's tools or commands, and when to stay
    silent (HEARTBEAT_OK).

    \b
    Example:
      hb prime >> AGENTS.md
    """
    click.echo(PRIME, nl=False)


COMMANDS: list[click.Command] = [mcp, prime]
