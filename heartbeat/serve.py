"""``hb serve``: ``POST /poke`` over HTTP, for runtimes that poke by webhook (SPEC.md section 7).

A small stdlib server (a thread per connection, pokes taking turns):

- ``POST /poke`` with ``Authorization: Bearer <token>``: the body (UTF-8 text,
  at most 4 KiB) becomes a task, as ``hb poke`` does. 202 with the task as
  JSON; 401 without or with a wrong token; 400 for an empty body or one that
  is not text, or a Content-Length that is not one plain number; 413 past
  4 KiB; 409 while a heartbeat (or another poke) holds the workspace guard.
  Any other method on ``/poke`` is 405.
- ``GET /healthz``: 200 ``{"ok": true}``, no token needed; other methods 405.
- HEAD on every path GET serves answers as GET does, without the body.
- The dashboard (:mod:`heartbeat.web`): read-only pages ``/`` (Now), ``/decisions``,
  ``/task``, ``/outcomes``, ``/runs``, each also as JSON (``/now.json``, ... or
  ``Accept: application/json``). A page needs the bearer token or a session:
  ``GET /login?token=...`` (or the form ``POST /login`` posts) checks the token
  and answers 303 to the page, with a session cookie (``HttpOnly``,
  ``SameSite=Strict``) whose value is a random session id, never the token; a
  wrong token is 401. The session opens the pages only: ``POST /poke`` always
  needs the bearer token. Without the ``[web]`` extra the HTML pages answer 501
  saying so; their JSON works.
- Any other path, ``/poke/`` and ``//poke`` included: 404.
- A request that cannot be read is answered as every error above, JSON with one line (never
  http.server's HTML page, which quotes the request), and the connection is closed: 400 for a
  request line that is not ``METHOD /path HTTP/1.x`` in printable ASCII (a two-word HTTP/0.9
  line included) and for more than one Authorization header (which copy counts would be a
  guess); 505 for another HTTP version; 414 for a request line, 431 for headers past
  http.server's limits; 501 for a method hb has no use for. Up to :data:`MAX_EMPTY_LINES`
  empty lines before the request line are skipped (RFC 9112 section 2.2), one more is a 400. A
  header line RFC 9112 section 5 rejects is a 400 too, though http.server's parser takes it:
  a folded line (obs-fold), a line without a colon or with space before it, a control
  character (NUL, a bare CR, ESC) in a value; bytes past ASCII in a value are taken (obs-text).

The token comes from a file (its first line, surrounding whitespace removed);
without one the server does not start: a poke endpoint anyone can call would
let anything on the machine queue work for the agent. A token file that group
or others may read gets a warning, as ssh gives for a private key.

The request log never shows the token: each request is logged as client,
method, path without its query string, and status (a refused request line as
``- -``, with the reason after the status, never any of the line); an error
message that would quote the request has the token and any ``Bearer``
credentials blanked.

A client has :data:`REQUEST_TIMEOUT` seconds for its whole request (line,
headers and body: one header line every few seconds does not keep it open; half a
request gets 408 then, a connection that sent nothing is closed), and at most
:data:`MAX_CONNECTIONS` connections are served at once (the next gets 503, JSON with
``Retry-After``, and is closed). The Server header is ``hb-serve``, without the Python
version http.server would add.
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import io
import ipaddress
import re
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from heartbeat.errors import (
    Busy,
    DatabaseBusy,
    DatabaseError,
    HbError,
    InvalidInput,
    NotFound,
    Unavailable,
    busy_reason,
    failure_line,
)
from heartbeat.formats import strict_json
from heartbeat.rules.checklist import trimmed
from heartbeat.web import app as web
from heartbeat.web.sessions import Sessions, session_of

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

MAX_BODY = 4096  # bytes: a poke is a short instruction, not a document
TOKEN_FILE = Path(".agent") / "state" / "serve.token"  # the default, inside the workspace
TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded")
REQUEST_TIMEOUT = 10  # seconds a client may take to send its whole request
MAX_CONNECTIONS = 64  # connections served at once; more are refused with 503
MAX_LINE = 65536  # bytes of the request line and of each header line (http.server's limits)
MAX_HEADERS = 65536  # bytes of all the header lines together (as hb mcp --http)
MAX_EMPTY_LINES = 4  # empty lines ignored before a request line (RFC 9112 section 2.2); one more is a 400
RETRY_AFTER = 1  # seconds a client refused for too many connections is told to wait
SERVER = "hb-serve"  # the Server header: names hb, not the Python that runs it
_BEARER = re.compile(r"(?i)(bearer)\s+\S+")
_METHOD = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a token (RFC 9110 section 5.6.2)
_VERSION = re.compile(rb"HTTP/([0-9])\.[0-9]")  # RFC 9112 section 2.3
# a field value: visible ASCII, spaces and tabs, and obs-text (bytes 0x80-0xFF, which RFC 9110
# section 5.5 lets through: a browser sends another local app's UTF-8 cookie to every port)
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
BAD_LINE = "malformed request line: expected METHOD /path HTTP/1.1"
# what a refusal http.server itself makes says (its own text quotes the request and is HTML)
REFUSALS = {
    HTTPStatus.REQUEST_URI_TOO_LONG: f"request line over {MAX_LINE} bytes",
    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE: f"request headers too large: over {MAX_HEADERS} bytes "
    "or more than 100 headers",
    HTTPStatus.NOT_IMPLEMENTED: "method not supported; use GET or POST",
}


TOKEN_MAX = 4096  # bytes of a token file's first line: a token is a few dozen characters


def read_token(path: Path) -> str:
    """The bearer token in ``path``: its first line, stripped. A file, or a pipe
    (``--token-file <(pass show hb)``) read within the bounds hb reads a pipe in (see
    :func:`heartbeat.ops.sync.files.read_text`). InvalidInput when it is missing or empty, when
    its first line is longer than :data:`TOKEN_MAX` bytes (a device or a file that is no token
    file, read no further), or when it holds a character no client can send in an
    ``Authorization`` header as the file has it: only printable ASCII is compared byte for byte
    by every server (a header is read as Latin-1, the file as UTF-8)."""
    from heartbeat.ops.sync.files import read_text

    try:
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():  # a pipe or a device
            text = read_text(path, stream=True)
        else:  # (bytes that are not UTF-8 are no printable ASCII: refused below if in the token)
            with path.open("rb") as file:
                text = file.read(TOKEN_MAX + 1).decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        raise InvalidInput(
            f"{path}: no token file; hb serve needs one, e.g. "
            f"`python -c 'import secrets; print(secrets.token_urlsafe(32))' > {path}; chmod 600 {path}`"
        ) from None
    except HbError as exc:  # a pipe that did not end in time, held too much, or is not UTF-8
        raise InvalidInput(str(exc)) from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the token file ({exc})") from None
    first = text.strip().splitlines()[0] if text.strip() else ""
    if len(first.encode("utf-8", "surrogateescape")) > TOKEN_MAX:
        raise InvalidInput(f"{path}: a first line of more than {TOKEN_MAX} bytes is no token")
    token = first.strip()
    if not token:
        raise InvalidInput(f"{path}: the token file is empty")
    if not all(" " <= char <= "~" for char in token):
        raise InvalidInput(
            f"{path}: the token holds a character other than printable ASCII, which a client cannot "
            "send in an Authorization header as the file has it; make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    return token


def token_file_warning(path: Path) -> str | None:
    """A warning when group or others may read the token file (None: only its owner can)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    if not mode & 0o077:
        return None
    return (
        f"{path} is readable by others (mode {mode:04o}): anyone who can read it can poke; chmod 600 {path}"
    )


def _without_line_end(raw: bytes) -> bytes:
    """A line as read, without its LF or CRLF."""
    line = raw[:-1] if raw.endswith(b"\n") else raw
    return line[:-1] if line.endswith(b"\r") else line


def request_line_refusal(raw: bytes) -> tuple[HTTPStatus, str] | None:
    """Why a request line is refused (the status and the one line to answer), or None when it
    is ``METHOD TARGET HTTP/1.x`` in printable ASCII. Stricter than http.server, which takes a
    two-word line as an HTTP/0.9 request (answered without a status line or headers), any
    ``HTTP/0.x``, whitespace of any kind between the words and any byte in them, and closes
    the connection unanswered on a line of spaces. (Empty lines before it are skipped first.)"""
    line = _without_line_end(raw)
    if any(byte < 0x20 or byte > 0x7E for byte in line):
        return HTTPStatus.BAD_REQUEST, "malformed request line: not printable ASCII (percent-encode the path)"
    words = line.split(b" ")
    if len(words) != 3 or not _METHOD.fullmatch(words[0]) or not words[1]:
        return HTTPStatus.BAD_REQUEST, BAD_LINE
    version = _VERSION.fullmatch(words[2])
    if version is None:
        return HTTPStatus.BAD_REQUEST, BAD_LINE
    if version.group(1) != b"1":
        return HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP version not supported: use HTTP/1.1"
    return None


def header_refusal(lines: list[bytes]) -> str | None:
    """Why the header lines of a request (as sent, each with its line end) are refused, or None.
    http.server's parser (the email package's) takes them all: a continuation line (obs-fold)
    is glued to the header before it, a line without a colon ends the headers and hides the
    ones after it, ``Name :`` is a header named ``"Name "``, and a NUL or CR stays in a value.
    RFC 9112 section 5 says a server rejects these (or, for obs-fold, may unfold it), and what
    another server or a proxy in front would make of them is a guess: 400 for each."""
    for raw in lines:
        line = _without_line_end(raw)
        if not line:  # the empty line that ends the headers
            break
        if line[:1] in (b" ", b"\t"):
            return "obsolete line folding in the headers: send each header on one line"
        name, colon, value = line.partition(b":")
        if not colon or not _METHOD.fullmatch(name):  # a field name is a token, as a method is
            return "malformed header line: expected Name: value"
        if not _FIELD_VALUE.fullmatch(value):
            return "control character in a header value"
    return None


def busy_answer(error: str) -> bytes:
    """The whole 503 answer to a connection past :data:`MAX_CONNECTIONS`, written before any
    handler (and its thread) exists: the JSON error every other refusal has, the same headers,
    and ``Retry-After``, for the connections end within :data:`REQUEST_TIMEOUT` seconds."""
    body = (strict_json.dumps({"error": error}, ensure_ascii=False) + "\n").encode("utf-8")
    head = (
        "HTTP/1.0 503 Service Unavailable\r\n"
        f"Server: {SERVER}\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Retry-After: {RETRY_AFTER}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class PokeServer(ThreadingHTTPServer):
    """An HTTP server for one workspace and one token.

    Each connection has its own thread, so a slow client holds up no one else;
    the pokes themselves take turns (``poke_lock``), as the workspace guard would
    make them. Each request opens the ledger afresh (``open_ledger``): settings
    changed while the server runs apply to the next poke, and no connection
    crosses threads.
    """

    # connections the kernel holds for accept(): socketserver's 5 left a burst of clients
    # waiting on SYN retries (up to 27 s for 64 at once) instead of served or refused with 503
    request_queue_size = 4 * MAX_CONNECTIONS

    def __init__(
        self,
        address: tuple[str, int],
        open_ledger: Callable[[], Ledger],
        token: str,
        log: Callable[[str], None] | None = None,
        ledger_file: str | None = None,
    ) -> None:
        self.open_ledger = open_ledger
        self.token = token
        self.log = None if log is None else self._quiet_when_gone(log)
        self.ledger_file = ledger_file  # what the log names for a database error (SQLite)
        self.poke_lock = threading.Lock()
        self.sessions = Sessions()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.handlers: set[threading.Thread] = set()  # the requests being answered
        self.handlers_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, PokeHandler)
        self.loopback = is_loopback(str(self.server_address[0]))  # Host then names loopback too

    def _quiet_when_gone(self, log: Callable[[str], None]) -> Callable[[str], None]:
        """``log``, dropped once it cannot be written (its reader went away: ``hb serve 2>&1 |
        head``): Python's HTTP server logs a request before its answer, so a failing log left
        every request unanswered, a poke committed all the same (and sent again by its client)."""

        def logged(message: str) -> None:
            try:
                log(message)
            except (OSError, ValueError):  # (ValueError: the log's file was closed)
                self.log = None

        return logged

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread answers the connection, holding one of the slots until it is done."""
        if not self.slots.acquire(blocking=False):  # too many at once: refuse, do not queue
            error = f"too many connections at once (over {MAX_CONNECTIONS}); try again in a moment"
            with contextlib.suppress(OSError):
                request.sendall(busy_answer(error))
            if self.log is not None:
                self.log(f"{client_address[0]} - - 503: {error}")
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._answer, args=(request, client_address), daemon=True)
        try:
            with self.handlers_lock:
                self.handlers.add(thread)
            thread.start()
        except BaseException:  # (no thread: the slot is given back here)
            with self.handlers_lock:
                self.handlers.discard(thread)
            self.slots.release()
            raise

    def _answer(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self.handlers_lock:
                self.handlers.discard(threading.current_thread())
            self.slots.release()

    def finish_requests(self, within: float) -> int:
        """Wait up to ``within`` seconds for the requests being answered (a poke holds the
        workspace guard until it has answered); how many are still running then."""
        deadline = time.monotonic() + within
        while True:
            with self.handlers_lock:
                running = [t for t in self.handlers if t.is_alive()]
            left = deadline - time.monotonic()
            if not running or left <= 0:
                return len(running)
            running[0].join(left)

    def redact(self, text: str) -> str:
        """``text`` with the token and any bearer credentials blanked, for the log; so is each
        run of the token's text :data:`TOKEN_PIECE` characters long or longer (a token sent
        split, or with bytes in between: ``/<half>%%<half>`` logs no half)."""
        return _BEARER.sub(r"\1 [redacted]", blank_pieces(text.replace(self.token, "[token]"), self.token))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for a request that failed outside the handler's own answers (a client that
        went away mid-reply, say) instead of socketserver's traceback."""
        exc = sys.exc_info()[1]
        if self.log is not None and not isinstance(exc, ConnectionError):
            self.log(self.redact(f"request from {client_address[0]} failed: {type(exc).__name__}: {exc}"))

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host!s}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}"


TOKEN_PIECE = 8  # characters: a run of the token's text this long is no chance in a log line


def blank_pieces(text: str, token: str) -> str:
    """``text`` with every run of characters that is a piece of ``token`` at least
    :data:`TOKEN_PIECE` long (the whole token, if shorter) replaced by ``[token]``."""
    width = min(TOKEN_PIECE, len(token))
    if width == 0 or len(text) < width:
        return text
    pieces = {token[i : i + width] for i in range(len(token) - width + 1)}
    covered = [False] * len(text)
    for i in range(len(text) - width + 1):
        if text[i : i + width] in pieces:
            covered[i : i + width] = [True] * width
    if not any(covered):
        return text
    out: list[str] = []
    for i, char in enumerate(text):
        if not covered[i]:
            out.append(char)
        elif i == 0 or not covered[i - 1]:
            out.append("[token]")
    return "".join(out)


class _DeadlineSocket(io.RawIOBase):
    """The socket's reading side with one deadline for the whole request: each receive may
    wait only for the time left, so a client trickling a byte at a time still runs out."""

    def __init__(self, sock: socket.socket, handler: PokeHandler) -> None:
        self.sock = sock
        self.handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.handler.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError("the request took too long")
            self.sock.settimeout(left)
            received = self.sock.recv_into(buffer)
        except TimeoutError:
            self.handler.timed_out = True
            raise
        self.handler.received += received
        return received


class _RequestReader(io.BufferedReader):
    """The request's reader, which keeps the lines read while ``lines`` is a list: the header
    lines as sent, for :func:`header_refusal` (http.server keeps only what it parsed)."""

    lines: list[bytes] | None = None
    size = 0  # bytes of the header lines read so far

    def readline(self, size: int | None = -1) -> bytes:
        if self.lines is None:
            return super().readline(-1 if size is None else size)
        if not self.lines:
            self.size = 0
        left = MAX_HEADERS - self.size + 1  # http.server reads at most MAX_LINE + 1 a line
        line = super().readline(left if size is None or size < 0 else min(size, left))
        self.lines.append(line)
        self.size += len(line)
        if self.size > MAX_HEADERS:  # http.server answers 431 (see REFUSALS)
            raise http.client.HTTPException(f"headers over {MAX_HEADERS} bytes")
        return line


class PokeHandler(BaseHTTPRequestHandler):
    server: PokeServer
    server_version = SERVER
    timeout = REQUEST_TIMEOUT
    deadline = 0.0
    raw_requestline = b""  # set by http.server as it reads the request line
    refusal: str | None = None  # why the request was refused before it was served: for the log
    reader: _RequestReader  # the request's reader (rfile), which keeps the header lines
    received = 0  # bytes of the request received so far
    timed_out = False  # the request was not received whole before its deadline
    answered = False  # a status line was sent for this request

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.rfile = self.reader = _RequestReader(_DeadlineSocket(self.connection, self))

    def version_string(self) -> str:
        """The Server header: hb's name alone (http.server adds ``Python/3.x``)."""
        return SERVER

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + REQUEST_TIMEOUT  # each request on the connection
        self.refusal, self.received, self.timed_out, self.answered = None, 0, False, False
        self._forget_request()
        super().handle_one_request()  # a timeout ends it (http.server closes the connection)
        if self.timed_out and self.received and not self.answered:
            # half a request (a body shorter than its Content-Length, headers that never end):
            # told why, once, rather than a connection that just closes; a connection that sent
            # nothing at all (a browser's spare one) is closed without a word, as before
            with contextlib.suppress(OSError):
                error = f"request not received whole within {REQUEST_TIMEOUT} seconds"
                self._refuse(HTTPStatus.REQUEST_TIMEOUT, error)

    def send_response_only(self, code: int, message: str | None = None) -> None:
        """The status line, the first bytes of every answer: from here the answer has its own
        REQUEST_TIMEOUT seconds to be written (the socket held what was left of the request's,
        which a request that took 9.9 s to arrive left at a tenth of a second)."""
        self.answered = True
        with contextlib.suppress(OSError):
            self.connection.settimeout(REQUEST_TIMEOUT)
        super().send_response_only(code, message)

    def log_error(self, format: str, *args: Any) -> None:
        if not self.timed_out:  # a timeout has its own line: the request's, with the 408
            super().log_error(format, *args)

    def parse_request(self) -> bool:
        """The request line and headers read, or False when the request was refused (answered
        here, as every other error: JSON with one line, nothing of the request quoted)."""
        if not self._skip_empty_lines():
            return False
        refused = request_line_refusal(self.raw_requestline)
        if refused is not None:  # nothing of the line is kept: neither answered nor logged
            self._forget_request()
            self._refuse(*refused)
            return False
        self.reader.lines = []
        try:
            if not super().parse_request():
                return False
        finally:
            lines, self.reader.lines = self.reader.lines, None
        refusal = header_refusal(lines or [])
        if refusal is not None:
            self._refuse(HTTPStatus.BAD_REQUEST, refusal)
            return False
        if len(self.headers.get_all("Authorization") or []) > 1:  # which one counts would be a guess
            self._refuse(HTTPStatus.BAD_REQUEST, "more than one Authorization header")
            return False
        if len(self.headers.get_all("Host") or []) > 1:  # RFC 9112 section 3.2: a 400
            self._refuse(HTTPStatus.BAD_REQUEST, "more than one Host header")
            return False
        if self.server.loopback and not loopback_host(self.headers.get("Host")):
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST, MISDIRECTED)
            return False
        return True

    def _forget_request(self) -> None:
        """No request line is kept: none to answer in, log or quote (an HTTP/1.0 answer)."""
        self.command, self.requestline, self.request_version = "", "", "HTTP/1.0"

    def _skip_empty_lines(self) -> bool:
        """Past up to :data:`MAX_EMPTY_LINES` empty lines before the request line, which a server
        SHOULD ignore (RFC 9112 section 2.2: a client may send one after a POST's body); False
        when the request ended there (the client went away, or was answered: more empty lines
        than that, or a request line too long). Each line is read within the request's deadline
        and :data:`MAX_LINE`."""
        for _ in range(MAX_EMPTY_LINES):
            if self.raw_requestline not in (b"\r\n", b"\n"):
                break
            self.raw_requestline = self.rfile.readline(MAX_LINE + 1)
        if not self.raw_requestline:  # the connection ended after the empty lines
            self.close_connection = True
            return False
        if self.raw_requestline in (b"\r\n", b"\n") or len(self.raw_requestline) > MAX_LINE:
            self._forget_request()
            if len(self.raw_requestline) > MAX_LINE:
                self._refuse(HTTPStatus.REQUEST_URI_TOO_LONG, REFUSALS[HTTPStatus.REQUEST_URI_TOO_LONG])
            else:
                self._refuse(HTTPStatus.BAD_REQUEST, f"no request line after {MAX_EMPTY_LINES} empty lines")
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a request line over :data:`MAX_LINE` bytes, headers too
        large, an unknown method) as hb's other errors: JSON with one line, never its HTML page,
        which quotes the request."""
        status = HTTPStatus(code)
        self._refuse(status, REFUSALS.get(status, status.phrase.lower()))

    def _refuse(self, status: HTTPStatus, error: str) -> None:
        if self.request_version == "HTTP/0.9":  # the answer starts with its status line
            self.request_version = "HTTP/1.0"
        self.refusal = error
        self._reply(status, {"error": error}, close=True)

    # --- routing ---

    def do_GET(self) -> None:
        path = self._path()
        if path == "/healthz":
            self._reply(HTTPStatus.OK, {"ok": True})
        elif path == "/login":
            fields = _form(self._query())
            self._login(fields.get("token"), fields.get("next"))
        elif web.route(path) is not None:
            self._page(path)
        else:
            self._not_allowed_or_missing()

    def do_POST(self) -> None:
        path = self._path()
        if path == "/login":
            self._login_form_post()
        elif path == "/poke":
            self._poke()
        else:
            self._not_allowed_or_missing()

    def do_PUT(self) -> None:
        self._not_allowed_or_missing()

    def do_DELETE(self) -> None:
        self._not_allowed_or_missing()

    def do_PATCH(self) -> None:
        self._not_allowed_or_missing()

    def do_HEAD(self) -> None:
        self.do_GET()  # as GET, without the body (RFC 9110 section 9.3.2): _reply and _send leave it out

    def do_OPTIONS(self) -> None:
        self._not_allowed_or_missing()

    def _not_allowed_or_missing(self) -> None:
        path = self._path()
        allowed = {"/poke": "POST", "/healthz": "GET, HEAD", "/login": "GET, HEAD, POST"}.get(path)
        if allowed is None and web.route(path) is not None:
            allowed = "GET, HEAD"
        if allowed is None:
            self._reply(HTTPStatus.NOT_FOUND, {"error": "not found"})
        else:
            self._reply(
                HTTPStatus.METHOD_NOT_ALLOWED,
                {"error": f"method {self.command} not allowed; use {allowed}"},
                headers={"Allow": allowed},
            )

    # --- POST /poke ---

    def _poke(self) -> None:
        if not self._authorized():
            self._reply(
                HTTPStatus.UNAUTHORIZED,
                {"error": "missing or wrong bearer token"},
                headers={"WWW-Authenticate": 'Bearer realm="hb"'},
            )
            return
        body = self._read_body()
        if body is None:
            return
        text = _text_of(body, self.headers.get("Content-Type"))
        if text is None:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "the body must be UTF-8 text"})
            return
        if not trimmed(text):
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "empty body: the text becomes the task"})
            return
        try:
            with self.server.poke_lock, self.server.open_ledger() as ledger:
                task = ledger.poke(text)
        except (DatabaseBusy, DatabaseError) as exc:  # the database's failure, not the input's
            self._failed(exc)
            return
        except Busy as exc:
            self._reply(HTTPStatus.CONFLICT, {"error": exc.message})
            return
        except Unavailable as exc:
            self._reply(HTTPStatus.SERVICE_UNAVAILABLE, {"error": exc.message})
            return
        except HbError as exc:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": exc.message})
            return
        except Exception as exc:  # the server stays up; the client gets one line, not a traceback
            self._failed(exc)
            return
        summary = {"accepted": True, "id": task["id"], "title": task["title"], "status": task["status"]}
        self._reply(HTTPStatus.ACCEPTED, {**summary, "task": task})

    def _failed(self, exc: Exception) -> None:
        """The reply to a poke that failed for another reason than its input: 503 while the
        database stayed locked, else 500 (the reason in the server's log, not the reply)."""
        busy = busy_reason(exc)
        if busy is not None:  # the database stayed locked
            self._reply(HTTPStatus.SERVICE_UNAVAILABLE, {"error": busy})
            return
        if self.server.log is not None:
            self.server.log(f"poke failed: {failure_line(exc, self.server.ledger_file)}")
        self._reply(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error; see the server log"})

    # --- the dashboard ---

    def _page(self, path: str) -> None:
        query, accept = self._query(), self.headers.get("Accept")
        if not (self._authorized() or self.server.sessions.valid(session_of(self.headers.get("Cookie")))):
            self._send(web.unauthorized(path, query, accept))
            return
        self._send(
            web.page(self.server.open_ledger, path, query, accept, self.server.log, self.server.ledger_file)
        )

    def _login(self, token: str | None, next_target: str | None) -> None:
        """A right token: 303 to the page asked for, with a new session's cookie; else 401."""
        if token is None:
            self._send(web.login_form(HTTPStatus.UNAUTHORIZED, "Log in with the token.", next_target))
            return
        if not hmac.compare_digest(token.strip().encode(), self.server.token.encode()):
            self._send(web.login_form(HTTPStatus.UNAUTHORIZED, "That is not the token.", next_target))
            return
        sid = self.server.sessions.new()
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", web.safe_next(next_target))
        self.send_header("Set-Cookie", self.server.sessions.cookie(sid))
        for name, value in web.HTML_HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _login_form_post(self) -> None:
        body = self._read_body()
        if body is None:
            return
        text = _text_of(body, self.headers.get("Content-Type"))
        if text is None:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "the body must be a form in UTF-8"})
            return
        fields = _form(text)
        self._login(fields.get("token"), fields.get("next"))

    def _read_body(self) -> bytes | None:
        """The request body (at most MAX_BODY bytes); None when the reply was sent already."""
        if self.headers.get("Transfer-Encoding"):
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "send the body with a Content-Length"}, close=True)
            return None
        length = _content_length(self.headers.get_all("Content-Length") or [])
        if length is None:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "bad Content-Length"}, close=True)
            return None
        if length > MAX_BODY:
            self._reply(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                {"error": f"body over {MAX_BODY} bytes"},
                close=True,  # the body is not read: the connection cannot be reused
            )
            return None
        body = self.rfile.read(length) if length else b""
        if len(body) < length:  # the client went away mid-body: half a text is not a request
            self.close_connection = True
            return None
        return body

    def _send(self, response: web.Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization") or ""
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return False
        return hmac.compare_digest(credentials.strip().encode(), self.server.token.encode())

    # --- plumbing ---

    def _target(self) -> str:
        # the request line as sent, not self.path: http.server folds a leading "//" into "/"
        words = self.requestline.split()
        # no path at all when the request line was refused (too long, say: 414)
        return words[1] if len(words) >= 2 else getattr(self, "path", "-")

    def _path(self) -> str:
        # exact paths only: "/poke/" and "//poke" are not the poke endpoint (404)
        return self._target().split("?", 1)[0]

    def _query(self) -> str:
        return self._target().partition("?")[2]

    def _reply(
        self,
        status: HTTPStatus,
        payload: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        close: bool = False,
    ) -> None:
        data = (strict_json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request: client, method, path (no query string, which may carry the
        token) and status, and why a request was refused unread; never a header, nor any of a
        request line that was refused (``- -`` instead); the token, or a piece of it, sent as the
        method or in the path is blanked."""
        if self.server.log is not None:
            status = code.value if isinstance(code, HTTPStatus) else code
            if not self.command:
                method, path = "-", "-"
            else:
                # the method is whatever came first on the line (a token pasted there, say,
                # refused with 501): blanked as the path is
                method, path = self.server.redact(self.command), self._path()
                sent = unquote(path)
                shown = self.server.redact(sent)
                if shown != sent:  # a token (or a piece of one) sent in the path: blanked
                    path = shown
            why = f": {self.refusal}" if self.refusal else ""
            self.server.log(f"{self.address_string()} {method} {path} {status}{why}")

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log is not None:
            self.server.log(self.server.redact(f"{self.address_string()} {format % args}"))


def _form(text: str) -> dict[str, str]:
    """The first value of each field of a query string or form body (unreadable: none)."""
    from urllib.parse import parse_qsl

    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=20, errors="strict")
    except (ValueError, UnicodeDecodeError):
        return {}
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields


def _content_length(values: list[str]) -> int | None:
    """The body's length from its Content-Length headers (none: 0); None when it is not plain
    ASCII digits (``int`` would read ``+5``, ``5_0`` and ``٥``) or the copies disagree, for the
    body's end would be a guess (RFC 9112 section 6.3)."""
    lengths = {value.strip() for value in values} or {"0"}
    if len(lengths) > 1:
        return None
    text = lengths.pop()
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else sys.maxsize  # past any body (int() stops at 4,300)


def _text_of(body: bytes, content_type: str | None) -> str | None:
    """The body as text, or None when it is not text (declared binary, not UTF-8, control bytes)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media and not media.startswith(TEXT_TYPES):
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in text) or "\x7f" in text:
        return None
    return text


def make_server(
    open_ledger: Callable[[], Ledger],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str,
    log: Callable[[str], None] | None = None,
    ledger_file: str | None = None,
) -> PokeServer:
    """A bound server (port 0: any free port; see ``server.url``); call ``serve_forever()``.

    ``open_ledger`` opens the workspace's ledger; it is called once per poke. ``ledger_file``:
    the SQLite file a database error in the log names.
    """
    try:
        return PokeServer((host, port), open_ledger, token, log, ledger_file)
    except OSError as exc:
        raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def token_path(ledger: Ledger, token_file: str | None) -> Path:
    """The token file to use: the given one, else the workspace default."""
    if token_file is not None and not token_file.strip():  # ``--token-file "$UNSET"``
        raise InvalidInput("--token-file is empty: give the path of the file holding the token")
    if token_file:
        return Path(token_file).expanduser()
    default = ledger.workspace / TOKEN_FILE
    if not default.exists():
        raise NotFound(
            f"hb serve needs a bearer token: pass --token-file F or create {default} "
            "(one line, e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    return default


MISDIRECTED = "the Host header names no loopback address: this server answers 127.0.0.1, ::1 and localhost"


def loopback_host(host: str | None) -> bool:
    """Whether a request's Host header names this machine's loopback (any port: a tunnel may
    forward another one): a page of another site whose name a DNS rebinding points at 127.0.0.1
    sends its own name, and is refused (421) by a server bound to loopback. A request without
    one (HTTP/1.0) names nothing and is served: a browser always sends one."""
    if host is None:
        return True
    host = host.strip().lower()
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name in ("localhost", "localhost.") or is_loopback(name)


def is_loopback(address: str) -> bool:
    """Whether a bound socket's address (``getsockname()[0]``) is a loopback one: 127.0.0.0/8,
    ::1 or an IPv4-mapped 127.x. Asked of the address bound, not of the host name given, so a
    name such as ``127.example.com`` or a ``localhost`` that resolves elsewhere is not taken
    for loopback."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


# How long a stopped server waits for the requests it is answering: past the 30 s a poke may
# wait for a locked database, and the 10 s a slow client has to send its request.
STOP_WAIT = 35.0


def serve(server: PokeServer) -> None:
    """Serve until stopped: SIGTERM or Ctrl-C stop taking requests, the ones being answered
    finish (up to :data:`STOP_WAIT` seconds; a poke gives the workspace guard back), the socket
    is closed: no traceback, exit 0.

    The signals ask the serving loop to end (``shutdown``, from a thread of its own) rather than
    raising where the main thread happens to be: raised while it started a request's thread,
    socketserver took the exception for that request's failure and served on."""
    main = threading.current_thread() is threading.main_thread()  # signals reach it alone
    stopping = threading.Event()

    def stop(_signum: int, _frame: Any) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, name="hb-serve-stop", daemon=True).start()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # (a caller elsewhere than the main thread keeps its own SIGINT)
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        left = server.finish_requests(STOP_WAIT)
        server.server_close()
        with contextlib.suppress(OSError, ValueError):  # (a log whose reader went away)
            print(
                "hb serve: stopped" + (f" ({left} requests still running)" if left else ""),
                file=sys.stderr,
            )
