"""Shell completion offers the ledger's task ids, queue scopes and setting keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]


def _complete(workspace: Path, words: str, env: dict[str, str] | None = None) -> list[str]:
    full = {
        **os.environ,
        **(env or {}),
        "HB_WORKSPACE": str(workspace),
        "PYTHONPATH": str(ROOT),
        "_HB_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    out = subprocess.run(
        [sys.executable, "-c", "from heartbeat.cli.main import cli; cli(prog_name='hb')"],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [line.split(",", 1)[1] for line in out.stdout.splitlines() if "," in line]


def test_task_ids_scopes_and_setting_keys_complete(hb_db: Runner, workspace: Path) -> None:
    first = hb_db.json("add", "Send the invoice")
    hb_db.json("add", "Call the bank")
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"pending": [], "_round3_extension": {"ag_queue": [{"order": 1, "task_id": "r3-1"}]}}
    path.write_text(json.dumps(doc))
    hb_db("import", "tasks-json")
    env = {k: v for k, v in hb_db.env.items() if k == "HB_DATABASE_URL"}
    ids = _complete(workspace, "hb show ", env)
    assert first["id"] in ids and "r3-1" in ids and len(ids) == 3
    assert _complete(workspace, f"hb done {first['id'][:8]}", env) == sorted(
        i for i in ids if i.startswith(first["id"][:8])
    )
    assert _complete(workspace, "hb pop --scope _r", env) == ["_round3_extension.ag_queue"]
    assert _complete(workspace, "hb config get queue.", env) == ["queue.lease", "queue.max_attempts"]


def test_no_ledger_completes_nothing_quietly(workspace: Path) -> None:
    assert _complete(workspace, "hb show ") == []
