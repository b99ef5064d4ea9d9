"""hb mcp --http's HTTP layer under the MCP SDK: uvicorn's h11 protocol with hb's answers.

Imported only when hb serves MCP over HTTP (``hb mcp --http``), so that the stdio server does
not load uvicorn's protocol; :mod:`heartbeat.mcp_server` describes the answers.
"""

from __future__ import annotations

import asyncio
import re
import sys
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from heartbeat.formats import strict_json

REQUEST_TIMEOUT = 10  # seconds a client has for its whole request over HTTP, as hb serve gives
SERVER = "hb-mcp"  # the Server header over HTTP (uvicorn would name itself)
MAX_EMPTY_LINES = 4  # empty lines skipped before a request line over HTTP, as hb serve skips
MAX_HEAD = 65536  # bytes of a request line and its headers over HTTP (h11's default is 16 KiB)
MAX_CONNECTIONS = 64  # connections served at once over HTTP, as hb serve serves; more get 503
RETRY_AFTER = 1  # seconds a connection refused for being one too many is told to wait


def refusal(status: int, error: str, *extra: str) -> bytes:
    """A whole JSON answer with ``Connection: close`` (and the ``extra`` header lines), written
    to the socket as is: for the answers uvicorn makes before any app runs."""
    body = (strict_json.dumps({"error": error}, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    phrase = HTTPStatus(status).phrase
    lines = [f"content-length: {len(body)}", *extra, "connection: close"]
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nserver: {SERVER}\r\ncontent-type: application/json\r\n"
        + "".join(line + "\r\n" for line in lines)
        + "\r\n"
    )
    return head.encode("ascii") + body


def log(message: str) -> None:
    """One line on standard error, as hb mcp writes its others."""
    print(f"hb mcp: {message}", file=sys.stderr, flush=True)


class HttpProtocol(H11Protocol):
    """uvicorn's h11 protocol (chosen by name, so whether httptools is installed changes
    nothing) with hb's answers where uvicorn has its own, and a deadline it lacks:

    - a request h11 cannot parse (a malformed request line, HTTP/0.9, a header line with a NUL
      or space before its colon, an obs-fold, a bad Content-Length, headers past
      ``h11_max_incomplete_event_size``) is answered as hb serve does, JSON with one line, 400
      or 431, instead of uvicorn's text/plain ``Invalid HTTP request received.``;
    - a request not received whole within :data:`REQUEST_TIMEOUT` seconds (headers that never
      end, a body shorter than its Content-Length) is a 408, or only closed when an answer went
      out already or nothing was sent: uvicorn waits for it for ever (its keep-alive timeout
      starts only after an answer);
    - at most :data:`MAX_CONNECTIONS` connections are served at once, as hb serve serves: the
      next one is answered 503, JSON with ``Retry-After``, closed at once and logged as hb serve
      logs it (uvicorn's ``limit_concurrency`` would answer in text, and only once a request
      came, holding the connection until then). A refused connection holds no place.

    It overrides ``send_400_response`` (the one place uvicorn answers a protocol error) and
    hooks ``connection_made``, ``data_received``, ``handle_events`` and ``connection_lost``
    around uvicorn's own; tests/mcp/test_http.py pins each answer, so an uvicorn that changes
    them fails there."""

    deadline: asyncio.TimerHandle | None = None
    skipped = 0  # bytes of empty lines skipped before this request's line

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        if len(self.connections) > MAX_CONNECTIONS:  # (uvicorn's set of them, this one included)
            self.connections.discard(self)
            self._refuse_busy()
            return
        self._arm()

    def _refuse_busy(self) -> None:
        error = f"too many connections at once (over {MAX_CONNECTIONS}); try again in a moment"
        self.transport.write(refusal(503, error, f"retry-after: {RETRY_AFTER}"))
        self.transport.close()
        log(f"{self.client[0] if self.client else '-'} - - 503: {error}")

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            if self.deadline is None:  # the next request begins
                self.skipped = 0
                self._arm()
            # up to MAX_EMPTY_LINES CRLFs before the request line are skipped (RFC 9112 section
            # 2.2), which h11 refuses; past that h11 sees them, and answers 400
            rest = data.lstrip(b"\r\n")
            if self.skipped + len(data) - len(rest) <= 2 * MAX_EMPTY_LINES:
                self.skipped += len(data) - len(rest)
                data = rest
                if not data:  # (no empty call: h11 reads b"" as the end of the connection)
                    return
            if _folded(bytes(self.conn.trailing_data[0]) + data):
                self.send_400_response("obs-fold")
                return
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._disarm()  # read whole (or refused): the app's answer takes the time it takes
        elif self.deadline is None and (self.conn.their_state is not h11.IDLE or self.conn.trailing_data[0]):
            # a request begun in the bytes that came with the one before (pipelined), read now
            # that its answer went out: no more data may come for it, so its time starts here
            self.skipped = 0
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """What a request h11 refused gets (``msg`` is uvicorn's text, not shown)."""
        received = self.conn.trailing_data[0]
        if len(received) > MAX_HEAD and b"\r\n\r\n" not in received[: MAX_HEAD + 4]:  # h11's limit
            answer = refusal(431, "request headers too large")
        else:
            answer = refusal(400, "malformed request: expected METHOD /path HTTP/1.1 and Name: value headers")
        self.transport.write(answer)
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(REQUEST_TIMEOUT, self._too_slow)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _too_slow(self) -> None:
        self.deadline = None
        if self.transport.is_closing():
            return
        started = self.conn.their_state is not h11.IDLE or self.conn.trailing_data[0]
        if started and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):  # nothing answered yet
            self.transport.write(refusal(408, f"request not received whole within {REQUEST_TIMEOUT} seconds"))
        self.transport.close()  # the app waiting for the body reads a disconnect


_FOLD = re.compile(rb"\n[ \t]")  # a line of the head that starts with a space or tab


def _folded(received: bytes) -> bool:
    """Whether the head of the request in ``received`` (its request line and headers, as far as
    they came) folds a header onto more lines (obs-fold, RFC 9112 section 5.2), which h11 glues
    back together: hb serve answers 400, and so does hb mcp (which copy of a folded
    Authorization another server or a proxy would read is a guess)."""
    end = received.find(b"\r\n\r\n")
    return _FOLD.search(received, 0, len(received) if end < 0 else end + 2) is not None


def http_config(app: Any) -> Any:
    """uvicorn's settings for ``app``: hb's protocol (h11, never httptools), its Server header,
    no access log (it would show query strings), and no proxy headers: uvicorn would otherwise
    take the client address and scheme a local client claims in X-Forwarded-For and
    X-Forwarded-Proto (it trusts them from 127.0.0.1, where every client on the machine is)."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=HttpProtocol,
        log_level="warning",
        access_log=False,
        lifespan="on",
        server_header=False,
        headers=[("server", SERVER)],
        h11_max_incomplete_event_size=MAX_HEAD,
        proxy_headers=False,
    )
