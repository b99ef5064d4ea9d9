"""hb mcp --http: streamable HTTP behind a bearer token, on loopback, the token never logged."""

from __future__ import annotations

import http.client
import json
import os
import re
import selectors
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from heartbeat import Ledger
from tests.conftest import Runner, read_until_closed
from tests.mcp.conftest import ROOT, TOOLS, call, run

TOKEN = "mcp-s3cret-token-0123456789"
CLI = [sys.executable, "-m", "heartbeat", "--workspace"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


@pytest.fixture
def token_file(workspace: Path) -> Path:
    path = workspace.parent / "mcp.token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


@contextmanager
def http_server(workspace: Path, *options: str) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """``hb mcp --http --port 0`` as a process: its URL, what it printed on stderr up to it, and
    the process, stopped with SIGTERM afterwards."""
    argv = [*CLI, str(workspace), "mcp", "--http", "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*argv, *options], env=env, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        head = ""
        for _ in range(5):  # warnings first (a token file others may read), then the URL
            head += _line(proc, 60)
            found = re.search(r"http://127\.0\.0\.1:\d+/mcp", head)
            if found:
                break
        assert found, f"no URL in {head!r}"
        yield found.group(0), head, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def _line(proc: subprocess.Popen[str], seconds: float) -> str:
    assert proc.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        if not selector.select(seconds):
            raise AssertionError(f"hb mcp --http printed nothing in {seconds}s")
    return proc.stderr.readline()


def post(url: str, body: dict[str, object], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        conn.request("POST", parts.path, body=json.dumps(body), headers=sent)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_401_without_the_token_and_the_tools_work_with_it(workspace: Path, token_file: Path) -> None:
    with http_server(workspace, "--token-file", str(token_file)) as (url, head, proc):
        assert head.startswith("hb mcp: listening on http://127.0.0.1:")
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            status, answer_headers, body = post(url, INIT, headers)
            assert status == 401, headers
            assert answer_headers["www-authenticate"] == 'Bearer realm="hb"'
            assert json.loads(body) == {"error": "missing or wrong bearer token"}

        async def main() -> None:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
                added = await call(session, "add", title="Check the build over HTTP")
                task = (await call(session, "pop"))["task"]
                assert task["id"] == added["id"]
                await call(session, "complete", id=task["id"], claim=task["claim"], outcome="green")

        run(main)
        proc.terminate()
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        log = proc.stderr.read()
    assert "hb mcp: stopped" in log
    assert TOKEN not in log and "Traceback" not in log
    with Ledger.open(workspace=workspace) as ledger:
        assert ledger.list(status="done")[0]["title"] == "Check the build over HTTP"


def test_the_workspace_token_file_is_the_default_as_for_hb_serve(workspace: Path) -> None:
    default = workspace / ".agent" / "state" / "serve.token"
    default.parent.mkdir(parents=True)
    default.write_text(TOKEN)
    default.chmod(0o644)  # readable by others: a warning, as hb serve gives
    with http_server(workspace) as (url, head, _proc):
        assert post(url, INIT, {})[0] == 401
        status, _, _ = post(url, INIT, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
    assert head.startswith(f"hb: warning: {default} is readable by others (mode 0644)")


def test_without_a_token_the_server_does_not_start(hb: Runner, workspace: Path, tmp_path: Path) -> None:
    result = hb("mcp", "--http", "--port", "0", code=1)
    assert "hb mcp --http needs a bearer token: pass --token-file F" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    missing = tmp_path / "nope.token"
    result = hb("mcp", "--http", "--port", "0", "--token-file", str(missing), code=1)
    assert result.stderr.splitlines() == [
        f"hb: {missing}: no token file; hb mcp --http needs one (see hb mcp --help)"
    ]
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    result = hb("mcp", "--http", "--port", "0", "--token-file", str(empty), code=1)
    assert result.stderr.splitlines() == [f"hb: {empty}: the token file is empty"]


def test_a_port_in_use_is_one_line(workspace: Path, token_file: Path) -> None:
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, _proc):
        port = str(urlsplit(url).port)
        done = subprocess.run(
            [*CLI, str(workspace), "mcp", "--http", "--port", port, "--token-file", str(token_file)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"hb: cannot listen on 127.0.0.1:{port}: Address already in use"]


def raw_post(url: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, bytes]:
    """A POST written as bytes (http.client's request() would not repeat a header): its status
    and body."""
    parts = urlsplit(url)
    head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    head += [f"{name}: {value}" for name, value in headers]
    head += [f"Content-Length: {len(body)}"]
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        reply = read_until_closed(sock)
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def test_more_than_one_authorization_header_is_a_400_whichever_comes_first(
    workspace: Path, token_file: Path
) -> None:
    body = json.dumps(INIT).encode()
    kinds = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
    right, wrong = f"Bearer {TOKEN}", "Bearer wrong"
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        for pair in ((right, wrong), (wrong, right), (right, right), (right, "")):
            sent = [*kinds, *(("Authorization", value) for value in pair)]
            status, answer = raw_post(url, sent, body)
            assert status == 400, pair
            assert json.loads(answer) == {"error": "more than one Authorization header"}
        assert raw_post(url, [*kinds, ("Authorization", wrong)], body)[0] == 401
        assert raw_post(url, [*kinds, ("Authorization", right)], body)[0] == 200
        proc.terminate()
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        log = proc.stderr.read()
    assert TOKEN not in log and "Traceback" not in log
