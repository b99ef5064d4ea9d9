"""The dashboard's routes and responses, for :mod:`heartbeat.serve` (which handles the HTTP,
the token and the sessions).

Pages, each also as JSON (``/now.json``, ..., or ``Accept: application/json``):

- ``/`` and ``/now``: the queues, what is due, what recurs next, the guard;
- ``/decisions``: reminders sent and held back, per day or hour, and why;
- ``/task?id=ID[&scope=QUEUE]``: one task;
- ``/outcomes``: ``hb report outcomes`` per day, skill, scope or source;
- ``/runs``: heartbeat ticks and pokes.

Only the exact paths are pages (``/now/`` is not). The HTML needs the
``[web]`` extra (Jinja2); without it each page answers 501 saying so, and the
JSON variants, ``POST /poke`` and ``GET /healthz`` work as ever. This module
imports neither Jinja2 nor SQLAlchemy.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

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

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

ROUTES = {
    "/": "now",
    "/now": "now",
    "/decisions": "decisions",
    "/task": "task",
    "/outcomes": "outcomes",
    "/runs": "runs",
}
JSON_SUFFIX = ".json"
WEB_EXTRA = "pip install 'hb-ledger[web]'"
# no script runs, nothing loads from elsewhere, forms post only here, no page frames this one
HTML_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
JSON_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
HTML = "text/html; charset=utf-8"
_HEAD = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
)
_STYLE = "body{font:14px/1.45 system-ui,sans-serif;margin:40px;color:#1f2328}p{max-width:640px}"
JSON = "application/json; charset=utf-8"


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


def route(path: str) -> tuple[str, bool] | None:
    """(page, as JSON) for a dashboard path, or None: ``/decisions`` or ``/decisions.json``."""
    if path in ROUTES:
        return ROUTES[path], False
    if path.endswith(JSON_SUFFIX):
        base = path[: -len(JSON_SUFFIX)]
        if base in ROUTES and base != "/":
            return ROUTES[base], True
    return None


def wants_json(accept: str | None) -> bool:
    """Whether an ``Accept`` header asks for JSON rather than HTML (a browser's asks for HTML)."""
    types = [part.split(";", 1)[0].strip().lower() for part in (accept or "").split(",")]
    return "application/json" in types and "text/html" not in types


def html_available() -> bool:
    """Whether the ``[web]`` extra (Jinja2) is installed, so the pages can be HTML."""
    try:
        return importlib.util.find_spec("jinja2") is not None
    except (ImportError, ValueError):
        return False


def safe_next(target: str | None) -> str:
    """Where a login goes on to: a dashboard page (with its query), else ``/``; never elsewhere."""
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    if any(ch in target for ch in "\\\r\n\t ") or any(ord(ch) < 32 or ord(ch) == 127 for ch in target):
        return "/"
    if not route(target.split("?", 1)[0]):
        return "/"
    # a header holds ASCII: other characters go as their UTF-8, percent-encoded, as a browser
    # sends them (the page reads the query as UTF-8)
    return target if target.isascii() else quote(target, safe=_ASCII_PUNCTUATION)


_ASCII_PUNCTUATION = "".join(chr(c) for c in range(33, 127) if not chr(c).isalnum())


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    """``payload`` as a JSON answer: strict JSON (:mod:`heartbeat.formats.strict_json`)."""
    body = (strict_json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8")
    return Response(status, body, JSON, {**JSON_HEADERS, **(headers or {})})


def html_response(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return Response(status, text.encode("utf-8"), HTML, {**HTML_HEADERS, **(headers or {})})


def page(
    open_ledger: Callable[[], Ledger],
    path: str,
    query: str,
    accept: str | None,
    log: Callable[[str], None] | None = None,
    ledger_file: str | None = None,
) -> Response:
    """The response to an authorized ``GET`` of a dashboard path; ``log`` hears of a failure
    that is no refusal (a database error names ``ledger_file``, the SQLite file)."""
    from heartbeat.web.pages import PAGES, Params

    found = route(path)
    assert found is not None, path
    name, as_json = found
    as_json = as_json or wants_json(accept)
    try:
        params = Params.parse(query)
        with open_ledger() as ledger:
            data = PAGES[name](ledger, params)
    except Unavailable as exc:
        return _error(503, "The ledger is gone", exc.message, as_json)
    except (DatabaseBusy, DatabaseError) as exc:  # the database's failure, not the request's
        return _failed(exc, path, as_json, log, ledger_file)
    except Busy as exc:  # another process holds what the page waited for: try again
        return _error(503, "Busy", exc.message, as_json)
    except NotFound as exc:
        return _error(404, "Not found", exc.message, as_json)
    except InvalidInput as exc:
        return _error(400, "Bad request", exc.message, as_json)
    except HbError as exc:
        return _error(500, "The ledger cannot answer", exc.message, as_json)
    except Exception as exc:  # the server stays up; the client gets one line, not a traceback
        return _failed(exc, path, as_json, log, ledger_file)
    if as_json:
        return json_response(200, data, {"Vary": "Accept"})
    try:
        from heartbeat.web import render
    except ImportError:
        return no_html(path)
    try:
        text = render.render(name, data, path=path, query=query)
    except Exception as exc:
        if log is not None:
            log(f"page {path} failed to render: {failure_line(exc, ledger_file)}")
        return _error(500, "Internal error", "internal error; see the server log", as_json)
    return html_response(200, text, {"Vary": "Accept"})


def _failed(
    exc: Exception, path: str, as_json: bool, log: Callable[[str], None] | None, ledger_file: str | None
) -> Response:
    """The answer to a page that failed for another reason than its request: 503 while the
    database stayed locked, else 500 (the reason in the server's log, not the answer)."""
    busy = busy_reason(exc)
    if busy is not None:  # the database stayed locked
        return _error(503, "Busy", busy, as_json)
    if log is not None:
        log(f"page {path} failed: {failure_line(exc, ledger_file)}")
    return _error(500, "Internal error", "internal error; see the server log", as_json)


def no_html(path: str) -> Response:
    """501: the HTML pages need the [web] extra; the JSON variant works without it."""
    json_path = f"{'/now' if path == '/' else path}{JSON_SUFFIX}"
    message = (
        f"hb's dashboard pages need the [web] extra (Jinja2): {WEB_EXTRA}, then restart hb serve. "
        f"Without it, {json_path} answers with this page as JSON, and POST /poke works as ever."
    )
    return html_response(501, _plain_page(501, "Not implemented here", message))


MAX_MESSAGE = 1000  # characters of an error message: past them it is a value echoed, clipped


def _error(status: int, title: str, message: str, as_json: bool) -> Response:
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + f"... ({len(message) - MAX_MESSAGE} characters more)"
    if as_json:
        return json_response(status, {"error": message})
    try:
        from heartbeat.web import render

        return html_response(status, render.render_error(status, title, message))
    except ImportError:
        return html_response(status, _plain_page(status, title, message))


def _plain_page(status: int, title: str, message: str) -> str:
    """A page built without templates (the [web] extra may be missing), every value escaped."""
    return (
        f"{_HEAD}<title>{status} {escape(title)} · hb</title><style>{_STYLE}</style></head><body>"
        f'<h1>{status} {escape(title)}</h1><p class="error-message">{escape(message)}</p></body></html>'
    )


def login_form(status: int, message: str, next_target: str | None) -> Response:
    """The login page: where to find the token, and a form that posts it (so that it stays out
    of the browser's history). ``status`` 401 when a page or a login was refused."""
    target = escape(safe_next(next_target), quote=True)
    body = (
        f"{_HEAD}<title>Log in · hb</title>"
        f"<style>{_STYLE}input{{font:inherit;padding:3px 6px;width:28em}}button{{font:inherit}}</style>"
        "</head><body>"
        "<h1>hb dashboard</h1>"
        f'<p class="error-message">{escape(message)}</p>'
        "<p>Paste the token hb serve was started with (the file of <code>--token-file</code>, by default "
        "<code>.agent/state/serve.token</code> in the workspace). Or open "
        "<code>/login?token=TOKEN</code> once. The browser then holds a session cookie; the token is not "
        "kept in it.</p>"
        '<form method="post" action="/login">'
        f'<input type="hidden" name="next" value="{target}">'
        '<p><input type="password" name="token" autocomplete="off" aria-label="token" autofocus> '
        '<button type="submit">Log in</button></p></form></body></html>'
    )
    return html_response(status, body, {"WWW-Authenticate": 'Bearer realm="hb"'} if status == 401 else None)


def unauthorized(path: str, query: str, accept: str | None) -> Response:
    """401 for a page without the token or a session: JSON for JSON, else the login page."""
    found = route(path)
    if (found is not None and found[1]) or wants_json(accept):
        return json_response(
            401,
            {"error": "missing or wrong bearer token (or no session: GET /login?token=...)"},
            {"WWW-Authenticate": 'Bearer realm="hb"'},
        )
    target = path + (f"?{query}" if query else "")
    return login_form(401, "This page needs the token, or a session from logging in.", target)
