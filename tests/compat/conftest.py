"""The drop-in run in-process against a git project, and hb's own commands on the same ledger."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from heartbeat.compat.heartbeat_py import run
from tests.conftest import Runner

NOW = "2026-05-01T12:00:00Z"
ID = re.compile(r"task-[0-9a-f]{8}")


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2)


def ordered(text: str) -> Any:
    return json.loads(text, object_pairs_hook=list)


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str


class HeartbeatPy:
    """Runs the drop-in in this process, as a wrapper runs the script: ARGS in, output out."""

    def __init__(self, capsys: pytest.CaptureFixture[str], db: str, root: Path) -> None:
        self.capsys = capsys
        self.db = db
        self.root = root

    @property
    def state(self) -> Path:
        return self.root / ".agent" / "state"

    def file(self, name: str) -> Path:
        return self.state / name

    def text(self, name: str) -> str | None:
        path = self.file(name)
        return path.read_text() if path.exists() else None

    def write(self, name: str, text: str) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self.file(name).write_text(text)

    def __call__(self, *args: str, code: int | None = 0, now: str = NOW) -> Done:
        self.capsys.readouterr()
        got = run(list(args), db=self.db, now=now)
        out = self.capsys.readouterr()
        done = Done(got, out.out, out.err)
        if code is not None:
            assert got == code, f"heartbeat.py {' '.join(args)} exited {got}, wanted {code}\n{done}"
        return done

    def add(self, description: str, *options: str, now: str = NOW) -> str:
        out = self("add", "--skill", "research", *options, description, now=now).stdout
        assert ID.fullmatch(out.removeprefix("Added task ").strip()), out
        return out.removeprefix("Added task ").strip()

    def pop(self, *options: str, now: str = NOW) -> dict[str, Any]:
        out = self("pop", *options, now=now).stdout
        task: dict[str, Any] = json.loads(out)
        return task

    def doc(self) -> dict[str, Any]:
        text = self.text("tasks.json")
        assert text is not None
        doc: dict[str, Any] = json.loads(text)
        return doc


@pytest.fixture
def project(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository whose top level is the workspace, entered at a subdirectory (as an agent
    runs the script from wherever it stands in the project)."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "src").mkdir()
    monkeypatch.chdir(workspace / "src")
    monkeypatch.delenv("HB_WORKSPACE")
    return workspace


@pytest.fixture
def hbpy(capsys: pytest.CaptureFixture[str], db_url: str, project: Path) -> HeartbeatPy:
    return HeartbeatPy(capsys, db_url, project)


@pytest.fixture
def hb(db_url: str, project: Path) -> Runner:
    """hb's own commands on the same workspace and ledger."""
    return Runner({"HB_DATABASE_URL": db_url, "HB_WORKSPACE": str(project), "HB_NOW": NOW})
