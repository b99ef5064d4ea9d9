"""Task CRUD: hb add, list, show, update, done, cancel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from heartbeat.cli import complete as completion
from heartbeat.cli.base import (
    Choice,
    emit,
    emit_all,
    fields_option,
    json_option,
    limit_option,
    pick,
    state,
    table,
)

F = TypeVar("F", bound=Callable[..., Any])

# (option, ledger field, help); durations and times are read by the ledger
FIELD_OPTIONS: list[tuple[str, str, str]] = [
    ("--status", "status", "todo, doing, waiting, blocked, snoozed, done, cancelled, failed."),
    ("--priority", "priority", "critical, high, medium or low."),
    ("--due", "due_at", "Due time, ISO 8601 (naive = workspace timezone); 'none' clears."),
    ("--next-check", "next_check_at", "Next check time, ISO 8601; 'none' clears."),
    ("--not-before", "not_before", "Defer: not popped, nor due, before this time (ISO 8601); 'none' clears."),
    ("--check-interval", "check_interval", "How often to check: 30m, 6h, 2d, 1w or PT6H."),
    ("--stale-after", "stale_after", "Stale after this long without an update (duration)."),
    ("--risk", "risk", "Explicit risk override: P0, P1 or P2; 'none' clears."),
    ("--note", "last_progress_note", "Latest progress note."),
    ("--next-action", "next_action", "The next concrete action (the reminder's suggestion)."),
    ("--fallback-action", "fallback_action", "What to do if the next action fails."),
    ("--blocker", "blocker", "What blocks the task; 'none' clears."),
    ("--skill", "skill", "Skill assigned to the task (tasks.json assigned_skill)."),
    ("--project-id", "project_id", "Project id (tasks.json project_id)."),
    ("--agent-id", "agent_id", "Agent id (tasks.json agent_id)."),
    ("--user-id", "user_id", "User id (tasks.json user_id)."),
]


STATUSES = ("todo", "doing", "waiting", "blocked", "snoozed", "done", "cancelled", "failed")
CHOICES: dict[str, Choice] = {
    "status": Choice(STATUSES),
    "priority": Choice(("critical", "high", "medium", "low", "none")),
    "risk": Choice(("P0", "P1", "P2", "none")),
}


def field_options(fn: F) -> F:
    fn = click.option(
        "--after",
        "after",
        multiple=True,
        metavar="ID",
        help="Wait for this task: not popped before it is done (repeatable; update: replaces; none clears).",
    )(fn)
    for opt, dest, help_text in reversed(FIELD_OPTIONS):
        kind = CHOICES.get(dest)
        fn = click.option(opt, dest, metavar="VALUE", type=kind, help=help_text)(fn)
    return click.option(
        "--follow-up/--no-follow-up",
        "follow_up",
        default=None,
        help="The user asked to be kept posted (reminders may repeat).",
    )(fn)


def _fields_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No tasks."
    names = list(rows[0])
    return table([[r.get(n) for n in names] for r in rows], names)


def _task_line(t: dict[str, Any]) -> str:
    parts = [t["id"], f"[{t['status']}]"]
    if t.get("priority"):
        parts.append(t["priority"])
    if t.get("scope"):
        parts.append(f"({t['scope']})")
    parts.append(t["title"])
    return " ".join(parts)


def _show_task(t: dict[str, Any]) -> str:
    width = max(len(k) for k in t)
    lines = []
    for key, value in t.items():
        if value is None or key == "history":
            continue
        lines.append(f"{key.ljust(width)}  {value}")
    for event in t.get("history", []):
        fields = ", ".join((event.get("detail") or {}).get("fields", []))
        lines.append(f"  {event['at']}  {event['kind']}  {fields}".rstrip())
    return "\n".join(lines)


@click.command()
@click.argument("title", nargs=-1, required=True)
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Queue to add to (a scoped queue path); default: the legacy list.",
)
@click.option("--id", "task_id", metavar="ID", help="Use this id instead of a generated task-xxxxxxxx.")
@click.option(
    "--source",
    type=click.Choice(["cli", "todo"]),
    default="cli",
    show_default=True,
    help="todo: a TODO.md entry (id todo-xxxxxxxx, written by hb sync); cli: a queue task (tasks.json).",
)
@click.option("--chat-id", "chat_id", metavar="REF", help="Chat to report to, like tg:-100123 (ChatID).")
@click.option(
    "--key",
    metavar="KEY",
    help="Idempotent add: a task added with KEY already (in this queue) is returned, not added again.",
)
@field_options
@json_option
def add(
    title: tuple[str, ...],
    scope: str | None,
    task_id: str | None,
    source: str,
    chat_id: str | None,
    key: str | None,
    after: tuple[str, ...],
    **fields: Any,
) -> None:
    """Add a task (status todo); prints its id.

    With --key, a retried add (after a timeout, say) returns the task the first
    one made: same id, exit 0, a notice on stderr.

    \b
    Example:
      hb add "Deep research local LLM orchestration" --priority high --skill deep-research
      hb add "Send the invoice" --due 2026-05-02T17:00 --next-action "email the PDF" --json
      hb add "Remind John to submit the report" --source todo --chat-id tg:-100123
      hb add "Deploy" --after task-1a2b3c4d --not-before 2026-05-02T09:00 --key deploy-502
    """
    if not " ".join(title).strip():
        raise click.UsageError("TITLE is empty: give the task a title")
    ledger = state().ledger()
    if source == "todo":
        if scope or task_id or key is not None or after:
            raise click.UsageError(
                "--source todo takes no --scope, --id, --key or --after (it is a TODO.md entry)"
            )
        task = ledger.add_todo(" ".join(title), chat_id=chat_id, **fields)
    else:
        if any(a.strip().lower() == "none" for a in after):
            raise click.UsageError("--after none is for hb update (a new task waits for nothing already)")
        task = ledger.add(
            " ".join(title), scope=scope, task_id=task_id, chat_id=chat_id, key=key, after=after, **fields
        )
    emit(task, lambda t: t["id"])


@click.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    type=Choice((*STATUSES, "active", "all")),
    help="Only these statuses (repeatable); 'all' for every status. Default: the active ones.",
)
@click.option("--all", "show_all", is_flag=True, help="Every status, finished ones included.")
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Only this queue ('' for the legacy list).",
)
@click.option(
    "--source",
    type=click.Choice(["cli", "tasks-json", "todo", "poke", "recur"]),
    help="Only tasks from this source.",
)
@click.option("--text", metavar="TEXT", help="Only tasks whose title or id contains TEXT (any case).")
@click.option("--due-before", metavar="WHEN", help="Only tasks due before WHEN (ISO 8601).")
@fields_option
@limit_option
@json_option
def list_(
    statuses: tuple[str, ...],
    show_all: bool,
    scope: str | None,
    source: str | None,
    text: str | None,
    due_before: str | None,
    fields: str | None,
    limit: int | None,
) -> None:
    """List tasks (a JSON array with --json; --fields for fewer fields).

    \b
    Example:
      hb list --status doing --json
      hb list --all --text report
      hb list --json --fields id,title,status --limit 20
    """
    wanted: list[str] = ["all"] if show_all else list(statuses)
    ledger = state().ledger()
    rows = ledger.iter_list(
        status=wanted or None, scope=scope, source=source, text=text, due_before=due_before, limit=limit
    )
    emit_all(
        rows,
        lambda rs: (
            table(
                [(t["id"], t["status"], t["priority"], t["due_at"], t["scope"], t["title"]) for t in rs],
                ["id", "status", "priority", "due", "scope", "title"],
            )
            if rs
            else "No tasks."
        ),
        fields=fields,
        fields_human=_fields_table,
    )


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Disambiguate an id that exists in several queues.",
)
@click.option("--history", is_flag=True, help="Include every earlier version of the task.")
@fields_option
@json_option
def show(task_id: str, scope: str | None, history: bool, fields: str | None) -> None:
    """Show one task.

    \b
    Example:
      hb show task-1a2b3c4d --history
      hb show task-1a2b3c4d --json --fields status,claim,lease_expires_at
    """
    emit(pick(state().ledger().get(task_id, scope=scope, history=history), fields), _show_task)


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Disambiguate an id that exists in several queues.",
)
@click.option("--title", metavar="TEXT", help="New title.")
@click.option(
    "--chat-id", "chat_id", metavar="REF", help="Chat to report to, like tg:-100123 (ChatID); 'none' clears."
)
@field_options
@json_option
def update(task_id: str, scope: str | None, title: str | None, after: tuple[str, ...], **fields: Any) -> None:
    """Change a task's fields; the previous version is kept in its history.

    --after replaces what the task waits for (a cycle is refused, exit 1 naming
    it); --after none clears it.

    \b
    Example:
      hb update task-1a2b3c4d --status blocked --blocker "waiting for the API key" --risk P1
      hb update task-1a2b3c4d --after task-9f8e7d6c --not-before none
      hb update todo-5e6f7a8b --chat-id tg:-100123
    """
    if title is None and not after and all(value is None for value in fields.values()):
        raise click.UsageError("nothing to update: pass at least one field (hb update --help lists them)")
    task = state().ledger().update(task_id, scope=scope, title=title, after=after or None, **fields)
    emit(task, _task_line)


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Disambiguate an id that exists in several queues.",
)
@json_option
def done(task_id: str, scope: str | None) -> None:
    """Mark a task done (completed_at = now) and record its outcome.

    \b
    Example:
      hb done task-1a2b3c4d
    """
    emit(state().ledger().done(task_id, scope=scope), _task_line)


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Disambiguate an id that exists in several queues.",
)
@json_option
def cancel(task_id: str, scope: str | None) -> None:
    """Mark a task cancelled.

    \b
    Example:
      hb cancel task-1a2b3c4d
    """
    emit(state().ledger().cancel(task_id, scope=scope), _task_line)


COMMANDS = [add, list_, show, update, done, cancel]
