"""The round's, the recurrences', the reports' and the settings' commands run on the plain-SQL path:
on SQLite a fresh interpreter running one of them has loaded neither SQLAlchemy nor pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-05-01T10:00:00Z"
# runs one command as `hb` would, then says which of the two it loaded (the last line of stdout)
PROBE = """
import json, sys
from heartbeat.cli.main import main
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as done:
    code = done.code or 0
sys.stdout.flush()
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"sqlalchemy", "pydantic"})
print("\\n" + json.dumps({"code": code, "loaded": heavy}))
"""

NOTIFY = "notify"  # stands for `hb notify <the due task's id>`
COMMANDS: list[tuple[tuple[str, ...], int]] = [
    (("due",), 0),
    (("check",), 0),
    ((NOTIFY,), 0),
    (("proactive", "--topic", "flight", "--suggestion", "book the train"), 20),  # proactive is off
    (("seen",), 0),
    (("hygiene", "done"), 0),
    (("poke", "check the build"), 0),
    (("recur", "list"), 0),
    (("recur", "due"), 0),
    (("recur", "due", "--claim"), 0),
    (("recur", "materialize"), 0),
    (("report", "outcomes"), 0),
    (("report", "recurrences", "--format", "csv"), 0),
    (("sql", "SELECT count(*) AS tasks FROM tasks"), 0),
    (("sql", "SELECT id FROM tasks", "--format", "json"), 0),
    (("config", "get", "lang"), 0),
    (("config", "list"), 0),
    (("config", "unset", "lang"), 0),
    (("init",), 0),
]


def probe(workspace: Path, *args: str) -> tuple[str, dict[str, Any]]:
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "HB_NOW": NOW, "PYTHONPATH": str(ROOT)}
    env.pop("HB_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    out, _, last = done.stdout.rstrip("\n").rpartition("\n")
    return out, json.loads(last)


@pytest.fixture
def ledger(hb: Runner, workspace: Path) -> str:
    """A ledger made by `hb init` with a task due now and a repeat rule due now; the task's id."""
    hb("init")
    hb("config", "set", "hygiene.enabled", "true")
    task: str = hb(
        "--now",
        "2026-05-01T08:00:00Z",
        "add",
        "pay the rent",
        "--due",
        "2026-05-01T09:00Z",
        "--next-action",
        "pay",
    ).stdout.strip()
    hb("--now", "2026-05-01T08:00:00Z", "recur", "add", "water the plants", "--repeat", "daily")
    return task


@pytest.mark.parametrize(
    ("args", "code"), COMMANDS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_the_command_loads_neither_sqlalchemy_nor_pydantic(
    ledger: str, workspace: Path, args: tuple[str, ...], code: int
) -> None:
    argv = (NOTIFY, ledger) if args == (NOTIFY,) else args
    out, seen = probe(workspace, *argv)
    assert seen == {"code": code, "loaded": []}, out
    if args == ("due",):
        assert ledger in out  # it did its work: the due task is listed
    if args == ("sql", "SELECT id FROM tasks", "--format", "json"):
        assert json.loads(out) == [{"id": ledger}]


def test_hb_heartbeat_loads_neither_sqlalchemy_nor_pydantic(ledger: str, workspace: Path) -> None:
    out, seen = probe(workspace, "heartbeat")
    assert seen == {"code": 0, "loaded": []}, out


def test_hb_config_set_validates_without_sqlalchemy(ledger: str, workspace: Path) -> None:
    """A value its setting's check accepts is stored without pydantic; pydantic words a refusal."""
    out, seen = probe(workspace, "config", "set", "lang", "zh")
    assert seen == {"code": 0, "loaded": []}, out
    _out, refused = probe(workspace, "config", "set", "lang", "fr")
    assert refused["code"] == 1 and "sqlalchemy" not in refused["loaded"]
