"""What a pop and a completion leave in the ledger, the same on both backends (PostgreSQL writes
them in one statement each: the claim alone, the completion with its outcome row), and how
last-run.json is read from it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.db.queue import last_run_of
from heartbeat.formats.tasks_json import last_run_entry

START = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def ledger(db_url: str, workspace: Path) -> Iterator[Ledger]:
    ticks = iter(START + timedelta(seconds=90 * i) for i in range(100))
    with Ledger.open(workspace, db=db_url, now=lambda: next(ticks)) as opened:
        yield opened


def last_run(ledger: Ledger) -> dict[str, Any] | None:
    with ledger.ctx.read() as db:
        return last_run_of(db)


def test_a_pop_writes_its_claim_and_a_completion_its_outcome_row(ledger: Ledger) -> None:
    added = ledger.add("Write the report", skill="writer", project_id="p1", agent_id="a1", user_id="u1")
    got = ledger.pop(worker="w1")  # at START + 90 s
    assert got is not None and got["id"] == added["id"]
    ledger.complete(got["id"], outcome={"pages": 3}, claim=got["claim"])  # at START + 180 s

    with ledger.ctx.read() as db:
        runs = db.dicts("SELECT kind FROM runs")
        outcomes = db.dicts(
            "SELECT success, result, worker, claim, duration_s, attempt, task_id, after_run FROM outcomes"
        )
    # the claim is on the task row (then on the outcome row that ends it), the completion is its
    # outcome row: neither writes a runs row
    assert runs == []
    assert [{**o, "result": db.read_json(o["result"]), "success": bool(o["success"])} for o in outcomes] == [
        {
            "success": True,
            "result": {"pages": 3},
            "worker": "w1",
            "claim": got["claim"],
            "duration_s": 90.0,
            "attempt": 1,
            "task_id": added["id"],
            "after_run": 0,  # the newest runs row it saw: none
        }
    ]
    completed = last_run_entry(
        timestamp=START + timedelta(seconds=180),
        task_id=added["id"],
        status="completed",
        description="Write the report",
        assigned_skill="writer",
        project_id="p1",
        agent_id="a1",
        user_id="u1",
        outcome={"pages": 3},
    )
    record = last_run(ledger)
    assert record == completed
    assert record is not None and list(record) == list(completed)  # key order: last-run.json's
    assert ledger.get(added["id"])["status"] == "done"


def test_a_completion_or_failure_by_id_alone_records_the_claim_it_closed(ledger: Ledger) -> None:
    """Without a token, a completion and a failure write the rows a fenced one writes (the
    outcome's worker, claim, duration and attempt; the error's claim) and leave the task without
    its claim, so that its holder's token reads as lost; a fenced one leaves its token there."""
    for name in ("by-id", "fenced", "failed"):
        ledger.add(name, task_id=name)
    claims: dict[str, list[str]] = {}

    def popped() -> str:
        got = ledger.pop(worker="w1")
        assert got is not None
        claims.setdefault(got["id"], []).append(got["claim"])
        return str(got["id"])

    assert popped() == "by-id"
    assert ledger.complete("by-id", outcome={"n": 1})["claim"] == claims["by-id"][0]  # 90 s after the pop
    assert popped() == "fenced"
    ledger.complete("fenced", claim=claims["fenced"][0])
    assert popped() == "failed"
    assert ledger.fail("failed", reason="first")["claim"] == claims["failed"][0]  # back to the queue
    assert popped() == "failed"
    assert ledger.fail("failed", reason="last", final=True)["claim"] == claims["failed"][1]

    with ledger.ctx.read() as db:
        outcomes = db.dicts(
            "SELECT task_id, success, worker, claim, duration_s, attempt FROM outcomes ORDER BY pk"
        )
        errors = db.dicts("SELECT task_id, reason, claim, attempt, final FROM errors ORDER BY pk")
        tasks = dict(db.rows("SELECT id, claim FROM tasks"))
    assert [{**o, "success": bool(o["success"])} for o in outcomes] == [
        {"task_id": "by-id", "success": True, "worker": "w1", "claim": claims["by-id"][0]}
        | {"duration_s": 90.0, "attempt": 1},
        {"task_id": "fenced", "success": True, "worker": "w1", "claim": claims["fenced"][0]}
        | {"duration_s": 90.0, "attempt": 1},
        {"task_id": "failed", "success": False, "worker": "w1", "claim": claims["failed"][1]}
        | {"duration_s": 90.0, "attempt": 2},
    ]
    assert [{**e, "final": bool(e["final"])} for e in errors] == [
        {"task_id": "failed", "reason": "first", "claim": claims["failed"][0], "attempt": 1, "final": False},
        {"task_id": "failed", "reason": "last", "claim": claims["failed"][1], "attempt": 2, "final": True},
    ]
    assert tasks == {"by-id": None, "fenced": claims["fenced"][0], "failed": None}


@pytest.mark.postgres
def test_a_completion_by_id_alone_closes_the_claim_it_waited_for(pg_url: str, workspace: Path) -> None:
    """PostgreSQL: a completion by id alone that waits on a takeover still in flight records the
    claim it ends (the new one, read from the row it locked after the wait), not the one its
    statement's snapshot saw."""
    import threading

    import psycopg
    from sqlalchemy.engine import make_url

    with Ledger.open(workspace, db=pg_url, now=START) as ledger:
        ledger.add("job", task_id="job")
        old = ledger.pop(worker="A")
        assert old is not None
    newer = "b" * 24
    done: dict[str, Any] = {}

    def complete() -> None:
        with Ledger.open(workspace, db=pg_url, now=START + timedelta(minutes=5)) as other:
            done.update(other.complete("job"))

    with psycopg.connect(make_url(pg_url).set(drivername="postgresql").render_as_string(False)) as takeover:
        takeover.execute("UPDATE tasks SET claim = %s, claimed_by = 'B' WHERE id = 'job'", (newer,))
        waiting = threading.Thread(target=complete)
        waiting.start()
        with psycopg.connect(make_url(pg_url).set(drivername="postgresql").render_as_string(False)) as look:
            look.autocommit = True
            for _ in range(500):  # until the completion waits on the takeover's row lock
                row = look.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                ).fetchone()
                if row and row[0]:
                    break
                waiting.join(0.01)
            else:
                raise AssertionError("the completion never waited for the takeover")
        takeover.commit()
        waiting.join(30)
    assert done["claim"] == newer
    with Ledger.open(workspace, db=pg_url) as ledger, ledger.ctx.read() as db:
        assert db.rows("SELECT worker, claim FROM outcomes") == [("B", newer)]
        assert db.rows("SELECT status, claim FROM tasks") == [("done", None)]


TRACES = [
    {"trace_id": "t-1", "decision_log": ["read", {"score": 1}]},
    {"trace_id": None, "decision_log": True},
    {},
    {"trace_id": 7, "decision_log": {"nested": [1, 2.5, "é", None, False]}},
    {"trace_id": "", "decision_log": "plain text"},
]


def test_a_completions_record_carries_its_tasks_trace_as_it_is(ledger: Ledger, workspace: Path) -> None:
    """last-run.json after each completion holds the task's trace_id and decision_log as the task's
    object has them (any JSON value, null when missing); a scoped task's record names its queue."""
    import json

    pending = [
        {"id": f"t{i}", "priority": "high", "description": f"job {i}", **trace}
        for i, trace in enumerate(TRACES)
    ]
    scoped = {"order": 0, "task_id": "s0", "description": "scoped", **TRACES[0]}
    doc = {
        "pending": pending,
        "in_progress": [],
        "completed": [],
        "failed": [],
        "_b_extension": {"q": [scoped]},
    }
    src = workspace / "seed.json"
    src.write_text(json.dumps(doc))
    ledger.import_file("tasks-json", src)
    for scope, item in [("", t) for t in pending] + [("_b_extension.q", scoped)]:
        task_id = item.get("id") or item["task_id"]
        got = ledger.pop(scope=scope, worker="w1")
        assert got is not None and got.get("id", got.get("task_id")) == task_id
        done = ledger.complete(task_id, scope=scope, outcome={"ok": task_id}, claim=got["claim"])
        with ledger.ctx.read() as db:
            at = db.read_time(db.value("SELECT max(completed_at) FROM outcomes"))
        expected = last_run_entry(
            timestamp=at,
            task_id=task_id,
            status="completed",
            description=item["description"],
            outcome={"ok": task_id},
            trace_id=item.get("trace_id"),
            decision_log=item.get("decision_log"),
            scope=scope or None,
        )
        record = last_run(ledger)
        assert record == expected, done
        assert record is not None and list(record) == list(expected)


def test_last_run_is_the_newest_record_of_runs_and_completions(ledger: Ledger) -> None:
    """A failure's record (a runs row) and a completion's (its outcome row) take turns as
    last-run.json, in the order they were written, whatever else the runs table gains."""
    for name in ("a", "b", "c"):
        ledger.add(name, task_id=name)

    def pop_and(finish: str, **kw: Any) -> None:
        got = ledger.pop(worker="w")
        assert got is not None
        getattr(ledger, finish)(got["id"], claim=got["claim"], **kw)

    assert last_run(ledger) is None
    pop_and("complete", outcome={"n": 1})
    assert (last_run(ledger) or {})["task_id"] == "a"
    pop_and("fail", reason="flaky")  # b goes back to the queue; its failure is the newest record
    failed = last_run(ledger)
    assert failed is not None and (failed["task_id"], failed["status"]) == ("b", "failed")
    ledger.seen()  # a runs row without a record changes nothing
    assert last_run(ledger) == failed
    pop_and("complete", outcome={"n": 2})  # b again
    again = last_run(ledger)
    assert again is not None and (again["task_id"], again["status"], again["outcome"]) == (
        "b",
        "completed",
        {"n": 2},
    )


def test_records_of_one_instant_keep_the_order_they_were_written(db_url: str, workspace: Path) -> None:
    """With the clock held still (--now, HB_NOW), the record written last is last-run.json's."""
    with Ledger.open(workspace, db=db_url, now=START) as ledger:
        for name in ("a", "b", "c"):
            ledger.add(name, task_id=name)
        seen = []
        for finish in ("complete", "fail", "complete"):
            got = ledger.pop(worker="w")
            assert got is not None
            getattr(ledger, finish)(got["id"], claim=got["claim"])
            record = last_run(ledger)
            assert record is not None
            seen.append((record["task_id"], record["status"]))
        assert seen == [("a", "completed"), ("b", "failed"), ("b", "completed")]


def test_every_queue_statement_prepares_against_the_schema_at_head(ledger: Ledger) -> None:
    """The queue's own statements (heartbeat/db/queue.py), each EXPLAINed on a fresh ledger at head
    on the backend it is for: their tables and columns exist and they parse."""
    import re

    from heartbeat.db import queue

    with ledger.ctx.read() as db:
        dialect = queue.Dialect("sqlite" if db.sqlite else "postgresql")
        names = [k for k in queue.SQL if not (db.sqlite and "_pg_" in k + "_")]
        assert any("_pg_" in k + "_" for k in queue.SQL)  # PostgreSQL's own statements are named so
        statements = [(f"queue statement {name}", dialect.sql(name)) for name in names]
        # last-run.json's reads and the kept record
        statements += [(f"last-run statement {name}", db.sql(text)) for name, text in queue.LAST_RUN.items()]
        for label, sql in statements:
            params = {a or b: None for a, b in re.findall(r"(?<![:\w]):(\w+)|%\((\w+)\)s", sql)}
            try:
                db.raw.cursor().execute("EXPLAIN " + sql, params)
            except Exception as exc:
                raise AssertionError(f"{label}: {exc}") from exc


def test_the_claim_reads_no_task_it_does_not_need(ledger: Ledger, workspace: Path) -> None:
    """The common pop's claim (legacy and scoped) reads the ledger through its indexes only: no
    plan step scans the tasks table, however many tasks it holds. PostgreSQL read the old
    "no scoped queue exists" condition (``scope > ''``) with a sequential scan of every task."""
    import json

    from heartbeat.db import queue

    pending = [{"id": f"t{i}", "priority": "high", "description": f"job {i}"} for i in range(3000)]
    source = workspace / "seed-tasks.json"
    source.write_text(json.dumps({"pending": pending, "in_progress": [], "completed": [], "failed": []}))
    ledger.import_file("tasks-json", source)
    with ledger.ctx.read() as db:
        dialect = queue.Dialect("sqlite" if db.sqlite else "postgresql")
        at = dialect.time(START)  # bound as the queue binds it
        params = {"scope": "", "now": at, "worker": "w", "lease_until": at, "claim": "c" * 24}
        for name in ("claim_checked_legacy", "claim_checked", "preflight", "any_scoped"):
            cur = db.raw.cursor()
            explain = "EXPLAIN QUERY PLAN " if db.sqlite else "EXPLAIN "
            cur.execute(explain + dialect.sql(name), params)
            plan = "\n".join(str(row[-1]) for row in cur.fetchall())
            if db.sqlite:
                assert "SCAN tasks" not in plan, f"{name}:\n{plan}"
            else:
                assert "Seq Scan on tasks" not in plan, f"{name}:\n{plan}"


def test_after_a_pop_the_ledgers_other_work_is_a_transaction_again(ledger: Ledger) -> None:
    """On PostgreSQL a pop and a completion are one statement each in autocommit, and leave the
    connection so for the next one; every other use of the ledger's connection gets it back in
    transaction mode: a write that fails half-way leaves nothing behind."""
    first = ledger.add("first")["id"]
    ledger.add("second")
    for _ in range(2):  # a pop, a completion, and a pop again: all lazy
        got = ledger.pop(worker="w")
        assert got is not None
        if got["id"] == first:
            ledger.complete(first, claim=got["claim"])
    with pytest.raises(RuntimeError, match="half-way"), ledger.ctx.write() as db:
        db.rows("UPDATE tasks SET title = 'changed' RETURNING pk")
        raise RuntimeError("half-way")
    with ledger.ctx.read() as db:
        assert sorted(r[0] for r in db.rows("SELECT title FROM tasks")) == ["first", "second"]
    assert ledger.fail(ledger.list()[0]["id"], reason="retried later")["retry"] is True


# --- last-run.json keeps a completion's record whatever happens to its task later ----------------


def _kept(ledger: Ledger) -> list[tuple[Any, ...]]:
    with ledger.ctx.read() as db:
        return db.rows("SELECT kind, task_id FROM runs")


def test_last_run_json_keeps_a_completion_whose_task_is_edited(ledger: Ledger) -> None:
    """heartbeat.py writes last-run.json once, at the completion. hb reads a completion's record
    from its outcome row and its task: before the task's title, project, agent, user or extra
    change, the record is kept as a runs row as it reads then, once."""
    added = ledger.add("Write the report", skill="writer", project_id="p1", agent_id="a1", user_id="u1")
    got = ledger.pop(worker="w1")
    assert got is not None
    ledger.complete(got["id"], outcome={"pages": 3}, claim=got["claim"])
    record = last_run(ledger)
    assert record is not None and (record["description"], record["project_id"]) == ("Write the report", "p1")

    ledger.update(added["id"], priority="low")  # no column the record reads: nothing kept
    assert _kept(ledger) == []
    ledger.update(added["id"], title="Write the long report", project_id="p2")
    assert last_run(ledger) == record
    assert _kept(ledger) == [("last-run", added["id"])]
    ledger.update(added["id"], title="Write the longer report")  # kept already: no second row
    assert last_run(ledger) == record
    assert _kept(ledger) == [("last-run", added["id"])]

    other = ledger.add("File the taxes")  # a newer completion is last-run.json's record again
    got = ledger.pop(worker="w1")
    assert got is not None and got["id"] == other["id"]
    ledger.complete(got["id"], claim=got["claim"])
    newer = last_run(ledger)
    assert newer is not None and newer["task_id"] == other["id"] and newer["description"] == "File the taxes"
    ledger.update(added["id"], title="Write it")  # an older completion's task: nothing kept
    assert last_run(ledger) == newer and len(_kept(ledger)) == 1


def test_last_run_json_keeps_a_completion_whose_task_left_tasks_json(db_url: str, workspace: Path) -> None:
    """A task completed, then removed from tasks.json by hand: the next syncs leave last-run.json
    as the completion wrote it (they rendered its description and project as null)."""
    import json

    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    task = {"id": "t1", "description": "Write the report", "priority": "high", "project_id": "p9"}
    (state / "tasks.json").write_text(json.dumps({"pending": [task], "completed": []}))
    with Ledger.open(workspace, db=db_url, now=START) as ledger:
        ledger.sync()
        got = ledger.pop(worker="w1")
        assert got is not None
        ledger.complete(got["id"], claim=got["claim"])
        ledger.sync()
    written = (state / "last-run.json").read_bytes()
    assert json.loads(written)["description"] == "Write the report"

    (state / "tasks.json").write_text(json.dumps({"pending": [], "completed": []}))
    with Ledger.open(workspace, db=db_url, now=START + timedelta(minutes=5)) as ledger:
        ledger.sync()
        assert ledger.list(status="all") == []  # the task is gone from the ledger
        ledger.add("Another")
        ledger.sync()
    assert (state / "last-run.json").read_bytes() == written


def test_a_value_json_cannot_hold_is_kept_on_sqlite_and_refused_by_name_on_postgres(
    ledger: Ledger, db_url: str
) -> None:
    """An outcome or a field from the Python API (or an MCP client) holding NaN or Infinity:
    SQLite keeps it (last-run.json then writes it as heartbeat.py would); PostgreSQL's json type
    holds strict JSON only, so it is refused as such with nothing changed, instead of the server's
    unnamed "invalid input syntax for type json"."""
    import math

    from heartbeat.errors import InvalidInput

    ledger.add("job", task_id="a")
    got = ledger.pop()
    assert got is not None
    if not db_url.startswith("postgresql"):
        ledger.complete("a", outcome={"score": math.inf}, claim=got["claim"])
        assert (last_run(ledger) or {})["outcome"] == {"score": math.inf}
        return
    for outcome in ({"score": math.inf}, [math.nan], -math.inf):
        with pytest.raises(InvalidInput, match=r"a number JSON cannot hold .* PostgreSQL cannot store"):
            ledger.complete("a", outcome=outcome, claim=got["claim"])
    assert ledger.get("a")["status"] == "doing"  # nothing changed
    with ledger.ctx.read() as db:
        assert db.value("SELECT count(*) FROM outcomes") == 0
    ledger.complete("a", outcome={"score": 1e308}, claim=got["claim"])  # finite: stored
    assert (last_run(ledger) or {})["outcome"] == {"score": 1e308}
