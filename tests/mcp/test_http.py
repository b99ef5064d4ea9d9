"""hb mcp --http: streamable HTTP behind a bearer token, on loopback, the token never logged."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from heartbeat import Ledger, mcp_http, mcp_server
from tests.conftest import Runner, read_until_closed
from tests.mcp.conftest import INITIALIZE, ROOT, TOOLS, call, run

TOKEN = "mcp-s3cret-token-0123456789"
CLI = [sys.executable, "-m", "heartbeat", "--workspace"]


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
            found = re.search(r"http://127\.\d+\.\d+\.\d+:\d+/mcp", head)
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


def stopped_log(proc: subprocess.Popen[str]) -> str:
    """SIGTERM to the server, which must stop cleanly (exit 0); all it wrote to stderr."""
    proc.terminate()
    assert proc.wait(20) == 0
    assert proc.stderr is not None
    return proc.stderr.read()


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
            status, answer_headers, body = post(url, INITIALIZE, headers)
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
        log = stopped_log(proc)
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
        assert post(url, INITIALIZE, {})[0] == 401
        status, _, _ = post(url, INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
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
    result = hb("mcp", "--http", "--port", "0", "--token-file", "/dev/zero", code=1)
    assert result.stderr.splitlines() == ["hb: /dev/zero: not a file that ends (more than 1048576 bytes)"]
    latin = tmp_path / "latin.token"
    latin.write_text("t\u00f6ken\n", encoding="utf-8")
    result = hb("mcp", "--http", "--port", "0", "--token-file", str(latin), code=1)
    assert len(result.stderr.splitlines()) == 1 and "other than printable ASCII" in result.stderr


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
    body = json.dumps(INITIALIZE).encode()
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
        log = stopped_log(proc)
    assert TOKEN not in log and "Traceback" not in log


# --- what uvicorn would answer on its own: hb's answers, JSON as hb serve's ------------------


def exchange(url: str, data: bytes) -> bytes:
    """``data`` sent as is on a new connection to the server of ``url``; all it answered before
    it closed."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
        sock.sendall(data)
        return read_until_closed(sock)


def answer_of(reply: bytes) -> tuple[int, dict[str, str], object]:
    """The status, headers (names in lower case) and JSON body of a raw HTTP/1.1 answer."""
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    assert status_line.startswith("HTTP/1.1 "), reply[:200]
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in lines)}
    assert headers["content-type"] == "application/json", reply[:300]
    assert int(headers["content-length"]) == len(body)
    return int(status_line.split(" ")[1]), headers, json.loads(body)


MALFORMED_OVER_HTTP = "malformed request: expected METHOD /path HTTP/1.1 and Name: value headers"
HOST = "Host: 127.0.0.1:1\r\n"


def test_what_uvicorn_refuses_or_would_serve_is_answered_as_json(workspace: Path, token_file: Path) -> None:
    """uvicorn answered a request h11 cannot parse with text/plain ``Invalid HTTP request
    received.``, took HTTP/9.9 as HTTP/1.1, and named itself in every answer's Server header."""
    token = f"Authorization: Bearer {TOKEN}\r\n"
    bad = [
        b"GARBAGE\r\n\r\n",
        b"GET /mcp\r\n\r\n",  # HTTP/0.9
        b"GET /caf\xc3\xa9 HTTP/1.1\r\n" + HOST.encode() + b"\r\n",
        b"GET /mcp HTTP/1.1\r\n" + HOST.encode() + b"X-A: a\x00b\r\n\r\n",
        b"GET /mcp HTTP/1.1\r\n" + HOST.encode() + b"X-A : b\r\n\r\n",
        b"GET /mcp HTTP/1.1\r\n\r\n",  # no Host
        f"POST /mcp HTTP/1.1\r\n{HOST}{token}Content-Length: -1\r\n\r\n".encode(),
        f"POST /mcp HTTP/1.1\r\n{HOST}{token}Content-Length: 99999999999999999999999\r\n\r\n".encode(),
        b"\r\n" * 5 + f"GET /mcp HTTP/1.1\r\n{HOST}\r\n".encode(),  # past the 4 empty lines skipped
        # obs-fold (h11 glued the lines back together): a folded token was let in as one
        f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer\r\n {TOKEN}\r\nContent-Length: 0\r\n\r\n".encode(
            "ascii"
        ),
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\tfolded\r\n\r\n",
    ]
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        for data in bad:
            reply = exchange(url, data)
            status, headers, payload = answer_of(reply)
            assert (status, payload) == (400, {"error": MALFORMED_OVER_HTTP}), data
            assert headers["connection"] == "close" and headers["server"] == "hb-mcp"
        for version in ("9.9", "2.0"):  # before the token, as hb serve
            for sent in ("", token):
                reply = exchange(url, f"GET /mcp HTTP/{version}\r\n{HOST}{sent}\r\n".encode())
                assert answer_of(reply)[::2] == (505, {"error": "HTTP version not supported: use HTTP/1.1"})
        for path in ("/mcp/", "/../mcp", "/mcp%00", "/%6dcp", "/", "/healthz"):  # only the exact path
            reply = exchange(url, f"GET {path} HTTP/1.1\r\n{HOST}{token}Connection: close\r\n\r\n".encode())
            assert answer_of(reply)[::2] == (404, {"error": "not found"}), path
        both = f"POST /mcp HTTP/1.1\r\n{HOST}{token}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        status, headers, payload = answer_of(exchange(url, both.encode() + b"0\r\n\r\n"))
        assert (status, payload) == (400, {"error": "both Content-Length and Transfer-Encoding: send one"})
        assert headers["connection"] == "close"
        for empty in ("\r\n", "\n", "\r\n" * 4):  # RFC 9112 section 2.2: skipped (h11 refused them)
            reply = exchange(url, f"{empty}POST /mcp HTTP/1.1\r\n{HOST}Content-Length: 0\r\n\r\n".encode())
            assert answer_of(reply)[::2] == (401, {"error": "missing or wrong bearer token"})
        status, headers, _ = post(url, INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and headers["server"] == "hb-mcp"
        log = stopped_log(proc)
    assert TOKEN not in log and "Traceback" not in log


def test_headers_past_64_kib_are_a_431(workspace: Path, token_file: Path) -> None:
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, _proc):
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
            with contextlib.suppress(OSError):  # the server may answer and close mid-way
                sock.sendall(f"GET /mcp HTTP/1.1\r\n{HOST}".encode())
                for n in range(80):  # 80 KiB of headers, a line at a time, bounded
                    sock.sendall(b"X-%d: %s\r\n" % (n, b"a" * 1024))
                    time.sleep(0.002)
            reply = read_until_closed(sock)
    assert answer_of(reply)[::2] == (431, {"error": "request headers too large"})


@contextmanager
def in_process(monkeypatch: pytest.MonkeyPatch, seconds: float) -> Iterator[str]:
    """hb's uvicorn settings and gate in front of a small app that reads the body and answers
    after ``seconds``, in a thread, with a request deadline of 1 second; its URL."""
    import asyncio
    import threading

    import uvicorn

    monkeypatch.setattr(mcp_http, "REQUEST_TIMEOUT", 1)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            for _ in range(2):
                message = await receive()
                await send({"type": message["type"] + ".complete"})
            return
        body = b""
        for _ in range(1000):
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await asyncio.sleep(seconds)
        answer = json.dumps({"read": len(body)}).encode()
        client, scheme = scope["client"][0].encode(), scope["scheme"].encode()  # as the app saw them
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
        headers += [(b"x-client", client), (b"x-scheme", scheme)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    sock = mcp_server.listen("127.0.0.1", 0)
    server = uvicorn.Server(mcp_http.http_config(mcp_server.BearerGate(app, TOKEN)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        yield mcp_server.url_of(sock)
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()


@pytest.mark.parametrize(
    "sent",
    [
        f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {TOKEN}\r\nContent-Length: 10\r\n\r\nabc",
        f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {TOKEN}\r\n",  # headers that never end
        "POST /mcp HTT",  # half a request line
    ],
    ids=["body short", "headers unfinished", "request line unfinished"],
)
def test_half_a_request_is_a_408_at_the_deadline(monkeypatch: pytest.MonkeyPatch, sent: str) -> None:
    """uvicorn waited for the rest for ever (its keep-alive timeout starts after an answer)."""
    with in_process(monkeypatch, 0) as url:
        started = time.monotonic()
        reply = exchange(url, sent.encode())
        assert time.monotonic() - started < 10
        status, headers, payload = answer_of(reply)
        assert (status, payload) == (408, {"error": "request not received whole within 1 seconds"})
        assert headers["connection"] == "close" and headers["server"] == "hb-mcp"
        assert TOKEN.encode() not in reply


def test_the_deadline_is_for_the_request_not_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request received whole may take longer than the deadline to answer (a heartbeat tool
    call), and each request on a kept connection has a deadline of its own; a connection that
    sends nothing is closed without a word."""
    with in_process(monkeypatch, 1.5) as url:
        parts = urlsplit(url)
        head = f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {TOKEN}\r\nContent-Length: 5\r\n\r\n"
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
            sock.sendall(head.encode() + b"hello")
            reply = b""
            for _ in range(100):  # the first answer, then half a second request on the connection
                reply += sock.recv(65536)
                if reply.endswith(b"}"):
                    break
            assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b'{"read": 5}')
            sock.sendall(head.encode() + b"hel")
            second = read_until_closed(sock)
        assert answer_of(second)[0] == 408
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
            # pipelined: a second request short of its body, sent with the first, started no
            # deadline (none was armed but on new data) and held the connection for ever
            sock.sendall(head.encode() + b"hello" + head.encode() + b"hel")
            both = read_until_closed(sock)
        assert both.startswith(b"HTTP/1.1 200 ") and b'{"read": 5}' in both
        assert answer_of(both[both.index(b'{"read": 5}') + len(b'{"read": 5}') :])[0] == 408
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as idle:
            started = time.monotonic()
            assert read_until_closed(idle) == b""
            assert time.monotonic() - started < 10


# --- limits: connections at once, body size --------------------------------------------------


def answer_until_closed(sock: socket.socket) -> bytes:
    """All the server sent on ``sock`` until it closed it, or reset it: a server that closes a
    connection with bytes of the request unread resets it, after its answer."""
    chunks = []
    for _ in range(1000):
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_past_64_connections_the_next_is_a_json_503_until_one_closes(
    workspace: Path, token_file: Path
) -> None:
    """uvicorn served any number of connections at once; hb serve serves 64 and refuses the
    next with a JSON 503, Retry-After and a log line: so does hb mcp --http."""
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        parts = urlsplit(url)
        address = (parts.hostname or "", parts.port or 0)
        request = f"POST /mcp HTTP/1.1\r\n{HOST}Content-Length: 0\r\n\r\n".encode()
        idle: list[socket.socket] = []
        try:
            for _ in range(mcp_http.MAX_CONNECTIONS):  # 64 that send nothing (for under 10 s)
                idle.append(socket.create_connection(address, timeout=10))
            time.sleep(0.3)  # let the server take them before the next one knocks
            with socket.create_connection(address, timeout=10) as extra:
                extra.sendall(request)
                reply = answer_until_closed(extra)
            status, headers, payload = answer_of(reply)
            assert status == 503
            assert payload == {"error": "too many connections at once (over 64); try again in a moment"}
            assert headers["retry-after"] == "1" and headers["connection"] == "close"
            assert headers["server"] == "hb-mcp"
            for conn in idle[:4]:
                conn.close()
            for _ in range(100):  # places come back once those connections are gone
                with socket.create_connection(address, timeout=10) as again:
                    again.sendall(request)
                    status = answer_of(answer_until_closed(again))[0]
                if status != 503:
                    break
                time.sleep(0.05)
            assert status == 401  # served: the gate's answer to a request without the token
            assert post(url, INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        finally:
            for conn in idle:
                conn.close()
        log = stopped_log(proc)
    assert "hb mcp: 127.0.0.1 - - 503: too many connections at once (over 64); try again in a moment" in log
    assert "Traceback" not in log


def test_a_declared_body_past_1_mib_is_a_413_before_it_is_sent_and_after_the_token(
    workspace: Path, token_file: Path
) -> None:
    """The SDK read any body up to 4 MiB, and answered past that in text, reading the rest."""
    assert mcp_server.MAX_BODY == 1024 * 1024
    token = f"Authorization: Bearer {TOKEN}\r\n"
    head = f"POST /mcp HTTP/1.1\r\n{HOST}Content-Type: application/json\r\nContent-Length: {2**20 + 1}\r\n"
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
            sock.sendall(f"{head}{token}\r\n".encode())  # the head alone: the answer comes first
            status, headers, payload = answer_of(read_until_closed(sock))
        assert (status, payload) == (413, {"error": "body over 1048576 bytes"})
        assert headers["connection"] == "close" and headers["server"] == "hb-mcp"
        for sent in ("", "Authorization: Bearer wrong\r\n"):  # the token first, as hb serve
            status, headers, payload = answer_of(exchange(url, f"{head}{sent}\r\n".encode()))
            assert (status, payload) == (401, {"error": "missing or wrong bearer token"})
        log = stopped_log(proc)
    assert TOKEN not in log and "Traceback" not in log


def chunked_post(url: str, token: str, total: int) -> tuple[int, bytes]:
    """A chunked POST of ``total`` bytes in 64 KiB chunks, sent until the server answers (looked
    for after each chunk; past 1 MiB, waited for up to 5 s): the bytes sent, and the answer."""
    parts = urlsplit(url)
    head = f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n"
    sent = 0
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30) as sock:
        sock.sendall(head.encode())
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            while sent < total and not selector.select(0.01 if sent <= 2**20 else 5):  # sent grows
                size = min(65536, total - sent)
                try:
                    sock.sendall(b"%x\r\n%s\r\n" % (size, b"a" * size))
                except OSError:  # answered and reset mid-way
                    break
                sent += size
        if sent == total:
            with contextlib.suppress(OSError):
                sock.sendall(b"0\r\n\r\n")
        return sent, answer_until_closed(sock)


def test_a_chunked_body_is_a_413_as_it_grows_past_1_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunked body says no length: it is read up to 1 MiB, answered 413 on the byte past
    it and the connection closed, never read whole; a body of 1 MiB, chunked or with its
    length, reaches the app whole."""
    with in_process(monkeypatch, 0) as url:
        sent, reply = chunked_post(url, TOKEN, 4 * 2**20)
        status, headers, payload = answer_of(reply)
        assert (status, payload) == (413, {"error": "body over 1048576 bytes"})
        assert headers["connection"] == "close"
        assert sent < 2 * 2**20  # answered while the client was still sending
        sent, reply = chunked_post(url, TOKEN, 2**20)
        assert sent == 2**20
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b'{"read": 1048576}')
        sent, reply = chunked_post(url, "wrong", 4 * 2**20)
        assert answer_of(reply)[::2] == (401, {"error": "missing or wrong bearer token"})
        head = f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {TOKEN}\r\nConnection: close\r\n"
        reply = exchange(url, f"{head}Content-Length: {2**20}\r\n\r\n".encode() + b"a" * 2**20)
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b'{"read": 1048576}')


def test_forwarded_headers_change_neither_client_nor_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn took X-Forwarded-For and X-Forwarded-Proto from any client on 127.0.0.1 as the
    client's address and scheme; hb has no proxy in front to trust."""
    with in_process(monkeypatch, 0) as url:
        forged = "X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\n"
        head = f"POST /mcp HTTP/1.1\r\n{HOST}Authorization: Bearer {TOKEN}\r\nConnection: close\r\n{forged}"
        reply = exchange(url, f"{head}Content-Length: 2\r\n\r\n{{}}".encode())
    headers = reply.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    assert "\r\nx-client: 127.0.0.1\r\n" in headers and "\r\nx-scheme: http\r\n" in headers


@pytest.mark.parametrize("bound", ["127.0.0.1", "127.0.0.2"])
def test_the_host_header_is_answered_as_hb_serve_answers_it(
    workspace: Path, token_file: Path, bound: str
) -> None:
    """Bound to loopback, hb mcp --http serves exactly the Host headers hb serve serves (its own
    check, any port or none), and a page's Origin only from loopback. The MCP SDK's check took a
    Host without a port (what a client sends for port 80) for another site's, 421, and was off
    on a loopback address other than 127.0.0.1: another site's name was served there."""
    from heartbeat.serve import MISDIRECTED, loopback_host

    hosts = [bound, "localhost", "LocalHost.", "[::1]", f"{bound}:80", "[::1]:8788", "127.0.0.9"]
    hosts += ["evil.example", "evil.example:8788", f"{bound}.evil.example", "localhost.evil.example:80"]
    origins = [("http://localhost", 200), (f"https://{bound}:8788", 200), ("http://[::1]:1", 200)]
    origins += [("http://evil.example", 403), ("http://localhost.evil.example", 403), ("null", 403)]
    with http_server(workspace, "--host", bound, "--token-file", str(token_file)) as (url, _head, proc):
        for host in hosts:
            status, _headers, body = post(url, INITIALIZE, {"Host": host, "Authorization": f"Bearer {TOKEN}"})
            assert status == (200 if loopback_host(host) else 421), host
            if status == 421:
                assert json.loads(body) == {"error": MISDIRECTED}
        for origin, expected in origins:
            sent = {"Origin": origin, "Authorization": f"Bearer {TOKEN}"}
            status, _headers, body = post(url, INITIALIZE, sent)
            assert status == expected, origin
            if status == 403:
                assert json.loads(body) == {"error": mcp_server.FOREIGN_ORIGIN}
        log = stopped_log(proc)
    assert TOKEN not in log and "Traceback" not in log


def test_the_sdks_own_refusals_in_text_are_answered_as_json(workspace: Path, token_file: Path) -> None:
    """The MCP SDK answers a POST that is not JSON in text/plain; hb turns it into its JSON
    refusal (the status and the SDK's words kept). Its JSON-RPC errors pass as they are."""
    token = f"Authorization: Bearer {TOKEN}\r\n"
    kinds = "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
    body = json.dumps(INITIALIZE)
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        here = f"Host: {urlsplit(url).netloc}\r\n"
        cases = [(f"{here}{token}Content-Type: text/plain\r\n", 400, "Invalid Content-Type header")]
        for head, status, error in cases:
            sent = f"POST /mcp HTTP/1.1\r\n{head}{kinds}Content-Length: {len(body)}\r\n\r\n{body}"
            got, headers, payload = answer_of(exchange(url, sent.encode()))
            assert (got, payload) == (status, {"error": error}), head
            assert headers["server"] == "hb-mcp"
        reply = exchange(url, f"DELETE /mcp HTTP/1.1\r\n{here}{token}{kinds}\r\n".encode())
        status, _headers, payload = answer_of(reply)
        assert status == 400 and payload["jsonrpc"] == "2.0"  # type: ignore[index]
        log = stopped_log(proc)
    assert TOKEN not in log and "Traceback" not in log


def test_a_body_that_is_not_a_json_rpc_message_gets_one_line_with_its_id(
    workspace: Path, token_file: Path
) -> None:
    """The SDK answered pydantic's report (several lines, the input quoted, a link) as Invalid
    params with a null id; now as over stdio: the request's id where it has one, Invalid
    Request or Parse error, one line."""
    cases: list[tuple[bytes, object, int, str]] = [
        (b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}', 3, -32600, 'its "jsonrpc" member is not "2.0"'),
        (b'{"jsonrpc":"2.0","id":"a","method":5}', "a", -32600, 'its "method" is not a string'),
        (b"null", None, -32600, "not a JSON-RPC 2.0 message"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', None, -32600, "not a JSON-RPC 2.0 message"),
        (b"{nope", None, -32700, "cannot read this request: not JSON"),
        # an id MCP does not take: the SDK read it as a notification (202, no answer)
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600, "its id is null"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, -32600, "its id is a number with a fraction"),
        (b'{"jsonrpc":"2.0","method":"ping","id":{"a":1}}', None, -32600, "its id is an object"),
        (
            b'{"jsonrpc":"2.0","id":6,"method":"x","params":{"n":' + b"9" * 5000 + b"}}",
            6,
            -32700,
            "4,300 digits",
        ),
    ]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with http_server(workspace, "--token-file", str(token_file)) as (url, _head, proc):
        status, headers, _ = post(url, INITIALIZE, auth)
        assert status == 200
        session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        parts = urlsplit(url)
        for body, request_id, code, words in cases:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
            try:
                sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
                conn.request("POST", parts.path, body=body, headers={**sent, **auth, **session})
                response = conn.getresponse()
                status, answer = response.status, response.read()
            finally:
                conn.close()
            assert status == 400, body[:60]
            assert answer.count(b"\n") == 1 and b"pydantic" not in answer
            got = json.loads(answer)
            assert got["id"] == request_id and got["error"]["code"] == code, got
            assert words in got["error"]["message"], got
        log = stopped_log(proc)
    assert "Traceback" not in log
