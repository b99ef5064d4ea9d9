"""A demo ledger on each backend with a running ``hb serve`` in front of it.

The ledger is a week of scripts/demo_data.py history (tests/report's demo),
plus what the pages must show at its end: a live claim and a stale one, a
task titled ``<script>alert(1)</script>`` that is due and was reminded about,
a poke, and a heartbeat that failed. ``hb serve`` runs as its own process
(``python -m heartbeat serve --port 0``) with the clock pinned at the
history's end (HB_NOW), on 127.0.0.1 only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from tests.report.conftest import END, ROOT, ZONE, Demo, fill_demo, module_database
from tests.web.helpers import Reply, request

TOKEN = "dashboard-test-token-4f1c9a"
XSS = "<script>alert(1)</script>"


@dataclass
class Served:
    """A running ``hb serve`` on a demo ledger: where it listens, what it logged."""

    demo: Demo
    port: int
    backend: str
    log: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)  # the tasks added for the pages

    @property
    def now(self) -> datetime:
        return self.demo.end

    def get(self, path: str, *, token: str | None = TOKEN, **kw: Any) -> Reply:
        return request(self.port, "GET", path, token=token, **kw)

    def json(self, path: str) -> Any:
        reply = self.get(path, headers={"Accept": "application/json"})
        assert reply.status == 200, (path, reply.status, reply.text)
        assert reply.headers["Content-Type"].startswith("application/json")
        return reply.json()

    def ledger(self) -> Ledger:
        return self.demo.ledger(now=self.now)


def add_page_material(demo: Demo) -> dict[str, str]:
    """The rows the pages must show at the end of the history; the ids of the tasks added."""
    ids: dict[str, str] = {}
    with demo.ledger(now=END - timedelta(hours=3)) as ledger:
        ids["xss"] = ledger.add(
            XSS, scope="", priority="critical", next_check_at=END - timedelta(hours=1), skill="triage"
        )["id"]
        ids["live"] = ledger.add("Hold the release branch", scope="", priority="critical")["id"]
        ids["stale"] = ledger.add("Rotate the API keys", scope="", priority="critical")["id"]
    with demo.ledger(now=END - timedelta(hours=2)) as ledger:
        ledger.pop(scope="", task_id=ids["live"], worker="agent-live", lease="3h")
    with demo.ledger(now=END - timedelta(hours=1)) as ledger:
        ledger.pop(scope="", task_id=ids["stale"], worker="agent-gone", lease="30m")
    with demo.ledger(now=END - timedelta(minutes=30)) as ledger:
        ids["poke"] = ledger.poke("Check the build on main")["id"]
    with demo.ledger(now=END - timedelta(minutes=20)) as ledger:
        try:
            with ledger.guard("heartbeat"):
                raise RuntimeError("sync failed: disk full")
        except RuntimeError:
            pass
    with demo.ledger(now=END) as ledger:
        ledger.notify(ids["xss"], risk="P0", suggestion="Read the script title aloud")
    return ids


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``hb serve`` on the demo ledger, on each backend in turn, for the whole session."""
    workspace = tmp_path_factory.mktemp("web")
    with module_database(request, workspace, "web") as url:
        demo = fill_demo(workspace, url)
        ids = add_page_material(demo)
        token_file = workspace / ".agent" / "state" / "serve.token"
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.write_text(TOKEN + "\n", encoding="utf-8")
        token_file.chmod(0o600)
        with serve(workspace, url) as (port, log):
            yield Served(demo, port, request.param, log, ids)


def serve(workspace: Path, url: str) -> Any:
    """``python -m heartbeat serve --port 0`` on the workspace, as a context: (port, log lines)."""
    from contextlib import contextmanager

    @contextmanager
    def running() -> Iterator[tuple[int, list[str]]]:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("HB_")},
            "HB_WORKSPACE": str(workspace),
            "HB_DATABASE_URL": url,
            "HB_NOW": END.isoformat(),
            "PYTHONPATH": str(ROOT),
            "TZ": "UTC",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "heartbeat", "serve", "--port", "0"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        log: list[str] = []
        drain: threading.Thread | None = None
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert "listening on http://127.0.0.1:" in line, line
            port = int(line.split("http://127.0.0.1:", 1)[1].split()[0])

            def keep(stream: Any) -> None:
                for text in stream:
                    log.append(text)

            drain = threading.Thread(target=keep, args=(proc.stderr,), daemon=True)
            drain.start()
            yield port, log
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            if drain is not None:
                drain.join(timeout=10)
            if proc.stderr is not None:
                proc.stderr.close()

    return running()


__all__ = ["END", "TOKEN", "XSS", "ZONE", "Served"]
