"""hb killed between its swap of a workspace file and the look at what the swap displaced.

The swap (:mod:`heartbeat.ops.sync.swap`) exchanges hb's new file with the one in place; the one
displaced lands at hb's temporary name. When another program saved its edit just before the
exchange (heartbeat.py's ``open(path, "w")``), that leftover holds the edit, which the swap would
have put back and merged: the next ``hb sync`` must merge it, or keep it, never delete it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from heartbeat.ops.sync import swap
from tests.conftest import Runner
from tests.sync.test_writeback import NOW, run_killed, seed_queue, statuses

# hb, with another program saving its edit of the file named RUNTIME_FILE in place just before
# hb's exchange of it; hb is killed right after the exchange (before it reads what it displaced)
EXCHANGE_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from heartbeat.cli.main import main
from heartbeat.ops.sync import swap

runtime = Path(os.environ["RUNTIME_TEXT"]).read_text()
real = swap._exchange

def exchange(a, b):
    if Path(b).name != os.environ["RUNTIME_FILE"]:
        return real(a, b)
    with open(b, "w") as fh:
        fh.write(runtime)
    done = real(a, b)
    os.kill(os.getpid(), signal.SIGKILL)
    return done

swap._exchange = exchange
sys.exit(main(sys.argv[1:]))
"""


def _killed_after_exchange(
    workspace: Path, db: str | None, name: str, runtime: str, tmp_path: Path, *args: str
) -> None:
    text = tmp_path / "runtime-text"
    text.write_text(runtime)
    run_killed(EXCHANGE_THEN_DIE, workspace, db, *args, RUNTIME_TEXT=str(text), RUNTIME_FILE=name)


def heartbeat_py_complete(text: str, task_id: str) -> str:
    """What the claude-skills heartbeat.py's ``complete TASK_ID`` saves over ``text``: the task moved
    from in_progress to the end of completed with its completed_at (``json.dump(indent=2)``, no
    newline at the end)."""
    tasks = json.loads(text)
    tasks.setdefault("failed", [])
    [task] = [t for t in tasks["in_progress"] if t["id"] == task_id]
    tasks["in_progress"].remove(task)
    task["completed_at"] = datetime(2026, 5, 1, 9, 0, 30, tzinfo=UTC).isoformat() + "Z"
    tasks["completed"].append(task)
    return json.dumps(tasks, indent=2)


def leftovers(path: Path, suffix: str = "tmp") -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.{suffix}"))


def test_a_completion_a_killed_swap_displaced_is_merged_by_the_next_sync(
    hb_db: Runner, workspace: Path, tmp_path: Path
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db("config", "set", "sync.auto_export", "true")
    assert [hb_db.json("--now", NOW, "pop")["id"] for _ in range(2)] == ["t1", "t2"]
    runtime = heartbeat_py_complete(path.read_text(), "t2")  # heartbeat.py complete t2
    db = hb_db.env.get("HB_DATABASE_URL")
    _killed_after_exchange(workspace, db, "tasks.json", runtime, tmp_path, "--now", NOW, "complete", "t1")
    # what the kill left: hb's text in place, heartbeat.py's completion at hb's temporary name
    assert statuses(path) == {"pending": [], "in_progress": ["t2"], "completed": ["t1"]}
    [leftover] = leftovers(path)
    assert leftover.read_text() == runtime
    assert hb_db.json("show", "t2")["status"] == "doing"

    result = hb_db("--now", NOW, "sync")
    merged = "merged in the edit another program saved while a killed hb was writing the file"
    assert f"{merged} (left in {leftover.name})" in result.stderr
    assert hb_db.json("show", "t1")["status"] == "done"
    assert hb_db.json("show", "t2")["status"] == "done"  # heartbeat.py's completion stands: no second run
    got = statuses(path)
    assert got["pending"] == got["in_progress"] == [] and sorted(got["completed"]) == ["t1", "t2"]
    assert leftovers(path) == [] and leftovers(path, "hb-kept") == []


def test_the_next_queue_operation_merges_it_before_the_file_moves_on(
    hb_db: Runner, workspace: Path, tmp_path: Path
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2", "t3")
    hb_db("config", "set", "sync.auto_export", "true")
    assert [hb_db.json("--now", NOW, "pop")["id"] for _ in range(2)] == ["t1", "t2"]
    runtime = heartbeat_py_complete(path.read_text(), "t2")
    db = hb_db.env.get("HB_DATABASE_URL")
    _killed_after_exchange(workspace, db, "tasks.json", runtime, tmp_path, "--now", NOW, "complete", "t1")
    [leftover] = leftovers(path)
    # a queue operation before any hb sync: its export would move the file's record on from the
    # text the leftover was made from, so it merges the leftover first
    result = hb_db("--now", NOW, "pop", "--json")
    assert json.loads(result.stdout)["id"] == "t3"
    assert leftover.name in result.stderr
    assert hb_db.json("show", "t2")["status"] == "done"
    got = statuses(path)
    assert got["pending"] == [] and got["in_progress"] == ["t3"] and sorted(got["completed"]) == ["t1", "t2"]
    assert leftovers(path) == [] and leftovers(path, "hb-kept") == []


def test_an_edit_of_todo_md_a_killed_sync_displaced_is_merged(
    hb_db: Runner, workspace: Path, tmp_path: Path
) -> None:
    todo = workspace / "TODO.md"
    todo.write_text("# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n")
    hb_db("--now", NOW, "sync")
    [task] = hb_db.json("list")
    hb_db("--now", NOW, "done", task["id"])
    added = "- [ ] [Created](2026-05-01 08:30) | Call the bank\n"
    runtime = todo.read_text() + added  # the runtime adds an entry just before hb's swap
    db = hb_db.env.get("HB_DATABASE_URL")
    _killed_after_exchange(workspace, db, "TODO.md", runtime, tmp_path, "--now", NOW, "sync")
    assert "Call the bank" not in todo.read_text()
    [leftover] = leftovers(todo)
    assert leftover.read_text() == runtime

    result = hb_db("--now", NOW, "sync")
    assert leftover.name in result.stderr
    text = todo.read_text()
    assert "Call the bank" in text and "Send the invoice" not in text
    assert hb_db.json("show", task["id"])["status"] == "done"
    assert "Call the bank" in [t["title"] for t in hb_db.json("list")]
    assert leftovers(todo) == [] and leftovers(todo, "hb-kept") == []


def test_a_leftover_whose_base_is_unknown_is_kept_aside_with_a_warning(
    hb_db: Runner, workspace: Path
) -> None:
    path = seed_queue(hb_db, workspace, "t1", "t2")
    hb_db.json("--now", NOW, "pop")
    hb_db("--now", NOW, "sync")
    # an older hb's temporary name (no tag): the text the displaced file was made from is not known
    runtime = heartbeat_py_complete(path.read_text(), "t1")
    old = path.with_name(".tasks.json.k7x2q9ab.tmp")
    old.write_text(runtime)
    result = hb_db("--now", NOW, "sync")
    [kept] = leftovers(path, "hb-kept")
    assert kept.read_text() == runtime and not old.exists()
    assert f"{old.name}, left by a killed hb write, holds another program's edit" in result.stderr
    assert str(kept) in result.stderr
    hb_db("--now", NOW, "sync")  # kept, not deleted by the next sync either
    assert kept.read_text() == runtime


def test_hbs_own_leftovers_are_deleted_without_a_word(hb_db: Runner, workspace: Path) -> None:
    path = seed_queue(hb_db, workspace, "t1")
    text = path.read_text()
    tag = swap.temp_tag(text)
    # killed before the exchange (hb's new text, the file still the one it expected), after it with
    # no concurrent edit (the text it expected), and an older hb's copy of the file's own text
    (path.parent / f".tasks.json.{tag}-a1b2c3d4.tmp").write_text(text.replace("do t1", "do t1 (hb)"))
    (path.parent / f".tasks.json.{swap.temp_tag(text + ' ')}-e5f6g7h8.tmp").write_text(text + " ")
    (path.parent / ".tasks.json.i9j0k1l2.tmp").write_text(text)
    result = hb_db("--now", NOW, "sync")
    assert leftovers(path) == [] and leftovers(path, "hb-kept") == []
    assert "killed" not in result.stderr
    assert path.read_text() == text
