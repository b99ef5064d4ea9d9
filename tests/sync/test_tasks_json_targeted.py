"""hb sync of a tasks.json a few records of which changed reads only those records: its result is
the full sync's, row for row and byte for byte. On both backends.

Each example writes a tasks.json as heartbeat.py writes it, syncs it, then makes a few rounds of
the script's edits (pop, complete, fail, add), hand edits (a reorder, a field, a deletion, a
scoped entry's status or order) and now and then a change in the ledger, each followed by a
sync; the same rounds run once with the targeted sync and once with the full sync alone, and
every table of the ledger, the file and the sync's report must come out the same after each."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from heartbeat import Ledger
from heartbeat.db.queue import LEGACY
from heartbeat.ops.sync.queue_files import syncing

NOW = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
PRIORITIES = ("critical", "high", "medium", "low")
RANK = {p: i for i, p in enumerate(PRIORITIES)}
_RANDOM = re.compile(r'(?<="landed": )[0-9]+|(?<="claim": ")[0-9a-f]+')  # a write-back's time, a token
EDITS = ("pop", "pop", "complete", "fail", "add", "reorder", "field", "created", "delete", "scoped", "ledger")


def _task(n: int, priority: str) -> dict[str, Any]:
    return {
        "id": f"task-{n:03d}",
        "priority": priority,
        "description": f"job {n}",
        "assigned_skill": "deep-research",
        "created_at": "2026-04-25T12:00:00Z",
        "completed_at": None,
    }


def _start(size: int, rng: random.Random) -> dict[str, Any]:
    pending = sorted(
        (_task(n, rng.choice(PRIORITIES)) for n in range(size)), key=lambda t: RANK[str(t["priority"])]
    )
    return {
        "pending": pending,
        "in_progress": [],
        "completed": [],
        "failed": [],
        "_round3_extension": {
            "meta": {"batch": 3},
            "queue": [{"order": i, "task_id": f"s{i}", "description": f"step {i}"} for i in range(3)],
        },
    }


def _edit(doc: dict[str, Any], kind: str, rng: random.Random, serial: list[int]) -> str:
    """One edit of the parsed file, as heartbeat.py or a person makes it; what was done."""
    pending, doing = doc["pending"], doc["in_progress"]
    if kind == "pop" and pending:
        task = sorted(pending, key=lambda t: RANK.get(t.get("priority"), 2))[0]
        pending.remove(task)
        doing.append(task)
    elif kind in ("complete", "fail") and doing:
        task = doing.pop(rng.randrange(len(doing)))
        if kind == "complete":
            task["completed_at"] = "2026-05-01T08:00:00.123456+00:00Z"  # the script's malformed stamp
            doc["completed"].append(task)
        else:
            task["error"] = "timeout"
            doc["failed"].append(task)
    elif kind == "add":
        serial[0] += 1
        pending.append(_task(serial[0], rng.choice(PRIORITIES)))
        pending.sort(key=lambda t: RANK.get(t.get("priority"), 2))
    elif kind == "reorder" and len(pending) > 1:
        i, j = rng.sample(range(len(pending)), 2)
        pending[i], pending[j] = pending[j], pending[i]
    elif kind == "field":
        lists = [name for name in ("pending", "in_progress", "completed", "failed") if doc[name]]
        if lists:
            task = rng.choice(doc[rng.choice(lists)])
            if rng.random() < 0.5:
                task["description"] += " (edited)"
            else:
                task["priority"] = rng.choice(PRIORITIES)
    elif kind == "created":
        lists = [name for name in ("pending", "in_progress", "completed", "failed") if doc[name]]
        if lists:  # a stamp the ledger keeps its own of: written back as the ledger has it
            rng.choice(doc[rng.choice(lists)])["created_at"] = "2026-04-26T00:00:00Z"
    elif kind == "delete":
        lists = [name for name in ("pending", "in_progress", "completed", "failed") if doc[name]]
        if lists:
            items = doc[rng.choice(lists)]
            items.pop(rng.randrange(len(items)))
    elif kind == "scoped":
        queue = doc["_round3_extension"]["queue"]
        entry = rng.choice(queue)
        if rng.random() < 0.5:
            entry["status"] = rng.choice(["in_progress", "completed", "waiting"])
        else:
            entry["order"] = rng.randrange(10)
    else:
        return "nothing"
    return kind


def _ledger_edit(ledger: Ledger) -> None:
    """A change made in the ledger, not in the file: a pop and its completion."""
    task = ledger.pop(worker="w", scope=LEGACY, accept_stale=True)
    if task is not None:
        ledger.complete(task["id"], LEGACY, claim=task["claim"])


@contextmanager
def _path(targeted: bool, taken: list[bool]) -> Iterator[None]:
    """The targeted sync on (``taken`` notes whether each sync took it) or off."""
    real = syncing.sync_changed

    def watched(*args: Any) -> Any:
        done = real(*args)
        taken.append(done is not None)
        return done

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(syncing, "sync_changed", watched if targeted else lambda *args: None)
        yield


def every_row(db_url: str) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table, column for column, as text (a claim's token, random, and the
    time a write-back landed aside)."""
    from sqlalchemy import create_engine, inspect, text

    from heartbeat.db.engine import normalize_url

    engine = create_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            out = {}
            for name in sorted(inspect(conn).get_table_names()):
                result = conn.execute(text(f'SELECT * FROM "{name}"'))
                keys = list(result.keys())
                out[name] = sorted(
                    tuple(
                        _RANDOM.sub("<x>", "<token>" if k == "claim" and v is not None else _text(v))
                        for k, v in zip(keys, row, strict=True)
                    )
                    for row in result
                )
            return out
    finally:
        engine.dispose()


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict | list) else str(value)  # PostgreSQL's json


def _fresh(db_url: str, where: Path) -> str:
    """An empty ledger: a new SQLite file under ``where``, or the PostgreSQL database emptied."""
    if not db_url.startswith("postgresql"):
        shutil.rmtree(where, ignore_errors=True)
        (where / ".agent" / "state").mkdir(parents=True)
        return str(where / ".agent" / "state" / "heartbeat.db")
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    shutil.rmtree(where, ignore_errors=True)
    (where / ".agent" / "state").mkdir(parents=True)
    return db_url


def _run(
    db_url: str, where: Path, size: int, seed: int, rounds: list[list[str]], targeted: bool
) -> tuple[list[Any], list[bool]]:
    """Each round's sync report, file text and ledger rows, and whether each sync went targeted."""
    rng = random.Random(seed)
    url = _fresh(db_url, where)
    path = where / ".agent" / "state" / "tasks.json"
    doc = _start(size, rng)
    path.write_text(json.dumps(doc, indent=2))
    serial = [size]
    taken: list[bool] = []
    seen = []
    at = NOW
    with _path(targeted, taken):
        for n, edits in enumerate([[], *rounds]):
            did = []
            for kind in edits:
                if kind == "ledger":
                    with Ledger.open(where, db=url, now=at) as ledger:
                        _ledger_edit(ledger)
                    did.append(kind)
                    continue
                doc = json.loads(path.read_text())
                did.append(_edit(doc, kind, rng, serial))
                path.write_text(json.dumps(doc, indent=2))
            with Ledger.open(where, db=url, now=at) as ledger:
                report = ledger.sync()
            seen.append((n, did, report, path.read_text(), every_row(url)))
            at += timedelta(minutes=1)
    return seen, taken


Rounds = st.lists(st.lists(st.sampled_from(EDITS), min_size=1, max_size=3), min_size=1, max_size=4)


@settings(
    max_examples=40,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(size=st.integers(1, 12), seed=st.integers(0, 2**16), rounds=Rounds)
def test_the_targeted_sync_gives_the_full_syncs_rows_and_text(
    db_url: str, tmp_path: Path, size: int, seed: int, rounds: list[list[str]]
) -> None:
    full, _ = _run(db_url, tmp_path / "ws", size, seed, rounds, targeted=False)
    fast, taken = _run(db_url, tmp_path / "ws", size, seed, rounds, targeted=True)  # the same paths
    event(f"targeted syncs: {sum(taken)} of {len(taken)}")
    for (n, did, report, text, rows), (_, _, report2, text2, rows2) in zip(full, fast, strict=True):
        where = f"round {n} ({', '.join(did)})"
        assert text2 == text, where
        assert report2 == report, where
        rows, rows2 = _compared(rows), _compared(rows2)
        assert rows2.keys() == rows.keys()
        for table in rows:
            assert rows2[table] == rows[table], f"{where}: {table}"


def _compared(rows: dict[str, Any]) -> dict[str, Any]:
    """The rows the two syncs must agree on: not Alembic's, nor a write-back's guard record
    (``wb:`` in sync_state), which stays while the file hb wrote is younger than the stale
    window by the wall clock, so two runs on a loaded machine may see it expire at different
    rounds."""
    kept = {k: v for k, v in rows.items() if k != "alembic_version"}
    if "sync_state" in kept:
        kept["sync_state"] = [row for row in kept["sync_state"] if not str(row[0]).startswith("wb:")]
    return kept


def _synced(db_url: str, where: Path, size: int) -> tuple[str, Path, dict[str, Any]]:
    url = _fresh(db_url, where)
    path = where / ".agent" / "state" / "tasks.json"
    doc = _start(size, random.Random(7))
    path.write_text(json.dumps(doc, indent=2))
    with Ledger.open(where, db=url, now=NOW) as ledger:
        ledger.sync()
    return url, path, doc


def _watched_sync(where: Path, url: str) -> tuple[list[bool], list[str], dict[str, Any]]:
    """hb sync of the workspace: whether it took the targeted path, the texts it parsed whole,
    and its tasks.json report."""
    from heartbeat.formats import tasks_json

    taken: list[bool] = []
    parses: list[str] = []
    real_parse: Callable[..., Any] = tasks_json.parse
    with _path(True, taken), pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks_json, "parse", lambda text, **kw: parses.append(text) or real_parse(text, **kw))
        with Ledger.open(where, db=url, now=NOW) as ledger:
            report = next(r for r in ledger.sync()["reports"] if r["kind"] == "tasks-json")
    return taken, parses, report


@pytest.mark.parametrize("kind", ["pop", "add", "complete", "delete", "field"])
def test_a_script_edit_is_synced_by_the_records_it_changed(db_url: str, tmp_path: Path, kind: str) -> None:
    """After heartbeat.py's pop, add, completion, or a hand edit, hb sync reads only what changed:
    the full sync's parse of the whole text is not needed (the completion's malformed stamp is
    written back as hb writes it, as the full sync writes it)."""
    url, path, doc = _synced(db_url, tmp_path / "ws", 30)
    _edit(doc, "pop", random.Random(1), [30])  # heartbeat.py's own text: not one hb rendered
    path.write_text(json.dumps(doc, indent=2))
    with Ledger.open(tmp_path / "ws", db=url, now=NOW) as ledger:
        ledger.sync()
    _edit(doc, kind, random.Random(2), [30])
    path.write_text(json.dumps(doc, indent=2))
    taken, parses, report = _watched_sync(tmp_path / "ws", url)
    assert taken == [True]
    if kind == "complete":  # rendered as the full sync renders it, over the text read once
        assert len(parses) == 1 and report["written"]
        assert "+00:00Z" not in path.read_text()
    else:
        assert parses == [] and not report["written"]


def test_after_hb_writes_a_completion_back_the_next_edit_is_synced_by_its_records(
    db_url: str, tmp_path: Path
) -> None:
    """heartbeat.py's completion stamp (``+00:00Z``) makes hb write tasks.json back. The text hb
    wrote reads without warnings, as the script's did, so the script's next pop is synced by the
    records it changed again; before, that sync parsed and merged the whole file once more."""
    where = tmp_path / "ws"
    url, path, doc = _synced(db_url, where, 30)
    for kind in ("pop", "complete"):  # the script pops, then completes: hb writes its stamp back
        _edit(doc, kind, random.Random(1), [30])
        path.write_text(json.dumps(doc, indent=2))
        with Ledger.open(where, db=url, now=NOW) as ledger:
            ledger.sync()
    written = path.read_text()
    assert "+00:00Z" not in written and '"completed_at": "2026-05-01T08:00:00.123456Z"' in written
    doc = json.loads(written)  # the script loads the file hb wrote, pops, and dumps it whole
    _edit(doc, "pop", random.Random(3), [30])
    path.write_text(json.dumps(doc, indent=2))
    taken, parses, report = _watched_sync(where, url)
    assert taken == [True] and parses == []
    assert report["updated"] and not report["written"]
    with Ledger.open(where, db=url, now=NOW) as ledger:
        doing = [t["id"] for t in ledger.list(status="doing")]
    assert sorted(doing) == sorted(t["id"] for t in doc["in_progress"])
