"""Everyday commands on SQLite never import SQLAlchemy or pydantic (one plain-SQL data path).

Each command runs in a fresh interpreter on a copy of the example workspace; at exit the
interpreter reports which of the two heavy libraries it had loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-05-01T09:00:00+08:00"
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('LOADED=' + ','.join(m for m in ('sqlalchemy', 'pydantic') "
    "if m in sys.modules), file=sys.stderr))\n"
    "from heartbeat.cli.main import run\n"
    "sys.argv = ['hb', *sys.argv[1:]]\n"
    "run()\n"
)


def _hb(ws: Path, *args: str, probe: bool | str = False) -> subprocess.CompletedProcess[str]:
    """``hb args`` in a fresh interpreter; ``probe``: under PROBE (or the probe given)."""
    env = {**os.environ, "HB_WORKSPACE": str(ws), "HB_NOW": NOW}
    env.pop("HB_DATABASE_URL", None)
    text = PROBE if probe is True else probe
    argv = [sys.executable, "-c", text, *args] if text else [sys.executable, "-m", "heartbeat", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("lean") / "ws"
    shutil.copytree(ROOT / "examples" / "workspace", ws)
    assert _hb(ws, "init", "--timezone", "Asia/Shanghai").returncode == 0
    assert _hb(ws, "sync").returncode == 0
    return ws


def _loaded(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("LOADED=")]
    assert lines, result.stderr
    return lines[-1].removeprefix("LOADED=")


EVERYDAY = [
    ("add", "Write the weekly summary", "--json"),
    ("list", "--json"),
    ("due", "--json"),
    ("check", "--dry-run"),
    ("heartbeat",),
    ("sync",),
    ("ready", "--explain", "--json"),
    ("recur", "list"),
    ("recur", "due"),
    ("report", "outcomes", "--format", "json"),
    ("sql", "SELECT count(*) AS n FROM tasks"),
    ("config", "get", "timezone"),
    ("seen",),
]


@pytest.mark.parametrize("args", EVERYDAY, ids=lambda a: " ".join(a[:2]))
def test_an_everyday_command_loads_neither_sqlalchemy_nor_pydantic(
    example: Path, args: tuple[str, ...]
) -> None:
    result = _hb(example, *args, probe=True)
    assert result.returncode in (0, 20), result.stderr
    assert _loaded(result) == "", f"hb {' '.join(args)} loaded {_loaded(result)}"


def test_the_task_and_queue_commands_load_neither(tmp_path: Path) -> None:
    """show, update, notify, pop, renew, complete, done, cancel on a workspace of hb's own tasks
    (the example's tasks.json has scoped queues, where a pop needs --scope)."""
    example = tmp_path / "ws"
    example.mkdir()
    assert _hb(example, "init", "--timezone", "Asia/Shanghai").returncode == 0
    added = json.loads(_hb(example, "add", "Call the bank", "--json").stdout)
    steps = [
        ("show", added["id"]),
        ("update", added["id"], "--note", "rang twice"),
        ("notify", added["id"], "--risk", "P1"),
    ]
    for args in steps:
        result = _hb(example, *args, probe=True)
        assert result.returncode in (0, 20), result.stderr
        assert _loaded(result) == "", f"hb {' '.join(args)} loaded {_loaded(result)}"
    popped = _hb(example, "pop", "--json", probe=True)
    assert popped.returncode == 0, popped.stderr
    assert _loaded(popped) == ""
    task = json.loads(popped.stdout)
    for args in (
        ("renew", task["id"], "--claim", task["claim"]),
        ("complete", task["id"], "--claim", task["claim"], "--outcome", '{"ok": true}'),
    ):
        result = _hb(example, *args, probe=True)
        assert result.returncode == 0, result.stderr
        assert _loaded(result) == "", f"hb {args[0]} loaded {_loaded(result)}"
    for verb in ("done", "cancel"):
        other = json.loads(_hb(example, "add", f"to {verb}", "--json").stdout)
        result = _hb(example, verb, other["id"], probe=True)
        assert result.returncode == 0, result.stderr
        assert _loaded(result) == "", f"hb {verb} loaded {_loaded(result)}"


# the same, naming the modules of hb loaded instead
OPERATIONS_PROBE = PROBE.replace(
    "m for m in ('sqlalchemy', 'pydantic') if m in sys.modules",
    "m for m in sorted(sys.modules) if m.startswith('heartbeat.')",
)
# what a pop or a completion has no use for: the other operations, the rows and transactions of
# the Db (the queue speaks its own statements), the JSON editor (no file is written)
UNUSED_BY_THE_QUEUE = ("heartbeat.db.store", "heartbeat.db.rows", "heartbeat.formats.json_edit")


def _queue_modules(result: subprocess.CompletedProcess[str]) -> list[str]:
    loaded = _loaded(result).split(",")
    return [m for m in loaded if m.startswith("heartbeat.ops.") or m in UNUSED_BY_THE_QUEUE]


def test_pop_and_complete_load_the_queue_operations_alone(tmp_path: Path) -> None:
    """The Ledger imports an operations module when a command first calls it: `hb pop` and `hb
    complete` load heartbeat.ops.queue and none of the round's, the recurrences', the files',
    the reports', the settings' or the tasks' operations, nor the Db's rows and transactions or
    the JSON editor (each module costs every call its start-up)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    assert _hb(ws, "init").returncode == 0
    added = json.loads(_hb(ws, "add", "Call the bank", "--json").stdout)
    popped = _hb(ws, "pop", "--json", probe=OPERATIONS_PROBE)
    assert popped.returncode == 0, popped.stderr
    task = json.loads(popped.stdout)
    assert task["id"] == added["id"]
    assert _queue_modules(popped) == ["heartbeat.ops.queue"]
    done = _hb(ws, "complete", task["id"], "--claim", task["claim"], probe=OPERATIONS_PROBE)
    assert done.returncode == 0, done.stderr
    assert _queue_modules(done) == ["heartbeat.ops.queue"]
    assert json.loads(_hb(ws, "show", added["id"], "--json").stdout)["status"] == "done"
