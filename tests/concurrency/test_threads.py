"""A Ledger used from threads (SPEC 9)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from heartbeat import Ledger


def test_a_ledger_can_move_between_threads(tmp_path: Path) -> None:
    """One thread at a time, any thread: a worker pool may hand a Ledger on (SPEC 9)."""
    with Ledger.open(workspace=tmp_path) as ledger, ThreadPoolExecutor(1) as pool:
        ledger.add("job")
        task = ledger.pop(worker="w")
        assert task is not None
        assert pool.submit(ledger.complete, task["id"]).result()["status"] == "done"
        ledger.add("next")
        assert pool.submit(ledger.pop).result()["description"] == "next"
