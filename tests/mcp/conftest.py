"""Helpers for the hb mcp tests: a real MCP client (the SDK's stdio_client + ClientSession)
spawning ``hb mcp`` as a process, and calls that unwrap its results."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
# the first message a client sends, as a raw JSON-RPC line (for tests that speak the wire)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
EXAMPLE = ROOT / "examples" / "workspace"
TOOLS = {
    "heartbeat",
    "pop",
    "complete",
    "fail",
    "renew",
    "add",
    "ready",
    "due",
    "notify",
    "proactive",
    "recur_due",
    "recur_outcome",
    "sql",
    "report",
}


def server_params(workspace: Path, db: str | None = None, now: str | None = None) -> StdioServerParameters:
    """``hb mcp`` on ``workspace`` as an agent runtime's config launches it: the options after
    ``mcp`` (this interpreter's hb; the HTTP tests give them before it, as for any command)."""
    args = ["-m", "heartbeat", "mcp", "--workspace", str(workspace)]
    if db is not None:
        args += ["--db", db]
    if now is not None:
        args += ["--now", now]
    env = {"TZ": "UTC", "PYTHONPATH": str(ROOT)}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return StdioServerParameters(command=sys.executable, args=args, env=env)


@asynccontextmanager
async def mcp_session(
    workspace: Path, db: str | None = None, now: str | None = None, stderr: Path | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised client session with a fresh ``hb mcp`` process; the server's standard
    error goes to ``stderr`` (default: ``mcp-stderr.log`` beside the workspace)."""
    params = server_params(workspace, db, now)
    log_path = stderr or workspace.parent / "mcp-stderr.log"
    with log_path.open("a") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """The tool's JSON result; the call must succeed."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, f"{tool}({arguments}) failed: {text}"
    assert result.structured_content == json.loads(text)
    return json.loads(text)


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The tool error's text; the call must fail as a tool error (isError), not a protocol error."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed: {result.content}"
    assert len(result.content) == 1
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    return text


async def result_text(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text the client receives for a successful call: what a result's size is measured on."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.content[0].text  # type: ignore[union-attr]


def run(main: Callable[[], Awaitable[None]]) -> None:
    """``anyio.run(main)``; a failure inside the client's task groups is raised as itself (the
    assertion that failed), not wrapped in exception groups."""
    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out
