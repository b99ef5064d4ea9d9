"""The claude-skills heartbeat skill's ``scripts/heartbeat.py``, as an exact drop-in over the ledger.

A wrapper that runs ``python3 .../heartbeat.py ARGS`` can run ``heartbeat-py ARGS`` (or
``hb compat heartbeat-py ARGS``) instead and see the same stdout, exit codes and files:

- the same argparse command line (``add`` / ``pop`` / ``complete`` / ``fail`` / ``list``, usage
  errors on stderr with exit 2), plus the skill's documented 1.2.0 additions: ``scopes``,
  ``pop --scope`` / ``--accept-stale``, ``complete --scope``, ``clear-stale`` and the exit
  codes 10-14;
- the same project: ``.agent/state/`` under ``git rev-parse --show-toplevel`` of the current
  directory, else the current directory (hb's ``--workspace`` / ``HB_WORKSPACE`` when given);
- the script's semantics where they differ from hb's own commands: ``add`` keeps ``pending``
  sorted by priority (high, medium, low; anything else as medium) and ``pop`` takes
  ``pending[0]``; ``fail`` fails at once (no retry); ``complete`` / ``fail`` of an id that is not
  in progress prints ``Task ID not found in in_progress.`` and exits 0;
- its files, written exactly when the script writes them (``add``, a ``pop`` that took a task, a
  ``complete`` / ``fail`` that found it; and 1.2.0's ``clear-stale``): tasks.json, errors.json,
  last-run.json (with 1.2.0's ``scope``), through :mod:`heartbeat.compat.files`.

Each invocation runs under the workspace's file lock: it imports the files' edits, makes its
change in one ledger transaction (so concurrent processes claim each task exactly once; the
script itself duplicates, loses and corrupts), and writes the files back. What it deliberately
does differently: timestamps are written ``...Z`` (the script writes ``...+00:00Z``), an
unreadable file is a one-line error (exit 1) that changes nothing (the script crashes, or
empties errors.json), and an in-progress claim older than ``queue.lease`` counts as stale
(1.2.0's exit 12).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.errors import InvalidState, NotFound, StaleClaims, describe

if TYPE_CHECKING:
    from heartbeat.compat.files import StateFile
    from heartbeat.db.plain import Conn
    from heartbeat.db.queue import Tx
    from heartbeat.ledger import Ledger

PROG = "heartbeat.py"
SOURCE = "heartbeat-py"  # the tasks its add creates (hb list --source heartbeat-py)
# The order of the script's pending list, which add keeps sorted: high, medium, low; any other
# value (critical included) ranks as medium.
SCRIPT_RANK = {"high": 0, "medium": 1, "low": 2}
INTERNAL_ERROR = 70

EPILOG = """\
hb's drop-in for the claude-skills heartbeat skill's heartbeat.py: the same commands, output,
exit codes and files, over hb's ledger (HB_DATABASE_URL, HB_NOW and HB_WORKSPACE as for hb).
Exit codes: 0 done (also: no pending task, or a task not in progress); 1 a file or value hb
cannot read; 2 usage; 10 scoped queue exhausted; 11 scoped queues exist, pass --scope;
12 stale in_progress entries; 14 --scope is not a queue.

Example:
  heartbeat.py add --priority high --skill deep-research "Survey local LLM orchestration"
  heartbeat.py pop
  heartbeat.py complete task-1a2b3c4d --outcome '{"result": "report.md"}' --trace-id tr-1
"""


def build_parser() -> argparse.ArgumentParser:
    """The script's argparse command line, its help texts included, plus 1.2.0's additions."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Heartbeat Orchestrator - Task Queue Manager",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    add = commands.add_parser("add", help="Add a new task")
    add.add_argument("--priority", choices=["high", "medium", "low"], default="medium")
    add.add_argument("--skill", required=True, help="Assigned skill")
    add.add_argument("--project-id", help="Optional project ID for memory scoping")
    add.add_argument("--agent-id", help="Optional agent ID for memory scoping")
    add.add_argument("--user-id", help="Optional user ID for memory scoping")
    add.add_argument("description", help="Task description")

    pop = commands.add_parser("pop", help="Pop the highest priority pending task and move to in_progress")
    pop.add_argument(
        "--scope", metavar="PATH", help="The scoped queue to pop from (_<batch>_extension.<queue>)"
    )
    pop.add_argument(
        "--accept-stale", action="store_true", help="Adopt stale in_progress entries and proceed"
    )

    complete = commands.add_parser("complete", help="Mark an in_progress task as completed")
    complete.add_argument("task_id", help="ID of the task")
    complete.add_argument("--outcome", help="Optional outcome details (JSON string)")
    complete.add_argument("--trace-id", help="Optional trace ID for observability")
    complete.add_argument("--decision-log", help="Optional decision log for observability")
    complete.add_argument("--scope", metavar="PATH", help="The scoped queue the task is in")

    fail = commands.add_parser("fail", help="Mark an in_progress task as failed")
    fail.add_argument("task_id", help="ID of the task")
    fail.add_argument("--reason", help="Optional failure reason")
    fail.add_argument("--trace-id", help="Optional trace ID for observability")
    fail.add_argument("--decision-log", help="Optional decision log for observability")
    fail.add_argument("--scope", metavar="PATH", help="The scoped queue the task is in")

    commands.add_parser("list", help="List all tasks")
    commands.add_parser("scopes", help="List the scoped queues with their counts")
    clear = commands.add_parser("clear-stale", help="Move stale in_progress entries back to pending")
    clear.add_argument("--scope", metavar="PATH", help="Only this scoped queue")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``heartbeat-py`` command: :func:`run` with ``argv`` (default: the process's arguments)
    and hb's variables ``HB_WORKSPACE``, ``HB_DATABASE_URL``, ``HB_NOW``; returns the exit code."""
    env = os.environ
    try:
        return run(
            sys.argv[1:] if argv is None else argv,
            workspace=env.get("HB_WORKSPACE") or None,
            db=env.get("HB_DATABASE_URL") or None,
            now=env.get("HB_NOW") or None,
        )
    except KeyboardInterrupt:
        return 130


def run(
    argv: Sequence[str],
    *,
    workspace: str | None = None,
    db: str | None = None,
    now: str | None = None,
    quiet: bool = False,
    verbose: int = 0,
) -> int:
    """Run one heartbeat.py command line; returns its exit code (output on stdout / stderr).

    ``workspace`` (default: the git top-level of the current directory, else the current
    directory), ``db`` and ``now`` are hb's ``--workspace``, ``--db`` and ``--now``.
    """
    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    try:
        root = Path(workspace) if workspace else project_root()
        result = _invoke(args, root, db=db, now=now, quiet=quiet)
    except Exception as exc:
        described = describe(exc)
        if described is None:
            if verbose:
                raise
            text = " ".join(str(exc).split())[:300]
            described = (
                f"internal error: {type(exc).__name__}: {text} (hb -v compat heartbeat-py ... shows where)",
                INTERNAL_ERROR,
            )
        message, code = described
        _print(f"hb: {message}", err=True)
        return code
    for line in result.stderr:
        _print(line, err=True)
    for line in result.stdout:
        _print(line)
    return result.code


def project_root() -> Path:
    """The directory heartbeat.py keeps ``.agent/state`` in: the git top-level of the current
    directory (asked of git, as the script asks it), else the current directory."""
    import subprocess

    try:
        found = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], stderr=subprocess.DEVNULL)
        return Path(found.decode("utf-8").strip())
    except Exception:  # no git, not a repository, ...: the script falls back the same way
        return Path(os.getcwd())


def _print(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


# --- one invocation ------------------------------------------------------------------------------


@dataclass
class Result:
    """What a command printed and which files it changed."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    code: int = 0
    changed: tuple[str, ...] = ()  # the files besides tasks.json this operation wrote into
    saving: bool = False  # the script saves its files after it (and adds a missing failed list)


# The files each command may change; their edits are imported before it runs.
_FILES = {"fail": ("errors-json", "last-run"), "complete": ("last-run",)}


def _invoke(args: argparse.Namespace, root: Path, *, db: str | None, now: str | None, quiet: bool) -> Result:
    from heartbeat.compat import files
    from heartbeat.ledger import Ledger
    from heartbeat.ops.sync.files import file_lock

    if not root.is_dir():
        raise NotFound(f"workspace {root} is not a directory")
    if now:  # its form first: a bad time creates no ledger
        from datetime import UTC

        from heartbeat.clock import parse_when

        parse_when(now, UTC, what="--now time")
    with file_lock(root), Ledger.open(root, db=db, now=now) as ledger:
        notices = []
        if ledger.backup_path and not quiet:
            notices.append(f"upgraded the ledger schema; backup at {ledger.backup_path}")
        at = ledger.now()
        state = files.read(root, (files.TASKS, *_FILES.get(args.command, ())))
        with _transaction(ledger) as (_, conn):
            known = files.remembered(conn, texts=False)
        edited = files.edited(state, known)
        if edited:
            notices.extend(f"hb: warning: {n}" for n in files.import_edits(ledger.ctx, edited, at))
        with _transaction(ledger) as (tx, conn):
            result = COMMANDS[args.command](ledger, tx, conn, at, args)
        wanted = {kind: state[kind] for kind in (files.TASKS, *result.changed)}
        if result.saving:  # the script writes its files exactly when it saves
            notices.extend(_write_files(ledger, root, wanted, at))
        elif args.command == "list":
            with _transaction(ledger) as (_, conn):
                texts = files.render(conn, wanted, files.remembered(conn), saving=False)
            result.stdout.append(_document_text(texts.get(files.TASKS)))
        result.stderr[:0] = notices
        return result


_TRIES = 5  # renders of the files when another program keeps writing them meanwhile


def _write_files(ledger: Ledger, root: Path, wanted: dict[str, StateFile], at: datetime) -> list[str]:
    """Render and write the files; an edit another program made while this call ran is taken in
    first (the merge keeps this call's change and the edit), then rendered again: never written
    over. Returns the notices for stderr."""
    from heartbeat.compat import files

    notices: list[str] = []
    for _ in range(_TRIES):
        with _transaction(ledger) as (_, conn):
            known = files.remembered(conn)
            texts = files.render(conn, wanted, known, saving=True)
            found = files.read(root, wanted)
            if all(found[kind].text == file.text for kind, file in wanted.items()):
                written, moved = files.save(conn, wanted, known, texts, at)
                if not moved:
                    return notices
                # a file changed between the read and the swap: merge it in, and the next round
                # starts from what this one wrote
                found = {**found, **moved}
                found.update({k: files.StateFile(k, found[k].path, texts[k]) for k in written})
        edited = [f for kind, f in found.items() if f.text is not None and f.text != wanted[kind].text]
        if edited:
            notices.extend(f"hb: warning: {n}" for n in files.import_edits(ledger.ctx, edited, at))
        wanted = found
    paths = ", ".join(str(file.path) for file in wanted.values())
    return [*notices, f"hb: warning: {paths}: kept changing while hb wrote them; left as they are (hb sync)"]


@contextmanager
def _transaction(ledger: Ledger) -> Iterator[tuple[Tx, Conn]]:
    """One transaction on the ledger's driver connection, as the queue and as plain SQL."""
    from heartbeat.db import queue
    from heartbeat.db.plain import Conn

    name = ledger.engine_dialect()
    dialect = _DIALECTS.get(name)
    if dialect is None:
        dialect = _DIALECTS[name] = queue.Dialect(name)
    with queue.transaction(queue.Tx(ledger.raw, dialect)) as tx:
        yield tx, Conn(ledger.raw, sqlite=dialect.sqlite)


_DIALECTS: dict[str, Any] = {}  # the queue's SQL, adapted once per backend


def _document_text(text: str | None) -> str:
    """What ``list`` prints: the document with indent=2, a missing ``failed`` list added (a
    byte order mark, which hb keeps in the file, is not part of it)."""
    empty: dict[str, Any] = {"pending": [], "in_progress": [], "completed": []}
    doc = json.loads(text.removeprefix("\ufeff")) if text is not None else empty
    if "failed" not in doc:
        doc["failed"] = []
    return json.dumps(doc, indent=2)


# --- the commands: each runs in one transaction --------------------------------------------------

Command = Callable[["Ledger", "Tx", "Conn", datetime, argparse.Namespace], Result]

# the pending list of tasks.json (FORMATS.md 2: the open statuses it holds), without the TODO.md entries
_PENDING = "scope = '' AND source <> 'todo' AND status IN ('todo', 'waiting', 'blocked', 'snoozed')"
_SQL = {
    "id_taken": "SELECT 1 FROM tasks WHERE scope = '' AND id = :id",
    "pending": f"SELECT pk, priority, position FROM tasks WHERE {_PENDING} ORDER BY position, pk",
    "end": "SELECT coalesce(max(position), -1) + 1 FROM tasks WHERE scope = '' AND source <> 'todo'",
    "insert": (
        "INSERT INTO tasks (id, scope, source, title, status, priority, priority_rank, position, "
        "follow_up, attempts, version, created_at, updated_at, last_update_at, skill, project_id, "
        "agent_id, user_id) VALUES (:id, '', :source, :title, 'todo', :priority, :rank, :position, "
        ":no, 0, 1, :now, :now, :now, :skill, :project_id, :agent_id, :user_id) RETURNING pk"
    ),
    "created": (
        "INSERT INTO task_events (task_pk, task_id, scope, at, kind, actor) "
        "VALUES (:pk, :id, '', :now, 'created', :actor)"
    ),
    "move": "UPDATE tasks SET position = :position WHERE pk = :pk",
}


def _add(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    import secrets

    from heartbeat.formats.tasks_json import priority_rank

    while True:  # task- + 8 hex digits, as the script names tasks (and never one already taken)
        task_id = "task-" + secrets.token_hex(4)
        if db.one(_SQL["id_taken"], {"id": task_id}) is None:
            break
    pending = [Pending(*row) for row in db.rows(_SQL["pending"])]
    end = db.one(_SQL["end"])
    position, moves = place_new(pending, args.priority, end[0] if end else 0)
    db.executemany(_SQL["move"], [{"pk": pk, "position": p} for pk, p in moves])
    found = db.one(
        _SQL["insert"],
        {
            "id": task_id,
            "source": SOURCE,
            "title": args.description,
            "priority": args.priority,
            "rank": priority_rank(args.priority),
            "position": position,
            "no": db.flag(False),
            "now": db.time(now),
            "skill": args.skill,
            "project_id": args.project_id,
            "agent_id": args.agent_id,
            "user_id": args.user_id,
        },
    )
    assert found is not None  # RETURNING pk
    db.execute(_SQL["created"], {"pk": found[0], "id": task_id, "now": db.time(now), "actor": SOURCE})
    return Result([f"Added task {task_id}"], saving=True)


@dataclass(frozen=True)
class Pending:
    """A task of the pending list, in the list's order."""

    pk: int
    priority: str | None
    position: int


def script_rank(priority: str | None) -> int:
    return SCRIPT_RANK.get(priority or "medium", SCRIPT_RANK["medium"])


def place_new(pending: Sequence[Pending], priority: str, end: int) -> tuple[int, list[tuple[int, int]]]:
    """The position for a task the script's add appends to ``pending`` before its stable sort by
    priority, and the (pk, position) moves of the tasks that sort has to shift.

    ``end`` is a position after every other one. A list already in order takes the new task in its
    place (the tasks after it shift only when there is no gap); a list out of order (edited by hand)
    is renumbered in the sorted order, as the script's sort rewrites it.
    """
    ranks = [script_rank(p.priority) for p in pending]
    rank = script_rank(priority)
    increasing = all(a.position < b.position for a, b in itertools.pairwise(pending))
    if increasing and ranks == sorted(ranks):
        at = bisect_right(ranks, rank)
        if at == len(pending):
            return end, []
        if at == 0:
            return pending[0].position - 1, []
        before, after = pending[at - 1].position, pending[at].position
        if after - before > 1:
            return before + 1, []
        return after, [(p.pk, p.position + 1) for p in pending[at:]]
    new = len(pending)
    order = sorted(range(new + 1), key=lambda i: rank if i == new else ranks[i])
    base = min(p.position for p in pending)
    position = base + order.index(new)
    moves = [
        (pending[i].pk, base + k) for k, i in enumerate(order) if i != new and pending[i].position != base + k
    ]
    return position, moves


def _pop(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    from heartbeat.clock import parse_duration
    from heartbeat.db import queue

    try:
        popped = queue.pop(
            tx,
            now,
            scope=args.scope,
            worker=queue.default_worker(),
            lease=parse_duration(ledger.settings.queue_lease, what="queue.lease"),
            accept_stale=args.accept_stale,
            file_order=True,
        )
    except StaleClaims as exc:
        raise StaleEntries(exc.ids) from None
    result = Result(
        stderr=[f"adopted stale claim {tid} (re-leased to you)" for tid in popped.adopted]
        + [f"skipped {tid}: blocked ({blocker})" for tid, blocker in popped.skipped]
    )
    if popped.exhausted is not None:  # committed (adoptions stand), then exit 10
        result.stderr.append(f"hb: {popped.exhausted.message}")
        result.code = popped.exhausted.exit_code
        return result
    if popped.task is None:
        result.stdout.append("No pending tasks.")
        return result
    _to_end_of_list(db, popped.task)
    result.stdout.append(json.dumps(queue.task_object(popped.task), indent=2))
    result.saving = True
    return result


class StaleEntries(StaleClaims):
    """Exit 12, with the drop-in's own commands as the way out."""

    def __init__(self, ids: Sequence[str]) -> None:
        super().__init__(ids)
        self.message = (
            f"{len(self.ids)} stale in_progress task(s): {', '.join(self.ids)}; "
            f"run `{PROG} clear-stale` or `{PROG} pop --accept-stale`"
        )


def _complete(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    from heartbeat.db import queue

    outcome = script_outcome(args.outcome)
    record = _last_run(now, "completed", outcome, args.trace_id, args.decision_log)
    try:
        row = queue.complete(tx, now, args.task_id, scope=_scope(args), outcome=outcome, last_run=record)
    except (NotFound, InvalidState):
        return Result([f"Task {args.task_id} not found in in_progress."])
    _to_end_of_list(db, row)
    return Result([f"Marked task {args.task_id} as completed."], changed=("last-run",), saving=True)


def _fail(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    from heartbeat.db import queue

    outcome = {"reason": args.reason} if args.reason else {}
    record = _last_run(now, "failed", outcome, args.trace_id, args.decision_log)
    try:
        row = queue.fail(
            tx,
            now,
            args.task_id,
            scope=_scope(args),
            reason=args.reason,
            final=True,  # the script has no retries: failed at once
            max_attempts=ledger.settings.queue_max_attempts,
            trace=queue.Trace(args.trace_id, args.decision_log),
            last_run=record,
        )
    except (NotFound, InvalidState):
        return Result([f"Task {args.task_id} not found in in_progress."])
    _to_end_of_list(db, row)
    return Result(
        [f"Marked task {args.task_id} as failed."], changed=("errors-json", "last-run"), saving=True
    )


def _list(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    return Result()  # the document is printed once tasks.json is rendered


def _scopes(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    from heartbeat.db import queue

    counts = queue.scope_counts(tx)
    if not counts:
        return Result(stderr=["No scoped queues."])
    return Result([queue.scope_line(q) for q in counts])


def _clear_stale(ledger: Ledger, tx: Tx, db: Conn, now: datetime, args: argparse.Namespace) -> Result:
    from heartbeat.db import queue

    cleared = queue.clear_stale(tx, now, scope=args.scope)
    return Result([f"Cleared {len(cleared)} stale task(s)."], saving=bool(cleared))


COMMANDS: dict[str, Command] = {
    "add": _add,
    "pop": _pop,
    "complete": _complete,
    "fail": _fail,
    "list": _list,
    "scopes": _scopes,
    "clear-stale": _clear_stale,
}


def _scope(args: argparse.Namespace) -> str:
    """The queue complete / fail look in: --scope, else the legacy in_progress list (never a scoped
    queue: the script looks in tasks["in_progress"] only)."""
    return str(args.scope) if args.scope is not None else ""


def _to_end_of_list(db: Conn, row: Mapping[str, Any]) -> None:
    """A legacy task that moved to another list goes to its end, as the script appends it."""
    if not row["scope"]:
        end = db.one(_SQL["end"])
        db.execute(_SQL["move"], {"pk": row["pk"], "position": end[0] if end else 0})


def script_outcome(text: str | None) -> Any:
    """``--outcome`` as the script records it: its JSON value, ``{"result": TEXT}`` for text that is
    not JSON, and ``{}`` for none (or a JSON value that is empty or false). ``NaN`` and
    ``Infinity`` count as text: no JSON reader but Python's could read them back."""
    from heartbeat.formats.tasks_json import outcome_value

    return (outcome_value(text) if text else None) or {}


def _last_run(
    now: datetime, status: str, outcome: Any, trace_id: str | None, decision_log: str | None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The script's last-run.json object for the finished task: who and what as its tasks.json
    object has them (absent: null), plus 1.2.0's ``scope``."""

    def record(row: dict[str, Any]) -> dict[str, Any]:
        from heartbeat.db.queue import task_object
        from heartbeat.formats.tasks_json import last_run_entry

        task = task_object(row)
        return last_run_entry(
            timestamp=now,
            task_id=row["id"],
            status=status,
            description=task.get("description"),
            assigned_skill=task.get("assigned_skill"),
            project_id=task.get("project_id"),
            agent_id=task.get("agent_id"),
            user_id=task.get("user_id"),
            outcome=outcome,
            trace_id=trace_id,
            decision_log=decision_log,
            scope=row["scope"] or None,
        )

    return record
