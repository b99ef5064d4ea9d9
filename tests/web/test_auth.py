"""The dashboard's token rules: the bearer token or a session from /login, nothing else.

A page without either is 401; ``/login`` with a wrong token is 401; with the
right one it sets an HttpOnly, SameSite=Strict cookie that holds a session id,
never the token, and the token shows up in no link, header or log line.
"""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from tests.conftest import read_until_closed
from tests.web.conftest import TOKEN, Served
from tests.web.helpers import Reply

PAGES = (
    "/",
    "/now",
    "/decisions",
    "/task?id=task-x",
    "/outcomes",
    "/runs",
    "/now.json",
    "/decisions.json",
    "/task.json?id=task-x",
    "/outcomes.json",
    "/runs.json",
)


def login(served: Served, next_target: str | None = None) -> Reply:
    target = f"&next={quote(next_target, safe='')}" if next_target is not None else ""
    return served.get(f"/login?token={quote(TOKEN)}{target}", token=None)


def session_cookie(reply: Reply) -> str:
    """``hb_session=...`` from a login's Set-Cookie."""
    cookie = reply.headers["Set-Cookie"]
    return cookie.split(";", 1)[0]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_401_without_the_token(served: Served, path: str) -> None:
    for token in (None, "wrong", TOKEN + "x"):
        reply = served.get(path, token=token)
        assert reply.status == 401, (path, token)
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
        if ".json" in path:
            assert "token" in reply.json()["error"]
        else:  # a browser gets the way in: the login form, which posts the token
            page = reply.html()
            form = page.find("form")
            assert (form.attrs["method"], form.attrs["action"]) == ("post", "/login")
            assert page.find("input", name="next").attrs["value"] == path
    reply = served.get(path, token=None, headers={"Authorization": TOKEN})  # no scheme
    assert reply.status == 401
    reply = served.get(path, token=None, headers={"Cookie": "hb_session=made-up"})
    assert reply.status == 401


def test_login_with_a_wrong_token_is_401_and_sets_no_cookie(served: Served) -> None:
    for query in ("?token=wrong", "?token=", "", f"?token={quote(TOKEN)}x", f"?tok={quote(TOKEN)}"):
        reply = served.get(f"/login{query}", token=None)
        assert reply.status == 401, query
        assert "Set-Cookie" not in reply.headers
        assert TOKEN not in reply.text
    reply = served.get("/login?token=wrong", token=None)
    assert "not the token" in reply.html().find("p", class_="error-message").text()


def test_login_sets_a_session_cookie_and_goes_to_the_page(served: Served) -> None:
    reply = login(served, "/decisions?day=2026-03-10&reason=quiet_hours")
    assert reply.status == 303
    assert reply.headers["Location"] == "/decisions?day=2026-03-10&reason=quiet_hours"
    attributes = [part.strip() for part in reply.headers["Set-Cookie"].split(";")]
    assert "HttpOnly" in attributes and "SameSite=Strict" in attributes and "Path=/" in attributes
    cookie = session_cookie(reply)
    name, value = cookie.split("=", 1)
    assert name == "hb_session" and len(value) >= 40 and TOKEN not in value
    assert all(TOKEN not in v for v in reply.headers.values())
    for path in PAGES:
        got = served.get(path, token=None, headers={"Cookie": cookie})
        assert got.status in (200, 404), path  # task-x is no task: 404, past the token check
    assert served.get("/now.json", token=None, headers={"Cookie": f"other=1; {cookie}"}).status == 200
    other = session_cookie(login(served))
    assert other != cookie  # a new session per login


def test_the_session_never_opens_poke(served: Served) -> None:
    cookie = session_cookie(login(served))
    reply = served.get("/poke", token=None, headers={"Cookie": cookie})
    assert reply.status == 405
    from tests.web.helpers import request

    reply = request(served.port, "POST", "/poke", headers={"Cookie": cookie}, body=b"from a browser")
    assert reply.status == 401


def test_login_goes_only_to_a_dashboard_page(served: Served) -> None:
    for target in (
        "//evil.example/",
        "http://evil.example/",
        "/poke",
        "/healthz",
        "javascript:alert(1)",
        "/\\evil",
    ):
        reply = login(served, target)
        assert reply.status == 303 and reply.headers["Location"] == "/", target
    assert login(served).headers["Location"] == "/"
    assert login(served, "/task?id=a%20b&scope=").headers["Location"] == "/task?id=a%20b&scope="


def test_login_by_form_post_keeps_the_token_out_of_the_address(served: Served) -> None:
    from tests.web.helpers import request

    form = f"token={quote(TOKEN)}&next={quote('/runs?days=3', safe='')}".encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    reply = request(served.port, "POST", "/login", headers=headers, body=form)
    assert reply.status == 303 and reply.headers["Location"] == "/runs?days=3"
    assert served.get("/runs.json", token=None, headers={"Cookie": session_cookie(reply)}).status == 200
    reply = request(served.port, "POST", "/login", headers=headers, body=b"token=wrong")
    assert reply.status == 401 and "Set-Cookie" not in reply.headers


def test_other_methods_on_pages_are_405(served: Served) -> None:
    from tests.web.helpers import request

    for method in ("POST", "PUT", "DELETE", "PATCH"):
        reply = request(served.port, method, "/decisions", token=TOKEN, body=b"x")
        assert reply.status == 405, method
        assert reply.headers["Allow"] == "GET, HEAD"


def test_head_answers_as_get_without_the_body(served: Served) -> None:
    """RFC 9110 section 9.3.2: the same status and headers as GET, no body (it was 405)."""
    from tests.web.helpers import request

    cases = (("/decisions.json", TOKEN), ("/healthz", None), ("/runs.json", None), ("/nope", TOKEN))
    for path, token in cases:
        got = request(served.port, "GET", path, token=token)
        head = request(served.port, "HEAD", path, token=token)
        assert head.status == got.status and head.body == b"", path
        assert head.headers["Content-Length"] == str(len(got.body)) and len(got.body) > 0, path
        assert head.headers["Content-Type"] == got.headers["Content-Type"], path
    assert request(served.port, "HEAD", "/poke", token=TOKEN).headers["Allow"] == "POST"


def test_the_token_appears_in_no_log_line(served: Served) -> None:
    login(served, "/runs")
    served.get(f"/now.json?token={TOKEN}", token=None)
    served.get("/now.json")
    half = len(TOKEN) // 2  # a token sent split in the path: neither half is logged (each was)
    served.get(f"/{TOKEN[:half]}%25%25{TOKEN[half:]}", token=None)
    served.get(f"/x{TOKEN[3:12]}y", token=None)
    deadline = time.monotonic() + 10
    while not any("GET /x[token]y 404" in line for line in served.log) and time.monotonic() < deadline:
        time.sleep(0.05)  # the server's log is read by a thread
    text = "".join(served.log)
    assert "GET /login 303" in text and "GET /now.json 401" in text and "GET /now.json 200" in text
    assert TOKEN not in text
    assert all(TOKEN[i : i + 8] not in text for i in range(len(TOKEN) - 7))
    assert "GET /[token]%%[token] 404" in text and "GET /x[token]y 404" in text
    assert "hb_session" not in text


def _raw(served: Served, line: bytes) -> bytes:
    """One request line sent as is; the server's reply (empty if it sent none)."""
    import socket

    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(line + b"\r\n\r\n")
        return read_until_closed(sock)


def test_a_token_in_the_path_or_a_refused_request_line_is_blanked(served: Served) -> None:
    """The request log dropped only the query string: a token sent in the path, or as the target
    of a malformed request line, was logged. A request line too long to read got no reply (the
    log line failed on the path it never had)."""
    before = len(served.log)
    for path in (f"/poke/{TOKEN}", f"/login%3Ftoken={TOKEN}", f"/login;token={quote(TOKEN)}"):
        assert served.get(path, token=None).status == 404
    # a two-word line: http.server took it for HTTP/0.9 and sent its HTML error page alone
    refused = _raw(served, f"GARBAGE {TOKEN}".encode())
    assert refused.startswith(b"HTTP/1.0 400 ") and TOKEN.encode() not in refused
    assert refused.endswith(b'{"error": "malformed request line: expected METHOD /path HTTP/1.1"}\n')
    too_long = _raw(served, b"GET /" + b"a" * 70_000 + b" HTTP/1.1")
    assert too_long.startswith(b"HTTP/1.0 414 ")
    assert too_long.endswith(b'{"error": "request line over 65536 bytes"}\n')
    deadline = time.monotonic() + 10
    # the server's log is read by a thread: wait for this test's five lines, the 414 last, so
    # that none of them arrives during the next test (the server is shared by the session)
    while [" 404" in line for line in served.log[before:]].count(True) < 3 or not any(
        " 414" in line for line in served.log[before:]
    ):
        assert time.monotonic() < deadline, served.log[before:]
        time.sleep(0.05)
    text = "".join(served.log[before:])
    assert TOKEN not in text and quote(TOKEN) not in text
    assert "[token]" in text and "failed" not in text


def test_malformed_requests_to_hb_serve_are_json_one_line_each_in_its_log_and_it_serves_on(
    served: Served,
) -> None:
    """Against the ``hb serve`` process: no HTML error page, nothing of the request in its log
    (on its standard error), no traceback, and the next request is served."""
    cases = (
        (b"GARBAGE", b"400"),
        (b"GET / HTTP/1.1 extra words", b"400"),
        (b"GET /\xff\xfe HTTP/1.1", b"400"),
        (b"GET / HTTP/9.9", b"505"),
        (b"GET /" + b"b" * 70_000 + b" HTTP/1.1", b"414"),
        (b"PROPFIND / HTTP/1.1", b"501"),
        (
            f"GET /now.json HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\nAuthorization: Bearer x".encode(),
            b"400",
        ),
    )
    before = len(served.log)
    for line, status in cases:
        reply = _raw(served, line + b"\r\nX-Secret-Header: " + TOKEN.encode())
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 " + status + b" "), reply[:300]
        assert b"application/json" in head and b"<html" not in reply.lower()
        assert body.startswith(b'{"error": "') and body.count(b"\n") == 1 and TOKEN.encode() not in body
        assert served.get("/healthz", token=None).status == 200
    deadline = time.monotonic() + 10
    while sum("GET /healthz 200" in line for line in served.log[before:]) < len(cases):
        assert time.monotonic() < deadline, served.log[before:]
        time.sleep(0.05)  # the server's log is read by a thread
    logged = served.log[before:]
    text = "".join(logged)
    assert TOKEN not in text and "Secret" not in text and "Traceback" not in text
    refusals = [line for line in logged if "GET /healthz 200" not in line]
    assert len(refusals) == len(cases), refusals
    assert all(" - - " in line for line in refusals[:5]), refusals  # nothing of a refused line
    assert "PROPFIND / 501: method not supported" in refusals[5]
    assert "GET /now.json 400: more than one Authorization header" in refusals[6]


def test_a_login_going_to_a_page_named_in_other_than_ascii_is_answered_with_it_percent_encoded(
    served: Served,
) -> None:
    """A Location header holds ASCII: ``next=/task?id=中`` made the server fail writing it and
    close the connection with no answer, after creating the session."""
    reply = login(served, "/task?id=中&scope=")
    assert reply.status == 303
    assert reply.headers["Location"] == "/task?id=%E4%B8%AD&scope="
    got = served.get(reply.headers["Location"], token=None, headers={"Cookie": session_cookie(reply)})
    assert got.status == 404 and "中" in got.text  # the page read the id back: no such task


def test_the_session_cookie_is_read_among_others_and_a_long_header_carries_none(served: Served) -> None:
    from heartbeat.web.sessions import MAX_COOKIE_HEADER, session_of

    cookie = session_cookie(login(served))
    sid = cookie.split("=", 1)[1]
    for header in (
        f"a=1; {cookie}; b=2",
        f'theme="dark; light"; hb_session="{sid}"',  # quoted, after a quoted value with a semicolon
        f"x={'y' * 4000};{cookie}",
    ):
        assert served.get("/now.json", token=None, headers={"Cookie": header}).status == 200, header
    assert session_of(f"hb_session={sid}") == sid
    assert session_of(f"hb_session={sid[:-1]}!") is None  # not a session id of hb's
    assert session_of("hb_session=" + "\\" * 32000) is None
    long = "x=" + "y" * MAX_COOKIE_HEADER + f"; {cookie}"
    assert session_of(long) is None
    assert served.get("/now.json", token=None, headers={"Cookie": long}).status == 401
