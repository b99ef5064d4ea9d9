"""The queue commands: the claude-skills heartbeat skill's queue, with its exit codes (0/10-14)."""

from __future__ import annotations

import json

import click

from heartbeat.cli.base import emit, info, json_option, state


@click.command()
@json_option
def scopes() -> None:
    """List the scoped queues with their ready / in_progress / completed / total counts.

    \b
    Example:
      hb scopes
      # _round3_extension.ag_implementation_queue  (3 ready / 0 in_progress / 0 completed / 3 total)
    """
    from heartbeat.queue import scope_line

    rows = state().ledger().scopes()
    if not rows and not state().json:
        info("No scoped queues.")
        return
    emit(rows, lambda rs: "\n".join(scope_line(q) for q in rs))


@click.command()
@click.option("--scope", metavar="PATH", help="The scoped queue to pop from (required when queues exist).")
@click.option("--id", "task_id", metavar="ID", help="Pop this task instead of the next one.")
@click.option("--accept-stale", is_flag=True, help="Adopt stale in-progress claims (re-lease them to you).")
@click.option("--worker", metavar="NAME", help="Who claims the task [env HB_WORKER; default host:pid].")
@click.option("--lease", metavar="DURATION", help="How long the claim holds (default: setting queue.lease).")
@json_option
def pop(
    scope: str | None, task_id: str | None, accept_stale: bool, worker: str | None, lease: str | None
) -> None:
    """Claim the next task and print it as one JSON object.

    Legacy list: the first pending task by priority, then FIFO; none: "No pending
    tasks." and exit 0. Scoped queue: the first ready entry by order, skipping
    blocked ones; none left: exit 10. Exit 11: queues exist but no --scope;
    12: stale claims exist; 13: --id names a blocked entry; 14: no such queue.

    \b
    Example:
      hb pop
      hb pop --scope _round3_extension.ag_implementation_queue --worker agent-7
    """
    from heartbeat.errors import QueueExhausted
    from heartbeat.queue import default_worker, task_object

    ledger = state().ledger()
    try:
        result = ledger.pop_result(
            scope=scope,
            task_id=task_id,
            worker=worker or default_worker(),
            lease=lease,
            accept_stale=accept_stale,
        )
    except QueueExhausted as exhausted:
        _notices(exhausted.adopted, exhausted.skipped)  # the adopted claims are the caller's now
        raise
    _notices(result.adopted, result.skipped)
    if result.task is None:
        if state().json:
            click.echo("null")
        else:
            click.echo("No pending tasks.")
        return
    click.echo(json.dumps(task_object(result.task), ensure_ascii=False))


def _notices(adopted: list[str], skipped: list[tuple[str, str]]) -> None:
    for tid in adopted:
        click.echo(f"adopted stale claim {tid} (re-leased to you)", err=True)
    for tid, blocker in skipped:
        click.echo(f"skipped {tid}: blocked ({blocker})", err=True)


@click.command()
@click.argument("task_id", metavar="ID")
@click.option("--scope", metavar="PATH", help="The queue the task is in.")
@click.option("--outcome", metavar="JSON", help='The result; non-JSON text is stored as {"result": TEXT}.')
@json_option
def complete(task_id: str, scope: str | None, outcome: str | None) -> None:
    """Finish a claimed task and record its outcome.

    \b
    Example:
      hb complete task-1a2b3c4d --outcome '{"pr": 502, "merged": true}'
    """
    from heartbeat.formats.tasks_json import outcome_value

    value = outcome_value(outcome) if outcome is not None else None
    done = state().ledger().complete(task_id, scope=scope, outcome=value)
    emit(done, lambda d: f"Completed {d['id']}" + (f" in {d['scope']}" if d["scope"] else ""))


@click.command()
@click.argument("task_id", metavar="ID")
@click.option("--scope", metavar="PATH", help="The queue the task is in.")
@click.option("--reason", metavar="TEXT", help='Why it failed (default "Unknown failure").')
@click.option("--final", is_flag=True, help="Do not retry: mark it failed now.")
@json_option
def fail(task_id: str, scope: str | None, reason: str | None, final: bool) -> None:
    """Record a failure; the task is retried until queue.max_attempts, then failed.

    \b
    Example:
      hb fail task-1a2b3c4d --reason "API returned 503"
    """
    row = state().ledger().fail(task_id, scope=scope, reason=reason, final=final)
    emit(
        row,
        lambda r: (
            f"{r['id']}: attempt {r['attempts']} failed; "
            + ("returned to the queue for a retry" if r["retry"] else "marked failed")
        ),
    )


@click.command("clear-stale")
@click.option("--scope", metavar="PATH", help="Only this queue (default: every queue).")
@json_option
def clear_stale(scope: str | None) -> None:
    """Return stale in-progress claims (expired lease, or no claim record) to the queue.

    \b
    Example:
      hb clear-stale --scope _round3_extension.ag_implementation_queue
    """
    ids = state().ledger().clear_stale(scope=scope)
    emit({"cleared": ids, "count": len(ids)}, lambda d: f"Cleared {d['count']} stale task(s).")


COMMANDS = [scopes, pop, complete, fail, clear_stale]
