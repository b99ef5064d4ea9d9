"""Without the [web] extra (Jinja2) the HTML pages say so (501); their JSON, /poke and /healthz work."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from heartbeat import Ledger
from heartbeat.serve import PokeServer, make_server
from heartbeat.web import app
from tests.conftest import Runner
from tests.web.helpers import request

TOKEN = "no-extra-token"


@pytest.fixture
def without_jinja(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jinja2 cannot be imported, nor the module that renders with it."""
    monkeypatch.setitem(sys.modules, "jinja2", None)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "heartbeat.web.render", raising=False)
    monkeypatch.delattr("heartbeat.web.render", raising=False)


@pytest.fixture
def server(hb: Runner, workspace: object) -> Iterator[PokeServer]:
    hb("init", "--timezone", "Europe/Berlin")
    hb("add", "Water the plants", "--next-check", "2020-01-01T00:00")
    srv = make_server(lambda: Ledger.open(workspace=str(workspace)), port=0, token=TOKEN)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def test_pages_answer_501_naming_the_extra_and_their_json_still_works(
    without_jinja: None, server: PokeServer
) -> None:
    port = int(server.server_address[1])
    assert not app.html_available()
    for path in ("/", "/decisions", "/outcomes", "/runs"):
        reply = request(port, "GET", path, token=TOKEN)
        assert reply.status == 501, path
        message = reply.html().find("p", class_="error-message").text()
        assert "pip install 'hb-ledger[web]'" in message and ".json" in message
    page = request(port, "GET", "/now.json", token=TOKEN).json()
    assert [t["title"] for t in page["due"]["tasks"]] == ["Water the plants"]
    assert request(port, "GET", "/decisions.json", token=TOKEN).status == 200
    assert request(port, "GET", "/task.json?id=task-none", token=TOKEN).status == 404
    assert request(port, "GET", "/", token=None).status == 401  # the token rules come first
    poked = request(port, "POST", "/poke", token=TOKEN, body=b"Check the build")
    assert poked.status == 202 and poked.json()["title"] == "Check the build"
    assert request(port, "GET", "/healthz").json() == {"ok": True}


def test_with_the_extra_the_same_pages_are_html(server: PokeServer) -> None:
    port = int(server.server_address[1])
    assert app.html_available()
    reply = request(port, "GET", "/", token=TOKEN)
    assert reply.status == 200 and "Water the plants" in reply.html().find("table", id="due").text()
