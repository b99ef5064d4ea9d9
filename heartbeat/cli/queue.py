"""The queue commands: the claude-skills heartbeat skill's queue, with its exit codes (0/10-14), and
hb's claims on top: a token per claim (exit 15 "claim lost"), renewal, and `hb ready`."""

from __future__ import annotations

from typing import Any

import click

from heartbeat.cli import complete as completion
from heartbeat.cli.base import LIMIT_MAX, emit, fields_option, info, json_option, pick, say, state, table
from heartbeat.formats import strict_json


@click.command()
@json_option
def scopes() -> None:
    """List the scoped queues with their ready / in_progress / completed / total counts.

    \b
    Example:
      hb scopes
      # _round3_extension.ag_implementation_queue  (3 ready / 0 in_progress / 0 completed / 3 total)
    """
    from heartbeat.db.queue import scope_line

    rows = state().ledger().scopes()
    if not rows and not state().json:
        info("No scoped queues.")
        return
    emit(rows, lambda rs: "\n".join(scope_line(q) for q in rs))


@click.command()
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="The scoped queue to pop from (required when queues exist).",
)
@click.option("--id", "task_id", metavar="ID", help="Pop this task instead of the next one.")
@click.option(
    "--accept-stale",
    is_flag=True,
    help="Take over the first stale claim (re-leased to you, with a new claim); one per pop.",
)
@click.option("--worker", metavar="NAME", help="Who claims the task [env HB_WORKER; default host:pid].")
@click.option("--lease", metavar="DURATION", help="How long the claim holds (default: setting queue.lease).")
@fields_option
@json_option
def pop(
    scope: str | None,
    task_id: str | None,
    accept_stale: bool,
    worker: str | None,
    lease: str | None,
    fields: str | None,
) -> None:
    """Claim the next task and print it as one JSON object.

    The object is the task's own fields, then "claim": the claim's token, which
    complete / fail / renew --claim take.

    Legacy list: the first pending task by priority, then FIFO; none: "No pending
    tasks." and exit 0. Scoped queue: the first ready entry by order, skipping
    blocked ones; none left: exit 10. A task deferred (--not-before) or waiting
    for another (--after) is passed over. Exit 11: queues exist but no --scope;
    12: stale claims exist; 13: --id names a blocked, deferred or waiting entry;
    14: no such queue. With --accept-stale the first stale claim is taken over
    and printed (stderr says so); a ready task only once none is left.

    \b
    Example:
      hb pop
      hb pop --scope _round3_extension.ag_implementation_queue --worker agent-7
      hb pop --lease 5m   # then: hb renew ID --claim TOKEN; hb complete ID --claim TOKEN
    """
    from heartbeat.db.queue import default_worker, popped_object
    from heartbeat.errors import QueueExhausted

    ledger = state().ledger()
    try:
        result = ledger.pop_result(
            scope=scope,
            task_id=task_id,
            worker=worker or default_worker(),
            lease=lease,
            accept_stale=accept_stale,
            # a field the task lacks is a usage error before the claim is committed
            check=(lambda task: pick(popped_object(task), fields)) if fields else None,
        )
    except QueueExhausted as exhausted:
        _notices(exhausted.adopted, {}, exhausted.skipped)
        raise
    _notices(result.adopted, result.adopted_from, result.skipped)
    if result.task is None:
        if state().json:
            click.echo("null")
        else:
            click.echo("No pending tasks.")
        return
    click.echo(strict_json.dumps(pick(popped_object(result.task), fields), ensure_ascii=False))


def _notices(adopted: list[str], holders: dict[str, str | None], skipped: list[tuple[str, str]]) -> None:
    for tid in adopted:
        holder = holders.get(tid)
        held = f" from {holder}" if holder else ""
        say(f"adopted stale claim {tid}{held} (re-leased to you, with a new claim)")
    for tid, blocker in skipped:
        say(f"skipped {tid}: blocked ({blocker})")


claim_option = click.option(
    "--claim",
    metavar="TOKEN",
    help="The claim token pop printed: refused (exit 15) once the task is no longer under it.",
)


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option("--scope", metavar="PATH", shell_complete=completion.scopes, help="The queue the task is in.")
@click.option("--outcome", metavar="JSON", help='The result; non-JSON text is stored as {"result": TEXT}.')
@claim_option
@json_option
def complete(task_id: str, scope: str | None, outcome: str | None, claim: str | None) -> None:
    """Finish a claimed task and record its outcome.

    With --claim, only while that token is the task's claim: once the task was
    taken over, cleared or finished by someone else, exit 15 names who holds it
    now and nothing changes. Without --claim, whoever holds it (as heartbeat.py):
    the claim it closes is lost to its holder, whose --claim then exits 15.

    \b
    Example:
      hb complete task-1a2b3c4d --outcome '{"pr": 502, "merged": true}'
      hb complete task-1a2b3c4d --claim 5f0c2a9e41d7b3c86a1e0f24
    """
    from heartbeat.formats.tasks_json import outcome_value

    value = outcome_value(outcome) if outcome is not None else None
    done = state().ledger().complete(task_id, scope=scope, outcome=value, claim=_token(claim))
    emit(done, lambda d: f"Completed {d['id']}" + (f" in {d['scope']}" if d["scope"] else ""))


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option("--scope", metavar="PATH", shell_complete=completion.scopes, help="The queue the task is in.")
@click.option("--reason", metavar="TEXT", help='Why it failed (default "Unknown failure").')
@click.option("--final", is_flag=True, help="Do not retry: mark it failed now.")
@claim_option
@json_option
def fail(task_id: str, scope: str | None, reason: str | None, final: bool, claim: str | None) -> None:
    """Record a failure; the task is retried until queue.max_attempts, then failed.

    With --claim, only while that token is the task's claim (exit 15 otherwise,
    and nothing changes): an old holder cannot send back to the queue a task
    another worker is doing. Without --claim, the claim it closes is lost to its
    holder, as with complete.

    \b
    Example:
      hb fail task-1a2b3c4d --reason "API returned 503"
    """
    row = state().ledger().fail(task_id, scope=scope, reason=reason, final=final, claim=_token(claim))
    emit(
        row,
        lambda r: (
            f"{r['id']}: attempt {r['attempts']} failed; "
            + ("returned to the queue for a retry" if r["retry"] else "marked failed")
        ),
    )


@click.command("clear-stale")
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Only this queue (default: every queue).",
)
@json_option
def clear_stale(scope: str | None) -> None:
    """Return stale in-progress claims (expired lease, or no claim record) to the queue.

    \b
    Example:
      hb clear-stale --scope _round3_extension.ag_implementation_queue
    """
    ids = state().ledger().clear_stale(scope=scope)
    emit({"cleared": ids, "count": len(ids)}, lambda d: f"Cleared {d['count']} stale task(s).")


def _token(claim: str | None) -> str | None:
    if claim is not None and not claim.strip():  # an unset variable in `--claim "$TOKEN"`
        raise click.BadParameter("empty token (leave --claim out to act without one)", param_hint="--claim")
    return claim


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option("--claim", metavar="TOKEN", required=True, help="The claim token pop printed.")
@click.option("--scope", metavar="PATH", shell_complete=completion.scopes, help="The queue the task is in.")
@click.option("--lease", metavar="DURATION", help="How long from now (default: setting queue.lease).")
@json_option
def renew(task_id: str, claim: str, scope: str | None, lease: str | None) -> None:
    """Extend a claim's lease from now, while the token is still the task's claim.

    Exit 15 when the claim was lost (taken over, cleared, finished by someone
    else). A lease that ran out is renewed as long as nobody took the task over.
    Renew well inside the lease (e.g. every lease/3) while the work runs.

    \b
    Example:
      hb renew task-1a2b3c4d --claim 5f0c2a9e41d7b3c86a1e0f24 --lease 10m
    """
    row = state().ledger().renew(task_id, _token(claim) or claim, scope=scope, lease=lease)
    emit(row, lambda r: f"{r['id']}: leased until {r['lease_expires_at']}")


@click.command()
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="The queue to look at (as pop takes it).",
)
@click.option("--explain", is_flag=True, help="Also every active task that is not ready, and why.")
@click.option("--limit", type=click.IntRange(min=1, max=LIMIT_MAX), metavar="N", help="At most N tasks.")
@fields_option
@json_option
def ready(scope: str | None, explain: bool, limit: int | None, fields: str | None) -> None:
    """What pop would hand out, in pop order; with --explain, why the rest is not ready.

    Reasons: claimed (a live claim), stale (its lease ran out: pop --accept-stale
    takes it), blocked_on (a blocked_on_* filter, or status blocked), waiting_for
    (tasks it waits for that are not done, or status waiting), deferred
    (--not-before ahead, or status snoozed), scoped (scoped queues exist: pass
    --scope, '' for the legacy list). TODO.md entries are never popped and are
    not listed. --json: an array of objects with id, ready, reasons, ...

    \b
    Example:
      hb ready --scope _round3_extension.ag_implementation_queue
      hb ready --explain --json
    """
    rows = state().ledger().ready(scope=scope, explain=explain, limit=limit)
    if not rows and not state().json:
        info("Nothing is ready." + ("" if explain else " (hb ready --explain says why)"))
        return
    emit(pick(rows, fields), None if fields else _ready_lines)


def _ready_lines(rows: list[dict[str, Any]]) -> str:
    return table(
        [(r["id"], "ready" if r["ready"] else "-", _why(r), r["scope"] or "", r["title"]) for r in rows],
        ["id", "ready", "why not", "scope", "title"],
    )


def _why(row: dict[str, Any]) -> str:
    parts = []
    for reason in row["reasons"]:
        if reason == "claimed":
            parts.append(f"claimed by {row['claimed_by'] or '?'} until {row['lease_expires_at']}")
        elif reason == "stale":
            parts.append(f"stale (claimed by {row['claimed_by'] or '?'})")
        elif reason == "deferred":
            parts.append(f"deferred until {row['not_before']}" if row["not_before"] else "deferred (snoozed)")
        elif reason == "blocked_on":
            blocker = row["blocked_on"]
            parts.append(f"blocked_on {blocker}" if blocker else "blocked_on (status blocked)")
        elif reason == "waiting_for":
            deps = ", ".join(f"{d['id']} ({d['status']})" for d in row["dependencies"])
            parts.append(f"waiting_for {deps}" if deps else "waiting_for (status waiting)")
        else:
            parts.append(reason)
    return "; ".join(parts)


COMMANDS = [scopes, pop, complete, fail, renew, clear_stale, ready]
