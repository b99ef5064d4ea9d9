"""Claims that hold under real agents (issue 15): tokens, takeover, renewal, defer, keys, dependencies, ready.

Every test runs on SQLite and PostgreSQL (the ``hb_db`` / ``db_url`` fixtures). Time moves by
``--now`` (or a Ledger's ``now`` callable), never by sleeping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.errors import ClaimLost, InvalidState
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
Q = "_round3_extension.ag_implementation_queue"


def at(seconds: float) -> str:
    """T0 plus ``seconds``, as --now takes it."""
    return (T0 + timedelta(seconds=seconds)).isoformat()


def sql(hb: Runner, query: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = hb.json("sql", query)
    return rows


def outcomes(hb: Runner, task_id: str) -> list[dict[str, Any]]:
    return sql(hb, f"SELECT worker, claim, success FROM outcomes WHERE task_id = '{task_id}' ORDER BY pk")


def pop(hb: Runner, when: float, *args: str, code: int = 0) -> dict[str, Any]:
    result = hb("--now", at(when), "pop", *args, code=code)
    got: dict[str, Any] = json.loads(result.stdout)
    return got


# --- claim tokens and takeover ---------------------------------------------------------------


def test_every_claim_gets_its_own_token_and_the_pop_prints_it(hb_db: Runner) -> None:
    hb_db("add", "one", "--id", "a")
    hb_db("add", "two", "--id", "b")
    first = pop(hb_db, 0, "--worker", "w1")
    second = pop(hb_db, 0, "--worker", "w2")
    assert list(first)[-1] == "claim"  # the task's own fields first, then its token
    assert first["claim"] != second["claim"]
    assert hb_db.json("show", "a")["claim"] == first["claim"]
    # a re-lease of the same task is a new claim
    hb_db("--now", at(0), "fail", "a", "--claim", first["claim"])
    again = pop(hb_db, 1, "--worker", "w1")
    assert again["id"] == "a" and again["claim"] not in (first["claim"], second["claim"])


def test_takeover_fences_the_old_holder(hb_db: Runner) -> None:
    """A pops with a 1 s lease; after it expires B takes it over; A's token is refused."""
    hb_db("add", "slow job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A", "--lease", "1s")
    late = hb_db("--now", at(2), "pop", "--accept-stale", "--worker", "B")
    b = json.loads(late.stdout)
    assert b["id"] == "job" and b["claim"] != a["claim"]
    assert late.stderr == "adopted stale claim job from A (re-leased to you, with a new claim)\n"
    before = hb_db.json("show", "job")
    for command in (("complete", "job"), ("fail", "job", "--reason", "late"), ("renew", "job")):
        lost = hb_db("--now", at(3), *command, "--claim", a["claim"], code=15)
        assert lost.stdout == ""
        assert lost.stderr.startswith("hb: claim lost: task 'job' is held by B under a newer claim since ")
        assert lost.stderr.count("\n") == 1
    assert hb_db.json("show", "job") == before  # nothing changed
    assert outcomes(hb_db, "job") == []
    assert sql(hb_db, "SELECT count(*) AS n FROM errors")[0]["n"] == 0
    hb_db("--now", at(4), "complete", "job", "--claim", b["claim"])
    [outcome] = outcomes(hb_db, "job")
    assert (outcome["worker"], outcome["claim"]) == ("B", b["claim"])


def test_clear_stale_voids_the_token_and_a_new_pop_fences_it(hb_db: Runner) -> None:
    hb_db("add", "slow job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A", "--lease", "1s")
    assert hb_db("--now", at(2), "clear-stale").stdout == "Cleared 1 stale task(s).\n"
    cleared = hb_db("--now", at(2), "complete", "job", "--claim", a["claim"], code=15)
    assert cleared.stderr == (
        "hb: claim lost: task 'job' was returned to the queue (clear-stale, or by hand); "
        "nobody holds it now; nothing changed\n"
    )
    c = pop(hb_db, 3, "--worker", "C")
    hb_db("--now", at(3), "complete", "job", "--claim", a["claim"], code=15)
    hb_db("--now", at(4), "complete", "job", "--claim", c["claim"])
    assert outcomes(hb_db, "job") == [{"worker": "C", "claim": c["claim"], "success": _true(hb_db)}]


def _true(hb: Runner) -> Any:
    """How `hb sql` prints a true boolean: 1 on SQLite, true on PostgreSQL."""
    return True if "postgresql" in hb.env.get("HB_DATABASE_URL", "") else 1


def test_an_expired_claim_nobody_took_over_still_completes(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A", "--lease", "1s")
    done = hb_db.json("--now", at(60), "complete", "job", "--claim", a["claim"])
    assert (done["status"], done["claim"]) == ("done", a["claim"])


def test_a_claim_that_ended_by_its_own_hand_is_exit_1_not_15(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0)
    hb_db("--now", at(1), "complete", "job", "--claim", a["claim"])
    again = hb_db("--now", at(2), "complete", "job", "--claim", a["claim"], code=1)
    ended = "hb: task 'job': this claim has ended already (the task is done); nothing changed\n"
    assert again.stderr == ended
    assert len(outcomes(hb_db, "job")) == 1


def test_a_token_for_a_task_never_claimed_is_claim_lost(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    never = hb_db("renew", "job", "--claim", "0" * 24, code=15)
    assert (
        never.stderr
        == "hb: claim lost: task 'job' was never claimed: the token is not its claim; nothing changed\n"
    )
    assert hb_db.json("show", "job")["status"] == "todo"


def test_completed_by_someone_else_is_claim_lost(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A")
    hb_db("--now", at(1), "done", "job")  # a person marks it done by hand
    lost = hb_db("--now", at(2), "complete", "job", "--claim", a["claim"], code=15)
    assert "was completed without a claim (by hand or by a file)" in lost.stderr


FENCED = (("complete", "job"), ("fail", "job", "--reason", "late"), ("renew", "job"))


def test_a_completion_by_id_alone_is_a_lost_claim_for_the_holder(hb_db: Runner) -> None:
    """A pops; B completes the task by id alone (as heartbeat.py does): A's token is a claim lost
    to another hand (exit 15), not one its holder ended (exit 1). The outcome names the claim it
    closed; the task is no longer under it."""
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A")
    done = hb_db.json("--now", at(1), "complete", "job")
    assert (done["status"], done["claim"]) == ("done", a["claim"])  # the claim it closed
    before = hb_db.json("show", "job")
    assert (before["status"], before["claim"], before["claimed_by"]) == ("done", None, "A")
    for command in FENCED:
        lost = hb_db("--now", at(2), *command, "--claim", a["claim"], code=15)
        assert (lost.stdout, lost.stderr) == (
            "",
            "hb: claim lost: task 'job' was completed without a claim (complete by id alone), "
            "not under this one; nothing changed\n",
        )
    assert hb_db.json("show", "job") == before  # nothing changed
    assert outcomes(hb_db, "job") == [{"worker": "A", "claim": a["claim"], "success": _true(hb_db)}]
    assert sql(hb_db, "SELECT count(*) AS n FROM errors")[0]["n"] == 0


@pytest.mark.parametrize("final", [False, True], ids=["retried", "final"])
def test_a_failure_by_id_alone_is_a_lost_claim_for_the_holder(hb_db: Runner, final: bool) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A")
    given = ["--final"] if final else []
    failed = hb_db.json("--now", at(1), "fail", "job", "--reason", "B gave up", *given)
    assert (failed["status"], failed["claim"]) == ("failed" if final else "todo", a["claim"])
    before = hb_db.json("show", "job")
    assert before["claim"] is None
    ended = (
        "was failed without a claim (fail by id alone), not under this one"
        if final
        else "was failed without a claim (fail by id alone) and returned to the queue; nobody holds it now"
    )
    for command in FENCED:
        lost = hb_db("--now", at(2), *command, "--claim", a["claim"], code=15)
        assert (lost.stdout, lost.stderr) == ("", f"hb: claim lost: task 'job' {ended}; nothing changed\n")
    assert hb_db.json("show", "job") == before
    assert sql(hb_db, "SELECT claim, reason FROM errors") == [{"claim": a["claim"], "reason": "B gave up"}]
    if not final:  # popped again, the task is under a new claim; the old one stays lost
        c = pop(hb_db, 3, "--worker", "C")
        lost = hb_db("--now", at(3), "complete", "job", "--claim", a["claim"], code=15)
        assert "is held by C under a newer claim" in lost.stderr
        hb_db("--now", at(4), "complete", "job", "--claim", c["claim"])


def test_a_claim_failed_back_to_the_queue_by_its_holder_is_exit_1(hb_db: Runner) -> None:
    """The holder's own fenced failure keeps its token on the task: a retry of it is told the
    claim has ended (exit 1), as after its own completion."""
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A")
    hb_db("--now", at(1), "fail", "job", "--claim", a["claim"])
    assert hb_db.json("show", "job")["claim"] == a["claim"]
    for command in FENCED:
        again = hb_db("--now", at(2), *command, "--claim", a["claim"], code=1)
        assert again.stderr == (
            "hb: task 'job': this claim has ended already (the task is todo); nothing changed\n"
        )


def _synced_job(hb_db: Runner, workspace: Path) -> Path:
    """A tasks.json holding one pending task, "job", synced in; the file's path."""
    target = workspace / ".agent" / "state" / "tasks.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = {"pending": [{"id": "job", "priority": "high"}], "in_progress": [], "completed": [], "failed": []}
    target.write_text(json.dumps(doc, indent=2))
    hb_db("--now", at(0), "sync")
    return target


def test_a_completion_in_tasks_json_is_a_lost_claim_for_the_holder(hb_db: Runner, workspace: Path) -> None:
    target = _synced_job(hb_db, workspace)
    a = pop(hb_db, 0, "--worker", "A")
    hb_db("--now", at(1), "sync")
    edited = json.loads(target.read_text())
    [job] = edited["in_progress"]
    edited["in_progress"] = []
    edited["completed"].append({**job, "completed_at": at(2)})  # done by hand, in the file
    target.write_text(json.dumps(edited, indent=2))
    hb_db("--now", at(3), "sync")
    assert hb_db.json("show", "job")["status"] == "done"
    for command in FENCED:
        lost = hb_db("--now", at(4), *command, "--claim", a["claim"], code=15)
        assert lost.stderr == (
            "hb: claim lost: task 'job' was completed without a claim (by hand or by a file); "
            "nothing changed\n"
        )


def test_a_todo_md_entry_ticked_off_is_a_lost_claim_for_the_holder(hb_db: Runner, workspace: Path) -> None:
    """A TODO.md entry is never popped by itself, but `pop --id` claims it; ticked off in the
    file (moved to TODO.DONE.md), it was completed by another hand."""
    (workspace / "TODO.md").write_text(
        "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 09:00) | water the plants\n"
    )
    hb_db("--now", at(0), "sync")
    [entry] = hb_db.json("list")
    a = pop(hb_db, 0, "--id", entry["id"], "--worker", "A")
    (workspace / "TODO.md").write_text("# TODO Work In Progress (WIP)\n\n")
    (workspace / "TODO.DONE.md").write_text(
        "# TODO Done\n\n- [x] [Created](2026-05-01 09:00), [Done](2026-05-01 10:01) | water the plants\n"
    )
    hb_db("--now", at(120), "sync")
    assert hb_db.json("show", entry["id"])["status"] == "done"
    lost = hb_db("--now", at(180), "complete", entry["id"], "--claim", a["claim"], code=15)
    assert lost.stderr == (
        f"hb: claim lost: task {entry['id']!r} was completed without a claim (by hand or by a file); "
        "nothing changed\n"
    )


def test_without_claim_the_id_is_enough_and_the_outcome_names_the_claim(hb_db: Runner) -> None:
    """The heartbeat.py way stays: complete by id; the outcome still records which claim it closed."""
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A", "--lease", "1s")
    b = pop(hb_db, 5, "--accept-stale", "--worker", "B")
    hb_db("--now", at(6), "complete", "job")
    [outcome] = outcomes(hb_db, "job")
    assert (outcome["worker"], outcome["claim"]) == ("B", b["claim"])
    assert outcome["claim"] != a["claim"]


def test_an_old_holder_cannot_send_back_a_task_another_is_doing(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A", "--lease", "1s")
    pop(hb_db, 2, "--accept-stale", "--worker", "B")
    hb_db("--now", at(3), "fail", "job", "--claim", a["claim"], code=15)
    shown = hb_db.json("show", "job")
    assert (shown["status"], shown["claimed_by"]) == ("doing", "B")


def test_accept_stale_takes_over_one_claim_per_pop_in_queue_order(hb_db: Runner) -> None:
    for name in ("s1", "s2", "ready"):
        hb_db("add", name, "--id", name)
    pop(hb_db, 0, "--id", "s1", "--worker", "A", "--lease", "1s")
    pop(hb_db, 0, "--id", "s2", "--worker", "A", "--lease", "1s")
    taken = [pop(hb_db, 5, "--accept-stale", "--worker", "B") for _ in range(3)]
    assert [t["id"] for t in taken] == ["s1", "s2", "ready"]
    assert len({t["claim"] for t in taken}) == 3
    for t in taken:
        assert hb_db.json("show", t["id"])["claim"] == t["claim"]
    # a claim writes no runs row; a takeover does, naming whose claim it took
    pops = sql(hb_db, "SELECT task_id, detail FROM runs WHERE kind = 'pop' ORDER BY pk")
    details = [json.loads(p["detail"]) if isinstance(p["detail"], str) else p["detail"] for p in pops]
    assert [p["task_id"] for p in pops] == ["s1", "s2"]
    assert [d["took_over_from"] for d in details] == ["A", "A"]
    assert [d["claim"] for d in details] == [t["claim"] for t in taken[:2]]


def test_exit_15_from_the_python_api(db_url: str, workspace: Path) -> None:
    clock = [T0]
    with Ledger.open(workspace=workspace, db=db_url, now=lambda: clock[0]) as ledger:
        ledger.add("job", task_id="job")
        a = ledger.pop(worker="A", lease="1s")
        assert a is not None and isinstance(a["claim"], str)
        clock[0] = T0 + timedelta(seconds=2)
        b = ledger.pop(worker="B", accept_stale=True)
        assert b is not None and b["id"] == "job"
        with pytest.raises(ClaimLost) as lost:
            ledger.complete("job", claim=a["claim"])
        assert lost.value.exit_code == 15
        assert ledger.renew("job", b["claim"], lease="1m")["claim"] == b["claim"]
        assert ledger.complete("job", claim=b["claim"])["claim"] == b["claim"]
        with pytest.raises(InvalidState):  # its own claim, ended: not a lost one
            ledger.complete("job", claim=b["claim"])
        assert ledger.get("job")["status"] == "done"


def test_a_claim_ended_by_another_hand_from_the_python_api(db_url: str, workspace: Path) -> None:
    """Worker A's ledger and worker B's: B completes and fails by id alone, A's tokens are lost
    (ClaimLost, exit 15); A's own fenced completion retried is InvalidState (exit 1)."""
    clock = [T0]
    with (
        Ledger.open(workspace=workspace, db=db_url, now=lambda: clock[0]) as a_side,
        Ledger.open(workspace=workspace, db=db_url, now=lambda: clock[0]) as b_side,
    ):
        for name in ("done-by-b", "failed-by-b", "done-by-a"):
            a_side.add(name, task_id=name)
        done_by_b = a_side.pop(worker="A")
        failed_by_b = a_side.pop(worker="A")
        done_by_a = a_side.pop(worker="A")
        assert done_by_b and failed_by_b and done_by_a
        clock[0] = T0 + timedelta(seconds=1)
        assert b_side.complete("done-by-b")["claim"] == done_by_b["claim"]
        assert b_side.fail("failed-by-b", final=True)["claim"] == failed_by_b["claim"]
        a_side.complete("done-by-a", claim=done_by_a["claim"])
        for task, how in (
            (done_by_b, "completed without a claim (complete by id alone)"),
            (failed_by_b, "failed without a claim (fail by id alone)"),
        ):
            with pytest.raises(ClaimLost) as lost:
                a_side.complete(task["id"], claim=task["claim"])
            assert lost.value.exit_code == 15
            assert str(lost.value) == (
                f"claim lost: task {task['id']!r} was {how}, not under this one; nothing changed"
            )
            with pytest.raises(ClaimLost):
                a_side.fail(task["id"], claim=task["claim"])
            with pytest.raises(ClaimLost):
                a_side.renew(task["id"], task["claim"])
        with pytest.raises(InvalidState) as ended:
            a_side.complete("done-by-a", claim=done_by_a["claim"])
        assert ended.value.exit_code == 1 and "this claim has ended already" in str(ended.value)
        assert [a_side.get(t)["status"] for t in ("done-by-b", "failed-by-b", "done-by-a")] == [
            "done",
            "failed",
            "done",
        ]


# --- renewal -----------------------------------------------------------------------------------


def test_a_renewing_holder_keeps_its_task_then_loses_it_when_it_stops(db_url: str, workspace: Path) -> None:
    """Renewing every 0.5 s with a 1 s lease for 5 s, while another worker keeps trying
    --accept-stale: it never gets the task; once the renewals stop it does, and the old token is
    refused."""
    holder_clock, other_clock = [T0], [T0]
    with (
        Ledger.open(workspace=workspace, db=db_url, now=lambda: holder_clock[0]) as holder,
        Ledger.open(workspace=workspace, db=db_url, now=lambda: other_clock[0]) as other,
    ):
        holder.add("long job", task_id="long")
        mine = holder.pop(worker="holder", lease="1s")
        assert mine is not None
        for step in range(1, 11):  # t = 0.5 ... 5.0
            other_clock[0] = T0 + timedelta(seconds=step * 0.5 - 0.25)
            assert other.pop(worker="other", accept_stale=True) is None  # never stale: nothing to take
            holder_clock[0] = T0 + timedelta(seconds=step * 0.5)
            renewed = holder.renew("long", mine["claim"], lease="1s")
            assert renewed["claim"] == mine["claim"]
        assert other.get("long")["claimed_by"] == "holder"
        other_clock[0] = T0 + timedelta(seconds=6.5)  # 1.5 s after the last renewal
        taken = other.pop(worker="other", accept_stale=True)
        assert taken is not None and taken["id"] == "long" and taken["claim"] != mine["claim"]
        holder_clock[0] = T0 + timedelta(seconds=6.6)
        with pytest.raises(ClaimLost):
            holder.renew("long", mine["claim"])
        with pytest.raises(ClaimLost):
            holder.complete("long", claim=mine["claim"])
        other.complete("long", claim=taken["claim"])
    hb = Runner({"HB_DATABASE_URL": db_url})
    assert outcomes(hb, "long") == [{"worker": "other", "claim": taken["claim"], "success": _true(hb)}]


def test_renew_extends_from_now_and_keeps_last_run(hb_db: Runner, workspace: Path) -> None:
    hb_db("config", "set", "sync.auto_export", "true")
    hb_db("add", "earlier", "--id", "earlier", "--priority", "critical")
    hb_db("add", "job", "--id", "job")
    hb_db("--now", at(0), "complete", "earlier", "--claim", pop(hb_db, 0)["claim"])
    last_run = workspace / ".agent" / "state" / "last-run.json"
    before = last_run.read_text()
    assert json.loads(before)["task_id"] == "earlier"
    a = pop(hb_db, 0, "--lease", "1m")
    assert last_run.read_text() == before  # nor does a pop (heartbeat.py's does not log a run)
    got = hb_db.json("--now", at(50), "renew", "job", "--claim", a["claim"], "--lease", "10m")
    assert got["lease_expires_at"] == "2026-05-01T10:10:50+00:00"
    assert hb_db.json("show", "job")["lease_expires_at"] == "2026-05-01T10:10:50+00:00"
    default = hb_db.json("--now", at(60), "renew", "job", "--claim", a["claim"])
    assert default["lease_expires_at"] == "2026-05-01T10:31:00+00:00"  # setting queue.lease, 30m
    assert last_run.read_text() == before  # a renewal handles no task: last-run.json stays
    hb_db("--now", at(60), "renew", "job", code=2)  # --claim is required
    hb_db("--now", at(60), "renew", "nope", "--claim", a["claim"], code=1)
    hb_db("--now", at(60), "renew", "job", "--claim", "", code=2)


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_renew_reads_the_files_hand_edits_first(hb_db: Runner, workspace: Path, status: str) -> None:
    """With sync.auto_export, heartbeat.py's completion or failure of the claimed task in tasks.json
    ends the claim for renew as it does for complete and fail (exit 15), though renew writes no file."""
    hb_db("config", "set", "sync.auto_export", "true")
    target = _synced_job(hb_db, workspace)
    a = pop(hb_db, 0, "--worker", "w1")
    edited = json.loads(target.read_text())  # heartbeat.py complete job [--status failed]
    [job] = edited["in_progress"]
    edited["in_progress"] = []
    edited[status].append({**job, "completed_at": at(2)})
    target.write_text(json.dumps(edited, indent=2))
    lost = hb_db("--now", at(3), "renew", "job", "--claim", a["claim"], code=15)
    assert lost.stderr.splitlines()[-1].startswith("hb: claim lost: task 'job' ")
    assert lost.stderr.endswith("; nothing changed\n")
    shown = hb_db.json("show", "job")
    assert shown["status"] == ("done" if status == "completed" else "failed")
    assert shown["lease_expires_at"] is None


# --- idempotent adds -----------------------------------------------------------------------------


def test_add_with_a_key_twice_returns_the_first_task(hb_db: Runner) -> None:
    first = hb_db.json("--now", at(0), "add", "Write report", "--key", "req-1")
    again = hb_db("--now", at(9), "add", "Write report (retry)", "--key", "req-1", "--json")
    assert json.loads(again.stdout) == first
    assert again.stderr == (
        f"hb: warning: key 'req-1': task {first['id']} was added with it at 2026-05-01T10:00:00+00:00; "
        "not added again\n"
    )
    other = hb_db.json("add", "Write report", "--key", "req-2")
    assert other["id"] != first["id"] and other["key"] == "req-2"
    # a key is per queue: the same key in a scoped queue is another task
    scoped = hb_db.json("add", "Write report", "--key", "req-1", "--scope", "_b_extension.q")
    assert scoped["id"] != first["id"]
    assert len(hb_db.json("list")) == 3
    hb_db("add", "x", "--key", " ", code=1)
    poked = hb_db.json("poke", "--key", "req-1", "Write report")
    assert poked["id"] == first["id"]
    fresh = hb_db.json("poke", "--key", "build-check", "Check the build")
    assert hb_db.json("poke", "--key", "build-check", "Check the build")["id"] == fresh["id"]


@pytest.mark.parametrize("key", ["", "  ", "k" * 256])
def test_a_poke_with_a_key_hb_add_refuses_leaves_no_record(hb_db: Runner, db_url: str, key: str) -> None:
    """hb add refused the key and wrote nothing; hb poke refused it inside the workspace guard,
    which left a runs row (``poke error``) for a refusal of input."""
    from tests.conftest import every_row

    hb_db("add", "a task before")
    before = every_row(db_url)
    refused = hb_db("poke", "--key", key, "Check the build", code=1)
    assert refused.stderr.startswith("hb: ") and refused.stderr.count("\n") == 1
    assert "--key" in refused.stderr
    assert every_row(db_url) == before


def test_the_loser_of_a_race_on_a_key_gets_the_winner_s_task(
    db_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unique index decides: an add that looked before the other committed trips it and
    returns the task that was made."""
    from heartbeat.db import tasks

    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        winner = ledger.add("job", key="k")
        looked: list[str] = []

        def too_early(session: Any, scope: str, key: str) -> None:
            looked.append(key)  # the first look saw no task yet
            monkeypatch.undo()

        monkeypatch.setattr(tasks, "by_key", too_early)
        loser = ledger.add("job", key="k")
        assert looked == ["k"]
        assert loser == winner
        assert ledger.notices[-1].endswith("; not added again")
        assert [t["id"] for t in ledger.list()] == [winner["id"]]


ADDER = """
import sys
from heartbeat import Ledger
with Ledger.open(workspace=sys.argv[1], db=sys.argv[2]) as ledger:
    ledger.settings
    print("ready", flush=True)
    sys.stdin.readline()
    task = ledger.add("same request", key=sys.argv[3])
    print(task["id"], len(ledger.notices), flush=True)
"""


@pytest.mark.parametrize("same", [True, False], ids=["same-key", "different-keys"])
def test_eight_processes_adding_at_once(db_url: str, workspace: Path, same: bool) -> None:
    hb = Runner({"HB_DATABASE_URL": db_url})
    hb("init")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    keys = ["req-42" if same else f"req-{i}" for i in range(8)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ADDER, str(workspace), db_url, key],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for key in keys
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:  # all at once
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        task_id, notices = out.split()
        results.append((task_id, int(notices)))
    rows = sql(hb, "SELECT id, idempotency_key FROM tasks")
    if same:
        assert len({tid for tid, _ in results}) == 1
        assert sorted(n for _, n in results) == [0] + [1] * 7  # one made it, seven were told
        assert rows == [{"id": results[0][0], "idempotency_key": "req-42"}]
    else:
        assert len({tid for tid, _ in results}) == 8 and all(n == 0 for _, n in results)
        assert sorted(r["idempotency_key"] for r in rows) == sorted(keys)


# --- dependencies and defer ---------------------------------------------------------------------


def test_pop_order_with_after_chains_and_not_before(hb_db: Runner) -> None:
    hb_db("add", "build", "--id", "build", "--priority", "low")
    hb_db("add", "test", "--id", "test", "--after", "build", "--priority", "critical")
    hb_db("add", "deploy", "--id", "deploy", "--after", "test", "--after", "build", "--priority", "critical")
    hb_db("add", "announce", "--id", "announce", "--not-before", "2026-05-01T12:00:00Z", "--priority", "high")
    hb_db("add", "tidy", "--id", "tidy", "--priority", "low")
    order = []
    clock = 0
    while True:
        result = hb_db("--now", at(clock), "pop")
        if result.stdout == "No pending tasks.\n":
            break
        task = json.loads(result.stdout)
        order.append(task["id"])
        hb_db("--now", at(clock), "complete", task["id"], "--claim", task["claim"])
        clock += 60
    # deferred until noon, and nothing else can run before then: the queue waits
    assert order == ["build", "test", "deploy", "tidy"]
    assert json.loads(hb_db("--now", "2026-05-01T12:00:00Z", "pop").stdout)["id"] == "announce"


def test_after_is_shown_replaced_and_cleared(hb_db: Runner) -> None:
    for name in ("a", "b", "c"):
        hb_db("add", name, "--id", name)
    assert hb_db.json("update", "c", "--after", "a", "--after", "b")["after"] == ["a", "b"]
    assert hb_db.json("update", "c", "--after", "b")["after"] == ["b"]
    listed = {t["id"]: t for t in hb_db.json("list")}
    assert listed["c"]["after"] == ["b"] and listed["a"]["after"] == []
    history = hb_db.json("show", "c", "--history")["history"]
    assert history[-1]["detail"] == {"fields": ["after"]} and history[-1]["before"]["after"] == ["a", "b"]
    assert hb_db.json("update", "c", "--after", "none")["after"] == []
    hb_db("update", "c", "--after", "none", "--after", "a", code=1)
    hb_db("add", "d", "--after", "none", code=2)
    hb_db("add", "d", "--after", "no-such-task", code=1)
    assert [t["id"] for t in hb_db.json("list")] == ["a", "b", "c"]  # nothing added


def test_a_cycle_is_refused_naming_it(hb_db: Runner) -> None:
    hb_db("add", "a", "--id", "a")
    hb_db("add", "b", "--id", "b", "--after", "a")
    hb_db("add", "c", "--id", "c", "--after", "b")
    before = hb_db.json("show", "a")
    cycle = hb_db("update", "a", "--after", "c", "--title", "renamed", code=1)
    assert cycle.stderr == "hb: --after would make a cycle: a -> c -> b -> a (each waits for the next)\n"
    assert hb_db.json("show", "a") == before  # the title did not change either
    itself = hb_db("update", "a", "--after", "a", code=1)
    assert itself.stderr == "hb: --after would make a cycle: a -> a (each waits for the next)\n"


def test_a_failed_or_cancelled_dependency_keeps_the_dependant_waiting(hb_db: Runner) -> None:
    hb_db("config", "set", "queue.max_attempts", "1")
    hb_db("add", "fetch", "--id", "fetch")
    hb_db("add", "upload", "--id", "upload")
    hb_db("add", "report", "--id", "report", "--after", "fetch", "--after", "upload")
    fetch = pop(hb_db, 0)
    hb_db("--now", at(1), "fail", "fetch", "--claim", fetch["claim"])
    hb_db("--now", at(1), "cancel", "upload")
    assert hb_db("--now", at(2), "pop").stdout == "No pending tasks.\n"
    [row] = hb_db.json("--now", at(2), "ready", "--explain")
    assert (row["id"], row["ready"], row["reasons"]) == ("report", False, ["waiting_for"])
    assert row["waiting_for"] == ["fetch", "upload"]
    assert row["dependencies"] == [
        {"id": "fetch", "status": "failed"},
        {"id": "upload", "status": "cancelled"},
    ]
    human = hb_db("--now", at(2), "ready", "--explain").stdout
    assert "waiting_for fetch (failed), upload (cancelled)" in human
    blocked = hb_db("--now", at(2), "pop", "--id", "report", code=13)
    assert blocked.stderr == "hb: task 'report' waits for fetch (failed), upload (cancelled)\n"


def test_not_before_defers_pop_and_due_and_list_shows_it(hb_db: Runner) -> None:
    hb_db("config", "set", "timezone", "Asia/Tokyo")
    hb_db("add", "call back", "--id", "call", "--not-before", "2026-05-01T20:00", "--due", "2026-05-01T18:00")
    [listed] = hb_db.json("list")
    assert listed["not_before"] == "2026-05-01T20:00:00+09:00"  # naive = the workspace zone
    # overdue at 19:00 local, but deferred: neither popped nor due
    assert hb_db("--now", "2026-05-01T19:00", "pop").stdout == "No pending tasks.\n"
    assert hb_db.json("--now", "2026-05-01T19:00", "due") == []
    deferred = hb_db("--now", "2026-05-01T19:00", "pop", "--id", "call", code=13)
    assert deferred.stderr == "hb: task 'call' is deferred until 2026-05-01T20:00:00+09:00\n"
    [due] = hb_db.json("--now", "2026-05-01T20:00", "due")
    assert due["id"] == "call" and due["reasons"] == ["overdue"]
    hb_db("update", "call", "--not-before", "2026-05-02T08:00")
    assert hb_db.json("--now", "2026-05-01T20:00", "due") == []
    assert hb_db.json("update", "call", "--not-before", "none")["not_before"] is None
    assert json.loads(hb_db("--now", "2026-05-01T19:00", "pop").stdout)["id"] == "call"
    hb_db("update", "call", "--not-before", "", code=1)


def test_the_new_options_stay_out_of_tasks_json(hb_db: Runner, workspace: Path) -> None:
    target = workspace / ".agent" / "state" / "tasks.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    original = (ROOT / "tests" / "fixtures" / "tasks_legacy.json").read_text()
    target.write_text(original)
    hb_db("sync")
    before = target.read_text()
    hb_db("update", "task-low", "--after", "task-crit", "--not-before", "2026-05-01T12:00:00Z")
    hb_db("sync")
    assert target.read_text() == before  # the file knows neither: hb keeps them in the ledger
    assert hb_db.json("show", "task-low")["after"] == ["task-crit"]


# --- hb ready ------------------------------------------------------------------------------------


def test_ready_explains_every_state(hb_db: Runner, workspace: Path) -> None:
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    doc = json.loads((ROOT / "tests" / "fixtures" / "tasks_scoped.json").read_text())
    doc["pending"] = []  # the scoped queue alone, and the legacy list filled below
    (state / "tasks.json").write_text(json.dumps(doc, indent=2))
    hb_db("sync")
    told = hb_db("--now", at(0), "ready", "--explain", "--json")
    assert told.stderr == (
        f"hb: warning: scoped queues exist: a pop needs --scope (one of: {Q}; '' for the legacy list), "
        "and so does hb ready\n"
    )
    scoped = json.loads(told.stdout)
    assert {r["id"]: r["reasons"] for r in scoped} == {
        "round3-edit-item-33-southern-qualifier": ["scoped"],
        "round3-glossary": ["scoped"],
        "round3-spanish-pdfs": ["scoped", "blocked_on"],
    }
    assert not any(r["ready"] for r in scoped)
    assert [r["id"] for r in hb_db.json("--now", at(0), "ready", "--scope", Q)] == [
        "round3-edit-item-33-southern-qualifier",
        "round3-glossary",
    ]
    # the legacy list, by --scope ''
    for name, extra in (
        ("claimed", ()),
        ("stale", ()),
        ("deferred", ("--not-before", at(3600))),
        ("snoozed", ("--status", "snoozed")),
        ("blocked", ("--status", "blocked")),
        ("waiting", ("--status", "waiting")),
        ("after", ("--after", "claimed")),
        ("ready-low", ("--priority", "low")),
        ("ready-high", ("--priority", "high")),
    ):
        hb_db("add", name, "--id", name, *extra)
    pop(hb_db, 0, "--id", "claimed", "--scope", "", "--worker", "w1", "--lease", "1h")
    pop(hb_db, 0, "--id", "stale", "--scope", "", "--worker", "w2", "--lease", "1s")
    hb_db("add", "a TODO.md entry", "--source", "todo")  # never popped: not listed
    explained = hb_db("--now", at(10), "ready", "--scope", "", "--explain", "--json")
    assert "stale claims (stale) hold the queue: pop exits 12" in explained.stderr
    rows = json.loads(explained.stdout)
    assert [(r["id"], r["ready"], r["reasons"]) for r in rows] == [
        ("ready-high", True, []),
        ("ready-low", True, []),
        ("claimed", False, ["claimed"]),
        ("stale", False, ["stale"]),
        ("deferred", False, ["deferred"]),
        ("snoozed", False, ["deferred"]),
        ("blocked", False, ["blocked_on"]),
        ("waiting", False, ["waiting_for"]),
        ("after", False, ["waiting_for"]),
    ]
    by_id = {r["id"]: r for r in rows}
    assert by_id["claimed"]["claimed_by"] == "w1"
    assert by_id["after"]["waiting_for"] == ["claimed"]
    assert by_id["deferred"]["not_before"] == "2026-05-01T11:00:00+00:00"
    # what ready says is what pop hands out, in that order
    assert [r["id"] for r in hb_db.json("--now", at(10), "ready", "--scope", "", "--limit", "1")] == [
        "ready-high"
    ]
    hb_db("--now", at(10), "clear-stale")
    popped = [pop(hb_db, 10, "--scope", "")["id"] for _ in range(3)]
    assert popped == ["ready-high", "stale", "ready-low"]  # the cleared claim is ready again


def test_ready_human_output_and_edges(hb_db: Runner) -> None:
    empty = hb_db("ready")
    assert (empty.stdout, empty.stderr) == ("", "Nothing is ready. (hb ready --explain says why)\n")
    assert hb_db.json("ready") == []
    hb_db("add", "job", "--id", "job")
    hb_db("add", "later", "--id", "later", "--not-before", "2026-05-02T00:00:00Z")
    lines = hb_db("--now", at(0), "ready", "--explain").stdout.splitlines()
    assert lines[0].split() == ["id", "ready", "why", "not", "scope", "title"]
    assert lines[2].split() == ["job", "ready", "job"]
    assert lines[3].split() == ["later", "-", "deferred", "until", "2026-05-02T00:00:00+00:00", "later"]
    hb_db("ready", "--limit", "0", code=2)
    hb_db("ready", "--scope", "_nope_extension.q", code=14)


def test_a_dependency_done_in_tasks_json_releases_the_dependant_and_a_deleted_one_too(
    hb_db: Runner, workspace: Path
) -> None:
    """The claim looks at the dependencies' status itself, however it became done: a file edit
    read by hb sync counts as much as hb complete. A task deleted from the file waits for nothing."""
    target = workspace / ".agent" / "state" / "tasks.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "pending": [
            {"id": "fetch", "priority": "low"},
            {"id": "draft", "priority": "low"},
            {"id": "report", "priority": "high"},
            {"id": "send", "priority": "high"},
        ],
        "in_progress": [],
        "completed": [],
        "failed": [],
    }
    target.write_text(json.dumps(doc, indent=2))
    hb_db("sync")
    hb_db("update", "report", "--after", "fetch")
    hb_db("update", "send", "--after", "draft")
    edited = json.loads(target.read_text())
    fetch = edited["pending"].pop(0)
    edited["completed"].append({**fetch, "completed_at": "2026-05-01T09:00:00Z"})  # done by hand
    edited["pending"] = [t for t in edited["pending"] if t["id"] != "draft"]  # deleted by hand
    target.write_text(json.dumps(edited, indent=2))
    hb_db("sync")
    assert hb_db.json("show", "send")["after"] == []
    assert [pop(hb_db, 0)["id"], pop(hb_db, 0)["id"]] == ["report", "send"]


def test_an_edit_that_takes_the_task_back_voids_the_claim(hb_db: Runner) -> None:
    hb_db("add", "job", "--id", "job")
    a = pop(hb_db, 0, "--worker", "A")
    hb_db("update", "job", "--status", "todo")
    assert hb_db.json("show", "job")["claim"] is None
    back = hb_db("--now", at(1), "complete", "job", "--claim", a["claim"], code=15)
    assert "was returned to the queue" in back.stderr
