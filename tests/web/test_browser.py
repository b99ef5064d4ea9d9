"""The dashboard in a real browser: headless Chromium (Debian's ``chromium`` package).

For each page Chromium opens ``/login?token=...&next=PAGE`` (the session
cookie it gets there carries it on to the page, as a person's browser would),
and the DOM it rendered (``--dump-dom``) must show the page: the queue rows,
the charts, the lists, the script-like title as text and no script element.

The screenshots (``--screenshot``) are kept as test artifacts in pytest's
temporary directory: ``<basetemp>/test_every_page_renders_in_chr0/screenshots/<page>.png``
(``pytest --basetemp=DIR`` puts them under DIR; each path is also printed).

.ci/run installs ``chromium`` with apt-get when it is missing; where it cannot
be installed this test skips and says so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.web.conftest import TOKEN, XSS, Served
from tests.web.helpers import Node, chart_values, parse_html

PNG = b"\x89PNG\r\n\x1a\n"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "headless Chromium is not installed here (Debian package chromium; .ci/run installs it "
            "with apt-get, which was not possible on this machine): the browser test did not run"
        )
    return found


def browse(exe: str, profile: Path, url: str, *args: str) -> str:
    """Run headless Chromium on ``url`` with a fresh profile; its stdout."""
    done = subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",  # tests may run as root, where Chromium's sandbox refuses to start
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)
def test_every_page_renders_in_chromium(served: Served, tmp_path: Path) -> None:
    exe = chromium()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    xss = served.ids["xss"]
    pages = {
        "now": "/",
        "decisions": "/decisions",
        "outcomes": "/outcomes",
        "runs": "/runs",
        "task": f"/task?id={xss}&scope=",
    }
    doms: dict[str, Node] = {}
    for name, path in pages.items():
        url = f"http://127.0.0.1:{served.port}/login?token={quote(TOKEN)}&next={quote(path, safe='')}"
        dom = browse(exe, tmp_path / f"profile-{name}", url, "--dump-dom")
        assert "hb dashboard" not in dom, f"{name}: Chromium was shown the login page"
        doms[name] = parse_html(dom)
        shot = shots / f"{name}.png"
        browse(exe, tmp_path / f"profile-{name}-shot", url, f"--screenshot={shot}", "--window-size=1280,1400")
        assert shot.read_bytes().startswith(PNG) and shot.stat().st_size > 10_000, shot
        print(f"screenshot of {path}: {shot}")
    for name, dom in doms.items():
        assert dom.find_all("script") == [], name  # nothing to run, and nothing injected
    now = served.json("/now.json")
    queue_rows = doms["now"].find("table", id="queues").find_all("tr", data_row="queue")
    assert [r.attrs["data-scope"] for r in queue_rows] == [q["scope"] or "" for q in now["queues"]]
    assert chart_values(doms["now"], "queues")["ready"]
    claims = {
        r.attrs["data-id"] for r in doms["now"].find("table", id="claims").find_all("tr", data_row="claim")
    }
    assert {served.ids["live"], served.ids["stale"]} <= claims
    due = doms["now"].find("table", id="due").find("tr", data_id=xss)
    assert XSS in due.text()  # the title is text on the page
    decisions = served.json("/decisions.json")
    bars = chart_values(doms["decisions"], "decisions-per-day")
    assert sum(bars["sent"].values()) == decisions["totals"]["sent"]
    assert len(doms["decisions"].find_all("tr", data_row="decision")) == decisions["shown"]
    assert chart_values(doms["outcomes"], "outcomes-per-day")["successes"]
    assert chart_values(doms["runs"], "runs-per-day")
    assert doms["task"].find("h1").text() == XSS
