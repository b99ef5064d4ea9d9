"""hb serve: POST /poke with a bearer token, GET /healthz, and every status code of SPEC.md section 7."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat import serve as serve_mod
from heartbeat.errors import Busy, DatabaseBusy
from heartbeat.serve import MAX_BODY, PokeHandler, PokeServer, make_server, token_file_warning
from tests.conftest import Runner, read_until_closed
from tests.round.conftest import db_of, open_ledger, runs, write

TOKEN = "s3cret-token"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(sh_db: Runner) -> Iterator[PokeServer]:
    srv = make_server(lambda: open_ledger(sh_db), host="127.0.0.1", port=0, token=TOKEN)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def request(
    srv: PokeServer,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> tuple[int, dict[str, str], Any]:
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=timeout)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        payload = json.loads(raw) if raw else None
        return response.status, dict(response.getheaders()), payload
    finally:
        conn.close()


def test_healthz(server: PokeServer) -> None:
    status, headers, payload = request(server, "GET", "/healthz", token=None)
    assert (status, payload) == (200, {"ok": True})
    assert headers["Content-Type"].startswith("application/json")


def test_a_slow_client_holds_up_no_one_and_pokes_take_turns(server: PokeServer, sh_db: Runner) -> None:
    import socket

    host, port = server.server_address[:2]
    slow = socket.create_connection((str(host), int(port)))
    try:  # half a request: its thread waits for the rest
        slow.sendall(b"POST /poke HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n")
        slow.sendall(b"Content-Length: 5\r\n\r\nab")
        assert request(server, "GET", "/healthz")[0] == 200
        results: list[int] = []
        pokes = [
            threading.Thread(
                target=lambda i=i: results.append(request(server, "POST", "/poke", f"job {i}".encode())[0])
            )
            for i in range(4)
        ]
        for t in pokes:
            t.start()
        for t in pokes:
            t.join(20)
        assert results == [202] * 4  # concurrent pokes each land, none is refused as busy
    finally:
        slow.close()
    assert sorted(t["title"] for t in sh_db.json("list")) == [f"job {i}" for i in range(4)]


def test_poke_accepted_202_with_the_task(server: PokeServer, sh_db: Runner) -> None:
    status, _, payload = request(
        server, "POST", "/poke", b"Check the build on main", headers={"Content-Type": "text/plain"}
    )
    assert status == 202
    assert payload["accepted"] is True and payload["title"] == "Check the build on main"
    task = sh_db.json("show", payload["id"])
    assert (task["source"], task["status"], task["scope"]) == ("poke", "todo", None)
    assert [r["task_id"] for r in runs(sh_db, "poke")] == [payload["id"]]


def test_form_encoded_and_unicode_bodies_are_text(server: PokeServer) -> None:
    status, _, payload = request(
        server,
        "POST",
        "/poke",
        "确认周报已发出".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 202 and payload["title"] == "确认周报已发出"


def test_401_without_or_with_a_wrong_token(server: PokeServer, sh_db: Runner) -> None:
    for token in (None, "wrong", ""):
        status, headers, payload = request(server, "POST", "/poke", b"hello", token=token)
        assert status == 401, token
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert "token" in payload["error"]
    status, _, _ = request(server, "POST", "/poke", b"hello", token=None, headers={"Authorization": TOKEN})
    assert status == 401  # no scheme
    assert sh_db.json("list") == []


def test_405_for_other_methods(server: PokeServer) -> None:
    for method in ("GET", "PUT", "DELETE", "PATCH"):
        status, headers, payload = request(server, method, "/poke", b"x" if method != "GET" else None)
        assert status == 405, method
        assert headers["Allow"] == "POST"
        assert method in payload["error"]
    status, headers, _ = request(server, "POST", "/healthz", b"x")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, _, _ = request(server, "GET", "/nowhere")
    assert status == 404


def test_400_for_empty_or_non_text_bodies(server: PokeServer, sh_db: Runner) -> None:
    cases: list[tuple[bytes, dict[str, str]]] = [
        (b"", {}),
        (b"   \n\t ", {}),
        (b"\xef\xbb\xbf \n", {}),  # a byte order mark and a blank: no text (was a task titled U+FEFF)
        (b"\xff\xfe\x00binary", {}),
        (b"a\x00b", {"Content-Type": "text/plain"}),
        (b"GIF89a", {"Content-Type": "image/gif"}),
        (b"hello", {"Content-Type": "application/octet-stream"}),
    ]
    for body, headers in cases:
        status, _, payload = request(server, "POST", "/poke", body, headers=headers)
        assert status == 400, body
        assert payload["error"]
    assert sh_db.json("list") == []


def raw_status(srv: PokeServer, head: bytes, body: bytes) -> tuple[int, bytes]:
    """The status and body of a request written as bytes (headers http.client would not send)."""
    host, port = srv.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /poke HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n" + head + b"\r\n"
        )
        sock.sendall(body)
        reply = read_until_closed(sock)
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (b"Content-Length: 5\r\nContent-Length: 50\r\n", b"hello" + b"x" * 45),  # which one is the body?
        (b"Content-Length: 5_0\r\n", b"x" * 50),  # int() reads 50
        (b"Content-Length: +5\r\n", b"hello"),
        (b"Content-Length: 0x5\r\n", b"hello"),
    ],
)
def test_a_content_length_not_plain_ascii_digits_or_given_twice_differently_is_a_400(
    server: PokeServer, sh_db: Runner, head: bytes, body: bytes
) -> None:
    status, reply = raw_status(server, head, body)
    assert status == 400 and json.loads(reply) == {"error": "bad Content-Length"}
    assert sh_db.json("list") == []
    assert raw_status(server, b"Content-Length: 5\r\nContent-Length: 5\r\n", b"hello")[0] == 202


@pytest.mark.parametrize(
    ("digits", "status"), [(b"1" * 19, 413), (b"1" * 4301, 413), (b"0" * 4400 + b"5", 202)]
)
def test_a_content_length_of_many_digits_is_read_not_a_dropped_connection(
    server: PokeServer, sh_db: Runner, digits: bytes, status: int
) -> None:
    """int() refuses more than 4,300 digits: the connection was closed with no answer."""
    got, reply = raw_status(server, b"Content-Length: " + digits + b"\r\n", b"hello")
    assert got == status
    if status == 413:
        assert json.loads(reply) == {"error": f"body over {MAX_BODY} bytes"}
        assert sh_db.json("list") == []
    else:  # zeros first: a length of 5, the poke's
        assert [t["title"] for t in sh_db.json("list")] == ["hello"]


def test_413_past_4_kib(server: PokeServer, sh_db: Runner) -> None:
    status, _, payload = request(server, "POST", "/poke", b"x" * (MAX_BODY + 1))
    assert status == 413
    assert "4096" in payload["error"]
    assert sh_db.json("list") == []
    status, _, payload = request(server, "POST", "/poke", b"y" * MAX_BODY)
    assert status == 202 and len(payload["title"]) == MAX_BODY


def test_409_while_a_heartbeat_holds_the_guard(server: PokeServer, sh_db: Runner) -> None:
    with open_ledger(sh_db) as other, other.guard("heartbeat"):
        status, _, payload = request(server, "POST", "/poke", b"wake up")
        assert status == 409
        assert payload["error"].startswith("busy: a heartbeat")
    assert sh_db.json("list") == []
    status, _, _ = request(server, "POST", "/poke", b"wake up")
    assert status == 202


@contextmanager
def write_lock_held(runner: Runner) -> Iterator[None]:
    """Another transaction holds the database's write lock, as a heartbeat in the middle of its
    sync does (SQLite: BEGIN IMMEDIATE; PostgreSQL: a lock on runs that FOR UPDATE waits for)."""
    url = db_of(runner) or ""
    if not url.startswith("postgresql"):
        conn = sqlite3.connect(url or Path(os.environ["HB_WORKSPACE"]) / ".agent" / "state" / "heartbeat.db")
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg
    from sqlalchemy.engine import make_url

    with psycopg.connect(make_url(url).set(drivername="postgresql").render_as_string(False)) as pg:
        pg.execute("LOCK TABLE runs IN EXCLUSIVE MODE")
        yield
        pg.rollback()


def test_409_at_once_while_the_heartbeat_holds_the_write_lock_too(server: PokeServer, sh_db: Runner) -> None:
    # the guard is seen without waiting for the running heartbeat's transaction: a poke that
    # waited for the database lock (30 s) would time the client out here instead of a 409
    with open_ledger(sh_db) as other, other.guard("heartbeat"), write_lock_held(sh_db):
        status, _, payload = request(server, "POST", "/poke", b"wake up", timeout=5)
        assert status == 409
        assert payload["error"].startswith("busy: a heartbeat")
    assert sh_db.json("list") == []


FILE_LOCK_HOLDER = """
import sys, time
from pathlib import Path
from heartbeat.ops.sync.files import file_lock
with file_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


@contextmanager
def files_lock_held(workspace: Path) -> Iterator[None]:
    """The workspace file lock (``.agent/state/.files.lock``) held by another process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", FILE_LOCK_HOLDER, str(workspace)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.communicate()


def test_the_now_page_only_reads_while_the_files_are_locked_and_after_a_rule_file_edit(
    server: PokeServer, sh_db: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Now page synced an edited TODO.RECUR.md before listing what recurs (the recurrences
    row written by a page that only reads), and behind another process's hold on the files' lock
    it waited the lock's 30 s and answered 500. It reads the ledger as of the last sync: at once,
    200, and nothing written."""
    recur = write(workspace / "TODO.RECUR.md", "# TODO Recurring\n\n")
    sh_db("sync")
    monkeypatch.setenv("HB_LOCK_TIMEOUT", "2s")  # before: a 500 after 2 s, not 30
    recur.write_text(recur.read_text() + "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | by hand\n")
    with files_lock_held(workspace):
        started = time.monotonic()
        status, _, payload = request(server, "GET", "/now.json")
        assert (status, payload["recurrences"]) == (200, []), payload
        assert time.monotonic() - started < 2
    status, _, payload = request(server, "GET", "/now.json")
    assert (status, payload["recurrences"]) == (200, [])
    assert sh_db.json("recur", "list") == []  # nothing synced: the next sync reads the edit
    assert "1 added" in sh_db("sync").stdout
    assert [r["title"] for r in request(server, "GET", "/now.json")[2]["recurrences"]] == ["by hand"]


@pytest.mark.parametrize("error", [Busy, DatabaseBusy])
def test_a_page_that_finds_the_workspace_busy_is_a_503_with_the_busy_line(
    sh: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch, error: type[Busy]
) -> None:
    """A page behind a lock another process held past its wait answered 500 ("The ledger cannot
    answer") for hb's own busy error; busy is a 503 for every page, as for a database lock."""
    from heartbeat.web import app, pages

    line = "busy: the workspace files are locked (held by pid 7), waited 30s; try again"

    def busy(*_args: Any) -> dict[str, Any]:
        raise error(line)

    monkeypatch.setitem(pages.PAGES, "runs", busy)
    answer = app.page(lambda: Ledger.open(workspace=workspace), "/runs.json", "", None)
    assert (answer.status, json.loads(answer.body)) == (503, {"error": line})
    answer = app.page(lambda: Ledger.open(workspace=workspace), "/runs", "", "text/html")
    assert answer.status == 503 and b"held by pid 7" in answer.body


def test_only_the_exact_paths_are_served(server: PokeServer, sh_db: Runner) -> None:
    for path in ("/poke/", "//poke", "/poke//", "/Poke"):
        status, _, _ = request(server, "POST", path, b"wake up")
        assert status == 404, path
    status, _, _ = request(server, "GET", "/healthz/")
    assert status == 404
    assert sh_db.json("list") == []
    assert request(server, "POST", "/poke?via=webhook", b"wake up")[0] == 202


def test_the_token_is_never_logged(sh_db: Runner) -> None:
    lines: list[str] = []
    srv = make_server(lambda: open_ledger(sh_db), host="127.0.0.1", port=0, token=TOKEN, log=lines.append)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        assert request(srv, "POST", "/poke", b"in a header")[0] == 202
        assert request(srv, "POST", f"/poke?token={TOKEN}", b"in the query", token=None)[0] == 401
        assert request(srv, "GET", f"/healthz?access_token={TOKEN}", token=None)[0] == 200
        # a malformed request line (http.server quoted it in its error page and its log)
        reply = exchange(srv, f"POST /poke Bearer {TOKEN} HTTP/1.1 extra\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.0 400 ") and TOKEN.encode() not in reply
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)
    text = "\n".join(lines)
    assert TOKEN not in text
    assert "POST /poke 202" in text and "POST /poke 401" in text and "GET /healthz 200" in text
    assert "127.0.0.1 - - 400: malformed request line" in text  # logged, none of the line quoted
    assert "Authorization" not in text


def test_a_token_sent_as_the_method_is_not_logged(sh_db: Runner) -> None:
    """A client that put the token where the method goes (``TOKEN / HTTP/1.1``) got its 501, and
    the log line quoted the method whole: ``127.0.0.1 <the token> / 501``. The method is blanked
    as the path is: the token, or any piece of it, as ``[token]``."""
    token = secrets.token_urlsafe(32)
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=token, log=lines.append)) as srv:
        for method in (token, f"X{token[:20]}", "BREW"):
            reply = exchange(srv, f"{method} / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            assert answer_of(reply)[:1] == (501,) and token[:20].encode() not in reply
        assert request(srv, "PUT", "/poke")[0] == 405
    unknown = "/ 501: method not supported; use GET or POST"
    assert lines == [
        f"127.0.0.1 [token] {unknown}",
        f"127.0.0.1 X[token] {unknown}",
        f"127.0.0.1 BREW {unknown}",
        "127.0.0.1 PUT /poke 405",
    ]


def exchange(srv: PokeServer, data: bytes) -> bytes:
    """``data`` sent as is on a new connection; all the server answered before it closed."""
    host, port = srv.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as sock:
        sock.sendall(data)
        return read_until_closed(sock)


def answer_of(reply: bytes) -> tuple[int, dict[str, str], Any]:
    """The status, headers and JSON body of a raw HTTP/1.x answer (AssertionError if it is not one)."""
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, status, _reason = status_line.split(" ", 2)
    assert version == "HTTP/1.0", reply[:200]
    headers = dict(line.split(": ", 1) for line in header_lines)
    assert int(headers["Content-Length"]) == len(body)
    return int(status), headers, json.loads(body)


BAD_LINE = "malformed request line: expected METHOD /path HTTP/1.1"
NOT_ASCII = "malformed request line: not printable ASCII (percent-encode the path)"
TOO_LONG = f"request line over {serve_mod.MAX_LINE} bytes"
HEADERS_TOO_LARGE = f"request headers too large: over {serve_mod.MAX_HEADERS} bytes or more than 100 headers"
MALFORMED = [
    (b"GARBAGE", 400, BAD_LINE),
    (b"GET /healthz HTTP/1.1 extra", 400, BAD_LINE),  # too many words
    (b"GET  /healthz HTTP/1.1", 400, BAD_LINE),  # two spaces: an empty word
    (b"GET\t/healthz\tHTTP/1.1", 400, NOT_ASCII),  # tabs are control characters
    (b"GET /healthz", 400, BAD_LINE),  # HTTP/0.9, which http.server answered without a status line
    (b"POST /poke", 400, BAD_LINE),
    (b"GET /healthz HTTP/1.10", 400, BAD_LINE),
    (b"GET /healthz HTTP/one", 400, BAD_LINE),
    (b"G(T /healthz HTTP/1.1", 400, BAD_LINE),  # "(" is no method character
    (b"GET /healthz HTTP/9.9", 505, "HTTP version not supported: use HTTP/1.1"),
    (b"GET /healthz HTTP/2.0", 505, "HTTP version not supported: use HTTP/1.1"),
    (b"GET /healthz HTTP/0.9", 505, "HTTP version not supported: use HTTP/1.1"),
    (b"GET /caf\xc3\xa9 HTTP/1.1", 400, NOT_ASCII),  # UTF-8, not percent-encoded
    (b"GET /\x1b[2J HTTP/1.1", 400, NOT_ASCII),  # a terminal escape for whoever reads the log
    (b"GET /\x00 HTTP/1.1", 400, NOT_ASCII),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\xd2\x8b", 400, NOT_ASCII),  # a TLS hello
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1", 414, TOO_LONG),
]


@pytest.mark.parametrize(("line", "status", "error"), MALFORMED, ids=[repr(m[0][:24]) for m in MALFORMED])
def test_a_malformed_request_line_is_answered_as_json_and_the_server_serves_on(
    sh_db: Runner, capfd: pytest.CaptureFixture[str], line: bytes, status: int, error: str
) -> None:
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        reply = exchange(srv, line + b"\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
        got, headers, payload = answer_of(reply)
        assert (got, payload) == (status, {"error": error})
        assert headers["Content-Type"] == "application/json; charset=utf-8"
        assert headers["Connection"] == "close"
        assert b"<html" not in reply.lower() and TOKEN.encode() not in reply
        assert request(srv, "GET", "/healthz")[:3:2] == (200, {"ok": True})  # the next one is served
    assert lines[0] == f"127.0.0.1 - - {status}: {error}"  # nothing of the line is logged
    assert lines[1:] == ["127.0.0.1 GET /healthz 200"]
    assert "Traceback" not in capfd.readouterr().err
    assert sh_db.json("list") == []


@pytest.mark.parametrize(
    ("data", "status", "logged"),
    [
        (b"BREW /healthz HTTP/1.1\r\n\r\n", 501, "BREW /healthz 501: method not supported; use GET or POST"),
        (
            b"GET /healthz HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
            431,
            f"GET /healthz 431: {HEADERS_TOO_LARGE}",
        ),
        (
            b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: %d\r\n" % (n, n) for n in range(101)) + b"\r\n",
            431,
            f"GET /healthz 431: {HEADERS_TOO_LARGE}",
        ),
        (  # 98 lines of 65,000 bytes each were read whole: 1.9 GB of memory for 50 such requests
            b"GET /healthz HTTP/1.1\r\n" + b"X: " + b"a" * 40_000 + b"\r\nY: " + b"b" * 40_000 + b"\r\n\r\n",
            431,
            f"GET /healthz 431: {HEADERS_TOO_LARGE}",
        ),
    ],
    ids=["unknown method", "header line too long", "too many headers", "headers too large together"],
)
def test_what_http_server_refuses_itself_is_answered_as_json_too(
    sh_db: Runner, capfd: pytest.CaptureFixture[str], data: bytes, status: int, logged: str
) -> None:
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        reply = exchange(srv, data)
        got, headers, payload = answer_of(reply)
        assert (got, payload) == (status, {"error": logged.split(": ", 1)[1]})
        assert headers["Connection"] == "close" and b"<html" not in reply.lower()
        assert request(srv, "GET", "/healthz")[0] == 200
    assert lines == [f"127.0.0.1 {logged}", "127.0.0.1 GET /healthz 200"]
    assert "Traceback" not in capfd.readouterr().err


def test_the_server_header_names_hb_and_not_the_python_that_runs_it(sh_db: Runner) -> None:
    """http.server's default is ``BaseHTTP/0.6 Python/3.x``: which Python runs the server is
    nobody's business."""
    token = f"Authorization: Bearer {TOKEN}\r\n"
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN)) as srv:
        replies = [
            exchange(srv, f"GET /healthz HTTP/1.1\r\n{request_end}".encode())
            for request_end in ("\r\n", token + "\r\n")
        ] + [
            exchange(srv, f"GET /nope HTTP/1.1\r\n{token}\r\n".encode()),  # an error of hb's
            exchange(srv, b"POST /poke HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"),  # 401
            exchange(srv, f"GET /now.json HTTP/1.1\r\n{token}\r\n".encode()),  # the dashboard, JSON
            exchange(srv, f"GET / HTTP/1.1\r\n{token}\r\n".encode()),  # and HTML
            exchange(srv, b"GET / HTTP/1.1\r\n\r\n"),  # its login form
            exchange(srv, b"GARBAGE\r\n\r\n"),  # a refused request line
            exchange(srv, b"BREW /healthz HTTP/1.1\r\n\r\n"),  # one http.server refuses itself
        ]
    statuses = [int(reply.split(b" ", 2)[1]) for reply in replies]
    assert statuses == [200, 200, 404, 401, 200, 200, 401, 400, 501]
    for reply in replies:
        head = reply.partition(b"\r\n\r\n")[0]
        assert b"\r\nServer: hb-serve\r\n" in head and b"Python" not in head, head


@pytest.mark.parametrize("empty", [b"\r\n", b"\n", b"\r\n" * 4, b"\n\r\n\n\r\n"])
def test_a_few_empty_lines_before_the_request_line_are_ignored(sh_db: Runner, empty: bytes) -> None:
    """RFC 9112 section 2.2: a server SHOULD ignore at least one empty line before the
    request line (a client may send a CRLF after a POST's body); http.server closed the
    connection unanswered."""
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        status, _, payload = answer_of(exchange(srv, empty + b"GET /healthz HTTP/1.1\r\n\r\n"))
        assert (status, payload) == (200, {"ok": True})
        head = f"POST /poke HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 5\r\n\r\n"
        status, _, payload = answer_of(exchange(srv, empty + head.encode() + b"hello"))
        assert (status, payload["title"]) == (202, "hello")
    assert lines == ["127.0.0.1 GET /healthz 200", "127.0.0.1 POST /poke 202"]


def test_more_empty_lines_than_a_few_are_a_400_and_a_flood_ends_at_once(sh_db: Runner) -> None:
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        status, headers, payload = answer_of(exchange(srv, b"\r\n" * 5 + b"GET /healthz HTTP/1.1\r\n\r\n"))
        assert (status, payload) == (400, {"error": "no request line after 4 empty lines"})
        assert headers["Connection"] == "close"
        host, port = srv.server_address[:2]
        started = time.monotonic()
        with socket.create_connection((str(host), int(port)), timeout=10) as sock:
            with contextlib.suppress(OSError):  # the server may close while the flood still comes
                for _ in range(50):  # 50 x 2,000 empty lines, bounded
                    sock.sendall(b"\r\n" * 2000)
            with contextlib.suppress(OSError):
                reply = read_until_closed(sock)
                assert not reply or answer_of(reply)[0] == 400
        assert time.monotonic() - started < 5  # answered at once, not read to the end of the flood
        assert request(srv, "GET", "/healthz")[0] == 200
    assert lines[0] == "127.0.0.1 - - 400: no request line after 4 empty lines"


HEADER_REFUSALS = [
    (b"X-A: a\r\n  folded\r\n", "obsolete line folding in the headers: send each header on one line"),
    (b"X-A: a\r\n\tfolded\r\n", "obsolete line folding in the headers: send each header on one line"),
    (b"X-A: a\x00b\r\n", "control character in a header value"),
    (b"X-A: a\rb\r\n", "control character in a header value"),  # a bare CR
    (b"X-A: a\x1b[2Jb\r\n", "control character in a header value"),
    (b"X-A: a\x7fb\r\n", "control character in a header value"),
    (b"X-A : b\r\n", "malformed header line: expected Name: value"),  # RFC 9112 section 5.1: MUST 400
    (b"X-A\t: b\r\n", "malformed header line: expected Name: value"),
    (b"no colon here\r\n", "malformed header line: expected Name: value"),
    (b": no name\r\n", "malformed header line: expected Name: value"),
    (b"X(A): b\r\n", "malformed header line: expected Name: value"),
]


@pytest.mark.parametrize(("header", "error"), HEADER_REFUSALS, ids=[repr(h[0][:16]) for h in HEADER_REFUSALS])
def test_a_header_line_the_rfc_rejects_is_a_400_as_json(
    sh_db: Runner, capfd: pytest.CaptureFixture[str], header: bytes, error: str
) -> None:
    """http.server's parser takes each of these (folding a line into the one before it, ending
    the headers at a line without a colon, keeping a NUL): hb refuses them, whichever header
    they are in, before anything is served."""
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        for head in (
            b"GET /healthz HTTP/1.1\r\n" + header + b"\r\n",
            b"POST /poke HTTP/1.1\r\n" + header + f"Authorization: Bearer {TOKEN}\r\n".encode(),
            b"POST /poke HTTP/1.1\r\nAuthorization: Bearer\r\n " + TOKEN.encode() + b"\r\n" + header,
        ):
            reply = exchange(srv, head + b"Content-Length: 5\r\n\r\nhello")
            status, headers, payload = answer_of(reply)
            assert status == 400, head
            assert headers["Connection"] == "close" and TOKEN.encode() not in reply
            if b"Authorization: Bearer\r\n " not in head:  # (a folded Authorization: the folding)
                assert payload == {"error": error}
        assert request(srv, "GET", "/healthz")[0] == 200
    assert lines[0] == f"127.0.0.1 GET /healthz 400: {error}"
    assert lines[-1] == "127.0.0.1 GET /healthz 200"
    assert TOKEN not in "\n".join(lines) and "Traceback" not in capfd.readouterr().err
    assert sh_db.json("list") == []


def test_a_header_value_past_ascii_is_taken_as_rfc_9110_allows(sh_db: Runner) -> None:
    """Bytes 0x80-0xFF (obs-text) are allowed in a value: a browser sends another local app's
    UTF-8 cookie along to every port of the host. A token that is not the token is a 401."""
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN)) as srv:
        reply = exchange(srv, b"GET /healthz HTTP/1.1\r\nCookie: other=caf\xc3\xa9\xff\r\n\r\n")
        assert answer_of(reply)[::2] == (200, {"ok": True})
        reply = exchange(srv, b"GET /now.json HTTP/1.1\r\nAuthorization: Bearer caf\xc3\xa9\xff\r\n\r\n")
        assert answer_of(reply)[0] == 401
        head = b"POST /poke HTTP/1.1\r\nAuthorization: Bearer \xff" + TOKEN.encode() + b"\r\n"
        assert answer_of(exchange(srv, head + b"Content-Length: 5\r\n\r\nhello"))[0] == 401
    assert sh_db.json("list") == []


def test_odd_paths_are_404s_and_odd_lengths_400_or_413(server: PokeServer, sh_db: Runner) -> None:
    for path in ("/../../etc/passwd", "/%2e%2e/healthz", "/healthz%00", "/poke%00", "/./healthz", "*"):
        method = "OPTIONS" if path == "*" else "GET"
        reply = exchange(server, f"{method} {path} HTTP/1.1\r\n\r\n".encode())
        assert answer_of(reply)[::2] == (404, {"error": "not found"}), path
    token = f"Authorization: Bearer {TOKEN}\r\n".encode()
    for head, status, error in (
        (b"Content-Length: -1\r\n", 400, "bad Content-Length"),
        (b"Content-Length: 99999999999999999999999999\r\n", 413, "body over 4096 bytes"),
        (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400, "send the body with a Content-Length"),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400, "send the body with a Content-Length"),
    ):
        reply = exchange(server, b"POST /poke HTTP/1.1\r\n" + token + head + b"\r\n0\r\n\r\n")
        assert answer_of(reply)[::2] == (status, {"error": error}), head
    assert sh_db.json("list") == []


@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        (b"POST /poke HTTP/1.1\r\nAuthorization: Bearer %s\r\nContent-Length: 10\r\n\r\nabc", "POST /poke"),
        (b"POST /login HTTP/1.1\r\nContent-Length: 40\r\n\r\ntoken=%s", "POST /login"),
        (b"GET /healthz HTTP/1.1\r\nX-Trickle: 1\r\n", "GET /healthz"),  # headers that never end
        (b"GET /healthz HTT", "- -"),  # half a request line
    ],
    ids=["poke body short", "login body short", "headers unfinished", "request line unfinished"],
)
def test_half_a_request_is_a_408_at_the_deadline_and_frees_its_thread(
    sh_db: Runner, monkeypatch: pytest.MonkeyPatch, sent: bytes, logged: str
) -> None:
    monkeypatch.setattr(serve_mod, "REQUEST_TIMEOUT", 1)
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        started = time.monotonic()
        reply = exchange(srv, sent.replace(b"%s", TOKEN.encode()))
        assert time.monotonic() - started < 5
        status, headers, payload = answer_of(reply)
        assert (status, payload) == (408, {"error": "request not received whole within 1 seconds"})
        assert headers["Connection"] == "close" and TOKEN.encode() not in reply
        host, port = srv.server_address[:2]
        with socket.create_connection((str(host), int(port)), timeout=10) as idle:  # sends nothing
            assert read_until_closed(idle) == b""  # closed at the deadline without a word
        assert request(srv, "GET", "/healthz")[0] == 200
    assert lines[0] == f"127.0.0.1 {logged} 408: request not received whole within 1 seconds"
    assert TOKEN not in "\n".join(lines) and "timed out" not in "\n".join(lines)
    assert sh_db.json("list") == []


def test_more_than_one_authorization_header_is_a_400_whichever_comes_first(sh_db: Runner) -> None:
    lines: list[str] = []
    right, wrong = f"Bearer {TOKEN}", "Bearer wrong"
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        for first, second in ((right, wrong), (wrong, right), (right, right), (right, "")):
            head = f"POST /poke HTTP/1.1\r\nAuthorization: {first}\r\nAuthorization: {second}\r\n"
            reply = exchange(srv, head.encode() + b"Content-Length: 5\r\n\r\nhello")
            assert answer_of(reply)[::2] == (400, {"error": "more than one Authorization header"})
        for path in ("/healthz", "/now.json"):  # on every path, whether or not it needs the token
            head = f"GET {path} HTTP/1.1\r\nAuthorization: {right}\r\nAuthorization: {right}\r\n\r\n"
            assert answer_of(exchange(srv, head.encode()))[0] == 400
        assert request(srv, "POST", "/poke", b"once")[0] == 202
    assert sh_db.json("list")[0]["title"] == "once" and len(sh_db.json("list")) == 1
    text = "\n".join(lines)
    assert text.count("400: more than one Authorization header") == 6
    assert TOKEN not in text and "Bearer" not in text


def test_more_than_one_host_header_is_a_400_whichever_comes_first(sh_db: Runner) -> None:
    """Two Host headers were read as the first: 200 when it named loopback, 421 the other way
    round. RFC 9112 section 3.2 asks for a 400, which hb mcp --http answers."""
    lines: list[str] = []
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN, log=lines.append)) as srv:
        for first, second in (
            ("127.0.0.1", "evil.example"),
            ("evil.example", "127.0.0.1"),
            ("localhost",) * 2,
        ):
            for method, path, body in (("GET", "/healthz", b""), ("POST", "/poke", b"hello")):
                head = f"{method} {path} HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\n"
                head += f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
                reply = exchange(srv, head.encode() + body)
                assert answer_of(reply)[::2] == (400, {"error": "more than one Host header"}), reply
        assert request(srv, "GET", "/healthz")[0] == 200
    assert sh_db.json("list") == []
    assert "\n".join(lines).count("400: more than one Host header") == 6


def test_a_refused_request_whose_body_is_still_coming_is_answered_all_the_same(sh_db: Runner) -> None:
    """The answer goes out before the body is read, and the client, still sending it, reads the
    answer whole before the connection ends."""
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN)) as srv:
        host, port = srv.server_address[:2]
        for head, status in (
            (b"POST /poke HTTP/1.1 extra\r\nContent-Length: 300000\r\n\r\n", 400),
            (b"POST /poke HTTP/1.1\r\nContent-Length: 300000\r\n\r\n", 401),  # no token
            (
                f"POST /poke HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
                + b"Content-Length: 300000\r\n\r\n",
                413,
            ),
        ):
            with socket.create_connection((str(host), int(port)), timeout=10) as sock:
                sock.sendall(head)
                time.sleep(0.3)  # the server has answered by now, the body unread
                sock.sendall(b"x" * 300_000)
                reply = read_until_closed(sock)
            assert answer_of(reply)[0] == status, reply[:200]
    assert sh_db.json("list") == []


def test_a_token_file_others_can_read_gets_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "serve.token", TOKEN + "\n")
    path.chmod(0o600)
    assert token_file_warning(path) is None
    path.chmod(0o644)
    warning = token_file_warning(path)
    assert warning is not None and "readable by others (mode 0644)" in warning and "chmod 600" in warning
    path.chmod(0o640)
    assert token_file_warning(path) is not None


def test_a_token_file_is_read_within_bounds_and_holds_a_token_a_client_can_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token file was read whole: a device that never ends (``/dev/zero``) took the memory
    of the machine, and a FIFO nobody closed hung the start. A token of other than printable
    ASCII matched one client's bytes in hb serve and another's in hb mcp --http (a header is
    read as Latin-1, the file as UTF-8), and one holding NUL no client could send at all."""
    from heartbeat.errors import InvalidInput
    from heartbeat.ops.sync import files

    with pytest.raises(InvalidInput, match=r"^/dev/zero: not a file that ends"):
        serve_mod.read_token(Path("/dev/zero"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "STREAM_SECONDS", 0.5)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never closes it
    try:
        with pytest.raises(InvalidInput, match=r"fifo: a pipe that did not end within 0.5s"):
            serve_mod.read_token(fifo)
        os.write(writer, f"  {TOKEN}  \n".encode())
    finally:
        os.close(writer)
    read, write_end = os.pipe()  # --token-file <(pass show hb): a pipe that ends
    os.write(write_end, f"{TOKEN}\n".encode())
    os.close(write_end)
    try:
        assert serve_mod.read_token(Path(f"/dev/fd/{read}")) == TOKEN
    finally:
        os.close(read)
    for name, data in [("umlaut", "t\u00f6ken\n".encode()), ("nul", b"tok\0en\n"), ("bytes", b"\xff\xfe\n")]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InvalidInput, match="other than printable ASCII"):
            serve_mod.read_token(path)
    long = tmp_path / "long"
    long.write_bytes(b"a" * 5000 + b"\n")
    with pytest.raises(InvalidInput, match="a first line of more than 4096 bytes is no token"):
        serve_mod.read_token(long)
    kept = tmp_path / "kept"
    kept.write_bytes(f"\n {TOKEN} \n# \u00e9 a note, not read as the token\n".encode() + b"\xff" * 9000)
    assert serve_mod.read_token(kept) == TOKEN


@contextmanager
def running(srv: PokeServer) -> Iterator[PokeServer]:
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def _closed(conn: socket.socket) -> bool:
    """Whether the server closed the connection (the read ends, or the connection is reset)."""
    try:
        return conn.recv(4096) == b"" or True  # any answer to half a request ends it too
    except TimeoutError:
        return False
    except OSError:
        return True


def test_a_trickling_client_is_cut_off_at_the_request_deadline(
    sh_db: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve_mod, "REQUEST_TIMEOUT", 1)
    with running(make_server(lambda: open_ledger(sh_db), host="127.0.0.1", port=0, token=TOKEN)) as srv:
        host, port = srv.server_address[:2]
        trickle = socket.create_connection((str(host), int(port)), timeout=0.25)
        try:
            trickle.sendall(b"POST /poke HTTP/1.1\r\n")
            cut = False
            for n in range(40):  # a header line every 0.25 s: each read is quick, the whole is not
                try:
                    trickle.sendall(f"X-Trickle-{n}: {n}\r\n".encode())
                except OSError:
                    cut = True
                    break
                if _closed(trickle):
                    cut = True
                    break
            assert cut, "a client sending a header line every 0.25 s kept its connection for 10 s"
        finally:
            trickle.close()
        assert request(srv, "GET", "/healthz")[0] == 200
    assert sh_db.json("list") == []


def test_connections_past_the_cap_are_refused(sh_db: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_mod, "MAX_CONNECTIONS", 3)
    lines: list[str] = []
    srv = make_server(lambda: open_ledger(sh_db), host="127.0.0.1", port=0, token=TOKEN, log=lines.append)
    with running(srv):
        host, port = srv.server_address[:2]
        idle = [socket.create_connection((str(host), int(port)), timeout=10) for _ in range(3)]
        try:
            for conn in idle:  # each holds a slot with half a request
                conn.sendall(b"POST /poke HTTP/1.1\r\n")
            time.sleep(0.2)  # let the server take them before the next one knocks
            with socket.create_connection((str(host), int(port)), timeout=10) as extra:
                extra.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
                reply = read_until_closed(extra)
            status, headers, payload = answer_of(reply)  # JSON, as every other error
            assert status == 503
            assert payload == {"error": "too many connections at once (over 3); try again in a moment"}
            assert headers["Retry-After"] == "1" and headers["Connection"] == "close"
            assert headers["Content-Type"] == "application/json; charset=utf-8"
            assert headers["Server"] == "hb-serve"
        finally:
            for conn in idle:
                conn.close()
        for _ in range(100):  # the slots come back once those connections are gone
            try:
                if request(srv, "GET", "/healthz", timeout=2)[0] == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        else:
            pytest.fail("the server did not serve again after the idle connections closed")
    assert "127.0.0.1 - - 503: too many connections at once (over 3); try again in a moment" in lines


def test_a_burst_of_connections_waits_in_the_backlog_not_on_syn_retries(sh_db: Runner) -> None:
    """The kernel holds connections the server has not accepted yet: socketserver's backlog of 5
    left the sixth client of a burst retrying its SYN (1 s, then 3, 7, 15...: 27 s for 64 at
    once). With the server not accepting at all, 40 clients still connect at once, and each is
    answered once it serves."""
    srv = make_server(lambda: open_ledger(sh_db), host="127.0.0.1", port=0, token=TOKEN)
    host, port = srv.server_address[:2]
    clients: list[socket.socket] = []
    try:
        for _ in range(40):  # nobody accepts yet: each waits in the backlog
            conn = socket.create_connection((str(host), int(port)), timeout=0.5)
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            clients.append(conn)
        with running(srv):
            for conn in clients:
                conn.settimeout(10)
                assert answer_of(read_until_closed(conn))[0] == 200
    finally:
        for conn in clients:
            conn.close()
        srv.server_close()


# --- the command ---------------------------------------------------------------------


def test_serve_refuses_to_start_without_a_token(sh: Runner, workspace: Path) -> None:
    result = sh("serve", "--port", "0", code=1)
    assert "needs a bearer token" in result.stderr and "serve.token" in result.stderr
    result = sh("serve", "--port", "0", "--token-file", str(workspace / "missing"), code=1)
    assert result.stderr.startswith(f"hb: {workspace / 'missing'}: no token file")
    write(workspace / "empty.token", "\n")
    result = sh("serve", "--port", "0", "--token-file", str(workspace / "empty.token"), code=1)
    assert "token file is empty" in result.stderr
    result = sh("serve", "--port", "0", "--token-file", "/dev/zero", code=1)
    assert result.stderr == "hb: /dev/zero: not a file that ends (more than 1048576 bytes)\n"
    # an unset variable (``--token-file "$TOKEN_FILE"``) is no reason to take another file
    result = sh("serve", "--port", "0", "--token-file", "", code=1)
    assert result.stderr == "hb: --token-file is empty: give the path of the file holding the token\n"


@pytest.mark.slow
def test_serve_command_end_to_end(sh: Runner, workspace: Path) -> None:
    token_file = write(workspace / ".agent" / "state" / "serve.token", TOKEN + "\n")
    token_file.chmod(0o644)
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "heartbeat", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        warning = proc.stderr.readline()
        assert "readable by others (mode 0644)" in warning, warning
        line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:", 1)[1].split()[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/poke", body=b"from curl", headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        payload = json.loads(response.read())
        conn.close()
        assert response.status == 202
        proc.terminate()  # SIGTERM: a clean stop
        _out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert "hb serve: stopped" in err and "Traceback" not in err
        assert TOKEN not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    with Ledger.open(workspace=workspace) as ledger:
        assert ledger.get(payload["id"])["title"] == "from curl"
    assert token_file.exists()


def test_an_answer_has_its_own_time_to_be_written_however_long_the_request_took(
    sh_db: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket's timeout when the answer starts is REQUEST_TIMEOUT again: a request that took
    most of its deadline to arrive left the write only the rest (a large page to a slow reader
    was cut off), and one that arrived at once gave its write all of it."""
    monkeypatch.setattr(serve_mod, "REQUEST_TIMEOUT", 2)
    seen: list[float | None] = []
    send = PokeHandler.send_response_only

    def watched(self: PokeHandler, code: int, message: str | None = None) -> None:
        send(self, code, message)
        seen.append(self.connection.gettimeout())

    monkeypatch.setattr(PokeHandler, "send_response_only", watched)
    with running(make_server(lambda: open_ledger(sh_db), token=TOKEN)) as srv:
        host, port = srv.server_address[:2]
        with socket.create_connection((str(host), int(port)), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            time.sleep(1.2)  # most of the request's 2 seconds
            sock.sendall(b"X-Late: 1\r\n")  # the server reads on, waiting for what is left
            time.sleep(0.2)
            sock.sendall(b"\r\n")
            status, _, payload = answer_of(read_until_closed(sock))
    assert status == 200 and payload["ok"] is True
    assert seen == [2]


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("127.example.com", False),  # a name, whatever it resolves to
        ("localhost", False),  # the bound address is asked, never a name
    ],
)
def test_loopback_is_read_from_the_address_bound_not_from_the_name(address: str, loopback: bool) -> None:
    """The not-loopback warning of hb serve and hb mcp --http: a host name starting with ``127.``
    was taken for loopback, and no warning given, wherever the name resolved."""
    assert serve_mod.is_loopback(address) is loopback


@pytest.mark.parametrize(
    ("host", "served"),
    [
        ("127.0.0.1:8787", True),
        ("localhost:9999", True),  # another port: a tunnel forwards one
        ("LOCALHOST", True),
        ("[::1]:8787", True),
        ("127.1.2.3", True),
        ("evil.example", False),  # a name a DNS rebinding points at 127.0.0.1
        ("evil.example:8787", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example", False),
        ("[::2]:80", False),
        ("", False),
    ],
)
def test_a_host_header_naming_no_loopback_address_is_a_421(
    server: PokeServer, sh_db: Runner, host: str, served: bool
) -> None:
    """A page of another site whose name is made to resolve to 127.0.0.1 (DNS rebinding) sends
    its own name: refused before the token is read, as hb mcp --http refuses it."""
    reply = exchange(server, f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    status, _, payload = answer_of(reply)
    if served:
        assert (status, payload) == (200, {"ok": True})
    else:
        assert (status, payload) == (421, {"error": serve_mod.MISDIRECTED})
    assert sh_db.json("list") == []


@contextmanager
def serving(workspace: Path, *, stderr: Any = subprocess.PIPE) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``hb serve --port 0`` in a process of its own on ``workspace``, and its port; its first
    line (where it listens) read off its standard error."""
    token_file = write(workspace / ".agent" / "state" / "serve.token", TOKEN + "\n")
    token_file.chmod(0o600)
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "heartbeat", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        yield proc, int(line.split("http://127.0.0.1:", 1)[1].split()[0])
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def ask(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=40)
    try:
        conn.request(method, path, body=body, headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.slow
def test_sigterm_stops_the_server_while_requests_keep_coming(sh: Runner, workspace: Path) -> None:
    """SIGTERM raised where the main thread was: while it started a request's thread,
    socketserver took it for that request's failure, logged a traceback (a semaphore released
    twice) and served on, in 24 of 30 runs under two busy clients. It now ends the serving loop."""
    for _trial in range(3):
        with serving(workspace) as (proc, port):
            done = threading.Event()

            def client(done: threading.Event = done, port: int = port) -> None:
                deadline = time.monotonic() + 20
                while not done.is_set() and time.monotonic() < deadline:
                    with contextlib.suppress(OSError, http.client.HTTPException):
                        ask(port, "GET", "/healthz")

            clients = [threading.Thread(target=client, daemon=True) for _ in range(2)]
            for thread in clients:
                thread.start()
            time.sleep(0.5)
            proc.terminate()
            try:
                _out, err = proc.communicate(timeout=15)
            finally:
                done.set()
                for thread in clients:
                    thread.join(25)
            assert proc.returncode == 0, err
            assert err.endswith("hb serve: stopped\n"), err
            assert "Traceback" not in err and "failed" not in err, err


@pytest.mark.slow
def test_a_poke_being_answered_when_sigterm_comes_is_answered(sh: Runner, workspace: Path) -> None:
    """The request threads were daemons, killed at exit: a poke waiting on a locked database got
    no answer, and on PostgreSQL its run held the workspace guard for ten minutes. A stopped
    server now answers the requests it has begun, then exits."""
    with serving(workspace) as (proc, port):
        answers: list[tuple[int, bytes]] = []
        with write_lock_held(sh):
            poke = threading.Thread(target=lambda: answers.append(ask(port, "POST", "/poke", b"last words")))
            poke.start()
            time.sleep(1)  # the poke waits for the write lock
            proc.terminate()
            time.sleep(1)
        poke.join(40)
        _out, err = proc.communicate(timeout=40)
    assert proc.returncode == 0, err
    assert answers and answers[0][0] == 202, answers
    assert json.loads(answers[0][1])["title"] == "last words"
    assert [r["status"] for r in runs(sh, "poke")] == ["ok"]


@pytest.mark.slow
def test_a_log_whose_reader_went_away_leaves_the_requests_answered(sh: Runner, workspace: Path) -> None:
    """``hb serve 2>&1 | head -n 2``: once the log could not be written, every request went
    unanswered (the request is logged before its answer), while a poke was committed all the
    same, and sent again by a client that got no answer. The log is dropped instead."""
    with serving(workspace) as (proc, port):
        assert proc.stderr is not None
        proc.stderr.close()  # the log's reader goes away
        assert ask(port, "GET", "/healthz")[0] == 200
        status, body = ask(port, "POST", "/poke", b"after the log")
        assert status == 202, body
        assert ask(port, "GET", "/healthz")[0] == 200
        proc.terminate()
        proc.wait(15)
        assert proc.returncode == 0
    with Ledger.open(workspace=workspace) as ledger:
        assert [t["title"] for t in ledger.list()] == ["after the log"]


@pytest.mark.slow
def test_a_ledger_file_gone_under_the_server_is_refused_not_made_anew(sh: Runner, workspace: Path) -> None:
    """A dashboard page, which only reads, made a new empty ledger in place of one moved away
    and showed it as the workspace's; a poke then put its task there. Both are now a 503 naming
    the missing file, and nothing is made."""
    state = workspace / ".agent" / "state"
    sh("add", "a task")
    with serving(workspace) as (_proc, port):
        moved = workspace / "moved"
        moved.mkdir()
        for part in state.glob("heartbeat.db*"):
            part.rename(moved / part.name)
        status, body = ask(port, "GET", "/now.json")
        assert status == 503 and b"no ledger at" in body, body
        status, body = ask(port, "POST", "/poke", b"lost")
        assert status == 503 and b"no ledger at" in body, body
        assert not list(state.glob("heartbeat.db*"))
        for part in moved.iterdir():
            part.rename(state / part.name)
        assert ask(port, "GET", "/now.json")[0] == 200
