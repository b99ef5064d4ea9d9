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


def test_todo_adds_of_one_minute_at_once_each_get_an_id(db_url: str, workspace: Path) -> None:
    """A TODO.md entry's id comes from its Created minute (and ChatID): on PostgreSQL two
    ``hb add --source todo`` of the same minute at once both took the same id, and all but one
    failed with "duplicate key value violates unique constraint" or "already exists" (1 to 4
    of 8 in each round). They now take turns from the id to the commit."""
    from threading import Barrier

    adds, rounds = 6, 3
    with Ledger.open(workspace=workspace, db=db_url) as first:
        first.config_set("timezone", "UTC")
    for minute in range(rounds):
        now = f"2026-06-01T11:0{minute}:00Z"
        ledgers = [Ledger.open(workspace=workspace, db=db_url, now=now) for _ in range(adds)]
        start = Barrier(adds, timeout=30)

        def add(i: int, ledgers: list[Ledger] = ledgers, start: Barrier = start) -> str:
            start.wait()
            return str(ledgers[i].add_todo(f"T{i}")["id"])

        try:
            with ThreadPoolExecutor(adds) as pool:
                ids = list(pool.map(add, range(adds), timeout=120))
        finally:
            for ledger in ledgers:
                ledger.close()
        assert len(set(ids)) == adds
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        todo = ledger.list(source="todo")
        assert len(todo) == adds * rounds == len({t["id"] for t in todo})
        assert sorted(t["title"] for t in todo) == sorted(f"T{i}" for i in range(adds) for _ in range(rounds))
        ledger.sync()  # all written to TODO.md, each once
    text = (workspace / "TODO.md").read_text()
    assert sum(line.startswith("- [ ] ") for line in text.splitlines()) == adds * rounds
